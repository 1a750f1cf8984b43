"""The INT8 calibrator of an implicit-int8 cell: Polygraphy's ``Calibrator`` on the TensorRT calibrator class the
cell chooses (``knobs.calibrator``), fed with the cell's calibration batches, its cache file in the cell's directory.

Two knobs change what it is handed:

* ``calibration_cache`` (a version and an algorithm): before the build the harness writes a cache in TensorRT's
  format with that header (:mod:`~harness.tensorrt.calibration_cache`), its scales from the ranges the
  case generator stored with the cell's data, and records how the header compares with the running TensorRT and
  calibrator; after the build, whether TensorRT used the file or calibrated and wrote its own. ``cache_only`` hands
  over no batches, as ``trtexec --calib=<cache>`` does.
* ``profiles`` / ``calibration_profile``: a network with dynamic inputs calibrates with one optimization profile at
  its kOPT shape (the calibration profile; without one, profile 0). :func:`calibration_plan` says which profile and
  shape, and refuses batches smaller than the shape TensorRT will read from them.

``trt`` is the TensorRT module, passed in (see the package docstring).
"""
from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np

from harness.tensorrt.calibration_cache import check_cache, scale_of_range, write_cache
from harness.worker.backends.tensorrt.compat import require_api
from harness.worker.backends.tensorrt.lazy import lazy_import

polygraphy_trt = lazy_import("polygraphy.backend.trt")

CALIBRATOR_CLASSES = {"entropy2": "IInt8EntropyCalibrator2", "minmax": "IInt8MinMaxCalibrator"}
DEFAULT_CALIBRATOR = "entropy2"
RANGE_NAMES, RANGE_VALUES = "calibration_ranges/names", "calibration_ranges/amax"  # keys in the cell's .npz


def calibrator_class_name(knobs: dict[str, Any]) -> str:
    """The TensorRT calibrator class a cell's knobs choose."""
    return CALIBRATOR_CLASSES[knobs.get("calibrator", DEFAULT_CALIBRATOR)]


def make_calibrator(trt, cell: dict[str, Any], batches: list[dict[str, np.ndarray]],
                    cache: Path) -> tuple[Any, dict[str, Any], bytes | None]:
    """The calibrator to attach to the builder config, what it is for the record, and the bytes of the cache handed
    to TensorRT (None when the cell hands none)."""
    knobs = cell["knobs"]
    kind = knobs.get("calibrator", DEFAULT_CALIBRATOR)
    class_name = CALIBRATOR_CLASSES[kind]
    base_class = require_api(trt, class_name, f"for implicit INT8 calibration with the {kind} calibrator")
    record: dict[str, Any] = {"class": class_name, "cache": str(cache)}
    handed = None
    if knobs.get("calibration_cache"):
        handed, record["handed_cache"] = hand_cache(trt, cell, cache)
    if knobs.get("cache_only"):
        batches = []
    record["batches"] = len(batches)
    calibrator = polygraphy_trt.Calibrator(batches, cache=str(cache), BaseClass=base_class)
    return calibrator, record, handed


def hand_cache(trt, cell: dict[str, Any], path: Path) -> tuple[bytes, dict[str, Any]]:
    """Write the cache the cell hands to TensorRT; return its bytes and how its header compares (for the record)."""
    version, algorithm = cell["knobs"]["calibration_cache"]["version"], cell["knobs"]["calibration_cache"]["algorithm"]
    header_version = trt.__version__ if version == "running" else version
    scales = {name: scale_of_range(amax) for name, amax in _calibration_ranges(cell).items()}
    written = write_cache(path, header_version, algorithm, scales)
    check = check_cache(written, trt.__version__, cell["knobs"].get("calibrator", DEFAULT_CALIBRATOR))
    record = {**check.to_dict(), "tensors": len(scales),
              "written_by_harness": "scales are the largest absolute values / 127 over the calibration batches (from "
                                    "the reference evaluation); the header is the variant's, not TensorRT's"}
    return Path(path).read_bytes(), record


def _calibration_ranges(cell: dict[str, Any]) -> dict[str, float]:
    with np.load(cell["data"], allow_pickle=False) as archive:
        if RANGE_NAMES not in archive.files:
            raise ValueError(
                f"{cell['data']}: cell {cell['case']}/{cell['variant']} hands TensorRT a calibration cache "
                f"(knobs.calibration_cache) but its data has no {RANGE_NAMES!r}: regenerate the cases with "
                "`trt-matrix generate`."
            )
        return dict(zip(archive[RANGE_NAMES].tolist(), archive[RANGE_VALUES].tolist()))


def calibration_plan(knobs: dict[str, Any], batches: list[dict[str, np.ndarray]]) -> dict[str, Any]:
    """Which optimization profile TensorRT calibrates with and at what shape, and how much of each batch that reads.

    TensorRT calibrates with the calibration profile, or profile 0 when none is set, at that profile's kOPT shape, and
    reads that much of each batch buffer (developer guide, "INT8 Calibration with Dynamic Shapes";
    https://github.com/NVIDIA/TensorRT/issues/2561). Batches for a calibration profile the cell sets must have its
    kOPT shape, as the guide asks; without one, batches at least as large are accepted (TensorRT reads their kOPT
    share, which is what such a cell shows). A batch smaller than kOPT would be read past its end: refused.
    """
    profiles = knobs.get("profiles") or []
    chosen = knobs.get("calibration_profile")
    used = 0 if chosen is None else chosen
    reads = {name: list(shapes["opt"]) for name, shapes in profiles[used].items()}
    handed = {name: list(array.shape) for name, array in batches[0].items()} if batches else {}
    share = {}
    for name, shape in reads.items():
        if name not in handed:
            continue
        if chosen is not None and handed[name] != shape:
            raise ValueError(
                f"knobs: calibration_profile {chosen} calibrates input {name!r} at kOPT {shape}, but the calibration "
                f"batches hold {handed[name]}: calibration data must have the calibration profile's kOPT shape."
            )
        if math.prod(handed[name]) < math.prod(shape):
            raise ValueError(
                f"knobs: TensorRT calibrates input {name!r} at kOPT {shape} of profile {used}, but the calibration "
                f"batches hold {handed[name]}: it would read past the end of each batch. Give batches at least that "
                "large (params['calibration_shapes']) or another calibration_profile."
            )
        share[name] = math.prod(shape) / math.prod(handed[name])
    return {
        "profile": used,
        "calibration_profile_set": chosen is not None,
        "why": ("knobs.calibration_profile" if chosen is not None else
                "no calibration profile set: TensorRT's default, profile 0 (it warns 'Calibration Profile is not "
                "defined. Calibrating with Profile 0')"),
        "tensorrt_reads": reads,
        "batches_handed": handed,
        "share_of_each_batch_read": share,
    }

