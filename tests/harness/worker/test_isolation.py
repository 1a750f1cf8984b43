"""A crashing or hanging cell becomes a record and the run goes on (each cell runs in its own process)."""
import json
import time

import pytest

from harness.matrix import load_matrix
from harness.store.results_file import validate_record
from harness.worker.job import run_job

BACKENDS = "tests.harness.worker.misbehaving_backends"


def add_bad_cell(cases_dir, name="bad-cell"):
    """Register one more variant, named to make the misbehaving backends misbehave, reusing a control's files."""
    index = json.loads((cases_dir / "index.json").read_text())
    case = next(c for c in index["cases"] if c["id"] == "control-implicit-conv-relu")
    case["variants"].append(dict(case["variants"][0], name=name))
    (cases_dir / "index.json").write_text(json.dumps(index))


def run(cases_dir, tmp_path, backend, timeout_s=60.0):
    records = []
    # the other cells run as on ort-cpu, its session options included (without them ONNX Runtime 1.32 runs the Q/DQ
    # control's conv in INT8 another way, outside the control's tolerance)
    target = {"id": "misbehaving", "backend": f"{BACKENDS}:{backend}",
              "session_config": load_matrix()["ort-cpu"].session_config}
    job = {"target": target, "cases_dir": str(cases_dir),
           "cells": None, "jobs": 2, "timeout_s": timeout_s, "work_dir": str(tmp_path / "work")}
    run_job(job, records.append)
    for record in records:
        validate_record(record)
    return {r["variant"] if r["case"] == "control-implicit-conv-relu" else r["case"]: r for r in records}


def test_a_segfaulting_cell_is_a_crash_record_and_the_others_still_run(cases_copy, tmp_path):
    add_bad_cell(cases_copy)
    records = run(cases_copy, tmp_path, "SegfaultBackend")
    bad = records.pop("bad-cell")
    assert bad["outcome"] == "crash"
    assert bad["failure"]["category"] == "crash"
    assert "SIGSEGV" in bad["failure"]["message"]
    assert bad["stage"] == "build"  # the stage the cell had entered when it died
    assert "Fatal Python error: Segmentation fault" in bad["log"]  # faulthandler's report from the dead process
    assert {r["outcome"] for r in records.values()} <= {"pass", "fallback"}
    assert len(records) == 3


def test_a_hanging_cell_is_killed_at_its_timeout_and_the_others_still_run(cases_copy, tmp_path):
    add_bad_cell(cases_copy)
    started = time.perf_counter()
    records = run(cases_copy, tmp_path, "HangBackend", timeout_s=3.0)
    assert time.perf_counter() - started < 30
    bad = records.pop("bad-cell")
    assert bad["outcome"] == "timeout"
    assert "no result after 3 s" in bad["failure"]["message"]
    assert bad["duration_s"] >= 3.0
    assert len(records) == 3 and all(r["outcome"] in ("pass", "fallback") for r in records.values())


def test_a_harness_bug_is_an_infra_error_never_a_pattern_failure(cases_copy, tmp_path):
    add_bad_cell(cases_copy)
    bad = run(cases_copy, tmp_path, "BuggyBackend")["bad-cell"]
    assert bad["outcome"] == "infra-error"
    assert bad["failure"]["category"] == "harness"
    assert "KeyError" in bad["failure"]["message"] and "Traceback" in bad["log"]


def test_a_backend_that_cannot_start_gives_infra_error_records_for_every_cell(control_cases_dir, tmp_path):
    records = []
    job = {"target": {"id": "nowhere", "backend": "no_such_module_anywhere:Backend"},
           "cases_dir": str(control_cases_dir), "cells": None, "jobs": 1, "timeout_s": 5, "work_dir": str(tmp_path)}
    run_job(job, records.append)
    assert len(records) == 3
    for record in records:
        validate_record(record)
        assert record["outcome"] == "infra-error"
        assert "no_such_module_anywhere" in record["failure"]["message"]


@pytest.mark.parametrize("jobs", [1, 2])
def test_each_cell_is_recorded_exactly_once(control_cases_dir, tmp_path, jobs):
    records = []
    job = {"target": {"id": "ort", "backend": "onnxruntime"}, "cases_dir": str(control_cases_dir), "cells": None,
           "jobs": jobs, "timeout_s": 60, "work_dir": str(tmp_path)}
    run_job(job, records.append)
    assert sorted((r["case"], r["variant"]) for r in records) == sorted(
        (c["id"], v["name"]) for c in json.loads((control_cases_dir / "index.json").read_text())["cases"]
        for v in c["variants"])
