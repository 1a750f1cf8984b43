"""Read a user's ONNX model for scanning: check it, infer its shapes, index its graph for the matchers.

Every problem with the input is a :class:`ModelInputError` whose message names the file and the problem in one line
(not an ONNX file, a truncated file, an opset or IR version newer than the installed onnx, missing external data).
Weights kept in external data files are never read here: shape inference and matching need their shapes only, so a
model over 2 GB scans without loading it (``onnx.shape_inference.infer_shapes_path`` works on the files).

The matchers read the model's protobuf through :class:`~harness.scan.proto_graph.ProtoGraph`; onnx-graphsurgeon's
import of every node (what ``--run`` and ``--fix`` cut and rewrite) is made only when something asks for
:attr:`LoadedModel.graph`. onnx's checks (:mod:`harness.scan.file_checks`) are the other cost of loading: on a large
model (or when the scan command started them first) they run in a second process while the scan goes on, and the
view waits for the types they infer only when a matcher first asks one.
"""
from __future__ import annotations

import contextlib
import gc
import mmap
import os
import time
from pathlib import Path
from typing import Any, Callable, Iterator

import onnx
from google.protobuf.message import DecodeError
from onnx import external_data_helper

from harness.scan.file_checks import ChildChecks, FileChecks, check_file, cores
from harness.scan.proto_graph import GraphIndex, ProtoGraph, value_info_type
from harness.worker.errors import InputError

DEFAULT_DOMAINS = ("", "ai.onnx")
# From this many nodes, onnx's checks run in a second process beside the scan (with two cores or more): below it,
# starting a Python process costs more than the checks (a 5,000-node model's take 0.1 s).
CHECKS_APART_FROM_NODES = 10_000
# Top-level fields of onnx.ModelProto (onnx/onnx.proto): number -> (name, protobuf wire type).
_MODEL_FIELDS = {
    1: ("ir_version", 0), 2: ("producer_name", 2), 3: ("producer_version", 2), 4: ("domain", 2),
    5: ("model_version", 0), 6: ("doc_string", 2), 7: ("graph", 2), 8: ("opset_import", 2),
    14: ("metadata_props", 2), 20: ("training_info", 2), 25: ("functions", 2), 26: ("configuration", 2),
}


class ModelInputError(InputError):
    """The model cannot be scanned; the message is one line naming the file and the problem."""


class LoadedModel:
    """A model read for scanning: its proto (external data not loaded), the index and matchers' view of its graph,
    and onnx's checks of the file, which may still be running in a second process (:meth:`checked` waits for them
    and raises :class:`ModelInputError` when the model is invalid)."""

    def __init__(self, path: Path, model: onnx.ModelProto, external_data: list[str],
                 checks: FileChecks | ChildChecks, graph: Any = None) -> None:
        self.path, self.model, self.external_data = path, model, external_data
        self.index = GraphIndex(model.graph)
        self.view = ProtoGraph(model, self.index, lambda: self._checks_types().value_infos(), path.resolve().parent)
        self._checks = checks
        self._graph = graph  # onnx_graphsurgeon.Graph, imported on first use unless given
        self._outputs_typed = False
        self.seconds = 0.0  # how long load_model took (its checks may go on after)

    @property
    def base_dir(self) -> Path:
        return self.path.resolve().parent

    @property
    def opset(self) -> int:
        return default_opset(self.model)

    def checked(self) -> FileChecks:
        """onnx's checks of the file, waited for; the model's graph outputs are then typed as shape inference left
        them. Raises :class:`ModelInputError` when the checker found the model invalid or onnx's C++ crashed."""
        if not isinstance(self._checks, FileChecks):  # still running in their process
            self._checks = self._from_process(self._checks.result)
        _raise_invalid(self.path, self._checks)
        if not self._outputs_typed and self._checks.inferred_outputs:
            outputs = self._checks.outputs()
            if outputs:
                del self.model.graph.output[:]
                self.model.graph.output.extend(outputs)
            self._outputs_typed = True
        return self._checks

    def _checks_types(self) -> FileChecks:
        if not isinstance(self._checks, FileChecks):  # still running in their process
            return self._from_process(self._checks.types)
        return self._checks

    def _from_process(self, answer: Callable[[], FileChecks]) -> FileChecks:
        try:
            return answer()
        except RuntimeError as err:  # onnx's C++ crashed on the file: a problem of the input, told in one line
            raise ModelInputError(f"{self.path}: {err}") from None

    def stop_checks(self) -> None:
        """End the checks' process, if one still runs (the scan stopped early)."""
        if not isinstance(self._checks, FileChecks):  # still running in their process
            self._checks.stop()

    @property
    def strict_shapes(self) -> bool:
        """Strict shape inference (types checked) passed: with the checker, a full check."""
        return self.checked().strict

    @property
    def notes(self) -> list[str]:
        """What loading had to work around (shape inference, node names), for the report."""
        return [*self.checked().notes, *self.index.naming_notes()]

    @property
    def graph(self) -> Any:
        """The model in onnx-graphsurgeon, every tensor typed and shaped as shape inference left it and every node
        named as the view names it (imported on first use: only --run and --fix cut and rewrite)."""
        if self._graph is None:
            checks = self.checked()
            graph = _imported(self.path, self.model)
            _put_shapes(graph, checks)
            for node, name in zip(graph.nodes, self.index.names):
                node.name = name
            self._graph = graph
        return self._graph


def default_opset(model: onnx.ModelProto) -> int:
    return max((o.version for o in model.opset_import if o.domain in DEFAULT_DOMAINS), default=0)


def load_model(path: Path | str, graph: Any = None, *, checks_in_background: bool = False,
               checks: ChildChecks | None = None) -> LoadedModel:
    """Read, check and shape-infer ``path``; raise :class:`ModelInputError` when it cannot be scanned.

    ``graph``, when given, is the file's graph already in onnx-graphsurgeon (the one it was exported from), kept
    instead of importing it again. ``checks_in_background``: a large model's checks may still run when this returns
    (the scan calls :meth:`LoadedModel.checked` before it answers); else they are done, and an invalid model raised.
    ``checks``: onnx's checks of ``path`` already started in their process (:func:`~harness.scan.file_checks.
    start_checks`: the scan command starts them before its imports), used whatever the model's size, and ended if
    the model cannot be read.
    """
    started = time.perf_counter()
    path = Path(path)
    try:
        with _mapped(path) as data:
            _check_header(path, data)
            model = _parsed(path, data)
            # a tensor kept in an external file names it under the key "location": without those bytes in the file,
            # no tensor needs walking for one (50,000 initializers and nodes' attributes read in Python; a tensor
            # marked external without a location is left to the checker, which names it)
            names_a_location = data.find(b"location") >= 0
        external = _check_external_data(path, model) if names_a_location else []
        if not model.graph.node:
            raise ModelInputError(f"{path}: the graph has no nodes, nothing to scan")
    except BaseException:
        if checks is not None:
            checks.stop()
        raise
    if checks is None and len(model.graph.node) >= CHECKS_APART_FROM_NODES and cores() > 1:
        checks = ChildChecks(os.fspath(path))
    loaded = LoadedModel(path, model, external, checks or check_file(os.fspath(path)), graph)
    if not checks_in_background:
        loaded.checked()
    loaded.seconds = time.perf_counter() - started
    return loaded


def _raise_invalid(path: Path, checks: FileChecks) -> None:
    if checks.invalid:
        raise ModelInputError(f"{path}: not a valid ONNX model: {checks.invalid}")


def _imported(path: Path, model: onnx.ModelProto) -> Any:
    import onnx_graphsurgeon as gs

    try:
        with gc_paused():  # the importer allocates an object per tensor: collections would only slow it down
            return gs.import_onnx(model)
    except Exception as err:  # an importer failure on an exotic graph is a problem of the input, told in one line
        raise ModelInputError(f"{path}: onnx-graphsurgeon cannot import it ({type(err).__name__}: {err})") from None


def _put_shapes(graph: Any, checks: FileChecks) -> None:
    """Put the types and shapes shape inference found on the graph imported from the model without them: what
    ``gs.import_onnx`` of the inferred model would have set (a test compares them)."""
    variables = {t.name: t for t in graph.inputs}
    variables.update((t.name, t) for node in graph.nodes for t in node.outputs)
    for name, info in checks.value_infos().items():
        tensor = variables.get(name)
        if tensor is not None and info.type.ByteSize():
            tensor.dtype, tensor.shape, tensor.type = value_info_type(info)


@contextlib.contextmanager
def _mapped(path: Path) -> Iterator[mmap.mmap]:
    """The file's bytes, mapped into memory while the context lasts (parsed from the page cache, not copied first:
    the model's size less at the peak), once it is known to exist, to be a file, to be readable and not empty."""
    if not path.exists():
        raise ModelInputError(f"{path}: no such file")
    if not path.is_file():
        raise ModelInputError(f"{path}: not a file (a directory?)")
    try:
        with open(path, "rb") as stream:
            if not os.fstat(stream.fileno()).st_size:
                raise ModelInputError(f"{path}: empty file, not an ONNX model")
            mapped = mmap.mmap(stream.fileno(), 0, access=mmap.ACCESS_READ)
    except OSError as err:
        raise ModelInputError(f"{path}: cannot be read ({err.strerror or err})") from None
    with mapped:
        yield mapped


def _check_header(path: Path, data: mmap.mmap) -> None:
    """Check that the file's bytes are a whole onnx.ModelProto at its top level (walked without parsing the graph),
    with a graph, and an opset and IR version the installed onnx knows."""
    ir_version, opsets, fields = 0, [], set()
    position = 0
    for number, wire_type, value, end in _top_level_fields(data):
        field = _MODEL_FIELDS.get(number)
        if field is None or field[1] != wire_type:
            break
        if end > len(data):
            raise ModelInputError(f"{path}: truncated ONNX file: it ends inside the model's '{field[0]}' field "
                                  f"({len(data) - position} of {end - position} bytes present); copy or download it "
                                  "again")
        fields.add(field[0])
        if field[0] == "ir_version":
            ir_version = value
        elif field[0] == "opset_import":
            opsets.append(onnx.OperatorSetIdProto.FromString(data[value:end]))
        position = end
    if position < len(data):
        raise ModelInputError(f"{path}: " + (
            "not an ONNX file: its bytes are not an onnx.ModelProto (is it another format, or text?)" if position == 0
            else f"corrupt ONNX file: it stops being an onnx.ModelProto at byte {position} of {len(data)}"))
    missing = [name for name in ("graph", "opset_import") if name not in fields]
    if missing:
        raise ModelInputError(f"{path}: not an ONNX model: it has no {' and no '.join(missing)} (a truncated file, or "
                              "another format)")
    _check_versions(path, ir_version, opsets)


def _top_level_fields(data: bytes | mmap.mmap) -> Iterator[tuple[int, int, int, int]]:
    """(field number, wire type, value, end offset) of each top-level protobuf field: the value of a varint, the
    start offset of a length-delimited field. Stops at the first key that cannot be read; an end past the data means
    the field is cut off."""
    position = 0
    while position < len(data):
        key, position = _varint(data, position)
        if key is None:
            return
        number, wire_type = key >> 3, key & 7
        if wire_type == 0:
            value, end = _varint(data, position)
            if value is None:
                yield number, wire_type, 0, len(data) + 1
                return
        elif wire_type == 2:
            length, value = _varint(data, position)
            if length is None:
                yield number, wire_type, 0, len(data) + 1
                return
            end = value + length
        else:  # no field of a ModelProto has another wire type
            yield number, wire_type, 0, position
            return
        yield number, wire_type, value, end
        position = end


def _varint(data: bytes | mmap.mmap, position: int) -> tuple[int | None, int]:
    value, shift = 0, 0
    while position < len(data) and shift < 64:
        byte = data[position]
        position += 1
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return value, position
        shift += 7
    return None, position


def _check_versions(path: Path, ir_version: int, opsets: list[onnx.OperatorSetIdProto]) -> None:
    supported_opset = onnx.defs.onnx_opset_version()
    opset = max((o.version for o in opsets if o.domain in DEFAULT_DOMAINS), default=0)
    if opset > supported_opset:
        raise ModelInputError(f"{path}: opset {opset} is newer than the installed onnx {onnx.__version__} knows (up to "
                              f"{supported_opset}); upgrade onnx (pip install -U onnx) to scan it")
    if ir_version > onnx.IR_VERSION:
        raise ModelInputError(f"{path}: IR version {ir_version} is newer than the installed onnx "
                              f"{onnx.__version__} reads (up to {onnx.IR_VERSION}); upgrade onnx to scan it")


def _external_tensors(model: onnx.ModelProto) -> Iterator[onnx.TensorProto]:
    """The tensors whose data lies in an external file: initializers, and tensor attributes (a Constant's value)."""
    external, tensor_attribute = onnx.TensorProto.EXTERNAL, onnx.AttributeProto.TENSOR
    yield from (tensor for tensor in model.graph.initializer if tensor.data_location == external)
    yield from (attribute.t for node in model.graph.node if node.attribute for attribute in node.attribute
                if attribute.type == tensor_attribute and attribute.t.data_location == external)


def _check_external_data(path: Path, model: onnx.ModelProto) -> list[str]:
    """The external data files the model's tensors name, each checked to exist and to be long enough."""
    base = path.resolve().parent
    files: dict[str, int] = {}
    for tensor in _external_tensors(model):
        info = external_data_helper.ExternalDataInfo(tensor)
        location = Path(info.location)
        where = f"{path}: external data file '{info.location}' of tensor '{tensor.name}'"
        if location.is_absolute() or ".." in location.parts:
            raise ModelInputError(f"{where} lies outside the model's directory; ONNX only allows relative paths "
                                  "below it")
        data_file = base / location
        if not data_file.is_file():
            raise ModelInputError(f"{where} is missing (looked for {data_file}); copy it next to the model")
        size = files.setdefault(info.location, data_file.stat().st_size)
        needed = (info.offset or 0) + (info.length or 0)
        if needed > size:
            raise ModelInputError(f"{where} is too short: the tensor needs bytes up to {needed}, the file has {size} "
                                  "(truncated?)")
    return sorted(files)


def _parsed(path: Path, data: mmap.mmap) -> onnx.ModelProto:
    try:
        with memoryview(data) as view:  # the parsed model copies what it keeps: the mapping may close after
            return onnx.ModelProto.FromString(view)
    except DecodeError as err:
        raise ModelInputError(f"{path}: corrupt ONNX file: protobuf cannot parse its graph ({err})") from None


@contextlib.contextmanager
def gc_paused() -> Iterator[None]:
    """Python's cyclic garbage collector off (then back as it was): building and walking a graph of a hundred
    thousand objects, which all stay alive, only makes it rescan them over and over."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()
