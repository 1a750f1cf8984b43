"""ONNX Runtime (CPU execution provider) backend.

Explicit Q/DQ cases run as given. Implicit-INT8 cases are quantized first with
``onnxruntime.quantization.quantize_static`` from the case's calibration batches, symmetric signed INT8 like
TensorRT's. Per-node precision is read from what ORT actually executes: the optimized model it saves, each node
mapped to the kernels that ran it and judged by the types those kernels read (:mod:`.ort_kernels`).

On x86, ORT fuses signed-INT8 Q/DQ groups only when the session option ``session.qdqisint8allowed`` is "1" (key
from onnxruntime_session_options_config_keys.h); a target sets its session options in matrix.yaml
(``session_config``), and the record keeps them.

Only ORT's own errors are results about the case (``fail``, with ORT's traceback as the record's log); an exception
raised by harness code, even inside a call into ORT (the calibration reader), goes up as a harness bug.
"""
from __future__ import annotations

import contextlib
import io
import logging
import re
import traceback
from pathlib import Path
from typing import Any

from harness.worker.backends.base import (Backend, BackendFailure, EnvironmentProblem, Execution, StageTracker,
                                          raised_in_package)
from harness.worker.backends.ort_kernels import map_kernels, tensor_types
from harness.worker.shapes import Cell

CALIBRATION_METHODS = {"entropy2": "Entropy", "minmax": "MinMax"}  # TensorRT calibrator -> ORT CalibrationMethod
QUANTIZE_OPTIONS = {"ActivationSymmetric": True, "WeightSymmetric": True}
_NODE_IN_MESSAGE = re.compile(r"node with name '([^']+)'")
_UNSUPPORTED_OP = re.compile(r"is not a registered function/op|opset", re.IGNORECASE)  # ORT's words at model load


def knob_is_set(value: Any) -> bool:
    """Whether a knob's value asks for something: not None, False or empty. ``dla_core`` 0 is a core, not unset
    (``0 == False``, so a membership test against False would drop it)."""
    return value is not None and value is not False and value != {} and value != []


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
        optimized = onnx.load(optimized_path)
        ran = map_kernels(onnx.load(model_path), optimized, tensor_types(optimized))
        details["ort_kernels"] = ran.kernels
        details["precision_unknown"] = ran.unknown_because
        details["knobs_not_applicable"] = [k for k, v in cell["knobs"].items()
                                           if k not in ("calibrator", "extra_outputs") and knob_is_set(v)]
        stages.enter("infer")
        names = [o.name for o in session.get_outputs()]
        values = self._call(session.run, names, arrays["inputs"])
        return Execution(outputs=dict(zip(names, values)), precision=ran.precision, details=details)

    @staticmethod
    def _call(fn, *args):
        """Call into ONNX Runtime: an error ORT raised is a result about the case, classified by ORT's status and
        kept with its traceback; an error raised by harness code on the way goes up unchanged (a harness bug)."""
        try:
            return fn(*args)
        except Exception as err:
            raised_in = raised_in_package(err, "onnxruntime", fn)
            if raised_in is None:
                raise
            status = type(err).__name__
            message = f"{status}: {err}"
            node = _NODE_IN_MESSAGE.search(str(err))
            if status == "NotImplemented" or "Could not find an implementation" in str(err):
                category = "no-implementation"
            elif status in ("InvalidGraph", "InvalidProtobuf", "NoModel") or _UNSUPPORTED_OP.search(str(err)):
                category = "parser"
            else:
                category = "runtime-error"
            raise BackendFailure(category, message, node.group(1) if node else None, log=traceback.format_exc(),
                                 details={"raised_in": raised_in}) from err
