"""tox.ini read through tox itself: each target's env runs that target (which targets have one:
tests/test_target_lists.py)."""
from __future__ import annotations

import shutil
import subprocess

import pytest

from harness.matrix import default_target, load_matrix
from tests.conftest import REPO

NOT_TARGET_ENVS = {"py", "local", "report", "mutation", "mutation-judgement"}  # the tests, the default target on
# this CPU, the merged report, mutation testing of the TensorRT path and of the judgement engine


@pytest.fixture(scope="module")
def tox_commands() -> dict[str, list[str]]:
    """Every tox env with its commands, as tox expands them (factor lists, substitutions)."""
    tox = shutil.which("tox")
    if tox is None:
        pytest.fail("tox is not installed: it comes with the [test] extra (pip install -e '.[test]')")
    process = subprocess.run([tox, "config", "-e", "ALL", "-k", "commands"], cwd=REPO, capture_output=True, text=True,
                             timeout=120)
    assert process.returncode == 0, process.stderr
    envs: dict[str, list[str]] = {}
    for line in process.stdout.splitlines():
        if line.startswith("[testenv:"):
            current = envs.setdefault(line[len("[testenv:"):-1], [])
        elif line.startswith("  "):
            current.append(line.strip().lstrip("- "))
    return envs


def harness_calls(commands: list[str], subcommand: str) -> list[str]:
    return [c for c in commands if c.startswith(f"python -m harness {subcommand}")]


def test_tox_has_no_env_but_the_targets_and_its_own(tox_commands):
    """Which targets have an env, in which list, is tests/test_target_lists.py's; nothing else hides among them."""
    docker = {t.id for t in load_matrix().values() if t.runner == "docker"}
    envs = {name for name in tox_commands if not name.startswith(".")}  # .pkg: tox's own packaging env
    assert envs - NOT_TARGET_ENVS - docker == set()


def test_each_container_env_prepares_builds_and_runs_its_own_target(tox_commands):
    for target in load_matrix().values():
        if target.runner != "docker":
            continue
        commands = tox_commands[target.id]
        (run,) = harness_calls(commands, "run")
        assert f"--target {target.id} " in run and f"reports/out/{target.id}.jsonl" in run
        if target.available:
            assert harness_calls(commands, "containers build") == [f"python -m harness containers build {target.id}"]
            assert harness_calls(commands, "containers wheelhouse") == [
                f"python -m harness containers wheelhouse --target {target.id}"]
        else:  # nothing to build: the run writes its unavailable records
            assert not harness_calls(commands, "containers")


def test_the_local_env_runs_the_default_target(tox_commands):
    default = default_target(load_matrix())
    assert default.runner == "local"
    (run,) = harness_calls(tox_commands["local"], "run")
    assert f"--target {default.id} " in run


def test_git_ignores_the_venv_redirect_file_tox_writes(tmp_path):
    """tox 4 writes a `.venv` FILE (PEP 832 redirect) pointing at its env; a `.venv/` pattern would miss it."""
    if not (REPO / ".git").exists():
        pytest.skip("not a git checkout")
    for name in (".venv", ".venv/bin/python"):
        process = subprocess.run(["git", "check-ignore", "--no-index", "-q", name], cwd=REPO)
        assert process.returncode == 0, f"{name} is not ignored by .gitignore"
