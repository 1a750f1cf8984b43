"""The kind of a file, told from its content (never its name): a TensorRT build log, engine layers (inspector JSON or
a pasted layer list), engine build metadata, a calibration cache, a trtexec or Polygraphy command line, an ONNX model;
or damaged (it starts as one of them and breaks), or of no kind this command reads.

Each kind is read by the project's reader of it (classify, layers, calibration_cache, onnx); what that reader refuses
decides damaged against no kind.
"""
from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path
from typing import Any

from harness.tensorrt import classify, layers
from harness.tensorrt.calibration_cache import CalibrationCacheError, parse_cache
from harness.tensorrt.pasted import unpasted

KINDS = {
    "tensorrt-log": "a TensorRT build log",
    "engine-layers": "engine layers (engine inspector JSON or a layer list)",
    "engine-build-metadata": "engine build metadata (trtexec's build options as TREx records them)",
    "calibration-cache": "a TensorRT INT8 calibration cache",
    "command-line": "a trtexec or Polygraphy command line",
    "onnx-model": "an ONNX model",
}
READ, DAMAGED, NO_KIND = "read", "damaged", "no-kind"

# ModelProto's first field is ir_version (field 1, varint): the tag byte 0x08, then a small version number.
_ONNX_START = re.compile(rb"^\x08[\x01-\x20]")
# What the loader says of a model that was whole once (against one it cannot read here, e.g. an opset too new).
_ONNX_DAMAGE_WORDS = ("truncated", "corrupt", "no graph", "external data")
_CACHE_START = re.compile(r"^TRT-")
_JSON_START = re.compile(r'^\s*(?:\{|\[\s*[{"\]])')  # "[10/14/2023-15:37:16] [E] ..." is a log line
_ENGINE_JSON_KEYS = re.compile(r'^\s*(?:\{\s*"(?:Layers|Bindings|Name|I/O Tensors)"|\[\s*[{"])')
_BUILD_METADATA_KEYS = ("model_options", "build_options")
_BUILD_METADATA_START = re.compile(r'^\s*\{\s*"(?:model_options|build_options)"')
# One invocation: an optional "$ " prompt and VAR=value prefixes, then trtexec or polygraphy (a path, .exe, or
# `python -m polygraphy`).
_COMMAND = re.compile(r"^\s*(?:\$\s+)?(?:\w+=\S*\s+)*(?:\S*[/\\])?(?:(?P<trtexec>trtexec)(?:\.exe)?"
                      r"|(?:python3?\s+-m\s+)?(?P<polygraphy>polygraphy))(?:\s|$)")
_BINARY_CHARACTERS = re.compile("[\x00-\x08\x0e-\x1a\x1c-\x1f\ufffd]")


@dataclasses.dataclass
class Identified:
    """A file, its kind (None when of no kind), whether it could be read, and what was read from it."""

    path: Path
    kind: str | None
    status: str  # READ, DAMAGED or NO_KIND
    problem: str | None = None  # why damaged or of no kind, in a sentence
    text: str | None = None  # the text (a damaged log: what remains once the binary bytes are dropped)
    content: Any = None  # what the kind's reader returned: LayersRead, CalibrationCache, dict, lines, LoadedModel

    @property
    def kind_text(self) -> str:
        return KINDS.get(self.kind, "of no kind this command reads")


def identify(path: Path) -> Identified:
    """Read ``path`` and tell its kind from its content. Text other than a calibration cache is read as it was before
    a paste into an issue thread added quote markers, code fences, colour codes or ``&gt;`` (``pasted.unpasted``)."""
    data = Path(path).read_bytes()
    if not data.strip():
        return Identified(path, None, NO_KIND, "it is empty" if not data else "it holds only white space")
    if _ONNX_START.match(data):
        return _onnx(path)
    text = data.decode("utf-8", errors="replace")
    if _CACHE_START.match(text):
        return _cache(path, data, text)
    text = unpasted(text)
    if _JSON_START.match(text):
        return _json(path, text)
    command = _command(path, text)
    if command is not None:
        return command
    return _log_or_layer_list(path, text)


def command_lines(text: str) -> list[str]:
    """The non-blank, non-comment lines of ``text``, a trailing backslash joining a line to the next."""
    joined = re.sub(r"\\\r?\n", " ", text)
    return [line.strip() for line in joined.splitlines() if line.strip() and not line.lstrip().startswith("#")]


def command_tool(line: str) -> str | None:
    """"trtexec" or "polygraphy" when ``line`` invokes that tool, else None."""
    invocation = _COMMAND.match(line)
    if invocation is None:
        return None
    return "trtexec" if invocation.group("trtexec") else "polygraphy"


def _onnx(path: Path) -> Identified:
    """Read through the scanner's loader (checked, shape-inferred, external data found but not loaded)."""
    from harness.scan.loading import ModelInputError, load_model

    try:
        loaded = load_model(path)
    except ModelInputError as err:
        problem = str(err).removeprefix(f"{path}: ")
        if "not an ONNX file" in problem:
            return Identified(path, None, NO_KIND, problem)
        damaged = any(word in problem for word in _ONNX_DAMAGE_WORDS)
        return Identified(path, "onnx-model", DAMAGED if damaged else NO_KIND, problem)
    return Identified(path, "onnx-model", READ, content=loaded)


def _cache(path: Path, data: bytes, text: str) -> Identified:
    try:
        cache = parse_cache(data, str(path))
    except CalibrationCacheError as err:
        return Identified(path, "calibration-cache", DAMAGED, str(err), text=text)
    return Identified(path, "calibration-cache", READ, text=text, content=cache)


def _json(path: Path, text: str) -> Identified:
    try:
        data = json.loads(text)
    except ValueError:
        data = None
    if isinstance(data, dict) and all(key in data for key in _BUILD_METADATA_KEYS):
        return Identified(path, "engine-build-metadata", READ, text=text, content=data)
    if _BUILD_METADATA_START.match(text):
        missing = [key for key in _BUILD_METADATA_KEYS if not isinstance(data, dict) or key not in data]
        why = "it is not readable JSON (cut short?)" if data is None else f"it has no {' and no '.join(missing)}"
        return Identified(path, "engine-build-metadata", DAMAGED, f"it starts as engine build metadata, but {why}",
                          text=text)
    try:
        read = layers.read_layers_file(path)
    except ValueError as err:
        if _ENGINE_JSON_KEYS.match(text) or (isinstance(data, dict) and "Layers" in data):
            return Identified(path, "engine-layers", DAMAGED, str(err), text=text)
        return Identified(path, None, NO_KIND, f"it is JSON, but not engine inspector JSON or build metadata ({err})",
                          text=text)
    return Identified(path, "engine-layers", READ, text=text, content=read)


def _command(path: Path, text: str) -> Identified | None:
    lines = command_lines(text)
    tools = [command_tool(line) for line in lines]
    if not lines or not all(tools):
        return None
    import shlex

    for line in lines:
        try:
            shlex.split(line)
        except ValueError as err:
            return Identified(path, "command-line", DAMAGED, f"a {command_tool(line)} command line that cannot be "
                              f"split into arguments ({err}): {line[:120]!r}", text=text)
    return Identified(path, "command-line", READ, text=text, content=lines)


def _log_or_layer_list(path: Path, text: str) -> Identified:
    problem = classify.not_a_log(text)
    if problem is not None and "binary data" in problem:
        readable = _BINARY_CHARACTERS.sub("", text)
        if readable.strip() and classify.not_a_log(readable) is None:
            dropped = len(text) - len(readable)
            return Identified(path, "tensorrt-log", DAMAGED, f"TensorRT log lines mixed with binary data ({dropped} of "
                              f"its {len(text)} characters are not text): the file was overwritten or cut while it "
                              "was written; what remains was read", text=readable)
    if problem is not None:
        return Identified(path, None, NO_KIND, problem)
    try:
        read = layers.read_log_layers(text)
    except ValueError:
        read = None
    result = classify.classify_log(text)
    if read is not None and result.category is None and result.known_failure is None and not any(
            result.warnings.values()):
        return Identified(path, "engine-layers", READ, text=text, content=read)
    return Identified(path, "tensorrt-log", READ, text=text, content=read)
