"""Without TensorRT (as on this machine) the backend imports, and says clearly what is missing and where to get it."""
import sys

import pytest

from harness.matrix import load_matrix
from harness.store.results_file import validate_record
from harness.worker.backends.base import EnvironmentProblem
from harness.worker.backends.tensorrt.backend import TensorRTBackend
from harness.worker.job import run_job
from harness.worker.backends.tensorrt.doctor import tensorrt_doctor
from tests.trt_contract.standin import ContractStandIn, installed_as_tensorrt


@pytest.fixture()
def no_tensorrt(monkeypatch):
    """``import tensorrt`` fails here whatever this machine has installed."""
    monkeypatch.setitem(sys.modules, "tensorrt", None)


@pytest.fixture()
def trt_local():
    return load_matrix()["trt-local"].to_job()


def test_the_backend_module_imports_without_tensorrt_or_polygraphy(no_tensorrt, monkeypatch, trt_local):
    monkeypatch.setitem(sys.modules, "polygraphy", None)
    backend = TensorRTBackend(trt_local)
    assert backend.name == "tensorrt"


def test_preload_without_tensorrt_says_what_to_install_and_where(no_tensorrt, trt_local):
    with pytest.raises(EnvironmentProblem) as problem:
        TensorRTBackend(trt_local).preload()
    message = str(problem.value)
    assert "TensorRT Python bindings cannot be imported" in message and sys.executable in message
    assert f"{type(problem.value.__cause__).__name__}: {problem.value.__cause__}." in message  # the import's error
    assert "nvcr.io/nvidia/tensorrt:24.05-py3" in message and "l4t-jetpack" in message
    assert "python -m pip install tensorrt" in message and "polygraphy>=" in message
    assert "trt100-x86" in message and "trt-matrix doctor" in message


def test_preload_without_polygraphy_says_how_to_install_it(monkeypatch, trt_local):
    with installed_as_tensorrt(ContractStandIn.for_version("10.3.0")):
        monkeypatch.setitem(sys.modules, "polygraphy", None)
        expected = (r"(?s)Polygraphy cannot be imported in this Python \(.*\): ModuleNotFoundError: .*"
                    r"pip install 'polygraphy>=0\.49\.9'")
        with pytest.raises(EnvironmentProblem, match=expected):
            TensorRTBackend(trt_local).preload()


def test_preload_rejects_a_polygraphy_that_cannot_clear_native_instancenorm(monkeypatch, trt_local):
    with installed_as_tensorrt(ContractStandIn.for_version("10.3.0")):
        from polygraphy.backend.trt import NetworkFromOnnxPath

        monkeypatch.setattr(NetworkFromOnnxPath, "__init__", lambda self, path, flags=None, strongly_typed=None: None)
        with pytest.raises(EnvironmentProblem) as problem:
            TensorRTBackend(trt_local).preload()
    assert str(problem.value).splitlines()[0].endswith(
        "is too old: its NetworkFromOnnxPath cannot clear the ONNX parser's NATIVE_INSTANCENORM flag (no "
        "plugin_instancenorm argument), which every cell sets explicitly.")


def test_preload_rejects_a_polygraphy_older_than_tensorrt_11(monkeypatch, trt_local):
    with installed_as_tensorrt(ContractStandIn.for_version("11.4.0.106")):
        import polygraphy

        monkeypatch.setattr(polygraphy, "__version__", "0.49.26")
        with pytest.raises(EnvironmentProblem, match=r"(?s)predates TensorRT 11\.4\.0\.106.*polygraphy>=0\.50\.3"):
            TensorRTBackend(trt_local).preload()


def test_doctor_without_tensorrt_reports_instead_of_raising(no_tensorrt):
    report = tensorrt_doctor()
    assert report["tensorrt"]["importable"] is False
    assert "nvcr.io/nvidia/tensorrt" in report["tensorrt"]["error"]


def test_a_job_on_trt_local_without_tensorrt_is_infra_error_with_the_reason(no_tensorrt, control_cases_dir, tmp_path,
                                                                             trt_local):
    records = []
    run_job({"target": trt_local, "cases_dir": str(control_cases_dir), "cells": None, "jobs": 1, "timeout_s": 60,
             "work_dir": str(tmp_path)}, records.append)
    assert len(records) == 3
    for record in records:
        validate_record(record)
        assert record["outcome"] == "infra-error" and record["stage"] == "generate"
        assert record["failure"]["category"] == "environment"
        assert "'tensorrt' of target 'trt-local' could not start" in record["failure"]["message"]
        assert "nvcr.io/nvidia/tensorrt" in record["failure"]["message"]
        assert record["agrees"] is None
