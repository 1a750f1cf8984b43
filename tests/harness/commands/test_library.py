"""The library commands through the real command: `generate -k` adds the selected cases to DIR's index instead of
writing an index of them alone (a later `run --cases DIR` still runs every case DIR held), and `python -m harness facts`,
what a planner choosing between JetPack 6 and 7 reads of each target."""
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


def test_facts_help_teaches_the_comparison():
    out = harness("facts", "--help").stdout
    assert out.startswith("usage: trt-matrix facts")
    assert "trt-matrix facts trt107-orin trt1016-orin trt114-orin" in out and "--gpu-arch" in out


def test_facts_lists_every_tensorrt_target_that_exists_one_line_each():
    out = harness("facts").stdout
    rows = {line.split()[0]: line.split() for line in out.splitlines()[2:] if line.startswith("  trt")}
    assert "trt92-orin" not in rows and "ort-cpu" not in rows and "trt1016-orin-dla" not in rows
    # target, JetPack, GPU, implicit INT8, strong typing, FP8 flag, FP8 Q/DQ, FP4 Q/DQ, DLA, INT64
    assert rows["trt114-orin"][3] == "no" and rows["trt107-orin"][3] == "deprecated"
    assert rows["trt100-orin"][3] == "yes"
    assert rows["trt1016-orin"][8] == "no" and rows["trt114-orin"][8] == "yes"
    assert rows["trt1016-thor"][6] == "yes" and rows["trt1016-orin"][6] == "no"
    assert rows["trt1016-x86"][6] == "?"  # whatever GPU the host has


def test_facts_of_named_targets_say_where_they_differ_with_sources_and_remedies():
    out = harness("facts", "trt107-orin", "trt1016-orin", "trt114-orin").stdout
    assert "Where they differ: implicit INT8, FP8 flag, DLA" in out
    section = out.split("\ntrt114-orin: ")[1]
    assert "implicit-int8: no. TensorRT 11.4.1 has no implicit quantization" in section
    assert "--to-explicit" in section
    assert "https://docs.nvidia.com/deeplearning/tensorrt/11.4.0/api/migration/tensorrt-10x-to-11x.html" in section
    # the fact, then what to do: the migration said once
    implicit = section.split("  implicit-int8: ")[1].split("\n  calibration-profile")[0]
    assert implicit.count("migrate to explicit quantization") == 1, implicit


def test_facts_take_the_gpu_of_an_x86_host():
    ada = harness("facts", "trt1016-x86", "--gpu-arch", "sm_89", "--json").stdout
    ampere = harness("facts", "trt1016-x86", "--gpu-arch", "sm_86", "--json").stdout
    assert json.loads(ada)["trt1016-x86"]["fp8-qdq"]["value"] == "present"
    assert json.loads(ampere)["trt1016-x86"]["fp8-qdq"]["effect"] == "refuses-build"


def test_facts_of_an_unknown_target_or_gpu_name_the_mistake():
    result = harness("facts", "trt107-orn", check=False)
    assert result.returncode == 2 and "trt107-orin" in result.stderr
    result = harness("facts", "--gpu-arch", "8.9", check=False)
    assert result.returncode == 2 and "sm_89" in result.stderr
