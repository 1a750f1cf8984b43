"""``scan --to-explicit``: turn an implicit-INT8 model (no Q/DQ, built with a calibrator) into an explicit Q/DQ model
for TensorRT 11, which removed implicit quantization, and say how far it moved from FP32.

The quantizer is ONNX Runtime's ``quantize_static`` (QDQ format). NVIDIA ModelOpt's ONNX PTQ (``nvidia-modelopt``)
was the first choice, but its 0.47 wheel requires torch, onnx ~= 1.21 (this project uses 1.23), cupy-cuda12x and,
on x86 Linux, onnxruntime-gpu: it cannot install beside this project or run on a CPU-only host. The settings, each
chosen for TensorRT, are in :data:`SETTINGS` with their reason, and written into scan.json.

Calibration data: ``--calibration-data DIR`` of .npz files, one batch each, arrays named after the model's inputs;
the last fifth of the files (at least one, when there are two or more) is held out for the accuracy figures. Without
it, N(0, 1) draws, with a loud warning: scales from random data are for build testing only.
"""
from __future__ import annotations

import dataclasses
import logging
import os
import tempfile
from pathlib import Path
from typing import Any, Iterator, Sequence

import numpy as np

from harness.scan.fix_checks import InputsError, draw, read_npz, run_onnxruntime
from harness.worker.metrics import compare_output

DRAWN_BATCHES, DRAWN_HELD_OUT = 8, 2
RANDOM_WARNING = ("WARNING: no --calibration-data: the scales come from N(0, 1) random inputs, not from your data. "
                  "The explicit model is for build testing only; its accuracy on real inputs is unknown")
QUANTIZED_OPS = ("Conv", "ConvTranspose", "MatMul", "Gemm")
SETTINGS: dict[str, tuple[Any, str]] = {
    "quant_format": ("QDQ", "TensorRT's explicit quantization reads QuantizeLinear/DequantizeLinear pairs; it parses "
                     "no QOperator ops (QLinearConv)"),
    "op_types_to_quantize": (list(QUANTIZED_OPS), "Q/DQ only on the inputs of the layers TensorRT runs INT8 kernels "
                             "for; TensorRT carries INT8 through the rest and fuses. ONNX Runtime's default also "
                             "quantizes Add, Concat, Resize and pools, the every-tensor placement that keeps "
                             "TensorRT from fusing (P3 every-tensor-qdq, P4, P5)"),
    "activation_type": ("QInt8", "TensorRT's INT8 is signed"),
    "weight_type": ("QInt8", "TensorRT's INT8 is signed"),
    "ActivationSymmetric": (True, "TensorRT accepts only zero points of 0"),
    "WeightSymmetric": (True, "TensorRT accepts only zero points of 0"),
    "per_channel": (True, "one weight scale per output channel, which TensorRT supports and which keeps the accuracy "
                    "of convs whose channels differ in range"),
    "QDQOpTypePerChannelSupportToAxis": ({"ConvTranspose": 0}, "ConvTranspose weights per channel on axis 0: axis 1 "
                                         "(the output channels) is P2's failing form, axis 0 its workaround "
                                         "(https://github.com/NVIDIA/TensorRT/issues/1694)"),
    "OpTypesToExcludeOutputQuantization": (list(QUANTIZED_OPS), "no Q/DQ on the outputs of those layers: TensorRT "
                                           "fuses a conv with the BatchNorm, activation or residual Add after it, and "
                                           "a Q/DQ in between would keep it from doing so"),
    "QuantizeBias": (False, "biases stay float: TensorRT quantizes them itself from the input and weight scales"),
    "pre_processing": ("onnxruntime.quantization.quant_pre_process", "BatchNormalization folded into the conv "
                       "before the weights are quantized (TensorRT folds it too, so the scales must be those of the "
                       "folded weights), and shapes inferred"),
    "reduce_range": (False, "the 7-bit range is for CPUs without VNNI; TensorRT uses all 8 bits"),
    "calibrate_method": ("MinMax", "the scales cover the whole calibrated range (TensorRT's MinMaxCalibrator does the "
                         "same): nothing seen in calibration is clipped"),
}


@dataclasses.dataclass
class CalibrationData:
    """Batches of model inputs, split into the calibration part and the held-out part for the accuracy figures."""

    calibration: list[dict[str, np.ndarray]]
    held_out: list[dict[str, np.ndarray]]
    source: str
    warning: str | None = None

    def describe(self) -> dict[str, Any]:
        return {"source": self.source, "calibration_batches": len(self.calibration),
                "held_out_batches": len(self.held_out), "warning": self.warning}


def calibration_data(directory: Path | None, graph_inputs: Sequence[Any], seed: int) -> CalibrationData:
    """The batches of ``directory`` (.npz files, checked against the model's inputs: InputsError naming the file and
    the array), or N(0, 1) draws from ``seed`` with the random-data warning."""
    if directory is None:
        rng = np.random.default_rng(seed)
        batches = [{t.name: draw(rng, t) for t in graph_inputs} for _ in range(DRAWN_BATCHES)]
        return CalibrationData(batches[:-DRAWN_HELD_OUT], batches[-DRAWN_HELD_OUT:],
                               f"N(0, 1) draws, seed {seed}", RANDOM_WARNING)
    directory = Path(directory)
    if not directory.is_dir():
        raise InputsError(f"{directory}: --calibration-data names a directory of .npz files; this is not a directory")
    files = sorted(directory.glob("*.npz"))
    if not files:
        raise InputsError(f"{directory}: no .npz file in it (one batch per file, arrays named after the inputs)")
    batches = [read_npz(path, graph_inputs) for path in files]
    if len(batches) == 1:
        return CalibrationData(batches, batches, str(directory), "only one batch: the accuracy figures are measured on "
                               "the batch the scales came from (give two or more files for a held-out part)")
    held = max(1, len(batches) // 5)
    return CalibrationData(batches[:-held], batches[-held:], str(directory))


class _Reader:
    """The calibration batches as ONNX Runtime's CalibrationDataReader protocol (get_next, rewind)."""

    def __init__(self, batches: list[dict[str, np.ndarray]]):
        self.batches = batches
        self.iterator: Iterator[dict[str, np.ndarray]] = iter(batches)

    def get_next(self) -> dict[str, np.ndarray] | None:
        return next(self.iterator, None)

    def rewind(self) -> None:
        self.iterator = iter(self.batches)


def quantize(source: Path, target: Path, data: CalibrationData) -> None:
    """Write the explicit Q/DQ model of ``source`` to ``target`` with :data:`SETTINGS`."""
    from onnxruntime.quantization import CalibrationDataReader, CalibrationMethod, QuantFormat, QuantType, \
        quantize_static
    from onnxruntime.quantization.shape_inference import quant_pre_process

    reader = type("Reader", (_Reader, CalibrationDataReader), {})(data.calibration)
    value = {name: setting[0] for name, setting in SETTINGS.items()}
    extra = {k: value[k] for k in ("ActivationSymmetric", "WeightSymmetric", "QDQOpTypePerChannelSupportToAxis",
                                   "QuantizeBias", "OpTypesToExcludeOutputQuantization")}
    root = logging.getLogger()
    level = root.level
    root.setLevel(logging.ERROR)  # its advice to run its pre-processing first: the model is shape-inferred already
    try:
        with tempfile.TemporaryDirectory(prefix="trt-matrix-explicit-") as tmp:
            prepared = Path(tmp) / "prepared.onnx"
            quant_pre_process(os.fspath(source), os.fspath(prepared))
            quantize_static(os.fspath(prepared), os.fspath(target), reader, quant_format=QuantFormat.QDQ,
                            op_types_to_quantize=value["op_types_to_quantize"], per_channel=value["per_channel"],
                            reduce_range=value["reduce_range"], activation_type=QuantType[value["activation_type"]],
                            weight_type=QuantType[value["weight_type"]],
                            calibrate_method=CalibrationMethod[value["calibrate_method"]], extra_options=extra)
    finally:
        root.setLevel(level)
    _drop_unused_domains(target)


def _drop_unused_domains(path: Path) -> None:
    """Keep only the opset imports the nodes use (the pre-processing's optimizer declares ONNX Runtime's own
    domains, com.microsoft and the like, which a TensorRT parser has no use for)."""
    import onnx

    model = onnx.load(os.fspath(path))
    used = {node.domain for node in model.graph.node} | {""}
    kept = [o for o in model.opset_import if o.domain in used or (o.domain == "ai.onnx" and "" in used)]
    del model.opset_import[:]
    model.opset_import.extend(kept)
    onnx.save(model, os.fspath(path))


def accuracy(reference: Path, quantized: Path, batches: list[dict[str, np.ndarray]],
             outputs: Sequence[str]) -> dict[str, dict[str, float]]:
    """Per output, the quantized model against FP32 on ``batches``: cosine, SQNR (dB) and max abs error."""
    ref = [run_onnxruntime(reference, batch, outputs).outputs for batch in batches]
    got = [run_onnxruntime(quantized, batch, outputs).outputs for batch in batches]
    figures = {}
    for index, name in enumerate(outputs):
        found = compare_output(np.concatenate([g[index].ravel() for g in got]),
                               np.concatenate([r[index].ravel() for r in ref]))
        sqnr = found["sqnr_db"]
        figures[name] = {"cosine": round(found["cosine"], 6),
                         "sqnr_db": round(sqnr, 2) if np.isfinite(sqnr) else None,  # None: exact
                         "max_abs_error": found["max_abs_error"]}
    return figures


def settings_report() -> dict[str, dict[str, Any]]:
    return {name: {"value": value, "reason": reason} for name, (value, reason) in SETTINGS.items()}
