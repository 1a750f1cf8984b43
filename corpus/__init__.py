"""The real-exporter corpus: ONNX models written by torch.onnx (TorchScript and dynamo exporters) from torchvision and
timm architectures, FP32 and quantized, with the findings a scan must give on each, written by hand from the graph.

    import corpus
    corpus.names()                   # every model
    corpus.names(kind="qat")         # the quantized ones ("fp32": the float ones)
    model = corpus.load("resnet18-qat-pq-ts-op13")   # onnx.ModelProto, weights re-drawn
    path = corpus.save("resnet18-qat-pq-ts-op13", tmp_path)  # the same, written to tmp_path/<name>.onnx for the CLI
    corpus.info(name)                # how it was exported: torch version, exporter, opset, call, op counts
    corpus.expected(name)            # the expected findings: [{"case", "variant", "nodes", "why"}]

The stored files (``models/<name>.onnx``) keep every node and every tensor of at most 1024 elements (Q/DQ scales and
zero points always); the larger initializers are stored empty, with their mean, standard deviation and range in
``models/<name>.json``, and :func:`load` re-draws them from a normal distribution clipped to that range, seeded by
:data:`SEED` and the tensor's name (at most :data:`DRAWN` values, repeated to fill a larger tensor): the same
values on every load. They were written by
``scripts/export_torch_corpus.py`` on a host with torch (see each JSON's ``versions`` and ``command``).
"""
from __future__ import annotations

import json
import zlib
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
MODELS = HERE / "models"
EXPECTED = HERE / "expected"
SEED = 28  # issue 28, which asked for the corpus
KINDS = ("fp32", "qat")
DRAWN = 1 << 16


class CorpusError(LookupError):
    """A model name the corpus does not hold, or a kind it does not know."""


def names(kind: str | None = None) -> list[str]:
    """The corpus models' names, sorted; ``kind`` "fp32" or "qat" keeps those of that kind."""
    if kind is not None and kind not in KINDS:
        raise CorpusError(f"kind {kind!r}: the corpus has kinds {', '.join(KINDS)}")
    found = sorted(p.stem for p in MODELS.glob("*.onnx"))
    return [n for n in found if kind is None or info(n)["kind"] == kind]


def info(name: str) -> dict[str, Any]:
    """How ``name`` was exported (its ``models/<name>.json``)."""
    path = MODELS / f"{name}.json"
    if not path.is_file():
        raise CorpusError(f"no corpus model {name!r} (no {path}); corpus.names() lists them")
    return json.loads(path.read_text())


def load(name: str):
    """The model ``name`` as an ``onnx.ModelProto``, its emptied initializers re-drawn with a fixed seed."""
    import onnx  # noqa: PLC0415 - keep `import corpus` light

    emptied = info(name)["redrawn"]
    model = onnx.load(str(MODELS / f"{name}.onnx"))
    redraw(model, emptied, SEED, MODELS / f"{name}.json")
    return model


def redraw(model, emptied: list[dict[str, Any]], seed: int, record: Path) -> None:
    """Fill ``model``'s emptied initializers in place from their entries in ``emptied`` (name, data type, dims,
    mean, std, min, max; ``record`` is the file they come from, for the error)."""
    import numpy as np  # noqa: PLC0415
    from onnx import helper, numpy_helper  # noqa: PLC0415

    emptied = {entry["name"]: entry for entry in emptied}
    for tensor in model.graph.initializer:
        entry = emptied.pop(tensor.name, None)
        if entry is None:
            continue
        dtype = np.dtype(helper.tensor_dtype_to_np_dtype(entry["data_type"]))
        rng = np.random.default_rng([seed, zlib.crc32(tensor.name.encode())])
        # At most DRAWN values are drawn and repeated to fill the tensor: ViT-B's 86M weights in well under a second
        count = int(np.prod(entry["dims"], dtype=np.int64))
        values = rng.standard_normal(min(count, DRAWN), dtype=np.float32) * np.float32(entry["std"]) + np.float32(
            entry["mean"])
        values = np.resize(values, entry["dims"])
        np.clip(values, entry["min"], entry["max"], out=values)
        if dtype.kind in "iu":
            np.rint(values, out=values)
        tensor.CopyFrom(numpy_helper.from_array(values.astype(dtype, copy=False), tensor.name))
    if emptied:
        raise CorpusError(f"{record} lists initializers the model lacks: {sorted(emptied)}")


def save(name: str, directory: Path | str) -> Path:
    """Write :func:`load`'s model to ``directory/<name>.onnx`` (for tests that run the CLI on a file)."""
    import onnx  # noqa: PLC0415

    path = Path(directory) / f"{name}.onnx"
    path.parent.mkdir(parents=True, exist_ok=True)
    onnx.save(load(name), str(path))
    return path


def expected(name: str) -> list[dict[str, Any]]:
    """The findings a scan of ``name`` must give, each ``{"case", "variant", "nodes", "why"}``, written by hand from
    the graph (``expected/<name>.json``); every finding of the scan must be one of them."""
    path = EXPECTED / f"{name}.json"
    if not path.is_file():
        raise CorpusError(f"no expectations for {name!r} (no {path})")
    return json.loads(path.read_text())["findings"]
