"""TensorRT backend: each cell is parsed, built, inspected and run with the real TensorRT Python API, via Polygraphy.

The backend is thin on purpose: Polygraphy's loaders do the TensorRT calls (``NetworkFromOnnxPath``, ``CreateConfig``,
``Calibrator``, ``EngineBytesFromNetwork``, ``engine_from_bytes``, ``TrtRunner``); this module decides the settings
of each cell, sets every one of them explicitly, records them, and turns what TensorRT said into a record.

Settings of a cell (all recorded in ``details["tensorrt_calls"]``):

* ``OnnxParserFlag.NATIVE_INSTANCENORM`` is set or cleared on every parse, never left to the version's default. The
  knob ``native_instancenorm`` decides; unset, the version's documented default is set explicitly: off before 10.0
  (the plugin path), on from 10.0 (failure-patterns.md S2, platforms.md).
* Strongly typed networks where the cell asks for one (``knobs.strongly_typed``), and always from 11.0, which removed
  weak typing (no ``BuilderFlag.INT8``/``FP16``). A strongly typed network gets no precision builder flags.
* Weakly typed networks get ``BuilderFlag.INT8``; implicit-int8 cells also a calibrator (entropy2 or minmax) reading
  the cell's calibration batches, with its cache in the cell's directory. Explicit Q/DQ cells get no calibrator.
* ``ProfilingVerbosity.DETAILED`` always (per-layer precision needs it). TF32 is set on, as TensorRT's builder and
  trtexec have it by default (Polygraphy's default is off); it only touches layers that fall back to FP32.

Versions: every API is found by feature detection on the imported module (:func:`tensorrt_api`); the only version
gate is the NATIVE_INSTANCENORM default. A cell that needs an API its version lacks ends as ``unsupported-api``
naming the API; implicit-int8 cells on a TensorRT without implicit quantization (11.x) are unavailable.

Logs: each cell's TensorRT messages, Python warnings and Polygraphy messages are captured to files in the cell's
directory by :mod:`harness.worker.backends.tensorrt.capture`; a failed stage is classified from those logs by
:mod:`harness.worker.backends.tensorrt.classify`.

TensorRT and Polygraphy are imported inside functions only: this module imports with the standard library, numpy and
onnx. Nothing here touches CUDA in the calling process; GPU facts are read in a forked child
(:mod:`harness.worker.backends.tensorrt.gpu`), because a process that has initialised CUDA cannot hand it to the cell processes it
forks.
"""
from __future__ import annotations

import dataclasses
import difflib
import inspect
import json
import sys
from pathlib import Path
from typing import Any

import numpy as np

from harness.worker.backends.base import Backend, BackendFailure, EnvironmentProblem, Execution, StageTracker
from harness.worker.backends.tensorrt import classify, layers
from harness.worker.backends.tensorrt.capture import CellCapture
from harness.worker.backends.tensorrt.compat import (
    POLYGRAPHY_MINIMUM,
    POLYGRAPHY_MINIMUM_FOR_TENSORRT_11,
    major_version,
    polygraphy_problem_message,
    tensorrt_api,
)
from harness.worker.backends.tensorrt.gpu import probe_gpu

NATIVE_INSTANCENORM_DEFAULT_ON_FROM = 10  # major version; platforms.md and failure-patterns.md S2
IMPLICIT_QUANTIZATION_REMOVED_SOURCES = (
    "https://docs.nvidia.com/deeplearning/tensorrt/11.4.0/api/migration/tensorrt-10x-to-11x.html",
    "https://github.com/NVIDIA/TensorRT/issues/4095",
)
CALIBRATOR_CLASSES = {"entropy2": "IInt8EntropyCalibrator2", "minmax": "IInt8MinMaxCalibrator"}
LAYER_PRECISION_TYPES = {
    "int8": "DataType.INT8", "fp16": "DataType.HALF", "fp32": "DataType.FLOAT", "bf16": "DataType.BF16",
    "fp8": "DataType.FP8",
}
PRECISION_CONSTRAINT_FLAGS = {"obey": "BuilderFlag.OBEY_PRECISION_CONSTRAINTS",
                              "prefer": "BuilderFlag.PREFER_PRECISION_CONSTRAINTS"}
STAGE_FAILURE_DEFAULTS = {"parse": "parser"}  # when the log names no cause; other stages: runtime-error
NOT_AVAILABLE_IN_POLYGRAPHY = "is not available on TensorRT version"  # polygraphy's message for a missing API

# Every TensorRT API the backend touches itself, here and in the other modules of this package (capture, compat, gpu, doctor), as
# "Class.member" (the rest goes through Polygraphy).
# Used unconditionally: must exist in every supported version (checked against trt-api/*.json by the tests).
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
    "BuilderFlag.OBEY_PRECISION_CONSTRAINTS",
    "BuilderFlag.PREFER_PRECISION_CONSTRAINTS",
    "IBuilderConfig.int8_calibrator",
    "IInt8EntropyCalibrator2",
    "IInt8MinMaxCalibrator",
    "ILayer.precision",
    "DataType.INT8",
    "DataType.HALF",
    "DataType.FLOAT",
    "DataType.BF16",
    "DataType.FP8",
    "Builder.platform_has_fast_int8",
    "IQuantizeLayer",
    "IDequantizeLayer",
)
IMPLICIT_QUANTIZATION_API = ("BuilderFlag.INT8", "IBuilderConfig.int8_calibrator")


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


def version_tuple(version: str) -> tuple[int, ...]:
    """(0, 49, 26) from "0.49.26"; a part that does not start with digits ends the tuple ("9.2.0.post12" -> 9, 2, 0)."""
    numbers = []
    for part in version.split("."):
        digits = len(part) - len(part.lstrip("0123456789"))
        if not digits:
            break
        numbers.append(int(part[:digits]))
    return tuple(numbers)


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
        "`python -m harness doctor` shows what this environment has."
    )


# ---- settings of a cell --------------------------------------------------------------------------------------------


@dataclasses.dataclass
class NetworkSettings:
    """How the ONNX model becomes a TensorRT network, and why."""

    loader_arguments: dict[str, Any]  # for polygraphy's NetworkFromOnnxPath
    instancenorm_flag: Any  # OnnxParserFlag.NATIVE_INSTANCENORM, None where the version has no such flag
    native_instancenorm: bool | None  # what was set; None: no flag (the plugin is the parser's only path)
    strongly_typed: bool
    record: dict[str, Any]


def network_settings(trt, cell: dict[str, Any]) -> NetworkSettings:
    knobs = cell["knobs"]
    arguments: dict[str, Any] = {}
    flag = tensorrt_api(trt, "OnnxParserFlag.NATIVE_INSTANCENORM")
    knob = knobs.get("native_instancenorm")
    if flag is None:
        if knob:
            require_api(trt, "OnnxParserFlag.NATIVE_INSTANCENORM", "for the knob native_instancenorm=True")
        native, why = None, "no OnnxParserFlag in this version: the InstanceNormalization plugin is the only path"
    elif knob is not None:
        native, why = knob, "knob"
    else:
        native = major_version(trt) >= NATIVE_INSTANCENORM_DEFAULT_ON_FROM
        why = ("knob unset: this version's default, set explicitly "
               f"(off before {NATIVE_INSTANCENORM_DEFAULT_ON_FROM}.0, on from it)")
    if native is not None:
        arguments.update({"flags": [flag]} if native else {"plugin_instancenorm": True})

    asked = bool(knobs.get("strongly_typed"))
    weak_typing = tensorrt_api(trt, "BuilderFlag.INT8") is not None  # 11.0 removed weak typing and its flags
    if asked:
        conflicting = [k for k in ("fp16", "precision_constraints", "layer_precisions") if knobs.get(k)]
        if cell["mode"] == "implicit-int8" or conflicting:
            raise ValueError(
                f"Cell {cell['case']}/{cell['variant']} asks for a strongly typed network together with "
                f"{conflicting or 'implicit INT8 calibration'}: a strongly typed network takes its precisions from the "
                "graph's types and Q/DQ nodes only (TensorRT allows no precision flags or layer precisions there). "
                "Fix the case's knobs."
            )
    strongly_typed = asked or not weak_typing
    if strongly_typed:
        require_api(trt, "NetworkDefinitionCreationFlag.STRONGLY_TYPED", "for the knob strongly_typed=True" if asked
                    else "because this version has only strongly typed networks (no BuilderFlag.INT8)")
        arguments["strongly_typed"] = True
    record = {
        "native_instancenorm": {"knob": knob, "set": native, "why": why},
        "strongly_typed": {"knob": asked, "set": strongly_typed,
                           "why": "knob" if asked or weak_typing else "this version has only strongly typed networks"},
    }
    return NetworkSettings(arguments, flag, native, strongly_typed, record)


def config_settings(trt, cell: dict[str, Any], strongly_typed: bool, calibration_cache: Path,
                    calibration: list[dict[str, np.ndarray]]) -> tuple[dict[str, Any], dict[str, Any]]:
    """Arguments for polygraphy's CreateConfig, and what they mean for the record."""
    from polygraphy.backend.trt import Calibrator

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
        class_name = CALIBRATOR_CLASSES[knobs.get("calibrator", "entropy2")]
        base_class = require_api(trt, class_name, f"for implicit INT8 calibration with {knobs.get('calibrator')}")
        arguments["calibrator"] = Calibrator(calibration, cache=str(calibration_cache), BaseClass=base_class)
        record["calibrator"] = {"class": class_name, "batches": len(calibration), "cache": str(calibration_cache)}
    else:
        record["calibrator"] = None
    return arguments, record


# ---- the network ---------------------------------------------------------------------------------------------------


def network_layers(network):
    for index in range(network.num_layers):
        yield network.get_layer(index)


def mark_extra_outputs(network, names: list[str]) -> list[str]:
    """Mark ONNX tensors ``names`` as network outputs, in addition to the model's own; return the outputs after."""
    tensors = {}
    for layer in network_layers(network):
        for index in range(layer.num_outputs):
            tensor = layer.get_output(index)
            if tensor is not None:
                tensors[tensor.name] = tensor
    missing = [name for name in names if name not in tensors]
    if missing:
        raise ValueError(
            f"knobs.extra_outputs names tensor(s) {missing} that no layer of the parsed TensorRT network produces. "
            f"Closest tensor names: {_closest(missing, tensors)}. Extra outputs must be ONNX tensor names that the "
            "parser keeps (outputs of nodes, not initializers)."
        )
    for name in names:
        if not tensors[name].is_network_output:
            network.mark_output(tensors[name])
    return [network.get_output(index).name for index in range(network.num_outputs)]


def set_layer_precisions(trt, network, requested: dict[str, str]) -> dict[str, str]:
    """Set ``layer.precision`` of the layers named after the ONNX nodes in ``requested``; return what was set."""
    require_api(trt, "ILayer.precision", "for the knob layer_precisions")
    unknown = {node: p for node, p in requested.items() if p not in LAYER_PRECISION_TYPES}
    if unknown:
        raise ValueError(f"knobs.layer_precisions: precisions {unknown} are not among {sorted(LAYER_PRECISION_TYPES)}")
    types = {node: require_api(trt, LAYER_PRECISION_TYPES[p], f"for the knob layer_precisions {node}={p}")
             for node, p in requested.items()}
    by_name = {layer.name: layer for layer in network_layers(network)}
    missing = [node for node in requested if node not in by_name]
    if missing:
        raise ValueError(
            f"knobs.layer_precisions names ONNX node(s) {missing} that are not layer names of the parsed TensorRT "
            f"network. Closest layer names: {_closest(missing, by_name)}."
        )
    for node, data_type in types.items():
        by_name[node].precision = data_type
    return {node: LAYER_PRECISION_TYPES[p] for node, p in requested.items()}


def _closest(wanted: list[str], available) -> dict[str, list[str]]:
    return {name: difflib.get_close_matches(name, list(available), n=5, cutoff=0.3) for name in wanted}


# ---- the backend ---------------------------------------------------------------------------------------------------


class TensorRTBackend(Backend):
    name = "tensorrt"

    def preload(self) -> None:
        try:
            import tensorrt as trt
        except Exception as err:  # ImportError, or OSError when libnvinfer is missing
            raise EnvironmentProblem(tensorrt_missing_message(err)) from err
        try:
            import polygraphy
            from polygraphy.backend.trt import NetworkFromOnnxPath
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
        import polygraphy
        import tensorrt as trt

        return {
            "tensorrt_version": trt.__version__,
            "tensorrt_module": getattr(trt, "__file__", None),
            "onnx_parser_version": trt.get_nv_onnx_parser_version(),
            "polygraphy_version": polygraphy.__version__,
            **probe_gpu(),
        }

    def unavailable_reason(self, cell: dict[str, Any]) -> str | None:
        if cell["mode"] != "implicit-int8":
            return None
        import tensorrt as trt

        calibrator = CALIBRATOR_CLASSES[cell["knobs"].get("calibrator", "entropy2")]
        missing = [api for api in IMPLICIT_QUANTIZATION_API + (calibrator,) if tensorrt_api(trt, api) is None]
        if not missing:
            return None
        return (
            f"Implicit INT8 quantization (BuilderFlag.INT8 with a calibrator) is not in TensorRT {trt.__version__}: "
            f"{', '.join(missing)} are absent from its Python API. TensorRT deprecated implicit quantization in 10.1 "
            "and removed it in 11.0 in favour of explicit Q/DQ. Sources: "
            + ", ".join(IMPLICIT_QUANTIZATION_REMOVED_SOURCES)
        )

    def run(self, cell: dict[str, Any], arrays: dict[str, Any], workdir: Path, stages: StageTracker) -> Execution:
        import tensorrt as trt
        from polygraphy.exception import PolygraphyException

        workdir = Path(workdir)
        calls: dict[str, Any] = {}
        details: dict[str, Any] = {"tensorrt_calls": calls}
        capture = CellCapture(trt, workdir)
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
            raise self._failure(error, stages.current, capture, details) from error
        classification = classify.classify_log(capture.tensorrt_text())
        if classification.category is not None:  # an error line in a build that still produced an engine
            details["log_classification"] = classification.to_dict()
        return Execution(outputs=outputs, precision=precision, warnings=classification.warnings,
                         log=capture.digest(), details=details)

    # ---- stages ----

    def _parse(self, trt, cell: dict[str, Any], calls: dict[str, Any]):
        from polygraphy.backend.trt import NetworkFromOnnxPath

        settings = network_settings(trt, cell)
        builder, network, parser = NetworkFromOnnxPath(cell["model"], **settings.loader_arguments)()
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
        from polygraphy.backend.trt import CreateConfig, EngineBytesFromNetwork

        strongly_typed = calls["network"]["strongly_typed"]["set"]
        arguments, calls["config"] = config_settings(trt, cell, strongly_typed, workdir / "calibration.cache",
                                                     arrays["calibration"])
        return EngineBytesFromNetwork(parsed, config=CreateConfig(**arguments))()

    def _deserialize(self, engine_bytes):
        from polygraphy.backend.trt import engine_from_bytes

        return engine_from_bytes(engine_bytes)

    def _inspect(self, trt, cell, engine, workdir: Path, capture: CellCapture,
                 details: dict[str, Any]) -> dict[str, str]:
        """Per ONNX node, the precision the engine computes it in (engine inspector JSON, else the verbose log)."""
        import onnx

        verbosity = engine.profiling_verbosity
        details["tensorrt_calls"]["engine_profiling_verbosity"] = getattr(verbosity, "name", verbosity)
        information = engine.create_engine_inspector().get_engine_information(trt.LayerInformationFormat.JSON)
        (workdir / "engine-layers.json").write_text(information or "")
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
                f"output is in {workdir / 'engine-layers.json'}; harness/worker/backends/tensorrt/layers.py must learn this format."
            )
        precision = layers.node_precisions(engine_layers, [node.name for node in model.graph.node])
        report = layers.fallback_nodes(precision, cell["expected_int8"])
        details["layer_information"].update(dataclasses.asdict(report))
        return precision

    def _infer(self, engine, inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        from polygraphy.backend.trt import TrtRunner

        with TrtRunner(engine) as runner:
            outputs = runner.infer(feed_dict=inputs)
        return {name: np.array(value) for name, value in outputs.items()}

    # ---- failures ----

    def _failure(self, error: Exception, stage: str, capture: CellCapture, details: dict[str, Any]) -> BackendFailure:
        """A failed stage as a result: classified from TensorRT's log, with its warnings and a log digest."""
        if isinstance(error, BackendFailure):
            error.log = error.log or capture.digest(error.message)
            error.warnings = error.warnings or classify.classify_log(capture.tensorrt_text()).warnings
            error.details = {**details, **error.details}
            return error
        message = str(error)
        classification = classify.classify_log("\n".join((capture.tensorrt_text(), capture.polygraphy_text(), message)))
        if NOT_AVAILABLE_IN_POLYGRAPHY in message:
            category, summary, node = "unsupported-api", message, None
        else:
            category = classification.category or STAGE_FAILURE_DEFAULTS.get(stage, "runtime-error")
            summary, node = classification.message or message, classification.node
        details = {**details, "polygraphy_error": message, "log_classification": classification.to_dict()}
        return BackendFailure(category, summary, node, log=capture.digest(message), warnings=classification.warnings,
                              details=details)
