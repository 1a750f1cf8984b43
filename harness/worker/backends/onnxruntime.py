"""ONNX Runtime (CPU execution provider) backend.

Explicit Q/DQ cases run as given. Implicit-INT8 cases are quantized first with
``onnxruntime.quantization.quantize_static`` from the case's calibration batches, symmetric signed INT8 like
TensorRT's. Per-node precision is read from what ORT actually executes: the optimized model it saves. QLinear* and
*Integer kernels compute in INT8; a float op left between DequantizeLinear and QuantizeLinear is a fallback.

On x86, ORT fuses signed-INT8 Q/DQ groups only when the session option ``session.qdqisint8allowed`` is "1" (key
from onnxruntime_session_options_config_keys.h); a target sets its session options in matrix.yaml
(``session_config``), and the record keeps them.
"""
from __future__ import annotations

import contextlib
import io
import logging
import re
from pathlib import Path
from typing import Any

from harness.worker.backends.base import Backend, BackendFailure, EnvironmentProblem, Execution, StageTracker
from harness.worker.shapes import Cell

CALIBRATION_METHODS = {"entropy2": "Entropy", "minmax": "MinMax"}  # TensorRT calibrator -> ORT CalibrationMethod
QUANTIZE_OPTIONS = {"ActivationSymmetric": True, "WeightSymmetric": True}
BOUNDARY_OPS = {"QuantizeLinear", "DequantizeLinear", "DynamicQuantizeLinear"}
INT8_OPS = {"QGemm", "QAttention", "QOrderedMatMul", "DynamicQuantizeMatMul", "MatMulIntegerToFloat"}
_NODE_IN_MESSAGE = re.compile(r"node with name '([^']+)'")
_UNSUPPORTED_OP = re.compile(r"is not a registered function/op|opset", re.IGNORECASE)  # ORT's words at model load


def kernel_precision(op_type: str) -> str:
    """Compute precision of an op as it appears in ORT's optimized model."""
    if op_type.startswith("QLinear") or op_type.endswith("Integer") or op_type in INT8_OPS:
        return "int8"
    return "fp32"


def precision_from_optimized(original, optimized) -> tuple[dict[str, str], dict[str, str]]:
    """Per original node: the precision of the kernel ORT runs for it, and which node absorbed a fused one.

    A node that survives optimization keeps its name in ORT's fusions, so it maps by name. A node that vanished
    (e.g. a Relu folded into the QLinearConv before it) takes the precision of the nearest surviving ancestor.
    """
    kernels = {n.name: n.op_type for n in optimized.graph.node}
    producer = {out: n for n in original.graph.node for out in n.output}
    precision, fused_into = {}, {}

    def resolve(node, seen=()):
        if node.name in kernels:
            return node.name
        for tensor in node.input:
            parent = producer.get(tensor)
            if parent is not None and parent.name not in seen and parent.op_type not in BOUNDARY_OPS:
                found = resolve(parent, seen + (node.name,))
                if found:
                    return found
        return None

    for node in original.graph.node:
        if node.op_type in BOUNDARY_OPS:
            continue
        survivor = resolve(node)
        if survivor is None:
            precision[node.name] = "unknown"
            continue
        if survivor != node.name:
            fused_into[node.name] = survivor
        precision[node.name] = kernel_precision(kernels[survivor])
    return precision, fused_into


class OnnxRuntimeBackend(Backend):
    name = "onnxruntime"

    def preload(self) -> None:
        try:
            import onnxruntime  # noqa: F401
            import onnxruntime.quantization  # noqa: F401
        except ImportError as err:
            raise EnvironmentProblem(f"onnxruntime is not importable here: {err}") from err

    def environment(self) -> dict[str, Any]:
        import onnxruntime

        return {
            "onnxruntime_version": onnxruntime.__version__,
            "onnxruntime_providers": onnxruntime.get_available_providers(),
            "onnxruntime_session_config": self.session_config,
        }

    @property
    def session_config(self) -> dict[str, str]:
        return dict(self.target.get("session_config", {}))

    def _session(self, model_path: Path, optimized_path: Path):
        import onnxruntime

        options = onnxruntime.SessionOptions()
        options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_ENABLE_EXTENDED
        options.optimized_model_filepath = str(optimized_path)
        options.intra_op_num_threads = 1
        options.log_severity_level = 3
        for key, value in self.session_config.items():
            options.add_session_config_entry(key, value)
        return onnxruntime.InferenceSession(str(model_path), options, providers=["CPUExecutionProvider"])

    def _quantize(self, cell: Cell, arrays: dict[str, Any], model_path: Path, out_path: Path) -> None:
        from onnxruntime import quantization as q

        class Batches(q.CalibrationDataReader):
            def __init__(self):
                self._batches = iter(arrays["calibration"])

            def get_next(self):
                return next(self._batches, None)

        logging.getLogger().setLevel(logging.ERROR)  # quantize_static advises pre-processing on every call
        with contextlib.redirect_stdout(io.StringIO()):  # and the entropy calibrator prints its histogram steps
            q.quantize_static(
                str(model_path), str(out_path), Batches(),
                quant_format=q.QuantFormat.QDQ, activation_type=q.QuantType.QInt8, weight_type=q.QuantType.QInt8,
                per_channel=True, extra_options=dict(QUANTIZE_OPTIONS),
                calibrate_method=getattr(q.CalibrationMethod, CALIBRATION_METHODS[cell["knobs"]["calibrator"]]),
            )

    def run(self, cell: Cell, arrays: dict[str, Any], workdir: Path, stages: StageTracker) -> Execution:
        import onnx

        stages.enter("parse")
        model_path = Path(cell["model"])
        original = self._call(onnx.load, model_path)
        details: dict[str, Any] = {"ort_settings": {"session_config": self.session_config, "threads": 1}}
        stages.enter("build")
        if cell["mode"] == "implicit-int8":
            quantized = workdir / "quantized.onnx"
            self._call(self._quantize, cell, arrays, model_path, quantized)
            details["ort_settings"]["quantize_static"] = {
                "calibrate_method": CALIBRATION_METHODS[cell["knobs"]["calibrator"]], "per_channel": True,
                "activation_type": "QInt8", "weight_type": "QInt8", **QUANTIZE_OPTIONS,
            }
            model_path = quantized
        optimized_path = workdir / "optimized.onnx"
        session = self._call(self._session, model_path, optimized_path)
        stages.enter("inspect")
        precision, fused_into = precision_from_optimized(original, onnx.load(optimized_path))
        details["fused_into"] = fused_into
        details["knobs_not_applicable"] = [
            k for k, v in cell["knobs"].items() if k not in ("calibrator", "extra_outputs") and v not in (None, False, {}, [])
        ]
        stages.enter("infer")
        names = [o.name for o in session.get_outputs()]
        values = self._call(session.run, names, arrays["inputs"])
        return Execution(outputs=dict(zip(names, values)), precision=precision, details=details)

    @staticmethod
    def _call(fn, *args):
        """Call into ONNX Runtime; its errors are results about the case, classified by ORT's status."""
        try:
            return fn(*args)
        except Exception as err:
            status = type(err).__name__
            message = f"{status}: {err}"
            node = _NODE_IN_MESSAGE.search(str(err))
            if status == "NotImplemented" or "Could not find an implementation" in str(err):
                category = "no-implementation"
            elif status in ("InvalidGraph", "InvalidProtobuf", "NoModel") or _UNSUPPORTED_OP.search(str(err)):
                category = "parser"
            else:
                category = "runtime-error"
            raise BackendFailure(category, message, node.group(1) if node else None) from err
