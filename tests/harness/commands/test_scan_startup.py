"""What a `scan` process loads before its answer: a pre-commit hook or a CI job starts one per model, so a module the
default scan does not use must not be imported by it (issue 44; the seconds are measured by
benchmarks/scan_model.py --versus-sizes, never here)."""
import json
import subprocess
import sys

from harness.commands.main import COMMAND_MODULES, build_parser
from tests.conftest import REPO
from tests.models.fixtures import model_files  # noqa: F401

# `scan` run as the command line runs it (its main(); run() would end the process before the modules are listed),
# then the names of the modules the process imported
SCAN_THEN_MODULES = """
import json, sys
from harness.commands.main import main
status = main(sys.argv[1:])
print(json.dumps({"status": status, "modules": sorted(sys.modules)}))
"""

NOT_ON_THE_DEFAULT_SCAN = (
    "onnxruntime",  # --run and --fix's runs only
    "pandas",  # the compatibility matrix (`report`), not the scan page
    "polygraphy",
    "docker",  # containers
    "sqlite3",  # the nightly history
    "harness.tensorrt.classify",  # the log classifier: `diagnose`, `classify`
    "harness.commands.containers", "harness.commands.history", "harness.commands.nightly",
    "harness.commands.diagnose", "harness.commands.run", "harness.commands.library", "harness.commands.reduce",
    "harness.scan.fixing",  # --fix
)


def test_a_default_scan_does_not_import_what_only_other_commands_or_options_use(model_files, tmp_path):
    done = subprocess.run([sys.executable, "-c", SCAN_THEN_MODULES, "scan", str(model_files["plain-cnn-qdq"]),
                           "--out", str(tmp_path / "scan")], cwd=REPO, capture_output=True, text=True, timeout=240)
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["status"] in (0, 1), done.stderr  # an answer (1: a target does not build it), not an error
    assert (tmp_path / "scan" / "scan.html").is_file() and (tmp_path / "scan" / "scan.json").is_file()
    loaded = set(result["modules"])
    assert "harness.commands.scan" in loaded
    imported = sorted(name for name in NOT_ON_THE_DEFAULT_SCAN
                      if name in loaded or any(module.startswith(name + ".") for module in loaded))
    assert imported == []


def test_the_table_of_command_modules_names_every_command_of_the_whole_parser():
    """A command line imports only the module :data:`COMMAND_MODULES` names for its command: each of its names is one
    the whole parser has, added by that module, and every command of the whole parser is in it."""
    whole = build_parser()
    choices = next(action.choices for action in whole._subparsers._group_actions)
    assert sorted(choices) == sorted(name for _, _, names in COMMAND_MODULES for name in names)
    for module, _, names in COMMAND_MODULES:
        for name in names:
            alone = build_parser(name)
            assert list(next(a.choices for a in alone._subparsers._group_actions)) == list(names), module


def test_help_and_unknown_commands_get_the_whole_parser():
    from harness.commands.main import _command_named

    assert _command_named(["--matrix", "matrix.yaml", "scan", "model.onnx", "--targets", "ort-cpu"]) == "scan"
    assert _command_named(["--matrix=matrix.yaml", "nightly-plan"]) == "nightly-plan"
    for argv in (["-h", "scan"], ["scan", "--help"], ["no-such-command"], ["--matrix"], []):
        assert _command_named(argv) is None, argv
