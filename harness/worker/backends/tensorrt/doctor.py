"""The TensorRT section of ``trt-matrix doctor``: TensorRT, Polygraphy, the GPU, and which build modes this
TensorRT offers."""
from __future__ import annotations

from typing import Any

from harness.worker.backends.base import EnvironmentProblem
from harness.worker.backends.tensorrt.backend import TensorRTBackend
from harness.worker.backends.tensorrt.calibrator import CALIBRATOR_CLASSES
from harness.worker.backends.tensorrt.compat import (
    IMPLICIT_QUANTIZATION_API,
    major_version,
    tensorrt_api,
    tensorrt_missing_message,
)
from harness.worker.backends.tensorrt.gpu import probe_gpu
from harness.worker.backends.tensorrt.lazy import lazy_import, resolve
from harness.worker.environment import nvidia_gpus

tensorrt = lazy_import("tensorrt")
polygraphy = lazy_import("polygraphy")


def build_modes(trt) -> dict[str, dict[str, Any]]:
    """Which of the matrix's build modes this TensorRT offers, by feature detection."""
    implicit_missing = [api for api in IMPLICIT_QUANTIZATION_API + tuple(CALIBRATOR_CLASSES.values())
                        if tensorrt_api(trt, api) is None]
    implicit = {"available": not implicit_missing}
    if implicit_missing:
        implicit["why"] = f"absent: {', '.join(implicit_missing)} (removed in 11.0)"
    elif (major_version(trt), int(str(trt.__version__).split(".")[1])) >= (10, 1):
        implicit["why"] = "deprecated since 10.1: expect DeprecationWarnings"
    explicit_missing = [api for api in ("IQuantizeLayer", "IDequantizeLayer") if tensorrt_api(trt, api) is None]
    explicit = {"available": not explicit_missing}
    if explicit_missing:
        explicit["why"] = f"absent: {', '.join(explicit_missing)}"
    strongly_typed = {"available": tensorrt_api(trt, "NetworkDefinitionCreationFlag.STRONGLY_TYPED") is not None}
    if not strongly_typed["available"]:
        strongly_typed["why"] = "absent: NetworkDefinitionCreationFlag.STRONGLY_TYPED"
    return {"implicit-int8": implicit, "explicit-qdq": explicit, "strongly-typed": strongly_typed}


def tensorrt_doctor() -> dict[str, Any]:
    """For ``trt-matrix doctor``: TensorRT, Polygraphy, GPU and build modes here. Never raises."""
    report: dict[str, Any] = {}
    try:
        trt = resolve(tensorrt)
    except Exception as err:
        report["tensorrt"] = {"importable": False, "error": tensorrt_missing_message(err)}
        return report
    report["tensorrt"] = {"importable": True, "version": trt.__version__, "module": getattr(trt, "__file__", None)}
    backend = TensorRTBackend({"id": "doctor", "backend": "tensorrt"})
    try:
        backend.preload()
        report["polygraphy"] = {"usable": True, "version": polygraphy.__version__}
    except EnvironmentProblem as err:
        report["polygraphy"] = {"usable": False, "error": str(err)}
    for key, read in (("build_modes", lambda: build_modes(trt)), ("gpu", probe_gpu), ("nvidia_smi", nvidia_gpus)):
        try:
            report[key] = read()
        except Exception as err:
            report[key] = {"error": f"{type(err).__name__}: {err}"}
    return report
