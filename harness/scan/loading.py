"""Read a user's ONNX model for scanning: check it, infer its shapes, import it into onnx-graphsurgeon.

Every problem with the input is a :class:`ModelInputError` whose message names the file and the problem in one line
(not an ONNX file, a truncated file, an opset or IR version newer than the installed onnx, missing external data).
Weights kept in external data files are never read here: shape inference and matching need their shapes only, so a
model over 2 GB scans without loading it (``onnx.shape_inference.infer_shapes_path`` works on the files).
"""
from __future__ import annotations

import collections
import dataclasses
import os
import tempfile
from pathlib import Path
from typing import Any, Iterator

import onnx
import onnx_graphsurgeon as gs
from google.protobuf.message import DecodeError
from onnx import external_data_helper

DEFAULT_DOMAINS = ("", "ai.onnx")
# Top-level fields of onnx.ModelProto (onnx/onnx.proto): number -> (name, protobuf wire type).
_MODEL_FIELDS = {
    1: ("ir_version", 0), 2: ("producer_name", 2), 3: ("producer_version", 2), 4: ("domain", 2),
    5: ("model_version", 0), 6: ("doc_string", 2), 7: ("graph", 2), 8: ("opset_import", 2),
    14: ("metadata_props", 2), 20: ("training_info", 2), 25: ("functions", 2), 26: ("configuration", 2),
}


class ModelInputError(ValueError):
    """The model cannot be scanned; the message is one line naming the file and the problem."""


@dataclasses.dataclass
class LoadedModel:
    """A checked model: its proto with inferred shapes (external data not loaded), and its graphsurgeon graph."""

    path: Path
    model: onnx.ModelProto
    graph: Any  # onnx_graphsurgeon.Graph, nodes named uniquely
    external_data: list[str]  # external data files, relative to the model's directory
    notes: list[str]  # what loading had to work around (shape inference, names), for the report

    @property
    def base_dir(self) -> Path:
        return self.path.resolve().parent

    @property
    def opset(self) -> int:
        return default_opset(self.model)


def default_opset(model: onnx.ModelProto) -> int:
    return max((o.version for o in model.opset_import if o.domain in DEFAULT_DOMAINS), default=0)


def load_model(path: Path | str) -> LoadedModel:
    """Read, check and shape-infer ``path``; raise :class:`ModelInputError` when it cannot be scanned."""
    path = Path(path)
    model = _read(path)
    _check_versions(path, model)
    external = _check_external_data(path, model)
    _check_structure(path, model)
    notes: list[str] = []
    model = _infer_shapes(path, model, bool(external), notes)
    try:
        graph = gs.import_onnx(model)
    except Exception as err:  # an importer failure on an exotic graph is a problem of the input, told in one line
        raise ModelInputError(f"{path}: onnx-graphsurgeon cannot import it ({type(err).__name__}: {err})") from None
    _name_nodes(graph, notes)
    return LoadedModel(path, model, graph, external, notes)


def _read(path: Path) -> onnx.ModelProto:
    if not path.exists():
        raise ModelInputError(f"{path}: no such file")
    if not path.is_file():
        raise ModelInputError(f"{path}: not a file (a directory?)")
    if path.stat().st_size == 0:
        raise ModelInputError(f"{path}: empty file, not an ONNX model")
    try:
        model = onnx.load(str(path), load_external_data=False)
    except DecodeError:
        raise ModelInputError(f"{path}: {_why_undecodable(path.read_bytes())}") from None
    except OSError as err:
        raise ModelInputError(f"{path}: cannot be read ({err.strerror or err})") from None
    if not model.HasField("graph") or not model.opset_import:
        missing = "graph" if not model.HasField("graph") else "opset_import"
        raise ModelInputError(f"{path}: not an ONNX model: it has no {missing} (a truncated file, or another format)")
    return model


def _why_undecodable(data: bytes) -> str:
    """Why protobuf could not parse ``data`` as a ModelProto: cut off inside a field, or not a model at all."""
    position = 0
    for number, wire_type, end in _top_level_fields(data):
        field = _MODEL_FIELDS.get(number)
        if field is None or field[1] != wire_type:
            break
        if end > len(data):
            return (f"truncated ONNX file: it ends inside the model's '{field[0]}' field ({len(data) - position} of "
                    f"{end - position} bytes present); copy or download it again")
        position = end
    if position == 0:
        return "not an ONNX file: its bytes are not an onnx.ModelProto (is it another format, or text?)"
    return f"corrupt ONNX file: it stops being an onnx.ModelProto at byte {position} of {len(data)}"


def _top_level_fields(data: bytes) -> Iterator[tuple[int, int, int]]:
    """(field number, wire type, end offset) of each top-level protobuf field, stopping at the first unreadable."""
    position = 0
    while position < len(data):
        key, position = _varint(data, position)
        if key is None:
            return
        number, wire_type = key >> 3, key & 7
        if wire_type == 0:
            _, end = _varint(data, position)
            if _ is None:
                yield number, wire_type, len(data) + 1
                return
        elif wire_type == 2:
            length, start = _varint(data, position)
            if length is None:
                yield number, wire_type, len(data) + 1
                return
            end = start + length
        else:
            yield number, wire_type, position
            return
        yield number, wire_type, end
        position = end


def _varint(data: bytes, position: int) -> tuple[int | None, int]:
    value, shift = 0, 0
    while position < len(data) and shift < 64:
        byte = data[position]
        position += 1
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return value, position
        shift += 7
    return None, position


def _check_versions(path: Path, model: onnx.ModelProto) -> None:
    supported_opset = onnx.defs.onnx_opset_version()
    opset = default_opset(model)
    if opset > supported_opset:
        raise ModelInputError(f"{path}: opset {opset} is newer than the installed onnx {onnx.__version__} knows (up to "
                              f"{supported_opset}); upgrade onnx (pip install -U onnx) to scan it")
    if model.ir_version > onnx.IR_VERSION:
        raise ModelInputError(f"{path}: IR version {model.ir_version} is newer than the installed onnx "
                              f"{onnx.__version__} reads (up to {onnx.IR_VERSION}); upgrade onnx to scan it")


def _external_tensors(model: onnx.ModelProto) -> Iterator[onnx.TensorProto]:
    for tensor in model.graph.initializer:
        yield tensor
    for node in model.graph.node:
        for attribute in node.attribute:
            if attribute.HasField("t"):
                yield attribute.t


def _check_external_data(path: Path, model: onnx.ModelProto) -> list[str]:
    """The external data files the model's tensors name, each checked to exist and to be long enough."""
    base = path.resolve().parent
    files: dict[str, int] = {}
    for tensor in _external_tensors(model):
        if not external_data_helper.uses_external_data(tensor):
            continue
        info = external_data_helper.ExternalDataInfo(tensor)
        location = Path(info.location)
        where = f"{path}: external data file '{info.location}' of tensor '{tensor.name}'"
        if location.is_absolute() or ".." in location.parts:
            raise ModelInputError(f"{where} lies outside the model's directory; ONNX only allows relative paths below it")
        data_file = base / location
        if not data_file.is_file():
            raise ModelInputError(f"{where} is missing (looked for {data_file}); copy it next to the model")
        size = files.setdefault(info.location, data_file.stat().st_size)
        needed = (info.offset or 0) + (info.length or 0)
        if needed > size:
            raise ModelInputError(f"{where} is too short: the tensor needs bytes up to {needed}, the file has {size} "
                                  "(truncated?)")
    return sorted(files)


def _check_structure(path: Path, model: onnx.ModelProto) -> None:
    """onnx.checker on the graph (not full_check: shape inference follows); a model over 2 GB is checked by path."""
    if not model.graph.node:
        raise ModelInputError(f"{path}: the graph has no nodes, nothing to scan")
    try:
        onnx.checker.check_model(str(path) if _has_external_data(model) else model)
    except onnx.checker.ValidationError as err:
        first = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        raise ModelInputError(f"{path}: not a valid ONNX model: {first}") from None


def _has_external_data(model: onnx.ModelProto) -> bool:
    return any(external_data_helper.uses_external_data(t) for t in _external_tensors(model))


def _infer_shapes(path: Path, model: onnx.ModelProto, external: bool, notes: list[str]) -> onnx.ModelProto:
    """Strict shape inference (types checked, shapes propagated through shape computations); when strict mode
    rejects the model, the shapes the permissive mode can infer, with a note saying so."""
    for strict in (True, False):
        try:
            inferred = _inferred(path, model, external, strict)
        except (onnx.shape_inference.InferenceError, onnx.checker.ValidationError, RuntimeError) as err:
            message = " ".join(str(err).split())[:300]
            if strict:
                notes.append(f"strict shape inference failed ({message}); scanned with the shapes the permissive mode "
                             "inferred, some may be unknown")
                continue
            notes.append(f"shape inference failed ({message}); scanned without inferred shapes")
            return model
        return inferred
    return model


def _inferred(path: Path, model: onnx.ModelProto, external: bool, strict: bool) -> onnx.ModelProto:
    options = {"check_type": True, "strict_mode": strict, "data_prop": True}
    if not external:
        return onnx.shape_inference.infer_shapes(model, **options)
    # External data (e.g. a model over 2 GB): inference reads the files, the tensors stay references.
    with tempfile.TemporaryDirectory(prefix="trt-matrix-scan-") as tmp:
        out = Path(tmp) / "inferred.onnx"
        onnx.shape_inference.infer_shapes_path(os.fspath(path), os.fspath(out), **options)
        return onnx.load(os.fspath(out), load_external_data=False)


def _name_nodes(graph: Any, notes: list[str]) -> None:
    """Give every node a unique name: an unnamed node gets the name onnx-tensorrt (and so TensorRT's log) gives it,
    ``node_of_<first output>``; a repeated name gets ``~2``, ``~3``... so each match names one node."""
    unnamed = 0
    seen: collections.Counter[str] = collections.Counter()
    renamed = []
    for node in graph.nodes:
        if not node.name:
            node.name = f"node_of_{node.outputs[0].name}" if node.outputs else f"node_of_{node.op}"
            unnamed += 1
        seen[node.name] += 1
        if seen[node.name] > 1:
            renamed.append(node.name)
            node.name = f"{node.name}~{seen[node.name]}"
    if unnamed:
        notes.append(f"{unnamed} node(s) had no name: called node_of_<first output> here, as onnx-tensorrt names them "
                     "in TensorRT's log")
    if renamed:
        shown = ", ".join(sorted(set(renamed))[:5])
        notes.append(f"{len(renamed)} node name(s) repeat ({shown}...): later ones are suffixed ~2, ~3 here")
