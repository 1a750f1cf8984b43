"""The INT8 calibrator of an implicit-int8 cell: Polygraphy's ``Calibrator`` on the TensorRT calibrator class the
cell chooses (``knobs.calibrator``), fed with the cell's calibration batches, its cache file in the cell's directory.

``trt`` is the TensorRT module, passed in (see the package docstring).
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from harness.worker.backends.tensorrt.compat import require_api
from harness.worker.backends.tensorrt.lazy import lazy_import

polygraphy_trt = lazy_import("polygraphy.backend.trt")

CALIBRATOR_CLASSES = {"entropy2": "IInt8EntropyCalibrator2", "minmax": "IInt8MinMaxCalibrator"}
DEFAULT_CALIBRATOR = "entropy2"


def calibrator_class_name(knobs: dict[str, Any]) -> str:
    """The TensorRT calibrator class a cell's knobs choose."""
    return CALIBRATOR_CLASSES[knobs.get("calibrator", DEFAULT_CALIBRATOR)]


def make_calibrator(trt, knobs: dict[str, Any], batches: list[dict[str, np.ndarray]],
                    cache: Path) -> tuple[Any, dict[str, Any]]:
    """The calibrator to attach to the builder config, and what it is for the record."""
    kind = knobs.get("calibrator", DEFAULT_CALIBRATOR)
    class_name = CALIBRATOR_CLASSES[kind]
    base_class = require_api(trt, class_name, f"for implicit INT8 calibration with the {kind} calibrator")
    calibrator = polygraphy_trt.Calibrator(batches, cache=str(cache), BaseClass=base_class)
    return calibrator, {"class": class_name, "batches": len(batches), "cache": str(cache)}
