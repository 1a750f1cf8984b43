"""What the TensorRT backend needs of the installed TensorRT and Polygraphy: TensorRT names looked up by feature
detection, TensorRT's major version, the Polygraphy releases it was checked with and the message asking for one."""
from __future__ import annotations

from typing import Any

POLYGRAPHY_MINIMUM = "0.49.9"  # oldest checked release whose NetworkFromOnnxPath takes plugin_instancenorm
# Oldest release checked against the TensorRT 11.4 contract stand-in: 0.49.x read APIs that 11.0 removed
# (IBuilderConfig.int8_calibrator, ILayer.precision_is_set) while building any engine.
POLYGRAPHY_MINIMUM_FOR_TENSORRT_11 = "0.50.3"

_MISSING = object()


def tensorrt_api(trt, dotted: str) -> Any:
    """The object ``dotted`` names in the TensorRT module ("BuilderFlag.INT8"), or None where this version lacks it."""
    found = trt
    for part in dotted.split("."):
        found = getattr(found, part, _MISSING)
        if found is _MISSING:
            return None
    return found


def major_version(trt) -> int:
    return int(str(trt.__version__).split(".")[0])


def polygraphy_problem_message(problem: str, minimum: str = POLYGRAPHY_MINIMUM) -> str:
    return (
        f"{problem}\nThe 'tensorrt' backend drives TensorRT through Polygraphy (NVIDIA's toolkit, "
        f"https://github.com/NVIDIA/TensorRT/tree/main/tools/Polygraphy). Install a release it was checked with: "
        f"`python -m pip install 'polygraphy>={minimum}'`."
    )
