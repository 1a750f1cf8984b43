"""What the TensorRT backend needs of the installed TensorRT and Polygraphy: every TensorRT name the package touches
(used unconditionally, or looked up by feature detection), TensorRT's major version, the Polygraphy releases it was
checked with, and the messages asking for either library."""
from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import Any

from harness.worker.backends.base import BackendFailure

POLYGRAPHY_MINIMUM = "0.49.9"  # oldest checked release whose NetworkFromOnnxPath takes plugin_instancenorm
# Oldest release checked against the TensorRT 11.4 contract stand-in: 0.49.x read APIs that 11.0 removed
# (IBuilderConfig.int8_calibrator, ILayer.precision_is_set) while building any engine.
POLYGRAPHY_MINIMUM_FOR_TENSORRT_11 = "0.50.3"

# Every TensorRT API the modules of this package touch themselves, as "Class.member" (the rest goes through
# Polygraphy). Used unconditionally: must exist in every supported version (checked against trt-api/*.json by the
# tests).
TENSORRT_API_REQUIRED = (
    "__version__",
    "get_nv_onnx_parser_version",
    "ILogger",
    "ILogger.__init__",
    "ILogger.log",
    "Builder",
    "Logger",
    "Logger.WARNING",
    "ProfilingVerbosity.DETAILED",
    "LayerInformationFormat.JSON",
    "OnnxParser.get_flag",
    "OnnxParser.flags",
    "INetworkDefinition.num_layers",
    "INetworkDefinition.get_layer",
    "INetworkDefinition.num_outputs",
    "INetworkDefinition.get_output",
    "INetworkDefinition.mark_output",
    "IBuilderConfig.set_flag",
    "ILayer.name",
    "ILayer.num_outputs",
    "ILayer.get_output",
    "ITensor.name",
    "ITensor.is_network_output",
    "ICudaEngine.create_engine_inspector",
    "ICudaEngine.profiling_verbosity",
    "EngineInspector.get_engine_information",
)
# Used only where present (feature detection through tensorrt_api / require_api).
TENSORRT_API_DETECTED = (
    "OnnxParserFlag.NATIVE_INSTANCENORM",
    "NetworkDefinitionCreationFlag.STRONGLY_TYPED",
    "BuilderFlag.INT8",
    "BuilderFlag.FP16",
    "BuilderFlag.FP8",
    "BuilderFlag.FP4",
    "BuilderFlag.OBEY_PRECISION_CONSTRAINTS",
    "BuilderFlag.PREFER_PRECISION_CONSTRAINTS",
    "IBuilderConfig.int8_calibrator",
    "IBuilderConfig.set_calibration_profile",
    "IInt8EntropyCalibrator2",
    "IInt8MinMaxCalibrator",
    "ILayer.precision",
    "DataType.INT8",
    "DataType.HALF",
    "DataType.FLOAT",
    "DataType.BF16",
    "DataType.FP8",
    "Builder.platform_has_fast_int8",
    "Builder.num_DLA_cores",
    "DeviceType.DLA",
    "IBuilderConfig.default_device_type",
    "IBuilderConfig.DLA_core",
    "BuilderFlag.GPU_FALLBACK",
    "IQuantizeLayer",
    "IDequantizeLayer",
)
# Implicit quantization: deprecated in 10.1, removed in 11.0 (with the calibrator classes, calibrator.CALIBRATOR_CLASSES).
IMPLICIT_QUANTIZATION_API = ("BuilderFlag.INT8", "IBuilderConfig.int8_calibrator")

_MISSING = object()


def tensorrt_api(trt, dotted: str) -> Any:
    """The object ``dotted`` names in the TensorRT module ("BuilderFlag.INT8"), or None where this version lacks it."""
    found = trt
    for part in dotted.split("."):
        found = getattr(found, part, _MISSING)
        if found is _MISSING:
            return None
    return found


def require_api(trt, dotted: str, purpose: str) -> Any:
    """``tensorrt_api``, or an ``unsupported-api`` failure naming the API, the version and what needed it."""
    found = tensorrt_api(trt, dotted)
    if found is None:
        raise BackendFailure(
            "unsupported-api",
            f"{dotted} is not in TensorRT {trt.__version__}: it is needed {purpose}. This version's Python API has no "
            f"such name, so the cell cannot be built as it asks on this version.",
        )
    return found


def major_version(trt) -> int:
    return int(str(trt.__version__).split(".")[0])


def polygraphy_problem_message(problem: str, minimum: str = POLYGRAPHY_MINIMUM) -> str:
    return (
        f"{problem}\nThe 'tensorrt' backend drives TensorRT through Polygraphy (NVIDIA's toolkit, "
        f"https://github.com/NVIDIA/TensorRT/tree/main/tools/Polygraphy). Install a release it was checked with: "
        f"`python -m pip install 'polygraphy>={minimum}'`."
    )


def tensorrt_missing_message(error: BaseException) -> str:
    return (
        f"The TensorRT Python bindings cannot be imported in this Python ({sys.executable}, Python "
        f"{sys.version.split()[0]}): {type(error).__name__}: {error}.\n"
        "The 'tensorrt' backend needs TensorRT and a GPU. Ways to get them:\n"
        "  * use a docker target of matrix.yaml (trt86-x86, trt100-x86, trt102-x86, trt86-orin, ...): the harness "
        "builds and starts the right container for you;\n"
        "  * run inside an NGC TensorRT container, e.g. nvcr.io/nvidia/tensorrt:24.05-py3 (TensorRT 10.0.1) or "
        "nvcr.io/nvidia/tensorrt:23.11-py3 (8.6.1), with --gpus all and the NVIDIA Container Toolkit; on Jetson "
        "(JetPack 6) nvcr.io/nvidia/l4t-jetpack:r36.3.0 with --runtime nvidia;\n"
        "  * on a host with an NVIDIA driver: `python -m pip install tensorrt` (PyPI's package fetches the real wheels "
        "from NVIDIA's index, https://pypi.nvidia.com, which must be reachable), plus "
        f"`python -m pip install 'polygraphy>={POLYGRAPHY_MINIMUM}'`.\n"
        "The 'trt-local' target only works where this Python already imports tensorrt. "
        "`trt-matrix doctor` shows what this environment has."
    )
