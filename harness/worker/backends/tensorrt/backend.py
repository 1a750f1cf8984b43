"""TensorRT backend: each cell is parsed, built, inspected and run with the real TensorRT Python API, via Polygraphy.

The backend is thin on purpose: Polygraphy's loaders do the TensorRT calls (``NetworkFromOnnxPath``, ``CreateConfig``,
``Calibrator``, ``EngineBytesFromNetwork``, ``engine_from_bytes``, ``TrtRunner``); the modules of this package decide
the settings of each cell, set every one of them explicitly, record them (``details["tensorrt_calls"]``), and this
module runs the stages and turns what TensorRT said into a record:

* parse: :mod:`~harness.worker.backends.tensorrt.network` (parser flags, strong typing, extra outputs, layer
  precisions);
* build: :mod:`~harness.worker.backends.tensorrt.build_config` (builder flags, optimization profiles) and
  :mod:`~harness.worker.backends.tensorrt.calibrator` (implicit INT8: calibrator, handed calibration cache,
  calibration profile); afterwards the record says what the build did with the cache file
  (:mod:`~harness.tensorrt.calibration_cache`) and where the version stands in implicit
  quantization's lifecycle (:mod:`~harness.tensorrt.quantization_lifecycle`: a DeprecationWarning is
  expected from 10.1);
* inspect: per-layer precision from the engine inspector, else the verbose log
  (:mod:`~harness.tensorrt.layers`); on a DLA target or cell (``dla_core``), where each node ran,
  DLA or GPU fallback, from the builder's lists (:mod:`~harness.tensorrt.devices`);
* infer: Polygraphy's ``TrtRunner``.

Versions: every API is found by feature detection on the imported module
(:func:`~harness.worker.backends.tensorrt.compat.tensorrt_api`); the only version gate is the NATIVE_INSTANCENORM
default. A cell that needs an API its version lacks ends as ``unsupported-api`` naming the API; implicit-int8 cells
on a TensorRT without implicit quantization (11.x), cells whose fp8/fp4 knob names a builder flag the version lacks,
and every cell of a DLA target on a release or device without DLA (:mod:`~harness.tensorrt.release_facts`,
``Builder.num_DLA_cores``) are unavailable.

Logs: each cell's TensorRT messages, Python warnings and Polygraphy messages are captured to files in the cell's
directory by :mod:`~harness.worker.backends.tensorrt.capture`; a failed stage is classified from those logs by
:mod:`~harness.tensorrt.classify`.

Nothing here touches CUDA in the calling process; GPU facts are read in a forked child
(:mod:`~harness.worker.backends.tensorrt.gpu`), because a process that has initialised CUDA cannot hand it to the cell
processes it forks.
"""
from __future__ import annotations

import dataclasses
import inspect
import json
import sys
from pathlib import Path
from typing import Any

import numpy as np

from harness.tensorrt import classify, devices, layers
from harness.tensorrt.calibration_cache import after_build
from harness.tensorrt.quantization_lifecycle import REMOVED, implicit_quantization
from harness.tensorrt.release_facts import dla_absent
from harness.tensorrt.signatures import LogSignatures
from harness.tensorrt.versions import version_tuple
from harness.worker.backends.base import Backend, BackendFailure, EnvironmentProblem, Execution, StageTracker
from harness.worker.backends.tensorrt.build_config import config_settings, precision_flags_missing
from harness.worker.backends.tensorrt.calibrator import calibrator_class_name
from harness.worker.backends.tensorrt.capture import CellCapture
from harness.worker.backends.tensorrt.compat import (
    IMPLICIT_QUANTIZATION_API,
    POLYGRAPHY_MINIMUM_FOR_TENSORRT_11,
    major_version,
    polygraphy_problem_message,
    tensorrt_api,
    tensorrt_missing_message,
)
from harness.worker.backends.tensorrt.gpu import probe_gpu
from harness.worker.backends.tensorrt.lazy import lazy_import, resolve
from harness.worker.backends.tensorrt.network import mark_extra_outputs, network_settings, set_layer_precisions

tensorrt = lazy_import("tensorrt")
polygraphy = lazy_import("polygraphy")
polygraphy_trt = lazy_import("polygraphy.backend.trt")
polygraphy_exception = lazy_import("polygraphy.exception")
onnx = lazy_import("onnx")

STAGE_FAILURE_DEFAULTS = {"parse": "parser"}  # when the log names no cause; other stages: runtime-error
NOT_AVAILABLE_IN_POLYGRAPHY = "is not available on TensorRT version"  # polygraphy's message for a missing API


# ---- the backend ---------------------------------------------------------------------------------------------------


class TensorRTBackend(Backend):
    name = "tensorrt"
    dla_cores: int | None = None  # DLA cores the GPU probe counted (environment()); None: not probed or not known

    def preload(self) -> None:
        try:
            trt = resolve(tensorrt)
        except Exception as err:  # ImportError, or OSError when libnvinfer is missing
            raise EnvironmentProblem(tensorrt_missing_message(err)) from err
        try:
            NetworkFromOnnxPath = polygraphy_trt.NetworkFromOnnxPath
        except Exception as err:
            raise EnvironmentProblem(polygraphy_problem_message(
                f"Polygraphy cannot be imported in this Python ({sys.executable}): {type(err).__name__}: {err}."
            )) from err
        if "plugin_instancenorm" not in inspect.signature(NetworkFromOnnxPath.__init__).parameters:
            raise EnvironmentProblem(polygraphy_problem_message(
                f"Polygraphy {polygraphy.__version__} is too old: its NetworkFromOnnxPath cannot clear the ONNX "
                "parser's NATIVE_INSTANCENORM flag (no plugin_instancenorm argument), which every cell sets explicitly."
            ))
        too_old_for_11 = version_tuple(polygraphy.__version__) < version_tuple(POLYGRAPHY_MINIMUM_FOR_TENSORRT_11)
        if major_version(trt) >= 11 and too_old_for_11:
            raise EnvironmentProblem(polygraphy_problem_message(
                f"Polygraphy {polygraphy.__version__} predates TensorRT {trt.__version__}: it reads APIs that TensorRT "
                "11.0 removed (IBuilderConfig.int8_calibrator, ILayer.precision_is_set) while building any engine.",
                POLYGRAPHY_MINIMUM_FOR_TENSORRT_11,
            ))

    def environment(self) -> dict[str, Any]:
        trt = resolve(tensorrt)
        gpu = probe_gpu()
        self.dla_cores = gpu.get("dla_cores")
        return {
            "tensorrt_version": trt.__version__,
            "tensorrt_module": getattr(trt, "__file__", None),
            "onnx_parser_version": trt.get_nv_onnx_parser_version(),
            "polygraphy_version": polygraphy.__version__,
            **gpu,
        }

    def unavailable_reason(self, cell: dict[str, Any]) -> str | None:
        return (precision_flags_missing(resolve(tensorrt), cell["knobs"]) or self._implicit_quantization_gone(cell)
                or self._dla_missing(cell))

    def dla_build(self, cell: dict[str, Any]) -> tuple[int | None, bool]:
        """(DLA core, GPU fallback allowed) of ``cell``: the cell's knobs ``dla_core``/``gpu_fallback`` or
        ``gpu_only`` (a case that is about DLA chooses its device), else the target's ``dla_core`` with GPU fallback
        allowed; (None, False): a GPU build."""
        knobs = cell["knobs"]
        if knobs.get("gpu_only"):
            return None, False
        if knobs.get("dla_core") is not None:
            return knobs["dla_core"], bool(knobs.get("gpu_fallback"))
        core = self.target.get("dla_core")
        return core, core is not None

    def _dla_missing(self, cell: dict[str, Any]) -> str | None:
        """Why a DLA cell cannot exist here: a release without DLA on this platform (documented), or a device whose
        TensorRT counts no DLA core (observed)."""
        core, _ = self.dla_build(cell)
        if core is None:
            return None
        trt = resolve(tensorrt)
        fact = dla_absent(trt.__version__, self.target.get("platform"))
        if fact is not None:
            return f"Unavailable: DLA core {core} was asked for. {fact.cited()}"
        if self.dla_cores is not None and core >= self.dla_cores:
            return (f"Unavailable: DLA core {core} was asked for, and TensorRT {trt.__version__} counts "
                    f"{self.dla_cores} DLA core(s) on this device (Builder.num_DLA_cores): no DLA to build for here.")
        return None

    def _implicit_quantization_gone(self, cell: dict[str, Any]) -> str | None:
        if cell["mode"] != "implicit-int8":
            return None
        trt = resolve(tensorrt)
        calibrator = calibrator_class_name(cell["knobs"])
        missing = [api for api in IMPLICIT_QUANTIZATION_API + (calibrator,) if tensorrt_api(trt, api) is None]
        if not missing:
            return None
        lifecycle = implicit_quantization(trt.__version__)
        why = lifecycle.reason if lifecycle.status == REMOVED else (
            "TensorRT deprecated implicit quantization in 10.1 and removed it in 11.0 in favour of explicit Q/DQ.")
        return (
            f"Unsupported: implicit INT8 quantization (BuilderFlag.INT8 with a calibrator) is not in TensorRT "
            f"{trt.__version__}: {', '.join(missing)} are absent from its Python API. {why} Sources: "
            + ", ".join(lifecycle.sources)
        )

    def run(self, cell: dict[str, Any], arrays: dict[str, Any], workdir: Path, stages: StageTracker) -> Execution:
        trt = resolve(tensorrt)
        PolygraphyException = polygraphy_exception.PolygraphyException
        workdir = Path(workdir)
        calls: dict[str, Any] = {}
        details: dict[str, Any] = {"tensorrt_calls": calls}
        capture = CellCapture(trt, workdir)
        signatures = LogSignatures.from_json(cell.get("log_signatures"))  # the library's, from index.json
        error: Exception | None = None
        with capture:
            try:
                stages.enter("parse")
                parsed = self._parse(trt, cell, calls)
                stages.enter("build")
                engine_bytes = self._build(trt, cell, arrays, workdir, parsed, calls)
                stages.enter("inspect")
                engine = self._deserialize(engine_bytes)
                precision = self._inspect(trt, cell, engine, workdir, capture, details)
                stages.enter("infer")
                outputs = self._infer(engine, arrays["inputs"])
            except (BackendFailure, PolygraphyException) as err:
                error = err
        details.update(capture.summary())
        if error is not None:
            raise self._failure(error, stages.current, capture, details, signatures) from error
        classification = classify.classify_log(capture.tensorrt_text(), signatures)
        _note_deprecation_warnings(calls, classification.warnings)
        if classification.category is not None:  # an error line in a build that still produced an engine
            details["log_classification"] = classification.to_dict()
        return Execution(outputs=outputs, precision=precision, warnings=classification.warnings,
                         log=capture.digest(), details=details)

    # ---- stages ----

    def _parse(self, trt, cell: dict[str, Any], calls: dict[str, Any]):
        settings = network_settings(trt, cell)
        builder, network, parser = polygraphy_trt.NetworkFromOnnxPath(cell["model"], **settings.loader_arguments)()
        if settings.native_instancenorm is not None:
            observed = bool(parser.get_flag(settings.instancenorm_flag))
            settings.record["native_instancenorm"]["observed"] = observed
            settings.record["parser_flags_mask"] = int(parser.flags)  # all flags, as the parser reports them
            if observed != settings.native_instancenorm:
                raise RuntimeError(
                    f"The ONNX parser reports NATIVE_INSTANCENORM={observed} after Polygraphy was asked to set it to "
                    f"{settings.native_instancenorm}: this Polygraphy/TensorRT pair does not apply parser flags as "
                    "expected, so the cell would not test what it says."
                )
        knobs = cell["knobs"]
        if knobs.get("extra_outputs"):
            settings.record["network_outputs"] = mark_extra_outputs(network, list(knobs["extra_outputs"]))
        if knobs.get("layer_precisions"):
            settings.record["layer_precisions"] = set_layer_precisions(trt, network, dict(knobs["layer_precisions"]))
        calls["network"] = settings.record
        return builder, network, parser

    def _build(self, trt, cell, arrays, workdir: Path, parsed, calls: dict[str, Any]):
        strongly_typed = calls["network"]["strongly_typed"]["set"]
        cache = workdir / "calibration.cache"
        dla_core, gpu_fallback = self.dla_build(cell)
        settings = config_settings(trt, cell, strongly_typed, cache, arrays["calibration"], dla_core=dla_core,
                                   gpu_fallback=gpu_fallback)
        calls["config"] = settings.record
        build = polygraphy_trt.EngineBytesFromNetwork(parsed, config=settings.loader(trt))
        if cell["mode"] != "implicit-int8":
            return build()
        calls["implicit_quantization"] = implicit_quantization(trt.__version__).to_dict()
        try:
            return build()
        finally:  # also after a failed build: what TensorRT did with the cache says why
            calls["config"]["calibrator"]["cache_after_build"] = after_build(cache, settings.handed_cache)

    def _deserialize(self, engine_bytes):
        return polygraphy_trt.engine_from_bytes(engine_bytes)

    def _inspect(self, trt, cell, engine, workdir: Path, capture: CellCapture,
                 details: dict[str, Any]) -> dict[str, str]:
        """Per ONNX node, the precision the engine computes it in (engine inspector JSON, else the verbose log)."""
        verbosity = engine.profiling_verbosity
        details["tensorrt_calls"]["engine_profiling_verbosity"] = getattr(verbosity, "name", verbosity)
        inspector = engine.create_engine_inspector()
        information = inspector.get_engine_information(trt.LayerInformationFormat.JSON) or ""  # None: no JSON either
        (workdir / "engine-layers.json").write_text(information)
        model = onnx.load(cell["model"], load_external_data=False)
        names = layers.OnnxNames.from_model(model)
        problems = []
        engine_layers = None
        readers = (("engine inspector JSON", lambda: layers.layers_from_inspector_json(json.loads(information), names)),
                   ("verbose TensorRT log", lambda: layers.layers_from_log(capture.tensorrt_text(), names)))
        for source, read in readers:
            try:
                engine_layers = read()
                details["layer_information"] = {"source": source, "layers": len(engine_layers)}
                break
            except ValueError as err:  # json.JSONDecodeError is a ValueError
                problems.append(f"{source}: {err}")
        if engine_layers is None:
            raise ValueError(
                "TensorRT built an engine, but its per-layer information could not be read, so no node's precision "
                f"is known (and none may be reported as a fallback). Tried: {' | '.join(problems)}. The raw inspector "
                f"output is in {workdir / 'engine-layers.json'}; harness/tensorrt/layers.py must learn this format."
            )
        precision = layers.node_precisions(engine_layers)  # the readers map layers to this model's nodes only
        regions = layers.foreign_node_regions(engine_layers)
        if self.dla_build(cell)[0] is not None:
            placement = devices.placement_from_log(capture.tensorrt_text(), names)
            details.update(_dla_details(placement, cell["expected_int8"]))
            dla_regions = {name: nodes for name, nodes in regions.items() if placement.layers.get(name) == devices.DLA}
            if dla_regions:
                details["layer_information"]["dla_regions"] = {name: list(nodes) for name, nodes in dla_regions.items()}
                regions = {name: nodes for name, nodes in regions.items() if name not in dla_regions}
                precision = _inside_dla_regions_unknown(precision, dla_regions)
        report = layers.fallback_nodes(precision, cell["expected_int8"])
        details["layer_information"].update(dataclasses.asdict(report))
        if regions:  # Myelin regions: one layer each, never INT8 (layers.py), with the ONNX nodes they swallowed
            details["layer_information"]["myelin_regions"] = {name: list(nodes) for name, nodes in regions.items()}
        return precision

    def _infer(self, engine, inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        with polygraphy_trt.TrtRunner(engine) as runner:
            outputs = runner.infer(feed_dict=inputs)
        return {name: np.array(value) for name, value in outputs.items()}

    # ---- failures ----

    def _failure(self, error: Exception, stage: str, capture: CellCapture, details: dict[str, Any],
                 signatures: LogSignatures) -> BackendFailure:
        """A failed stage as a result: classified from TensorRT's log (the known failures of ``signatures``), with its
        warnings and a log digest."""
        if isinstance(error, BackendFailure):
            error.log = error.log or capture.digest(error.message)
            error.warnings = error.warnings or classify.classify_log(capture.tensorrt_text()).warnings
            error.details = {**details, **error.details}
            return error
        message = str(error)
        classification = classify.classify_log("\n".join((capture.tensorrt_text(), capture.polygraphy_text(), message)),
                                               signatures)
        _note_deprecation_warnings(details["tensorrt_calls"], classification.warnings)
        if NOT_AVAILABLE_IN_POLYGRAPHY in message:
            category, summary, node = "unsupported-api", message, None
        else:
            category = classification.category or STAGE_FAILURE_DEFAULTS.get(stage, "runtime-error")
            summary, node = classification.message or message, classification.node
        handed = details["tensorrt_calls"].get("config", {}).get("calibrator") or {}
        if handed.get("handed_cache", {}).get("mismatches"):  # a cache of another version or algorithm, said so
            category = "calibration" if category == "runtime-error" else category
            after = handed.get("cache_after_build", {})
            what = {"used": "left as handed (TensorRT read it and did not calibrate)",
                    "written": f"rewritten by TensorRT {after.get('written_by')} (it calibrated instead)",
                    }.get(after.get("state"), f"{after.get('state')} after the build")
            summary = f"The {handed['handed_cache']['description']}; the file was {what}. TensorRT said: {summary}"
        details = {**details, "polygraphy_error": message, "log_classification": classification.to_dict()}
        return BackendFailure(category, summary, node, log=capture.digest(message), warnings=classification.warnings,
                              details=details)


def _dla_details(placement: devices.DevicePlacement, expected_int8: list[str]) -> dict[str, Any]:
    """Where a DLA build ran each node, for the record: ``devices`` {node: dla | gpu}, ``dla_fallback_nodes`` (nodes
    that fell back to the GPU) and ``dla_unverified_nodes`` (expected-INT8 nodes the builder's lists do not place)."""
    found = {"devices": dict(placement.nodes), "dla_fallback_nodes": placement.fallback_nodes(),
             "dla_unverified_nodes": placement.unverified(expected_int8)}
    if not placement.found:
        found["dla_placement_note"] = ("the build log has no \"Layers Running on DLA\" list, so no node's device is "
                                       "known")
    return found


def _inside_dla_regions_unknown(precision: dict[str, str], dla_regions: dict[str, tuple[str, ...]]) -> dict[str, str]:
    """A DLA region is a ``{ForeignNode[...]}`` layer like a Myelin region, but DLA runs INT8 inside it, so the Myelin
    rule (never INT8) does not hold; its boundary tensors do not show the precision inside either: its nodes are
    ``unknown`` (unverified, never a fallback)."""
    inside = {node for nodes in dla_regions.values() for node in nodes}
    return {node: "unknown" if node in inside else value for node, value in precision.items()}


def _note_deprecation_warnings(calls: dict[str, Any], warnings: dict[str, int]) -> None:
    """Add the implicit-quantization deprecation warnings the log showed to the cell's lifecycle record."""
    lifecycle = calls.get("implicit_quantization")
    if lifecycle is None:
        return
    seen = warnings["implicit-quantization-deprecated"]  # classify_log counts every warning kind, 0 included
    lifecycle["deprecation_warnings_seen"] = seen
    if lifecycle["warning_expected"] and not seen:
        lifecycle["note"] = "a DeprecationWarning was expected from 10.1 on, and none was captured"
