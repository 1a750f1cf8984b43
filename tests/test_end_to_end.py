"""The main job, end to end on the embedded default (ONNX Runtime): generate, run every cell, write the report."""
import json

import pytest

import cases
from harness.store.results_file import validate_record
from harness.worker.record import OBSERVED_OUTCOMES
from tests.conftest import read_records
from tests.harness.commands.test_main import harness


@pytest.fixture(scope="module")
def main_job(tmp_path_factory):
    out = tmp_path_factory.mktemp("main-job")
    harness("generate", "--out", str(out / "cases"))
    run = harness("run", "--target", "ort-cpu", "--cases", str(out / "cases"), "--results", str(out / "r.jsonl"))
    harness("report", "--results", str(out / "r.jsonl"), "--cases", str(out / "cases"), "--out", str(out / "index.html"))
    return out, run


def test_every_case_variant_is_observed_on_ort_cpu_and_every_record_is_valid(main_job):
    out, run = main_job
    records = read_records(out / "r.jsonl")
    expected = {(case.id, variant.name) for case, variant in cases.iter_variants()}
    assert {(r["case"], r["variant"]) for r in records} == expected
    assert len(records) == len(expected)
    for record in records:
        validate_record(record)
        assert record["outcome"] in OBSERVED_OUTCOMES, (record["case"], record["variant"], record["failure"])
        assert record["environment"]["onnxruntime_version"]
    assert f"{len(expected)} cell(s) run" in run.stdout


def test_the_controls_pass_on_ort_cpu(main_job):
    out, _ = main_job
    controls = [r for r in read_records(out / "r.jsonl") if r["case"].startswith("control-")]
    assert controls and all(r["outcome"] == "pass" for r in controls), [(r["variant"], r["outcome"]) for r in controls]


def test_the_report_shows_every_variant_and_tensorrt_claims_as_not_run_here(main_job):
    out, _ = main_job
    html = (out / "index.html").read_text()
    for case, variant in cases.iter_variants():
        assert variant.name in html and case.id in html
    assert "not run here" in html
    assert "https://github.com/NVIDIA/TensorRT/issues/3640" in html  # the S1 claim's source link
    assert "trt86-orin" in html and "trt92-orin" in html


def test_generation_is_deterministic(main_job, tmp_path):
    out, _ = main_job
    harness("generate", "--out", str(tmp_path))
    index = json.loads((out / "cases" / "index.json").read_text())
    for case in index["cases"]:
        for variant in case["variants"]:
            for key in ("model", "data"):
                assert (tmp_path / variant[key]).read_bytes() == (out / "cases" / variant[key]).read_bytes(), variant[key]
