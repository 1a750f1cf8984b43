"""Feature detection, and the install advice a user without TensorRT or with the wrong
Polygraphy reads (in full: it is the first thing such a user sees)."""
import sys

import pytest

from harness.worker.backends.base import BackendFailure
from harness.worker.backends.tensorrt.compat import (
    major_version,
    polygraphy_problem_message,
    require_api,
    tensorrt_api,
    tensorrt_missing_message,
)
from tests.trt_contract.standin import ContractStandIn


def test_feature_detection_finds_nested_names_and_none_for_missing_ones():
    trt = ContractStandIn.for_version("10.3.0").module
    assert tensorrt_api(trt, "BuilderFlag.INT8") is trt.BuilderFlag.INT8
    assert tensorrt_api(trt, "IBuilderConfig") is trt.IBuilderConfig
    assert tensorrt_api(trt, "BuilderFlag.NO_SUCH_FLAG") is None
    assert tensorrt_api(trt, "NoSuchClass.INT8") is None
    assert major_version(trt) == 10 and major_version(ContractStandIn.for_version("8.6.1").module) == 8


def test_require_api_names_the_api_the_version_and_the_purpose():
    trt = ContractStandIn.for_version("11.4.0.106").module
    assert require_api(trt, "DataType.HALF", "for a test") is trt.DataType.HALF
    with pytest.raises(BackendFailure) as failure:
        require_api(trt, "BuilderFlag.INT8", "for the knob x")
    assert failure.value.category == "unsupported-api"
    assert failure.value.message == (
        "BuilderFlag.INT8 is not in TensorRT 11.4.0.106: it is needed for the knob x. This version's Python API has "
        "no such name, so the cell cannot be built as it asks on this version.")


def test_the_advice_when_tensorrt_cannot_be_imported():
    message = tensorrt_missing_message(ImportError("No module named 'tensorrt'"))
    assert message.splitlines() == [
        f"The TensorRT Python bindings cannot be imported in this Python ({sys.executable}, Python "
        f"{sys.version.split()[0]}): ImportError: No module named 'tensorrt'.",
        "The 'tensorrt' backend needs TensorRT and a GPU. Ways to get them:",
        "  * use a docker target of matrix.yaml (trt86-x86, trt100-x86, trt102-x86, trt86-orin, ...): the harness "
        "builds and starts the right container for you;",
        "  * run inside an NGC TensorRT container, e.g. nvcr.io/nvidia/tensorrt:24.05-py3 (TensorRT 10.0.1) or "
        "nvcr.io/nvidia/tensorrt:23.11-py3 (8.6.1), with --gpus all and the NVIDIA Container Toolkit; on Jetson "
        "(JetPack 6) nvcr.io/nvidia/l4t-jetpack:r36.3.0 with --runtime nvidia;",
        "  * on a host with an NVIDIA driver: `python -m pip install tensorrt` (PyPI's package fetches the real wheels "
        "from NVIDIA's index, https://pypi.nvidia.com, which must be reachable), plus "
        "`python -m pip install 'polygraphy>=0.49.9'`.",
        "The 'trt-local' target only works where this Python already imports tensorrt. "
        "`trt-matrix doctor` shows what this environment has.",
    ]


def test_the_advice_when_polygraphy_does_not_fit():
    assert polygraphy_problem_message("Polygraphy is too old.", "0.50.3").splitlines() == [
        "Polygraphy is too old.",
        "The 'tensorrt' backend drives TensorRT through Polygraphy (NVIDIA's toolkit, "
        "https://github.com/NVIDIA/TensorRT/tree/main/tools/Polygraphy). Install a release it was checked with: "
        "`python -m pip install 'polygraphy>=0.50.3'`.",
    ]
    assert polygraphy_problem_message("x").endswith("`python -m pip install 'polygraphy>=0.49.9'`.")
