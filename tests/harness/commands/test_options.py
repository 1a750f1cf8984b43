"""Exit codes: one table in README.md and in `--help`, and one meaning per code for every command."""
import re

from harness.commands.options import (
    EXIT_BROKEN, EXIT_INTERRUPTED, EXIT_MEANINGS, EXIT_OK, EXIT_PARTIAL, EXIT_REGRESSION, EXIT_USAGE,
)
from tests.conftest import REPO
from tests.harness.commands.test_main import harness


def test_readme_has_one_exit_code_table_saying_what_the_code_says():
    readme = (REPO / "README.md").read_text()
    assert readme.count("\n## Exit codes\n") == 1
    section = readme.split("\n## Exit codes\n", 1)[1].split("\n## ", 1)[0]
    rows = dict(re.findall(r"^\| (\d+) \| (.+) \|$", section, re.MULTILINE))
    assert {int(code): text for code, text in rows.items()} == EXIT_MEANINGS
    assert (EXIT_OK, EXIT_REGRESSION, EXIT_USAGE, EXIT_BROKEN, EXIT_PARTIAL, EXIT_INTERRUPTED) == (0, 1, 2, 3, 4, 130)


def test_help_ends_with_the_same_exit_codes():
    out = " ".join(harness("--help").stdout.split())
    for code, text in EXIT_MEANINGS.items():
        assert f"{code} {text}" in out



def test_every_command_exits_with_a_status_of_the_one_table():
    """No command returns, raises or exits with a number of its own: each status is a name of options.EXIT_MEANINGS."""
    import ast

    offending = []
    for path in sorted((REPO / "harness" / "commands").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            values = []
            if isinstance(node, ast.Return) and node.value is not None:
                values.append(node.value)
            elif isinstance(node, ast.Call):
                name = getattr(node.func, "id", getattr(node.func, "attr", ""))
                if name == "CommandError":  # CommandError(message, status)
                    values += node.args[1:] + [k.value for k in node.keywords if k.arg == "status"]
                elif name in ("exit", "SystemExit"):
                    values += node.args
            for value in values:
                if isinstance(value, ast.Constant) and type(value.value) is int:
                    offending.append(f"{path.relative_to(REPO)}:{node.lineno}: exits with {value.value}")
    assert not offending, "\n".join(offending)
