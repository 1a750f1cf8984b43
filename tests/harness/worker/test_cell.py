"""How a cell's observations become its outcome."""
from harness.worker.job import run_job


def test_a_node_of_unknown_precision_is_unverified_not_a_fallback(control_cases_dir, tmp_path):
    records = []
    target = {"id": "blind", "backend": "tests.harness.worker.misbehaving_backends:PrecisionBlindBackend"}
    run_job({"target": target, "cases_dir": str(control_cases_dir), "cells": None, "jobs": 1, "timeout_s": 60,
             "work_dir": str(tmp_path)}, records.append)
    record = next(r for r in records if r["case"] == "control-implicit-conv-relu")
    assert record["fallback_nodes"] == []
    assert record["details"]["unverified_int8"] == record["expected_int8"] == ["/conv/Conv"]
    assert record["outcome"] == "pass"  # within tolerance; the details say INT8 could not be verified
