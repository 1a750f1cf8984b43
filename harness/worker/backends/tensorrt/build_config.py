"""The build stage's settings: arguments for Polygraphy's ``CreateConfig``, and what they mean for the record.

* Weakly typed networks get ``BuilderFlag.INT8``; implicit-int8 cells also a calibrator
  (:mod:`harness.worker.backends.tensorrt.calibrator`). Explicit Q/DQ cells get no calibrator. A strongly typed
  network gets no precision builder flags.
* ``fp16`` and ``precision_constraints`` knobs set their builder flags, where the version has them.
* ``ProfilingVerbosity.DETAILED`` always (per-layer precision needs it). TF32 is set on, as TensorRT's builder and
  trtexec have it by default (Polygraphy's default is off); it only touches layers that fall back to FP32.

``trt`` is the TensorRT module, passed in (see the package docstring).
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from harness.worker.backends.tensorrt.calibrator import make_calibrator
from harness.worker.backends.tensorrt.compat import require_api

PRECISION_CONSTRAINT_FLAGS = {"obey": "BuilderFlag.OBEY_PRECISION_CONSTRAINTS",
                              "prefer": "BuilderFlag.PREFER_PRECISION_CONSTRAINTS"}


def config_settings(trt, cell: dict[str, Any], strongly_typed: bool, calibration_cache: Path,
                    calibration: list[dict[str, np.ndarray]]) -> tuple[dict[str, Any], dict[str, Any]]:
    """Arguments for polygraphy's CreateConfig, and what they mean for the record."""
    knobs = cell["knobs"]
    arguments: dict[str, Any] = {"tf32": True, "profiling_verbosity": trt.ProfilingVerbosity.DETAILED}
    record: dict[str, Any] = {"tf32": True, "profiling_verbosity": "DETAILED"}
    if strongly_typed:
        record["int8"] = "from the graph's Q/DQ nodes (strongly typed: no precision flags)"
    else:
        arguments["int8"] = record["int8"] = True
    if knobs.get("fp16"):
        require_api(trt, "BuilderFlag.FP16", "for the knob fp16=True")
        arguments["fp16"] = record["fp16"] = True
    constraints = knobs.get("precision_constraints")
    if constraints:
        require_api(trt, PRECISION_CONSTRAINT_FLAGS[constraints], f"for the knob precision_constraints={constraints!r}")
        arguments["precision_constraints"] = record["precision_constraints"] = constraints
    if cell["mode"] == "implicit-int8":
        arguments["calibrator"], record["calibrator"] = make_calibrator(trt, knobs, calibration, calibration_cache)
    else:
        record["calibrator"] = None
    return arguments, record
