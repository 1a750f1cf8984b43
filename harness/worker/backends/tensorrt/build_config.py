"""The build stage's settings: arguments for Polygraphy's ``CreateConfig``, and what they mean for the record.

* Weakly typed networks of implicit-int8 and explicit-qdq cells get ``BuilderFlag.INT8``; implicit-int8 cells also a
  calibrator (:mod:`harness.worker.backends.tensorrt.calibrator`). Explicit Q/DQ cells get no calibrator. A ``float``
  cell (no Q/DQ, no calibrator) gets neither: its precision is asked for by its knobs or its graph's types only. A
  strongly typed network gets no precision builder flags.
* ``fp16``, ``fp8`` (``BuilderFlag.FP8``), ``fp4`` (``BuilderFlag.FP4``, set by the harness after ``CreateConfig``,
  which has no argument for it) and ``precision_constraints`` knobs set their builder flags. A cell whose fp8 or fp4
  knob names a flag its version lacks is unavailable (:func:`precision_flags_missing`). On a version with strongly
  typed networks only (11.x: no ``BuilderFlag.FP16``) the fp16 request cannot be expressed: the record says so and
  the graph's own types decide, so an FP32 graph builds FP32, P15's TensorRT 11 form, which only a GPU's inspector
  shows as a fallback (fp16 -> fp32).
* ``ProfilingVerbosity.DETAILED`` always (per-layer precision needs it). TF32 is set on, as TensorRT's builder and
  trtexec have it by default (Polygraphy's default is off); it only touches layers that fall back to FP32.
* A DLA core (the target's ``dla_core``, GPU fallback allowed; or the cell's ``dla_core`` and ``gpu_fallback`` knobs):
  Polygraphy's ``use_dla`` and ``allow_gpu_fallback``, which set ``IBuilderConfig.default_device_type =
  DeviceType.DLA``, ``DLA_core = 0`` and ``BuilderFlag.GPU_FALLBACK`` where allowed (and, before 11.0,
  ``PREFER_PRECISION_CONSTRAINTS``; ``DIRECT_IO`` without fallback); another core is set by the harness after
  ``CreateConfig``.
* ``profiles``: the optimization profiles of a network with dynamic inputs, in the knob's order. Polygraphy's
  ``CreateConfig`` would make its last profile the calibration profile; so for such a cell the harness attaches the
  calibrator itself after ``CreateConfig`` and sets the calibration profile only where the cell names one
  (``calibration_profile``), leaving TensorRT's default (profile 0) otherwise, as a user who sets none.

``trt`` is the TensorRT module, passed in (see the package docstring).
"""
from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import numpy as np

from harness.worker.backends.tensorrt.calibrator import calibration_plan, make_calibrator
from harness.tensorrt.versions import version_tuple
from harness.worker.backends.tensorrt.compat import require_api, tensorrt_api
from harness.worker.backends.tensorrt.lazy import lazy_import

polygraphy_trt = lazy_import("polygraphy.backend.trt")

DLA_API = ("DeviceType.DLA", "IBuilderConfig.default_device_type", "IBuilderConfig.DLA_core",
           "BuilderFlag.GPU_FALLBACK")  # the last one only where GPU fallback is allowed
POLYGRAPHY_DLA_CORE = 0  # the core Polygraphy's use_dla sets
PRECISION_CONSTRAINT_FLAGS = {"obey": "BuilderFlag.OBEY_PRECISION_CONSTRAINTS",
                              "prefer": "BuilderFlag.PREFER_PRECISION_CONSTRAINTS"}
# Precision knobs whose builder flag must exist for the cell to exist on a version (else it is unavailable).
PRECISION_FLAG_KNOBS = {"fp8": "BuilderFlag.FP8", "fp4": "BuilderFlag.FP4"}
QUANTIZED_MODES = ("implicit-int8", "explicit-qdq")  # the modes whose weakly typed builds get BuilderFlag.INT8


def precision_flags_missing(trt, knobs: dict[str, Any]) -> str | None:
    """Why a cell's fp8/fp4 knob cannot be expressed on this version (its builder flag is absent), or None."""
    missing = [flag for knob, flag in PRECISION_FLAG_KNOBS.items()
               if knobs.get(knob) and tensorrt_api(trt, flag) is None]
    if not missing:
        return None
    only_strong = tensorrt_api(trt, "BuilderFlag.INT8") is None
    return (f"Unsupported: {', '.join(missing)} {'is' if len(missing) == 1 else 'are'} not in TensorRT "
            f"{trt.__version__}, and the cell asks for {' and '.join(k for k in PRECISION_FLAG_KNOBS if knobs.get(k))} "
            "through a builder flag. " + (
                "This version builds strongly typed networks only: FP8 and FP4 come from the graph's Q/DQ nodes."
                if only_strong else "The flag arrived in a later version (BuilderFlag.FP4: TensorRT 10.8)."))


@dataclasses.dataclass
class BuildConfig:
    """How the builder config of a cell is made, and what it means for the record."""

    arguments: dict[str, Any]  # for Polygraphy's CreateConfig
    record: dict[str, Any]
    calibrator: Any = None  # attached by the harness after CreateConfig (cells with optimization profiles)
    calibration_profile: Any = None  # the Polygraphy Profile set as calibration profile by the harness, if any
    handed_cache: bytes | None = None  # the calibration cache handed to TensorRT, as written
    dla_core: int | None = None  # a DLA core other than Polygraphy's, set by the harness after CreateConfig
    flags: list[Any] = dataclasses.field(default_factory=list)  # builder flags CreateConfig has no argument for

    def loader(self, trt):
        """What ``EngineBytesFromNetwork`` takes as its config: CreateConfig, or CreateConfig and then the harness's
        builder flags, calibrator and calibration profile."""
        create = polygraphy_trt.CreateConfig(**self.arguments)
        if self.calibrator is None and self.dla_core is None and not self.flags:
            return create
        set_profile = None
        if self.calibration_profile is not None:
            set_profile = require_api(trt, "IBuilderConfig.set_calibration_profile", "for knobs.calibration_profile")

        def config(builder, network):
            built = create(builder, network)
            if self.dla_core is not None:
                built.DLA_core = self.dla_core
            for flag in self.flags:
                built.set_flag(flag)
            if self.calibrator is not None:
                built.int8_calibrator = self.calibrator
            if set_profile is not None:
                set_profile(built, self.calibration_profile.to_trt(builder, network))
            return built

        return config


def config_settings(trt, cell: dict[str, Any], strongly_typed: bool, calibration_cache: Path,
                    calibration: list[dict[str, np.ndarray]], dla_core: int | None = None,
                    gpu_fallback: bool = False) -> BuildConfig:
    """The builder config of ``cell`` (CreateConfig arguments, calibrator, profiles, DLA core) and its record."""
    knobs = cell["knobs"]
    arguments: dict[str, Any] = {"tf32": True, "profiling_verbosity": trt.ProfilingVerbosity.DETAILED}
    record: dict[str, Any] = {"tf32": True, "profiling_verbosity": "DETAILED"}
    built = BuildConfig(arguments, record)
    if strongly_typed:
        record["int8"] = "from the graph's Q/DQ nodes (strongly typed: no precision flags)"
    elif cell["mode"] in QUANTIZED_MODES:
        arguments["int8"] = record["int8"] = True
    else:
        record["int8"] = "not set: a float cell asks for no INT8 (no Q/DQ, no calibrator)"
    if knobs.get("fp16"):
        if strongly_typed and tensorrt_api(trt, "BuilderFlag.FP16") is None:
            record["fp16"] = {
                "asked": True, "set": False,
                "why": f"TensorRT {trt.__version__} has no BuilderFlag.FP16 (strongly typed networks only): the "
                       "request cannot be expressed, the graph's own types decide (an FP32 graph builds FP32)"}
        else:
            require_api(trt, "BuilderFlag.FP16", "for the knob fp16=True")
            arguments["fp16"] = record["fp16"] = True
    if knobs.get("fp8"):
        require_api(trt, PRECISION_FLAG_KNOBS["fp8"], "for the knob fp8=True")
        arguments["fp8"] = record["fp8"] = True
    if knobs.get("fp4"):
        built.flags.append(require_api(trt, PRECISION_FLAG_KNOBS["fp4"], "for the knob fp4=True"))
        record["fp4"] = True
    constraints = knobs.get("precision_constraints")
    if constraints:
        require_api(trt, PRECISION_CONSTRAINT_FLAGS[constraints], f"for the knob precision_constraints={constraints!r}")
        arguments["precision_constraints"] = record["precision_constraints"] = constraints
    if dla_core is not None:
        for api in DLA_API if gpu_fallback else DLA_API[:-1]:
            require_api(trt, api, f"to build for DLA core {dla_core} (the target's or the cell's dla_core)")
        arguments["use_dla"], arguments["allow_gpu_fallback"] = True, gpu_fallback
        built.dla_core = None if dla_core == POLYGRAPHY_DLA_CORE else dla_core
        record["dla"] = {"default_device_type": "DeviceType.DLA", "DLA_core": dla_core, "gpu_fallback": gpu_fallback}
        if version_tuple(trt.__version__) < (11,):  # Polygraphy's use_dla adds it before 11.0, unasked
            record["dla"]["also_set_by_polygraphy"] = "BuilderFlag.PREFER_PRECISION_CONSTRAINTS"
    profiles = knobs.get("profiles") or []
    if profiles:
        arguments["profiles"] = [_polygraphy_profile(profile) for profile in profiles]
        record["profiles"] = profiles
    if cell["mode"] != "implicit-int8":
        record["calibrator"] = None
        return built
    calibrator, record["calibrator"], built.handed_cache = make_calibrator(trt, cell, calibration, calibration_cache)
    if not profiles:
        arguments["calibrator"] = calibrator
        return built
    record["calibration"] = calibration_plan(knobs, [] if knobs.get("cache_only") else calibration)
    # Not marked as Polygraphy's: EngineBytesFromNetwork would otherwise read the calibration profile back to check
    # batch shapes, which fails on a network with no calibration profile set; calibration_plan checks them instead.
    calibrator.is_polygraphy_calibrator = False
    built.calibrator = calibrator
    if knobs.get("calibration_profile") is not None:
        built.calibration_profile = arguments["profiles"][knobs["calibration_profile"]]
    record["calibrator_attached_by"] = "the harness, after CreateConfig (so no calibration profile is set unless the " \
                                       "cell names one)"
    return built


def _polygraphy_profile(profile: dict[str, dict[str, list[int]]]):
    built = polygraphy_trt.Profile()
    for name, shapes in profile.items():
        built.add(name, min=shapes["min"], opt=shapes["opt"], max=shapes["max"])
    return built
