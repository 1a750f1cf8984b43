"""The GPU architecture as a dimension: named from the compute capability a cell observed, compared with the one the
target expects, and used to pick the upstream claim made on that architecture."""
import pytest

from harness.worker import record as rec
from harness.worker.backends.onnxruntime import OnnxRuntimeBackend
from harness.worker.environment import arch_mismatch, gpu_arch
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


def claim(outcome, arch=None):
    return {"target": "trt1016-x86", "outcome": outcome, "source": ISSUE, "strength": "issue-thread",
            "category": None, "note": "", **({"arch": arch} if arch else {})}


def test_a_claim_naming_an_architecture_holds_only_for_cells_on_it_and_before_a_general_claim():
    claims = [claim("pass"), claim("fail", "sm_87")]
    assert rec.claim_for(claims, "trt1016-x86", "sm_87")["outcome"] == "fail"
    assert rec.claim_for(claims, "trt1016-x86", "sm_110")["outcome"] == "pass"
    assert rec.claim_for(claims, "trt1016-x86", None)["outcome"] == "pass"
    assert rec.claim_for([claim("fail", "sm_87")], "trt1016-x86", "sm_90") is None
