"""How a cell's observations become its outcome."""
import pytest

from harness.worker.job import run_job


def test_a_node_of_unknown_precision_is_unverified_not_a_fallback_and_never_a_pass(control_cases_dir, tmp_path):
    records = []
    target = {"id": "blind", "backend": "tests.harness.worker.misbehaving_backends:PrecisionBlindBackend"}
    run_job({"target": target, "cases_dir": str(control_cases_dir), "cells": None, "jobs": 1, "timeout_s": 60,
             "work_dir": str(tmp_path)}, records.append)
    record = next(r for r in records if r["case"] == "control-implicit-conv-relu")
    assert record["fallback_nodes"] == []
    assert record["details"]["unverified_nodes"] == record["expected_int8"] == ["/conv/Conv"]
    # within tolerance, but INT8 could not be verified: no verdict, and nothing broke
    assert (record["outcome"], record["failure"]) == ("unverified", None)
    assert record["metrics"]["within_tolerance"]


def ended(tmp_path, cell, kind="timeout"):
    from harness.worker.cell import lost_cell_record
    from harness.worker.environment import observe

    target = {"id": "ort-cpu", "backend": "onnxruntime"}
    return lost_cell_record(cell, target, observe({}), kind, "was killed", 1.0, tmp_path, None)


def test_stage_file_is_replaced_whole_and_read_back(control_cases_dir, tmp_path):
    from harness.worker.backends.base import StageTracker
    from harness.worker.casedata import load_cells

    tracker = StageTracker(tmp_path / "stage")
    tracker.enter("parse")
    tracker.enter("build")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["stage"]  # no partial file left beside it
    record = ended(tmp_path, load_cells(control_cases_dir)[0])
    assert (record["outcome"], record["stage"]) == ("timeout", "build")


def test_a_cell_killed_before_its_first_stage_is_at_generate(control_cases_dir, tmp_path):
    from harness.worker.casedata import load_cells

    record = ended(tmp_path, load_cells(control_cases_dir)[0], kind="crash")
    assert (record["outcome"], record["stage"]) == ("crash", "generate")


@pytest.mark.parametrize("content", [b"", b"bui", b"\xff\xfe"], ids=["empty", "cut", "not-text"])
def test_an_unreadable_stage_file_is_an_infra_error_naming_it_not_an_abort(control_cases_dir, tmp_path, content):
    from harness.store.results_file import validate_record
    from harness.worker.casedata import load_cells

    (tmp_path / "stage").write_bytes(content)
    record = ended(tmp_path, load_cells(control_cases_dir)[0])
    validate_record(record)
    assert record["outcome"] == "infra-error" and record["failure"]["category"] == "harness"
    assert f"the stage it had reached cannot be read ({tmp_path / 'stage'}: " in record["failure"]["message"]
