"""`generate -k` adds the selected cases to DIR's index instead of writing an index of them alone, through the real
command: a later `run --cases DIR` still runs every case DIR held."""
import json

from tests.conftest import read_records
from tests.harness.commands.test_main import harness


def index_ids(cases_dir) -> list[str]:
    return [case["id"] for case in json.loads((cases_dir / "index.json").read_text())["cases"]]


def test_generate_k_into_a_directory_with_an_index_keeps_its_other_cases_and_run_runs_them_all(tmp_path):
    cases_dir = tmp_path / "cases"
    harness("generate", "--out", str(cases_dir), "-k", "control-qdq")
    result = harness("generate", "--out", str(cases_dir), "-k", "control-implicit")
    assert index_ids(cases_dir) == ["control-qdq-conv-relu", "control-implicit-conv-relu"]
    assert "2 variant(s) of 1 case(s) written" in result.stdout
    assert "merged: it lists 2 case(s), 1 of them kept from before as they were" in result.stdout
    results = tmp_path / "results.jsonl"
    harness("run", "--target", "ort-cpu", "--cases", str(cases_dir), "--results", str(results))
    assert {record["case"] for record in read_records(results)} == {"control-qdq-conv-relu",
                                                                     "control-implicit-conv-relu"}


def test_generate_k_of_a_case_the_index_has_replaces_its_entry_in_place(tmp_path):
    cases_dir = tmp_path / "cases"
    harness("generate", "--out", str(cases_dir), "-k", "control")
    before = json.loads((cases_dir / "index.json").read_text())
    harness("generate", "--out", str(cases_dir), "-k", "control-qdq")
    after = json.loads((cases_dir / "index.json").read_text())
    assert index_ids(cases_dir) == [case["id"] for case in before["cases"]]  # same order, no second entry
    assert after["cases"] == before["cases"]  # generation is deterministic: the same entry again


def test_generate_k_refuses_an_index_it_cannot_merge_into_naming_it_and_writes_nothing(tmp_path):
    cases_dir = tmp_path / "cases"
    cases_dir.mkdir()
    (cases_dir / "index.json").write_text('{"format": "something-else/9", "cases": []}')
    result = harness("generate", "--out", str(cases_dir), "-k", "control-qdq", check=False)
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert result.stderr.count("\n") == 1
    assert str(cases_dir / "index.json") in result.stderr and "'something-else/9'" in result.stderr
    assert "give --out another directory" in result.stderr
    assert sorted(p.name for p in cases_dir.iterdir()) == ["index.json"]
    (cases_dir / "index.json").write_text('{"format": "trt-matrix/cases/1", "cases": [')  # cut short
    result = harness("generate", "--out", str(cases_dir), "-k", "control-qdq", check=False)
    assert result.returncode == 2 and "not a readable cases index" in result.stderr
    assert sorted(p.name for p in cases_dir.iterdir()) == ["index.json"]
