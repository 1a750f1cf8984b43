"""The how-tos ("Add a target", "Add a case", in docs/ pages) name only things that exist, and their example works;
README is a door of at most about 200 lines that leads to them."""
from __future__ import annotations

import importlib
import re
import subprocess
import sys
import textwrap

import pytest
import yaml

import cases
import cases.model
from harness.commands.main import build_parser
from harness.matrix import (
    BUILD_NETWORKS,
    GPU_ACCESS,
    HOST_KEYS,
    PLATFORMS,
    TARGET_KEYS,
    load_matrix,
)
from harness.orchestration.docker import wheelhouse
from harness.worker.backends import BACKENDS
from tests.conftest import REPO
from tests.docs import PAGES, section
from tests.harness.orchestration.docker.test_recipe_pins import (
    check_pins_against_platforms_2026_md,
    check_pins_against_platforms_md,
    in_platforms_md,
)

README = REPO / "README.md"
MATRIX = REPO / "matrix.yaml"
FENCE = re.compile(r"^ *```(\w*)\n(.*?)^ *```$", re.S | re.M)


def code_blocks(text: str, language: str) -> list[str]:
    return [textwrap.dedent(body) for lang, body in FENCE.findall(text) if lang == language]


def backticked(text: str) -> list[str]:
    """Inline code of TEXT, fenced blocks left out."""
    return re.findall(r"`([^`\n]+)`", FENCE.sub("", text))


def example_target() -> tuple[str, dict]:
    (block,) = code_blocks(section("Add a target"), "yaml")
    ((target_id, body),) = yaml.safe_load(block).items()
    return target_id, body


@pytest.fixture()
def matrix_with_example(tmp_path):
    """matrix.yaml with the README's example target added, on the x86 GPU host kind, as step 3 says."""
    target_id, body = example_target()
    data = yaml.safe_load(MATRIX.read_text())
    data["targets"][target_id] = body
    data["hosts"]["x86-gpu"]["targets"].append(target_id)
    path = tmp_path / "matrix.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path, target_id


# --- Set up --------------------------------------------------------------------------------------------------------


def test_set_up_installs_tox_with_the_test_extra_and_keeps_docker_for_container_targets():
    (block,) = code_blocks(section("Set up (a fresh machine, from the repository root)"), "sh")
    pip_line, system_line = block.strip().splitlines()  # two commands do all set-up
    assert '".[test]"' in pip_line and "tox" in pip_line.split("#", 1)[1]
    # the test extra of [project.optional-dependencies]
    (extra,) = re.findall(r"^test = \[(.*)\]$", (REPO / "pyproject.toml").read_text(), re.M)
    assert set(re.findall(r'"([\w-]+)', extra)) >= {"pytest", "tox", "selenium"}
    assert system_line.split("#", 1)[0].split() == ["bash", "scripts/provision-system.sh"]
    assert "Chromium" in system_line and "only for container targets" in system_line
    # the system script installs the browser the report's tests open, then Docker; .ci/run runs the same two lines
    script = (REPO / "scripts" / "provision-system.sh").read_text()
    assert "chromium chromium-driver" in script and "containers/provision-docker.sh" in script
    ci = (REPO / ".ci" / "run").read_text()
    assert 'pip install -q -e ".[test]"' in ci and "bash scripts/provision-system.sh  " in ci


# --- Add a target ----------------------------------------------------------------------------------------------------


def test_the_example_target_validates_and_its_pins_agree_with_the_platforms_tables(matrix_with_example):
    path, target_id = matrix_with_example
    target = load_matrix(path)[target_id]
    assert target_id not in load_matrix(), "the example must be a target the matrix does not have yet"
    if in_platforms_md(target):
        check_pins_against_platforms_md(target)
    else:
        check_pins_against_platforms_2026_md(target)


def test_the_example_target_gets_its_wheelhouse_command_as_step_6_says(matrix_with_example):
    path, _ = matrix_with_example
    (block,) = code_blocks(section("Add a target"), "sh")
    (line,) = [line.split("#")[0].split() for line in block.splitlines() if "trt-matrix containers wheelhouse" in line]
    process = subprocess.run([sys.executable, "-m", "harness", "--matrix", str(path), *line[1:]], cwd=REPO,
                             capture_output=True, text=True, timeout=120)
    assert process.returncode == 0, process.stderr
    _, body = example_target()
    glibc_minor = body["glibc"].split(".")[1]
    assert f"--python-version {body['python']}" in process.stdout
    assert f"manylinux_2_{glibc_minor}_x86_64" in process.stdout
    assert re.search(r"polygraphy==\S+", process.stdout)


KEY_VALUES = {  # keys whose values the section names, and what the validator accepts for them
    "platform": PLATFORMS, "gpu": GPU_ACCESS, "build_network": BUILD_NETWORKS, "backend": tuple(BACKENDS),
    "available": ("false",),
}


def test_every_key_it_names_is_one_the_validator_accepts_with_a_value_it_accepts():
    from harness.matrix import load_hosts
    from harness.orchestration.fleet_plan import plan_jobs

    workflow_keys = {key for job in plan_jobs(load_hosts())["include"] for key in job}  # the plan job's matrix
    named = [re.match(r"^([\w-]+):(?: (.+))?$", token) for token in backticked(section("Add a target"))]
    named = [m.groups() for m in named if m]
    assert len(named) > 10
    for key, value in named:
        assert key in {*TARGET_KEYS, *HOST_KEYS, "targets", "hosts", *workflow_keys}, f"`{key}:` is no key"
        if key in KEY_VALUES:
            assert value in KEY_VALUES[key], f"`{key}: {value}` is not a value the validator accepts"
        if key == "recipe":
            assert (REPO / "containers" / value / "Dockerfile").is_file(), value


def test_every_key_of_a_target_is_explained_at_the_top_of_matrix_yaml():
    header = MATRIX.read_text().split("\ntargets:", 1)[0]
    for key in TARGET_KEYS:
        assert re.search(rf"\b{key}\b", header), f"matrix.yaml's header does not explain {key!r}"


def test_the_files_and_names_it_points_to_exist():
    for token in backticked(section("Add a target")):
        if re.fullmatch(r"[A-Z][A-Z_]+", token):
            assert hasattr(wheelhouse, token), f"{token} is not in harness/orchestration/docker/wheelhouse.py"
        elif re.fullmatch(r"[\w./-]+", token) and ("/" in token or re.search(r"\.(md|py|ya?ml|ini)$", token)):
            assert (REPO / token).exists(), f"{token} does not exist"
    (block,) = code_blocks(section("Add a target"), "sh")
    pytest_line = next(line for line in block.splitlines() if line.startswith("python -m pytest"))
    for path in pytest_line.split()[3:]:
        assert (REPO / path).is_file(), path


def test_its_harness_command_lines_parse():
    lines = [token for token in backticked(section("Add a target")) if token.startswith("trt-matrix ")]
    assert lines
    for line in lines:
        build_parser().parse_args(line.split()[1:])  # argparse exits (status 2) on an unknown command or option


def test_tox_ini_lists_docker_targets_first_and_unavailable_ones_second_as_step_4_says():
    factor_lists = re.findall(r"^\[testenv:\{([^}]+)\}\]", (REPO / "tox.ini").read_text(), re.M)
    targets = [t for t in load_matrix().values() if t.runner == "docker"]
    assert [set(names.split(",")) for names in factor_lists] == [
        {t.id for t in targets if t.available}, {t.id for t in targets if not t.available}]


# --- Add a case ------------------------------------------------------------------------------------------------------


def field_names(shape: object) -> tuple[str, ...]:
    """The fields of a record of the case API (a NamedTuple or a dataclass); none for anything else."""
    return getattr(shape, "_fields", None) or tuple(getattr(shape, "__dataclass_fields__", ()))


def case_vocabulary() -> set[str]:
    """What the "Add a case" section may name: the case API of cases.model and the values it checks."""
    case = cases.model.Case
    names = {name for name in [*dir(case), *case.__annotations__] if not name.startswith("__")}
    names |= {name for name, value in vars(cases.model).items() if isinstance(value, type)}
    for shape in (cases.model.Variant, cases.model.Claim, cases.model.Tolerance, cases.model.Built,
                  cases.model.Match):
        names |= set(field_names(shape))
    return names | set(cases.model.BUILD_MODES)


def test_add_a_case_names_only_the_case_api_that_exists():
    vocabulary = case_vocabulary()
    for token in backticked(section("Add a case")):
        if token.startswith(("trt-matrix ", "tests/", "cases/<")) or token == "import cases":
            continue
        if token.startswith("python scripts/"):  # a script of the repository, with its arguments
            assert (REPO / token.split()[1]).is_file(), f"`{token}`: no such script"
            continue
        if "." in token:  # a dotted name: cases.model.Case
            module, _, attribute = token.rpartition(".")
            assert hasattr(importlib.import_module(module), attribute), token
            continue
        call = re.fullmatch(r"([\w-]+)(?:\(([\w, ]*)\))?", token)
        assert call, f"unexpected `{token}` in Add a case"
        name, arguments = call.groups()
        if name in cases.NOT_CASE_MODULES or name == "_":
            continue
        assert name in vocabulary, f"`{token}`: {name} is not part of cases.model"
        shape = getattr(cases.model, name, None)
        fields = field_names(shape)
        for argument in (arguments or "").replace(" ", "").split(",") if fields and arguments else ():
            assert argument in fields, f"`{token}`: {argument} is not a field of {name}"


def test_add_a_case_lists_exactly_the_modules_that_are_not_cases():
    named = {token for token in backticked(section("Add a case")) if (REPO / "cases" / f"{token}.py").is_file()}
    assert named == set(cases.NOT_CASE_MODULES)
    assert "import the module" not in section("Add a case")  # discovery walks the package: no import line


def test_add_a_case_generate_line_runs_for_a_case_of_the_library():
    (line,) = [token for token in backticked(section("Add a case")) if token.startswith("trt-matrix generate")]
    args = build_parser().parse_args(line.replace("<id>", cases.all_cases()[0].id).split()[1:])
    assert args.command == "generate"


# --- README as a door ------------------------------------------------------------------------------------------------


def test_readme_is_a_door_of_at_most_200_lines_linking_every_page():
    text = README.read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 200
    for page in PAGES[1:]:
        assert f"docs/{page.name}" in text, f"README does not link docs/{page.name}"
    assert "python -m harness" not in text  # the command is trt-matrix


def test_the_docs_spell_the_command_trt_matrix_and_name_the_module_form_once_as_its_equivalent():
    module_form = re.compile(r"python -m harness(?!\.)")  # `python -m harness.worker` is another entry point
    spelled = {page.name: len(module_form.findall(page.read_text(encoding="utf-8"))) for page in PAGES}
    assert {name: count for name, count in spelled.items() if count} == {"install.md": 1}


def test_readme_reaches_a_first_answer_in_two_commands():
    (install,) = code_blocks(section("Install"), "sh")
    assert [line.split("#")[0].split()[:2] for line in install.strip().splitlines()] == [["pip", "install"]]
    blocks = code_blocks(section("Your model's answer"), "sh")
    assert [line.split()[:2] for line in blocks[0].strip().splitlines()] == [["trt-matrix", "scan"]]
