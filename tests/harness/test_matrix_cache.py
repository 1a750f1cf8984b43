"""A parsed targets file is kept in the user's cache, so the next command starts without PyYAML: the targets read back
are the file's own, a file that changed is parsed again, and what JSON cannot hold exactly is never kept."""
import json
import subprocess
import sys

import pytest

from harness.matrix import DEFAULT_MATRIX, MatrixError, load_matrix
from tests.conftest import REPO

GOOD = "targets:\n  t1:\n    title: T\n    backend: onnxruntime\n    runner: local\n    platform: any\n"

# the targets of DEFAULT_MATRIX as a command reads them, and whether it imported PyYAML to read them
READ = ("import json, sys; from harness.matrix import DEFAULT_MATRIX, load_matrix; "
        "targets = load_matrix(DEFAULT_MATRIX); "
        "print(json.dumps({'yaml': 'yaml' in sys.modules, 'targets': {k: repr(v) for k, v in targets.items()}}))")


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    return tmp_path / "cache" / "trt-matrix"


def test_the_second_command_reads_the_same_targets_without_pyyaml(cache):
    env = {"XDG_CACHE_HOME": str(cache.parent), "PATH": "", "PYTHONPATH": str(REPO)}
    first, second = (json.loads(subprocess.run([sys.executable, "-c", READ], cwd=REPO, env=env, capture_output=True,
                                               text=True, check=True).stdout) for _ in range(2))
    assert (first["yaml"], second["yaml"]) == (True, False)
    assert second["targets"] == first["targets"] == {k: repr(v) for k, v in load_matrix(DEFAULT_MATRIX).items()}


def test_a_changed_file_is_parsed_again_and_a_broken_one_still_named(cache, tmp_path):
    path = tmp_path / "matrix.yaml"
    path.write_text(GOOD)
    assert load_matrix(path)["t1"].title == "T"
    path.write_text(GOOD.replace("title: T", "title: Changed"))
    assert load_matrix(path)["t1"].title == "Changed"
    path.write_text("targets: {a: b\n")
    with pytest.raises(MatrixError, match=f"{path}: not valid YAML"):
        load_matrix(path)


def test_what_json_cannot_hold_exactly_is_not_kept_and_a_kept_parse_of_another_text_is_not_used(cache, tmp_path):
    path = tmp_path / "matrix.yaml"
    path.write_text(GOOD.replace("title: T", "title: T\n    notes: {1: first}"))  # JSON: the key 1 comes back "1"
    with pytest.raises(MatrixError, match="notes"):
        load_matrix(path)
    assert not list(cache.glob("*.json"))
    path.write_text(GOOD)
    load_matrix(path)
    (kept,) = cache.glob("*.json")
    kept.write_text(json.dumps({"text": "something else", "parsed": {"targets": {}}}))
    assert load_matrix(path)["t1"].title == "T"


def test_no_cache_to_write_to_still_loads(tmp_path, monkeypatch):
    blocked = tmp_path / "file"
    blocked.write_text("")
    monkeypatch.setenv("XDG_CACHE_HOME", str(blocked))  # a file where the directory would be
    path = tmp_path / "matrix.yaml"
    path.write_text(GOOD)
    assert load_matrix(path)["t1"].title == "T"
