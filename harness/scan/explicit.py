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

import contextlib
import dataclasses
import logging
import os
import shutil
import tempfile
import traceback
from pathlib import Path
from typing import Any, Callable, Iterator, Sequence

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
    "AddQDQPairToWeight": (True, "weights stay float with a Q/DQ pair, the form every TensorRT version's ONNX parser "
                           "documents: 8.x's refuses a DequantizeLinear of weights stored INT8 (\"only activation "
                           "types allowed as input to this layer\", https://github.com/microsoft/onnxruntime/issues/"
                           "14229; parser rule dq-stored-weights)"),
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


class ExplicitInputError(ValueError):
    """A model or calibration data --to-explicit does not take; the message names the file and what to do."""


class QuantizerError(RuntimeError):
    """ONNX Runtime's quantization failed on the user's model: not a bug of the harness. The message names the
    library, the step and what to try."""

    def __init__(self, library: str, step: str, error: str, advice: str):
        super().__init__(f"{library} failed on this model at {step}: {error}. What to try: {advice}")
        self.library, self.step, self.error, self.advice = library, step, error, advice


PRE_PROCESSING = "onnxruntime.quantization.quant_pre_process"
QUANTIZER = "onnxruntime.quantization.quantize_static"
PRE_PROCESSING_ADVICE = (
    "simplify the export (onnxslim or `polygraphy surgeon sanitize --fold-constants` folds the shape arithmetic "
    "that ONNX Runtime cannot follow), or export with a fixed input size, then run --to-explicit again")
QUANTIZER_ADVICE = (
    "calibration runs the model on ONNX Runtime's CPU provider for every batch, so check that the model loads and "
    "runs there (python -c \"import onnxruntime as o; o.InferenceSession('MODEL.onnx')\"); when the model has "
    "dynamic dimensions besides the batch, give --calibration-data with inputs of its real sizes (the default draws "
    "set every symbolic dimension to 1)")


def describe_error(err: BaseException) -> str:
    """The exception's type and message, and where in the library it was raised (an assert has no message)."""
    frames = traceback.extract_tb(err.__traceback__)
    where = f" (at {Path(frames[-1].filename).name}:{frames[-1].lineno} in {frames[-1].name})" if frames else ""
    return f"{type(err).__name__}: {err}{where}" if str(err) else f"{type(err).__name__}{where}"


@contextlib.contextmanager
def _working_directory(path: Path) -> Iterator[None]:
    """Run with ``path`` as the current directory: ONNX Runtime's symbolic shape inference writes
    ``sym_shape_infer_temp.onnx`` and its weights into the current directory when it stops, and those must not land
    in the user's."""
    before = os.getcwd()
    os.chdir(path)
    try:
        yield
    finally:
        os.chdir(before)


class _LoggedErrors(logging.Handler):
    """The first line of each error ONNX Runtime's quantization logs (through the root logger, with a traceback
    after it) while it is running: kept for the notes instead of printed."""

    def __init__(self) -> None:
        super().__init__(logging.ERROR)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        first = record.getMessage().strip().splitlines()
        if first and first[0] not in self.lines:
            self.lines.append(first[0])


@contextlib.contextmanager
def _logged_errors() -> Iterator[_LoggedErrors]:
    """Root logger at ERROR (its advice to run its pre-processing first, the warnings of a symbolic shape inference
    that is retried: not for the user), and its errors collected rather than printed."""
    root = logging.getLogger()
    level, handler = root.level, _LoggedErrors()
    root.setLevel(logging.ERROR)
    root.addHandler(handler)
    try:
        yield handler
    finally:
        root.removeHandler(handler)
        root.setLevel(level)


def pre_process(source: Path, prepared: Path) -> list[str]:
    """ONNX Runtime's pre-processing (shape inference, BatchNormalization folded into the convs) of ``source`` into
    ``prepared``; when its symbolic shape inference fails (it asserts, stops "incomplete", or sympy is missing), once
    more without it. The notes say what was retried and why; QuantizerError when the retry fails too."""
    from onnxruntime.quantization.shape_inference import quant_pre_process

    try:
        quant_pre_process(os.fspath(source), os.fspath(prepared))
        return []
    except Exception as err:  # noqa: BLE001  (a third-party library on a user's model: any failure is its own)
        first = describe_error(err)
    try:
        quant_pre_process(os.fspath(source), os.fspath(prepared), skip_symbolic_shape=True)
    except Exception as err:  # noqa: BLE001
        raise QuantizerError(PRE_PROCESSING, "pre-processing (shape inference and optimization)",
                             f"{first}; retried without symbolic shape inference: {describe_error(err)}",
                             PRE_PROCESSING_ADVICE) from err
    return [f"{PRE_PROCESSING}: ONNX Runtime's symbolic shape inference failed on this model ({first}); retried "
            "without it (skip_symbolic_shape=True): the shapes come from ONNX's own shape inference, and a tensor "
            "whose shape neither infers is left unquantized"]


def quantize(source: Path, target: Path, data: CalibrationData, work_dir: Path) -> list[str]:
    """Write the explicit Q/DQ model of ``source`` to ``target`` with :data:`SETTINGS`; return the notes of the
    pre-processing. Every temporary file goes into a directory under ``work_dir`` that is removed, success or not;
    QuantizerError names the library and the step that failed."""
    from onnxruntime.quantization import CalibrationDataReader, CalibrationMethod, QuantFormat, QuantType, \
        quantize_static

    reader = type("Reader", (_Reader, CalibrationDataReader), {})(data.calibration)
    value = {name: setting[0] for name, setting in SETTINGS.items()}
    extra = {k: value[k] for k in ("ActivationSymmetric", "WeightSymmetric", "QDQOpTypePerChannelSupportToAxis",
                                   "AddQDQPairToWeight", "QuantizeBias", "OpTypesToExcludeOutputQuantization")}
    source, target, work_dir = Path(source).resolve(), Path(target).resolve(), Path(work_dir).resolve()
    work_dir.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=".explicit-", dir=work_dir) as tmp, \
            _working_directory(Path(tmp)), _logged_errors() as logged:
        prepared, quantized = Path(tmp) / "prepared.onnx", Path(tmp) / "explicit.onnx"
        notes = pre_process(source, prepared)
        notes += [f"ONNX Runtime logged during its pre-processing: {line}" for line in logged.lines]
        try:
            quantize_static(os.fspath(prepared), os.fspath(quantized), reader, quant_format=QuantFormat.QDQ,
                            op_types_to_quantize=value["op_types_to_quantize"], per_channel=value["per_channel"],
                            reduce_range=value["reduce_range"], activation_type=QuantType[value["activation_type"]],
                            weight_type=QuantType[value["weight_type"]],
                            calibrate_method=CalibrationMethod[value["calibrate_method"]], extra_options=extra)
        except Exception as err:  # noqa: BLE001  (a third-party library on a user's model)
            raise QuantizerError(QUANTIZER, f"calibration and quantization on {len(data.calibration)} batch(es) of "
                                 f"{data.source}", describe_error(err), QUANTIZER_ADVICE) from err
        _drop_unused_domains(quantized)
        shutil.move(os.fspath(quantized), os.fspath(target))
    return notes


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


@dataclasses.dataclass
class ExplicitModel:
    """The explicit Q/DQ model --to-explicit wrote, and what its accuracy report needs."""

    source: Path
    path: Path
    data: CalibrationData
    outputs: list[str]
    notes: list[str] = dataclasses.field(default_factory=list)  # what the pre-processing had to retry

    def report(self, written: Sequence[Path]) -> dict[str, Any]:
        """scan.json's ``explicit``: the quantizer, its settings, the calibration, and per model shipped (this one
        and the fixed models ``written`` from it) its accuracy against FP32 on the held-out batches."""
        import onnxruntime

        return {"from": str(self.source), "model": self.path.name,
                "quantizer": f"{QUANTIZER} (onnxruntime {onnxruntime.__version__})",
                "settings": settings_report(), "calibration": self.data.describe(), "notes": self.notes,
                "accuracy": {p.name: accuracy(self.source, p, self.data.held_out, self.outputs)
                             for p in [self.path, *written]}}


def to_explicit(model: Path, out_dir: Path, calibration_dir: Path | None, seed: int,
                progress: Callable[[str], None], warn: Callable[[str], None]) -> ExplicitModel:
    """Quantize the implicit-INT8 model at ``model`` to ``out_dir/explicit.onnx``. ExplicitInputError for a model
    with Q/DQ already or calibration data that does not fit, ModelInputError for a file that is no model,
    QuantizerError when ONNX Runtime's quantization fails on it. ``warn``: the random-data warning, before the
    quantization starts."""
    from harness.scan.loading import load_model

    loaded = load_model(model)
    quantizers = [n.name for n in loaded.graph.nodes if n.op in ("QuantizeLinear", "DequantizeLinear")]
    if quantizers:
        raise ExplicitInputError(f"{model}: --to-explicit takes an implicit-INT8 model without Q/DQ; this one has "
                                 f"{len(quantizers)} Q/DQ node(s) ({quantizers[0]}, ...): scan it with --fix instead")
    try:
        data = calibration_data(calibration_dir, loaded.graph.inputs, seed)
    except InputsError as err:
        raise ExplicitInputError(f"--calibration-data {err}") from None
    if data.warning == RANDOM_WARNING:
        warn(RANDOM_WARNING)
    path = Path(out_dir) / "explicit.onnx"
    progress(f"--to-explicit: quantizing with {QUANTIZER} on {len(data.calibration)} batch(es) of {data.source}")
    notes = quantize(model, path, data, Path(out_dir))
    for note in notes:
        progress(f"--to-explicit: {note}")
    return ExplicitModel(Path(model), path, data, [t.name for t in loaded.graph.outputs], notes)
