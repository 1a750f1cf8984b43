"""Per-layer compute precision of a built TensorRT engine, mapped back to ONNX node names.

Pure Python (standard library only; an ``onnx.ModelProto`` is read by duck typing, onnx is never imported).

Supported inputs:

* Engine inspector JSON (``IEngineInspector`` / ``trtexec --exportLayerInfo``): ``{"Layers": [...], "Bindings": [...]}``
  (``"I/O Tensors"`` instead of ``"Bindings"`` from 11.x; neither is read) with layer dicts
  (``ProfilingVerbosity.DETAILED``) or layer-name strings (``LAYER_NAMES_ONLY``); a bare list of
  either; one layer dict or one name string (``get_layer_information`` of a single layer). A JSON text cut short
  (an excerpt pasted from an issue) is closed after its last complete value and read as far as it goes.
* Any of the above pasted into an issue thread: what the paste added (``pasted.unpasted``: GitHub quote markers
  ``> ``, nested ``> > ``, ``>`` alone on blank lines, also HTML-escaped as ``&gt;``; markdown code fences; inline-code
  backticks; ANSI colour codes; CRLF) is removed, then each line's prefix of line numbers (``12: ``, ``12 | ``), log
  timestamps and severities (``[11/24/2026-10:00:00] [I] ``, ``2026-11-24T10:00:00.123Z ``, ``[TRT] [V] ``).
  Engine inspector JSON printed inside a log (``trtexec --dumpLayerInfo``) is read from its ``{"Layers":`` to its
  end.
* The "Engine Layer Information" block of a verbose build log, one ``Layer(TYPE): NAME, Tactic: T, IO`` line per
  layer, in the two tensor spellings TensorRT has used:
  ``581 (Int8[1,96:32,800,912])`` (8.5 and later) and ``581[Int8(1,96:32,800,912)]`` (8.0 to 8.4), with several
  inputs separated by ", " and tactics in hex (``0x03ea``) or decimal (``-3721528``). When a log holds several
  blocks (several builds), the last one is read. Without a block header (an excerpt pasted from a forum post),
  every such line is read wherever it stands, whatever logger prefix comes before ``Layer(`` (trtexec ``[V]``,
  Python ``[TRT]``, DeepStream, timestamps). A layer line wrapped by a terminal or a PDF (it does not end with a
  tensor) is joined with the lines that continue it. A line that starts like a layer line but cannot be read is
  passed over and counted (:class:`LayersRead`), never guessed at.
* The engine inspector's one-line text (``LayerInformationFormat.ONELINE``: ``Name: N, LayerType: T, Inputs: [ {
  Name: x, ..., Format/Datatype: ... }], ..., Weights: {"Type": "Int8", ...}, Metadata: ...``), one record per layer,
  as a user prints it and pastes it: read as the layer dicts of the JSON, a record wrapped over several lines joined.

Compute precision of one layer (``EngineLayer.precision``), first rule that gives an answer:

1. Names only (no layer details): ``unknown``, never fp32.
2. Layers carrying weights (convolution, deconvolution, fully connected; ``Weights.Type`` or ``ConvWeights.Type``
   of fused ConvActPool layers): the weight type. A QAT residual conv that adds an FP16 tensor is INT8.
3. Otherwise the data types of the inputs (``Format/Datatype`` in JSON up to 10.x, ``Datatype`` or ``DataType``
   from 11.x, the dtype in log text): the lowest
   precision among them (fp4 < int8 < fp8 < fp16 < bf16 < fp32), so Int8 inputs mean int8. Integer and boolean
   tensors (shapes, indices) say nothing and are skipped; with no informative input the outputs are read.
   Boundary layers read inputs and outputs together, so a Q/DQ conversion reports its quantized side.
4. Last resort, the tactic name: ``int8``/``i8``/``imma`` mean int8, ``bf16`` bf16, ``hmma``/``f16``/``h16``
   fp16, ``f32``/``scudnn``/``sgemm`` fp32.
5. Otherwise ``unknown``.

A Myelin region (a layer named ``{ForeignNode[...]}``) is one layer for a whole fused subgraph; its boundary tensors
do not show what ran inside. It is never reported int8: with a float tensor at its boundary it is the lowest float
precision there (under a calibrator Myelin regions have no INT8: https://github.com/NVIDIA/TensorRT/issues/2323,
https://github.com/NVIDIA/TensorRT/issues/3230), with only INT8 boundaries ``unknown``.

Boundaries (``EngineLayer.is_boundary``): ``Reformat`` layers (``Origin`` QDQ: a Quantize or Dequantize run on its
own, as a type conversion; ``Origin`` REFORMAT: a layout/type conversion TensorRT inserted) and "Reformatting CopyNode" layers (also NoOp ones). They convert
data between layers; they are not where a node computes.

ONNX node names of a layer (``EngineLayer.onnx_nodes``): from 10.0 the ``Metadata`` field lists them
(``[ONNX Layer: NAME]`` records separated by ``\\x1e``; a list of such strings is accepted too) and is preferred.
Otherwise the layer name is taken apart: fused names split on `` + `` and `` || `` (outside brackets), ``PWN(a, b)``
unwrapped recursively, the "Reformatting CopyNode for Input Tensor 0 to " prefix dropped, ``_clone_N`` copies folded
into their original, TensorRT's own ``(Unnamed Layer* N)`` names dropped. Given ONNX names (a model, or node names
plus initializer consumers), only real node names are kept and an initializer name such as ``conv1.weight`` becomes
the node(s) consuming it.

A Myelin ``{ForeignNode[FIRST...LAST]}`` names only the first and last layer of the region it swallowed. Without the
ONNX graph it is read as those two. With the graph (``OnnxNames.from_model``) it is every node on a path from FIRST to
LAST: a region is one layer, so it holds every node between two of its nodes. An end may be a tensor
(``.../Slice_4_output_0[Constant]``, the node that writes it) or a fused name (``Reshape_1 + Transpose_2``); an end
TensorRT named itself (``(Unnamed Layer* 1590) [Shuffle]``) bounds nothing, and the region is then read as its other
end only.
"""
from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Union

from harness.judgement.vocabulary import PRECISION_ORDER
from harness.tensorrt.pasted import is_elision, unpasted

# Widening order: a node that several compute layers cover gets the widest precision among them.

# Data type words as TensorRT writes them in Format/Datatype strings, weight types, and log text. The inspector's
# FP8, FP4 and BF16 spellings ("Row major linear FP8 format", "FP8", "Row major linear FP4 format", "FP4",
# "FP4E2M1", "Row major linear BFloat16 format", "BFloat16", "Half") are those NVIDIA's engine explorer reads from
# inspector JSON (NVIDIA/TensorRT, tools/experimental/trt-engine-explorer/trex/activations.py, _regionFormatDict).
_DTYPE_PRECISION = {
    "int8": "int8",
    "fp8": "fp8",
    "float8": "fp8",
    "e4m3": "fp8",
    "fp4": "fp4",
    "fp4e2m1": "fp4",
    "e2m1": "fp4",
    "half": "fp16",
    "fp16": "fp16",
    "bf16": "bf16",
    "bfloat16": "bf16",
    "float": "fp32",
    "fp32": "fp32",
}
_DTYPE_WORD = re.compile(r"\b(?:" + "|".join(_DTYPE_PRECISION) + r")\b", re.IGNORECASE)
# Checked in this order on a lower-cased tactic name ("..._i8f16_i8i32_f32..." is int8, "hmma_..._f16f16f32" fp16).
_TACTIC_HINTS = (
    ("int8", re.compile(r"int8|(?:^|_)i8|imma")),
    ("bf16", re.compile(r"bf16")),
    ("fp16", re.compile(r"hmma|f16|h16|half")),
    ("fp32", re.compile(r"f32|fp32|scudnn|sgemm")),
)

_REFORMAT_COPY_PREFIX = re.compile(r"^Reformatting CopyNode for (?:Input|Output) Tensor \d+ to ")
_PWN = re.compile(r"^PWN\((?P<args>.*)\)$", re.DOTALL)
_FOREIGN_NODE = re.compile(r"^\{ForeignNode\[(?P<region>.*)\]\}$", re.DOTALL)
_CLONE_SUFFIX = re.compile(r"^(?P<original>.+)_clone_\d+$")
_UNNAMED_LAYER = "(Unnamed Layer* "
_METADATA_SEPARATORS = re.compile("[\x1e\x1f\ufffd]")  # U+FFFD: a record separator a paste could not show
_ONNX_LAYER_RECORD = re.compile(r"^\[ONNX Layer: (?P<node>.*)\]$", re.DOTALL)

_LAYER_INFO_HEADER = re.compile(r"Engine Layer Information:")
_ONE_LINE_RECORD = re.compile(r"^\s*Name: .*?, LayerType: ")
_ONE_LINE_KEY = re.compile(r", [A-Za-z][\w/]*: ")
_ONE_LINE_WRAPS = 64  # lines one record may be wrapped over
_LAYER_INFO_LINE = re.compile(r"(?:^|\s)Layer\((?P<type>[A-Za-z0-9_]+)\): (?P<rest>.*)$")
_LAYER_INFO_FIELDS = re.compile(r"^(?P<name>.*?), Tactic: -?(?:0x[0-9a-fA-F]+|\d+), (?P<io>.*)$")
# "(Int8[1,96:32,800,912])" (8.5+) or "[Int8(1,96:32,800,912)]" (8.0-8.4).
_TENSOR_DTYPE = re.compile(
    r"\((?P<new>[A-Za-z][A-Za-z0-9]*)\[[-0-9,: ]*\]\)|\[(?P<old>[A-Za-z][A-Za-z0-9]*)\([-0-9,: ]*\)\]"
)
_ARROW = " -> "
_ENDS_WITH_TENSOR = re.compile(r"(?:\)\]|\]\))\s*$")
_WRAPPED_LAYER_LINE_LIMIT = 20_000  # characters: a layer line is never longer; past it, lines are not joined
_LOOKS_LIKE_JSON = re.compile(r'^\s*(?:\{|\[\s*[\{"\]]|")')
_INSPECTOR_JSON_START = re.compile(r'\{\s*"Layers"\s*:')
# One token of what a paste puts before each line: a line number, a log timestamp, a logger severity or tag.
_LINE_PREFIX = re.compile(
    r"^[ \t]*(?:(?:\d+[ \t]*[:|][ \t]?|\d+[ \t]+(?=\S)"
    r"|\[\d{1,2}/\d{1,2}/\d{2,4}-\d\d:\d\d:\d\d\][ \t]*"
    r"|\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?Z?[ \t]+"
    r"|\[(?:[VIWEF]|TRT|TensorRT|VERBOSE|INFO|WARNING|ERROR|DEBUG)\][ \t]*))+"
)
_JSON_REPAIR_ATTEMPTS = 64
_NOT_JSON = object()


@dataclass(frozen=True)
class EngineLayer:
    """One layer of a built engine: what it is, the precision it computes in, and the ONNX nodes it implements."""

    name: str
    layer_type: str | None
    precision: str
    is_boundary: bool
    onnx_nodes: tuple[str, ...]
    origin: str | None
    device: str | None = None  # "GPU" or "DLA" where the log's placement list says; None where nothing says


@dataclass(frozen=True)
class OnnxNames:
    """The node names of an ONNX graph, for each initializer the nodes that consume it, and (read from a model) the
    graph's edges, which Myelin regions are expanded along."""

    nodes: frozenset[str]
    initializer_consumers: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    order: tuple[str, ...] = ()  # node names in graph order
    producers: Mapping[str, str] = field(default_factory=dict)  # tensor -> the node that writes it
    successors: Mapping[str, tuple[str, ...]] = field(default_factory=dict)  # node -> the nodes reading its outputs

    @classmethod
    def from_model(cls, model: Any) -> OnnxNames:
        """Read an ``onnx.ModelProto`` (or GraphProto), subgraphs of If/Loop/Scan included."""
        graph = model.graph if hasattr(model, "graph") else model
        order: list[str] = []
        consumers: dict[str, list[str]] = {}
        producers: dict[str, str] = {}
        readers: dict[str, list[str]] = {}
        _collect_graph_names(graph, order, consumers, producers, readers)
        successors: dict[str, list[str]] = {}
        for tensor, node in producers.items():
            for reader in readers.get(tensor, ()):
                if reader not in successors.setdefault(node, []):
                    successors[node].append(reader)
        return cls(frozenset(order), {k: tuple(v) for k, v in consumers.items()}, tuple(dict.fromkeys(order)),
                   producers, {k: tuple(v) for k, v in successors.items()})


# What callers may pass as ONNX names: OnnxNames, an onnx.ModelProto (duck-typed), node names, or nothing.
OnnxNamesSource = Union[OnnxNames, Iterable[str], Any, None]


@dataclass(frozen=True)
class FallbackReport:
    """Expected-INT8 nodes that did not verifiably run in INT8."""

    fallback: tuple[str, ...]  # ran in another precision
    unverified: tuple[str, ...]  # found, but the engine info has no precision (names-only info)
    missing: tuple[str, ...]  # no engine layer names them (fused away under another name, or misspelled)


def as_onnx_names(source: OnnxNamesSource) -> OnnxNames | None:
    """Accept an ``OnnxNames``, an ``onnx.ModelProto``, or an iterable of node names (no initializer mapping)."""
    if source is None or isinstance(source, OnnxNames):
        return source
    if hasattr(source, "graph") or hasattr(source, "node"):
        return OnnxNames.from_model(source)
    if isinstance(source, (str, bytes)):
        raise TypeError(
            f"ONNX names must be an onnx.ModelProto, an OnnxNames or a collection of node names, not a single "
            f"string ({source!r:.80}); wrap one name in a set: {{name}}"
        )
    return OnnxNames(frozenset(source))


def onnx_nodes_from_layer_name(name: str, onnx_names: OnnxNames | None = None) -> tuple[str, ...]:
    """The ONNX node names a TensorRT layer name is made of (rules: module docstring)."""
    foreign = _FOREIGN_NODE.match(name.strip())
    if foreign is not None and onnx_names is not None and onnx_names.successors:
        return _foreign_region(foreign.group("region"), onnx_names)
    return _resolve(_name_parts(name), onnx_names)


def is_foreign_node(name: str) -> bool:
    """Whether a layer is a Myelin region (``{ForeignNode[...]}``)."""
    return _FOREIGN_NODE.match(name.strip()) is not None


def foreign_node_regions(layers: Iterable[EngineLayer]) -> dict[str, tuple[str, ...]]:
    """Myelin region layer name -> the ONNX nodes it swallowed, for the engine's ForeignNode layers."""
    return {layer.name: layer.onnx_nodes for layer in layers if is_foreign_node(layer.name)}


def onnx_nodes_from_metadata(metadata: str | list[str] | None) -> tuple[str, ...]:
    """The node names in a 10.x ``Metadata`` field ("[ONNX Layer: a]\\x1e[ONNX Layer: b]"), in order."""
    if not metadata:
        return ()
    texts = [metadata] if isinstance(metadata, str) else list(metadata)
    nodes = []
    for text in texts:
        for record in _METADATA_SEPARATORS.split(text):
            onnx_layer = _ONNX_LAYER_RECORD.match(record.strip())
            if onnx_layer is not None:
                nodes.append(onnx_layer.group("node"))
    return tuple(dict.fromkeys(nodes))


def layers_from_inspector_json(info: Any, onnx_names: OnnxNamesSource = None) -> list[EngineLayer]:
    """Layers from decoded engine inspector JSON (any of the shapes in the module docstring)."""
    names = as_onnx_names(onnx_names)
    if isinstance(info, Mapping) and "Layers" in info:
        entries = info["Layers"]
    elif isinstance(info, Mapping) and "Name" in info:
        entries = [info]
    elif isinstance(info, str):
        entries = [info]
    else:
        entries = info
    if not isinstance(entries, list):
        raise ValueError(
            f"engine inspector JSON must be {{'Layers': [...]}}, a list of layers, one layer dict with a 'Name', or "
            f"one layer name; got {type(entries).__name__}: {str(entries)[:200]!r}"
        )
    return [_layer_from_json_entry(entry, position, names) for position, entry in enumerate(entries)]


@dataclass(frozen=True)
class LayersRead:
    """The layers of a file or log, and what reading it passed over."""

    layers: list[EngineLayer]
    source: str  # "engine inspector JSON" or "log"
    lines_skipped: int = 0  # non-blank log lines that are not layer lines (or lie outside the block read)
    not_understood: tuple[str, ...] = ()  # log lines that start like a layer line but could not be read

    def summary(self) -> str:
        """One sentence: how many layers were read from what, and what was passed over."""
        text = f"{len(self.layers)} layer(s) read from {self.source}"
        if self.source == "log":
            text = f"{len(self.layers)} layer line(s) read, {self.lines_skipped} other line(s) skipped"
        if self.not_understood:
            text += (f", {len(self.not_understood)} layer line(s) not understood and skipped (first: "
                     f"{self.not_understood[0]!r:.200})")
        return text


def read_log_layers(text: str, onnx_names: OnnxNamesSource = None) -> LayersRead:
    """The layer lines of a verbose TensorRT log: those of its last "Engine Layer Information" block, or, in a log
    without that header (a pasted excerpt), every ``Layer(TYPE): ...`` line wherever it stands."""
    names = as_onnx_names(onnx_names)
    lines = text.splitlines()
    starts = [i for i, line in enumerate(lines) if _LAYER_INFO_HEADER.search(line)]
    region = _unwrapped_layer_lines(lines[starts[-1] + 1:] if starts else lines)
    layers, not_understood, read = [], [], 0
    for line, physical in region:
        layer_line = _LAYER_INFO_LINE.search(line)
        if layer_line is None:
            if line.strip() and starts:
                break  # the block ends at its first other line
            continue
        read += physical
        try:
            layers.append(_layer_from_log_line(layer_line.group("type"), layer_line.group("rest"), line, names))
        except ValueError:
            not_understood.append(line.strip())
    if not layers and not_understood:
        _layer_from_log_line(*_LAYER_INFO_LINE.search(not_understood[0]).group("type", "rest"), not_understood[0],
                             names)  # raises the reason the first one could not be read
    if not layers and starts:
        raise ValueError(
            f"the 'Engine Layer Information' block at line {starts[-1] + 1} of this log has no "
            f"'Layer(TYPE): NAME, Tactic: ...' lines after it; first line after the header: "
            f"{next((l for l, _ in region if l.strip()), '(end of log)')!r}"
        )
    if not layers and not starts:
        one_line = _one_line_layers(lines, names)
        if one_line is not None:
            return one_line
        placed = placement_layers(lines, names)
        if placed is not None:
            return placed
    if not layers:
        raise ValueError(
            "this log has no 'Engine Layer Information' block and no 'Layer(TYPE): NAME, Tactic: ...' line (nor a "
            "'[GpuLayer] TYPE: NAME' / '[DlaLayer] NAME' placement list): "
            "TensorRT prints them at the end of a successful build when the log is verbose (trtexec --verbose, or "
            "trt.Logger.VERBOSE) and the engine was built with detailed profiling (--profilingVerbosity=detailed / "
            "ProfilingVerbosity.DETAILED). A failed or non-verbose build has none; read the engine inspector JSON "
            "instead (trtexec --exportLayerInfo)."
        )
    skipped = sum(1 for line in lines if line.strip()) - read
    return LayersRead(layers, "log", skipped, tuple(not_understood))


def _unwrapped_layer_lines(lines: list[str]) -> list[tuple[str, int]]:
    """(line, how many physical lines it was) with wrapped layer lines joined: a layer line whose text does not end
    with a tensor (``name[Half(1,32,75,75)]`` or ``name (Half[1,32,75,75])``) continues on the next non-blank lines
    that carry no logger prefix and start no layer line of their own, joined as they stand (a terminal or a PDF cut
    ``[Float(-`` / ``2,3,300,300)]``, or after a space)."""
    joined: list[tuple[str, int]] = []
    open_layer = False
    for line in lines:
        continues = (open_layer and line.strip() and not _LAYER_INFO_LINE.search(line) and not is_elision(line)
                     and not _LINE_PREFIX.match(line) and len(joined[-1][0]) < _WRAPPED_LAYER_LINE_LIMIT)
        if continues:
            joined[-1] = (joined[-1][0] + line, joined[-1][1] + 1)
        else:
            joined.append((line, 1))
        open_layer = bool(_LAYER_INFO_LINE.search(joined[-1][0])) and not _ENDS_WITH_TENSOR.search(joined[-1][0])
    return joined


def _one_line_layers(lines: list[str], names: OnnxNames | None) -> LayersRead | None:
    """The layers of inspector text in the one-line format (``LayerInformationFormat.ONELINE``: ``Name: N, LayerType:
    T, Inputs: [ { Name: x, ..., Format/Datatype: ... }], ...``, one record per layer, a record wrapped over the lines
    that continue it); None when ``lines`` hold no such record."""
    records: list[list[str]] = []
    for line in lines:
        if _ONE_LINE_RECORD.match(line):
            records.append([line.lstrip()])
        elif (records and records[-1][-1] and line.strip() and not _LINE_PREFIX.match(line) and not is_elision(line)
              and len(records[-1]) < _ONE_LINE_WRAPS):
            records[-1].append(line)  # joined as it stands: a wrap can cut a word ("TacticName: s" / "m80_xmma...")
        elif records and records[-1][-1]:
            records[-1].append("")  # anything else ends the record
    if not records:
        return None
    layers = [_layer_from_json_entry(_one_line_entry("".join(record)), position, names)
              for position, record in enumerate(records)]
    read = sum(len([line for line in record if line]) for record in records)
    return LayersRead(layers, "engine inspector one-line text", sum(1 for line in lines if line.strip()) - read)


def _one_line_entry(record: str) -> dict[str, Any]:
    """A one-line record as the layer dict of inspector JSON: tensors as dicts, weights as JSON, the rest as text."""
    entry: dict[str, Any] = {}
    for key, value in _one_line_fields(record.strip()):
        if key in ("Inputs", "Outputs"):
            entry[key] = [dict(_one_line_fields(tensor)) for tensor in _top_level_braces(value)]
        elif value.startswith("{"):
            try:
                entry[key] = json.loads(value)
            except ValueError:
                entry[key] = value
        else:
            entry[key] = value
    return entry


def _one_line_fields(text: str) -> list[tuple[str, str]]:
    """``Key: value`` pairs of a one-line record (or of one tensor, braces stripped), split at ``, Key: `` outside
    brackets."""
    text = text.strip().removeprefix("{").removesuffix("}").strip()
    fields, depth, start = [], 0, 0
    for i, char in enumerate(text):
        if char in "([{":
            depth += 1
        elif char in ")]}":
            depth -= 1
        elif char == "," and depth == 0 and _ONE_LINE_KEY.match(text, i):
            fields.append(text[start:i])
            start = i + 2
    fields.append(text[start:])
    pairs = []
    for text_field in fields:
        key, _, value = text_field.partition(": ")
        pairs.append((key.strip(), value.strip()))
    return pairs


def _top_level_braces(text: str) -> list[str]:
    """The ``{...}`` groups directly inside a ``[...]`` list."""
    groups, depth, start = [], 0, 0
    for i, char in enumerate(text):
        if char == "{":
            depth += 1
            start = i if depth == 1 else start
        elif char == "}":
            depth -= 1
            if depth == 0:
                groups.append(text[start:i + 1])
    return groups


def layers_from_log(text: str, onnx_names: OnnxNamesSource = None) -> list[EngineLayer]:
    """Layers from a verbose TensorRT log (see :func:`read_log_layers`)."""
    return read_log_layers(text, onnx_names).layers


def read_layers_file(path: str | Path, onnx_names: OnnxNamesSource = None) -> LayersRead:
    """Layers from a file holding engine inspector JSON or a verbose build log; every error names the file."""
    text = Path(path).read_text(encoding="utf-8", errors="replace")
    if not text.strip():
        raise ValueError(f"{path}: the file is empty: expected engine inspector JSON or a verbose TensorRT log")
    text = _unwrap_paste(unpasted(text))
    try:
        info = json.loads(text)
    except ValueError:
        if not _LOOKS_LIKE_JSON.match(text):
            info = _inspector_json_in_log(text)
        else:
            try:
                info = _loads_possibly_truncated_json(text)
            except ValueError as err:
                raise ValueError(f"{path}: starts like engine inspector JSON but is not readable JSON: {err}") from err
    if info is not _NOT_JSON:
        try:
            return LayersRead(layers_from_inspector_json(info, onnx_names), "engine inspector JSON")
        except ValueError as err:
            raise ValueError(f"{path}: JSON, but not engine inspector JSON: {err}") from err
    try:
        return read_log_layers(text, onnx_names)
    except ValueError as err:
        raise ValueError(f"{path}: not JSON, read as a TensorRT log: {err}") from err


def _unwrap_paste(text: str) -> str:
    """The text without each line's prefix of line numbers, timestamps and severities (no JSON line starts like
    one)."""
    return "\n".join(_LINE_PREFIX.sub("", line, count=1) for line in text.splitlines())


def _inspector_json_in_log(text: str) -> Any:
    """Engine inspector JSON printed inside a log (``trtexec --dumpLayerInfo``), read from its ``{"Layers":`` up to
    where it ends (or as far as it goes when cut short); ``_NOT_JSON`` when the log holds none."""
    start = _INSPECTOR_JSON_START.search(text)
    if start is None:
        return _NOT_JSON
    try:
        return json.JSONDecoder().raw_decode(text, start.start())[0]
    except ValueError:
        try:
            return _loads_possibly_truncated_json(text[start.start():])
        except ValueError:
            return _NOT_JSON


def layers_from_file(path: str | Path, onnx_names: OnnxNamesSource = None) -> list[EngineLayer]:
    """Layers from a file holding engine inspector JSON or a verbose build log (see :func:`read_layers_file`)."""
    return read_layers_file(path, onnx_names).layers


def node_precisions(layers: Iterable[EngineLayer], onnx_node_names: Iterable[str] | None = None) -> dict[str, str]:
    """ONNX node -> compute precision, over all layers that name the node.

    Compute layers decide; boundary layers only count for a node no compute layer covers. When several layers of
    the deciding kind cover a node (a Q/DQ node cloned into several consumers), the node is int8 only if all of
    them with a known precision are, otherwise the widest precision wins (int8 < fp8 < fp16 < bf16 < fp32): a node
    that runs partly in float is a fallback, not INT8. ``unknown`` only when no covering layer has a precision.
    Given ``onnx_node_names``, only those nodes are reported.
    """
    compute: dict[str, list[str]] = {}
    boundary: dict[str, list[str]] = {}
    for layer in layers:
        for node in layer.onnx_nodes:
            compute.setdefault(node, [])
            boundary.setdefault(node, [])
            (boundary if layer.is_boundary else compute)[node].append(layer.precision)
    wanted = None if onnx_node_names is None else set(onnx_node_names)
    return {
        node: _widest(compute[node] or boundary[node]) for node in compute if wanted is None or node in wanted
    }


def fallback_nodes(precisions: Mapping[str, str], expected_int8: Iterable[str]) -> FallbackReport:
    """Split the expected-INT8 nodes that are not int8 into fallback, unverified and missing, in expected order."""
    fallback, unverified, missing = [], [], []
    for node in dict.fromkeys(expected_int8):
        precision = precisions.get(node)
        if precision is None:
            missing.append(node)
        elif precision == "unknown":
            unverified.append(node)
        elif precision != "int8":
            fallback.append(node)
    return FallbackReport(tuple(fallback), tuple(unverified), tuple(missing))


def _collect_graph_names(graph: Any, order: list[str], consumers: dict[str, list[str]], producers: dict[str, str],
                         readers: dict[str, list[str]]) -> None:
    initializers = {init.name for init in graph.initializer}
    for node in graph.node:
        if node.name:
            order.append(node.name)
            for tensor in node.input:
                if tensor in initializers and node.name not in consumers.setdefault(tensor, []):
                    consumers[tensor].append(node.name)
                if tensor:
                    readers.setdefault(tensor, []).append(node.name)
            for tensor in node.output:
                if tensor:
                    producers[tensor] = node.name
        for attribute in node.attribute:
            for subgraph in [attribute.g] if attribute.HasField("g") else list(attribute.graphs):
                _collect_graph_names(subgraph, order, consumers, producers, readers)


def _layer_from_json_entry(entry: Any, position: int, names: OnnxNames | None) -> EngineLayer:
    if isinstance(entry, str):
        return EngineLayer(
            name=entry,
            layer_type=None,
            precision="unknown",
            is_boundary=bool(_REFORMAT_COPY_PREFIX.match(entry)),
            onnx_nodes=onnx_nodes_from_layer_name(entry, names),
            origin=None,
        )
    if not isinstance(entry, Mapping) or "Name" not in entry:
        raise ValueError(
            f"engine layer #{position} is neither a layer name nor a layer dict with a 'Name' key: "
            f"{str(entry)[:200]!r}. Is this a profile (trtexec --exportProfile) instead of layer information "
            "(--exportLayerInfo)?"
        )
    name = entry["Name"]
    for field_name, expected in (("Name", (str,)), ("LayerType", (str, type(None))), ("Origin", (str, type(None))),
                                 ("TacticName", (str, type(None))), ("Inputs", (list,)), ("Outputs", (list,)),
                                 ("Metadata", (str, list, type(None)))):
        value = entry.get(field_name, [] if field_name in ("Inputs", "Outputs") else None)
        if not isinstance(value, expected) or (field_name == "Metadata" and isinstance(value, list)
                                               and not all(isinstance(v, str) for v in value)):
            raise ValueError(
                f"engine layer #{position}: field {field_name!r} must be "
                f"{' or '.join('null' if t is type(None) else t.__name__ for t in expected)}, found "
                f"{type(value).__name__} {str(value)[:80]!r}"
            )
    layer_type = entry.get("LayerType")
    origin = entry.get("Origin")
    boundary = _is_boundary(name, layer_type, origin)
    inputs = [dtype_precision(tensor_type(t)) for t in entry.get("Inputs", []) if isinstance(t, dict)]
    outputs = [dtype_precision(tensor_type(t)) for t in entry.get("Outputs", []) if isinstance(t, dict)]
    if is_foreign_node(name):
        precision = _region_precision(inputs, outputs)
    else:
        precision = (
            _weights_precision(entry)
            or _io_precision(inputs, outputs, boundary)
            or _tactic_precision(entry.get("TacticName"))
            or "unknown"
        )
    onnx_nodes = onnx_nodes_from_metadata(entry.get("Metadata"))
    if not onnx_nodes:
        onnx_nodes = onnx_nodes_from_layer_name(name, names)
    elif names is not None:
        onnx_nodes = tuple(node for node in onnx_nodes if node in names.nodes)
    return EngineLayer(name, layer_type, precision, boundary, onnx_nodes, origin)


def _layer_from_log_line(layer_type: str, rest: str, line: str, names: OnnxNames | None) -> EngineLayer:
    fields = _LAYER_INFO_FIELDS.match(rest)
    if fields is None:
        raise ValueError(
            "engine layer line not understood (expected 'Layer(TYPE): NAME, Tactic: VALUE, INPUTS -> OUTPUTS'): "
            f"{line!r}"
        )
    name, io = fields.group("name"), fields.group("io")
    tensors = list(_TENSOR_DTYPE.finditer(io))
    if io.lstrip().startswith("->"):
        arrow = io.index("->")
    else:
        arrow = next((t.end() for t in tensors if io.startswith(_ARROW, t.end())), None)
    if arrow is None:
        raise ValueError(
            "engine layer line has no 'INPUTS -> OUTPUTS' part with data types in either known spelling, "
            f"'name (Int8[1,64,56,56])' (8.5+) or 'name[Int8(1,64,56,56)]' (8.0-8.4): {line!r}"
        )
    inputs = [dtype_precision(t.group("new") or t.group("old")) for t in tensors if t.start() < arrow]
    outputs = [dtype_precision(t.group("new") or t.group("old")) for t in tensors if t.start() >= arrow]
    boundary = _is_boundary(name, layer_type, None)
    if is_foreign_node(name):
        precision = _region_precision(inputs, outputs)
    else:
        precision = _io_precision(inputs, outputs, boundary) or "unknown"
    return EngineLayer(name, layer_type, precision, boundary, onnx_nodes_from_layer_name(name, names), None)


def _is_boundary(name: str, layer_type: str | None, origin: str | None) -> bool:
    return layer_type == "Reformat" or origin in ("QDQ", "REFORMAT") or bool(_REFORMAT_COPY_PREFIX.match(name))


def tensor_type(tensor: Mapping[str, Any]) -> str:
    """A tensor's data type text: ``Format/Datatype`` up to 10.x; 11.x splits it into a data type and ``Format``.

    The split: NVIDIA's migration page
    https://docs.nvidia.com/deeplearning/tensorrt/11.0.0/api/migration/tensorrt-10x-to-11x-IEngineInspector.html
    (its "I/O Tensors" entries spell it ``DataType``); NVIDIA's own 11.x readers of layer ``Inputs``/``Outputs`` read
    ``Datatype`` (trt-samples-for-hackathon-cn, cookbook/tensorrt_cookbook/utils_engine.py). Both are read; the
    ``Format`` text alone is never taken for a data type.
    """
    if "Format/Datatype" in tensor:
        return str(tensor["Format/Datatype"])
    return str(tensor.get("Datatype", tensor.get("DataType", "")))


def dtype_precision(text: str) -> str | None:
    """The float/quantized precision a data type string names; None for integer, boolean and unrecognised types."""
    word = _DTYPE_WORD.search(text or "")
    return _DTYPE_PRECISION[word.group(0).lower()] if word else None


def _weights_precision(entry: Mapping[str, Any]) -> str | None:
    for key, value in entry.items():
        if key.endswith("Weights") and isinstance(value, Mapping) and "Type" in value:
            precision = dtype_precision(str(value["Type"]))
            if precision is not None:
                return precision
    return None


def _io_precision(inputs: list[str | None], outputs: list[str | None], boundary: bool) -> str | None:
    if boundary:
        candidates = [p for p in inputs + outputs if p]
    else:
        candidates = [p for p in inputs if p] or [p for p in outputs if p]
    return min(candidates, key=PRECISION_ORDER.index) if candidates else None


def _region_precision(inputs: list[str | None], outputs: list[str | None]) -> str:
    """A Myelin region's precision: the lowest float precision at its boundary; never int8 (module docstring)."""
    floats = [p for p in inputs + outputs if p and p != "int8"]
    return min(floats, key=PRECISION_ORDER.index) if floats else "unknown"


def _tactic_precision(tactic_name: str | None) -> str | None:
    lowered = (tactic_name or "").lower()
    return next((precision for precision, hint in _TACTIC_HINTS if hint.search(lowered)), None)


def _widest(precisions: list[str]) -> str:
    known = [p for p in precisions if p in PRECISION_ORDER]
    return max(known, key=PRECISION_ORDER.index) if known else "unknown"


def _name_parts(name: str) -> list[str]:
    """Candidate node names in a layer name, before any check against the ONNX graph."""
    name = _REFORMAT_COPY_PREFIX.sub("", name.strip())
    parts = []
    for part in _split_top_level(name, (" + ", " || ")):
        part = part.strip()
        pwn = _PWN.match(part)
        foreign = _FOREIGN_NODE.match(part)
        if pwn is not None:
            for argument in _split_top_level(pwn.group("args"), (",",)):
                parts.extend(_name_parts(argument))
        elif foreign is not None:
            for end in foreign.group("region").split("...", 1):
                parts.extend(_name_parts(end))
        elif part and _UNNAMED_LAYER not in part:
            parts.append(part)
    return parts


def _foreign_region(region: str, names: OnnxNames) -> tuple[str, ...]:
    """The ONNX nodes of ``{ForeignNode[FIRST...LAST]}``: every node on a path from FIRST to LAST (with an end that
    names no node, the other end's nodes), in graph order."""
    first_text, separator, last_text = region.partition("...")
    first = _region_end(first_text, names)
    last = _region_end(last_text, names) if separator else first
    predecessors: dict[str, list[str]] = {}
    for node, readers in names.successors.items():
        for reader in readers:
            predecessors.setdefault(reader, []).append(node)
    inside = _reachable(first, names.successors) & _reachable(last, predecessors)
    inside |= set(first) | set(last)
    position = {node: index for index, node in enumerate(names.order)}
    return tuple(sorted(inside, key=lambda node: position.get(node, len(position))))


def _region_end(text: str, names: OnnxNames) -> tuple[str, ...]:
    """The nodes one end of a region names: nodes, or tensors (``name[Constant]``: the node that writes it, for an
    initializer the nodes that read it)."""
    nodes = []
    for part in _name_parts(text):
        resolved = _resolve([part], names)
        if not resolved:
            tensor = re.sub(r"\[[^\[\]]*\]$", "", part)
            resolved = (names.producers[tensor],) if tensor in names.producers else _resolve([tensor], names)
        nodes.extend(resolved)
    return tuple(dict.fromkeys(nodes))


def _reachable(starts: Iterable[str], edges: Mapping[str, Iterable[str]]) -> set[str]:
    found, frontier = set(starts), list(starts)
    while frontier:
        for following in edges.get(frontier.pop(), ()):
            if following not in found:
                found.add(following)
                frontier.append(following)
    return found


def _split_top_level(text: str, separators: tuple[str, ...]) -> list[str]:
    """Split ``text`` at ``separators`` that stand outside (), [] and {}; unbalanced text splits everywhere."""
    pieces, depth, start, i = [], 0, 0, 0
    while i < len(text):
        char = text[i]
        if char in "([{":
            depth += 1
        elif char in ")]}":
            depth -= 1
        elif depth == 0:
            separator = next((s for s in separators if text.startswith(s, i)), None)
            if separator is not None:
                pieces.append(text[start:i])
                i += len(separator)
                start = i
                continue
        i += 1
    pieces.append(text[start:])
    if depth != 0:
        return re.split("|".join(re.escape(s) for s in separators), text)
    return pieces


def _resolve(parts: Iterable[str], names: OnnxNames | None) -> tuple[str, ...]:
    """Fold clones into their original and, given ONNX names, keep real nodes and map initializers to consumers."""
    nodes = []
    for part in parts:
        clone = _CLONE_SUFFIX.match(part)
        if names is None:
            nodes.append(clone.group("original") if clone else part)
        elif part in names.nodes:
            nodes.append(part)
        elif clone is not None and clone.group("original") in names.nodes:
            nodes.append(clone.group("original"))
        else:
            nodes.extend(names.initializer_consumers.get(part, ()))
    return tuple(dict.fromkeys(nodes))


def _loads_possibly_truncated_json(text: str) -> Any:
    """``json.loads``; if the text was cut short, close it after its last complete value and load that."""
    try:
        return json.loads(text)
    except json.JSONDecodeError as first_error:
        cut_short = not text[first_error.pos:].strip() or first_error.msg.startswith("Unterminated string")
        if not cut_short:
            raise ValueError(
                f"{first_error} (the error is before the end of the text, so it is damaged, not cut short)"
            ) from first_error
        for end, closers in _json_cut_points(text)[:_JSON_REPAIR_ATTEMPTS]:
            try:
                return json.loads(text[:end] + closers)
            except json.JSONDecodeError:
                continue
        raise ValueError(
            f"{first_error}; closing it after one of its last {_JSON_REPAIR_ATTEMPTS} complete values did not help "
            "either (the text is damaged, not just cut short)"
        ) from first_error


def _json_cut_points(text: str) -> list[tuple[int, str]]:
    """(end, closing brackets) after each complete-looking value, last first: where cut-short JSON may be closed."""
    points, stack, in_string, escaped = [], [], False, False
    for i, char in enumerate(text):
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
                points.append((i + 1, "".join(reversed(stack))))
        elif char == '"':
            in_string = True
        elif char in "{[":
            stack.append("}" if char == "{" else "]")
        elif char in "}]":
            if stack:
                stack.pop()
            points.append((i + 1, "".join(reversed(stack))))
        elif char.isalnum() and (i + 1 == len(text) or not (text[i + 1].isalnum() or text[i + 1] in ".+-")):
            points.append((i + 1, "".join(reversed(stack))))
    return points[::-1]


# A DLA build's placement list (TensorRT 8.4+, info severity): "[GpuLayer] CONVOLUTION: /model.16/cv1/conv/Conv" and
# "[DlaLayer] {ForeignNode[/model.0/conv/Conv.../model.9/cv2/act/Mul]}", under "Layers Running on DLA/GPU" headers.
_PLACEMENT_LINE = re.compile(r"\[(?P<device>Gpu|Dla)Layer\] (?:(?P<type>[A-Z][A-Z0-9_]*): )?(?P<name>.+?)\s*$")


def placement_layers(lines: list[str], onnx_names: OnnxNamesSource = None) -> LayersRead | None:
    """The layers of a placement list (``[GpuLayer] TYPE: NAME``, ``[DlaLayer] {ForeignNode[...]}``) with the device
    each runs on, or None when ``lines`` hold none. The list names no precision: each layer's is "unknown"."""
    names = as_onnx_names(onnx_names)
    layers = []
    for line in lines:
        placed = _PLACEMENT_LINE.search(line)
        if placed is None:
            continue
        name, layer_type = placed.group("name").rstrip(","), placed.group("type")
        layers.append(EngineLayer(name=name, layer_type=layer_type, precision="unknown",
                                  is_boundary=_is_boundary(name, layer_type, None),
                                  onnx_nodes=onnx_nodes_from_layer_name(name, names), origin=None,
                                  device=placed.group("device").upper()))
    if not layers:
        return None
    skipped = sum(1 for line in lines if line.strip()) - len(layers)
    return LayersRead(layers, "log", skipped)
