"""The one check of every list of matrix.yaml's targets and host kinds that another file must repeat, because the
tool reading that file cannot read matrix.yaml: tox.ini's env lists (tox) and actionlint's runner labels (GitHub
Actions). Each failure says the line to write, in matrix.yaml's order. The nightly workflow repeats no list: its plan
job makes the job matrix from matrix.yaml (tests/test_nightly_workflow.py runs it)."""
from __future__ import annotations

import configparser
import re

import yaml

from harness.matrix import load_hosts, load_matrix
from tests.conftest import REPO

GITHUB_LABELS = {"self-hosted", "linux", "x64", "arm64", "arm"}  # what a self-hosted runner carries by itself


def tox_env_lists() -> dict[str, list[str]]:
    """tox.ini's `[testenv:{a,b,...}]` sections: the first command that tells them apart -> the env names, in order."""
    config = configparser.ConfigParser(interpolation=None)
    config.read(REPO / "tox.ini")
    lists = {}
    for section in config.sections():
        found = re.fullmatch(r"testenv:\{(.+)\}", section)
        if found:
            kind = "build" if "containers build" in config[section].get("commands", "") else "unavailable"
            assert kind not in lists, f"tox.ini: a second [testenv:{{...}}] list of {kind} targets"
            lists[kind] = found[1].split(",")
    return lists


def test_tox_ini_has_one_env_per_docker_target_in_matrix_order():
    """Available docker targets build their image and run in it; unavailable ones record why they cannot exist.
    Local targets run in this process (`tox -e local` runs the default one)."""
    docker = [t for t in load_matrix().values() if t.runner == "docker"]
    expected = {"build": [t.id for t in docker if t.available],
                "unavailable": [t.id for t in docker if not t.available]}
    found = tox_env_lists()
    for kind, ids in expected.items():
        assert found.get(kind) == ids, f"tox.ini: write [testenv:{{{','.join(ids)}}}]"


def test_actionlint_knows_every_custom_runner_label_of_the_host_kinds():
    config = yaml.safe_load((REPO / ".github" / "actionlint.yaml").read_text())
    custom = [label for host in load_hosts().values() for label in (*host.labels, *host.architectures)
              if label.lower() not in GITHUB_LABELS]
    expected = list(dict.fromkeys(custom))
    assert sorted(config["self-hosted-runner"]["labels"]) == sorted(expected), (
        f".github/actionlint.yaml: self-hosted-runner.labels must be {expected}")
