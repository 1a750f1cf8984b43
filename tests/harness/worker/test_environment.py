"""The GPU architecture as a dimension: named from the compute capability a cell observed, compared with the one the
target expects, and used to pick the upstream claim made on that architecture."""
import pytest

from harness.worker import record as rec
from harness.worker.backends.onnxruntime import OnnxRuntimeBackend
from harness.tensorrt.platforms import gpu_arch
from harness.worker.environment import arch_mismatch
from harness.worker.job import run_job

ISSUE = "https://github.com/NVIDIA/TensorRT/issues/4832"


class AmpereReportingBackend(OnnxRuntimeBackend):
    """Test double: ONNX Runtime on this CPU, reporting the GPU facts a TensorRT worker on an RTX 3090 (8.6) would."""

    def environment(self):
        return {**super().environment(), "compute_capability": "8.6", "gpu_arch": "sm_86"}


@pytest.mark.parametrize("capability, arch", [("8.7", "sm_87"), ("11.0", "sm_110"), ("7.5", "sm_75"),
                                              ("12.0", "sm_120"), (None, None), ("", None), ("8", None)])
def test_the_architecture_is_named_from_the_compute_capability(capability, arch):
    assert gpu_arch(capability) == arch


def test_only_a_named_architecture_is_checked():
    assert arch_mismatch("any", "sm_86") is None and arch_mismatch(None, None) is None
    assert arch_mismatch("sm_87", "sm_87") is None
    assert arch_mismatch("sm_87", "sm_86") == "expected GPU architecture sm_87, observed sm_86"
    assert "could not be observed" in arch_mismatch("sm_110", None)


def run(control_cases_dir, tmp_path, **target):
    records = []
    target = {"id": "trt-x", "backend": f"{__name__}:AmpereReportingBackend", **target}
    run_job({"target": target, "cases_dir": str(control_cases_dir), "cells": None, "jobs": 1, "timeout_s": 60,
             "work_dir": str(tmp_path)}, records.append)
    return records


def test_a_cell_on_another_architecture_than_the_target_expects_is_flagged(control_cases_dir, tmp_path):
    flagged = run(control_cases_dir, tmp_path / "a", gpu_arch="sm_87")
    assert flagged and all(r["env_mismatch"] == "expected GPU architecture sm_87, observed sm_86" for r in flagged)
    assert all(r["environment"]["gpu_arch"] == "sm_86" for r in flagged)  # the record holds what it ran on
    any_gpu = run(control_cases_dir, tmp_path / "b", gpu_arch="any")
    assert all(r["env_mismatch"] is None for r in any_gpu)


def claim(outcome, architecture=None):
    return {"target": "trt1016-x86", "outcome": outcome, "source": ISSUE, "strength": "issue-thread",
            "category": None, "note": "", **({"architecture": architecture} if architecture else {})}


def test_a_claim_naming_an_architecture_holds_only_for_cells_on_it_and_before_a_general_claim():
    """Claim.architecture is a compute capability ("8.7"), or one and every newer ("10.0+": Blackwell on)."""
    claims = [claim("pass"), claim("fail", "8.7")]
    assert rec.claim_for(claims, "trt1016-x86", "8.7")["outcome"] == "fail"
    assert rec.claim_for(claims, "trt1016-x86", "11.0")["outcome"] == "pass"
    assert rec.claim_for(claims, "trt1016-x86", None)["outcome"] == "pass"
    assert rec.claim_for([claim("fail", "8.7")], "trt1016-x86", "9.0") is None
    blackwell = [claim("fail", "10.0+")]
    assert [rec.claim_for(blackwell, "trt1016-x86", cc) is not None for cc in ("9.0", "10.0", "12.0", "11.0")] == [
        False, True, True, True]


def test_the_record_takes_the_claim_of_the_architecture_it_ran_on():
    cell = {"case": "p14", "variant": "as-reported", "mode": "explicit-qdq", "knobs": {}, "expected_int8": [],
            "claims": [claim("pass"), claim("fail", "8.7")]}
    target = {"id": "trt1016-x86", "backend": "tensorrt"}
    on_orin = rec.infra_error(cell, target, {"compute_capability": "8.7", "gpu_arch": "sm_87"}, "harness", "x")
    on_thor = rec.infra_error(cell, target, {"compute_capability": "11.0", "gpu_arch": "sm_110"}, "harness", "x")
    assert on_orin["expectation"]["outcome"] == "fail" and on_thor["expectation"]["outcome"] == "pass"
