"""The third-party corpus: what users bring. YOLOv8n / YOLO11n / YOLO26n (detect, seg, pose) exported by ultralytics'
own exporter, a dozen timm and two transformers architectures exported by torch.onnx, and INT8/FP8 versions of them
made by NVIDIA ModelOpt's ONNX PTQ and by ONNX Runtime's ``quantize_static`` in several settings (ultralytics' own
among them), with the verdict each target group should get, written by hand from TensorRT's documents.

    from corpus import thirdparty
    thirdparty.names()                        # every model
    thirdparty.names(kind="quantized")        # the quantized ones ("fp32": the float exports)
    thirdparty.names(quantizer="ort-u8s8")    # one quantizer's (ids: thirdparty.QUANTIZERS)
    model = thirdparty.load("yolo11n-detect-ul-mo-int8")   # onnx.ModelProto, weights re-drawn
    path = thirdparty.save("yolo11n-detect-ul-mo-int8", tmp_path)
    thirdparty.info(name)                     # how it was made: exporter, quantizer, its call, versions, op counts
    thirdparty.expected(name)                 # per target: the verdict it should get, why, and the rule
    thirdparty.expected_engine(name)          # what the predicted engine should say (float type, SiLU fusion)

The stored files (``models/<name>.onnx.gz``, gzip-compressed to keep the checkout small) keep every node, every
value_info and every tensor of at most 1024 elements (Q/DQ scales and zero points always); the larger initializers
are stored empty and :func:`load` re-draws them as :func:`corpus.load` does, seeded by :data:`SEED`. They were made
by ``scripts/export_thirdparty_corpus.py`` on the GPU host (each JSON's ``versions`` and ``call`` say how); the
calibration data were seeded synthetic images, never real ones.
"""
from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

from corpus import CorpusError, redraw

HERE = Path(__file__).resolve().parent
MODELS = HERE / "models"
EXPECTED = HERE / "expected.json"
SEED = 41  # issue 41, which asked for this corpus
KINDS = ("fp32", "quantized")
QUANTIZERS = ("mo-int8", "mo-int8-fp32", "mo-fp8", "ul-mo-int8", "ort-u8s8", "ort-s8-asym-pc", "ort-s8-sym-pc",
              "ort-s8-sym-pt", "ul-ort-int8")


def names(kind: str | None = None, quantizer: str | None = None) -> list[str]:
    """The models' names, sorted; ``kind`` "fp32" or "quantized", ``quantizer`` one of :data:`QUANTIZERS`."""
    if kind is not None and kind not in KINDS:
        raise CorpusError(f"kind {kind!r}: the third-party corpus has kinds {', '.join(KINDS)}")
    if quantizer is not None and quantizer not in QUANTIZERS:
        raise CorpusError(f"quantizer {quantizer!r}: the third-party corpus has {', '.join(QUANTIZERS)}")
    found = sorted(p.name.removesuffix(".onnx.gz") for p in MODELS.glob("*.onnx.gz"))
    return [n for n in found if (kind is None or info(n)["kind"] == kind)
            and (quantizer is None or info(n)["quantizer"] == quantizer)]


def info(name: str) -> dict[str, Any]:
    """How ``name`` was made (its ``models/<name>.json``)."""
    path = MODELS / f"{name}.json"
    if not path.is_file():
        raise CorpusError(f"no third-party corpus model {name!r} (no {path}); corpus.thirdparty.names() lists them")
    return json.loads(path.read_text())


def load(name: str):
    """The model ``name`` as an ``onnx.ModelProto``, its emptied initializers re-drawn with a fixed seed."""
    import onnx  # noqa: PLC0415 - keep the import light

    emptied = info(name)["redrawn"]
    with gzip.open(MODELS / f"{name}.onnx.gz", "rb") as handle:
        model = onnx.load_model_from_string(handle.read())
    redraw(model, emptied, SEED, MODELS / f"{name}.json")
    return model


def save(name: str, directory: Path | str) -> Path:
    """Write :func:`load`'s model to ``directory/<name>.onnx`` (for the CLI)."""
    import onnx  # noqa: PLC0415

    path = Path(directory) / f"{name}.onnx"
    path.parent.mkdir(parents=True, exist_ok=True)
    onnx.save(load(name), str(path))
    return path


def expectations() -> dict[str, Any]:
    """The whole of ``expected.json``: the target groups, the rules (each verdict with its reason and source) and
    which rules apply to which model."""
    return json.loads(EXPECTED.read_text())


def expected(name: str) -> dict[str, dict[str, str]]:
    """Per target id: ``{"verdict", "why", "rule"}``, the verdict a scan of ``name`` should give there (a verdict
    may be a set written "a|b": either is right), for the targets the expectations cover."""
    data = expectations()
    if name not in data["models"]:
        raise CorpusError(f"no expectations for {name!r} in {EXPECTED}")
    groups = data["groups"]
    found: dict[str, dict[str, str]] = {}
    for rule_id in data["models"][name]:
        rule = data["rules"][rule_id]
        for group in rule["groups"]:
            for target in groups[group]:
                found.setdefault(target, {"verdict": rule["verdict"], "why": rule["why"], "rule": rule_id})
    return found


def expected_engine(name: str) -> dict[str, Any]:
    """What the predicted engine of ``name`` should say, where the documents settle it: ``float_precision`` (with
    ``why_float``) and ``silu_fused`` (with ``why_silu``); empty where nothing is expected."""
    data = expectations()
    if name not in data["models"]:
        raise CorpusError(f"no expectations for {name!r} in {EXPECTED}")
    return data.get("engine", {}).get(name, {})
