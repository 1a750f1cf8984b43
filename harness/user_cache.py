"""What a command derives from a file and keeps in this user's cache directory for the next command: a parse that
costs more than reading it back (matrix.yaml's, without importing PyYAML; the names of a recorded TensorRT API
surface, a fifth of the file). Each entry is JSON, named by what it was derived from (its kind, the source's CRC-32
and Adler-32 and length), and written whole or not at all; a command that cannot read or write the cache derives
the value itself, as it would have without one. Each kind keeps its :data:`KEPT` newest entries: a file edited
many times (a matrix.yaml under work) leaves no trail behind."""
from __future__ import annotations

import json
import os
import zlib
from pathlib import Path
from typing import Any, Callable

KEPT = 32  # entries of one kind; writing one more removes the oldest

def cache_dir() -> Path:
    """This user's cache directory for trt-matrix (``$XDG_CACHE_HOME/trt-matrix``, else ``~/.cache/trt-matrix``)."""
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "trt-matrix"


def entry_path(kind: str, source: bytes) -> Path:
    """Where the value of ``kind`` derived from the bytes ``source`` is kept."""
    return cache_dir() / f"{kind}-{zlib.crc32(source):08x}{zlib.adler32(source):08x}-{len(source)}.json"


def read_entry(path: Path) -> Any:
    """The value kept at ``path``; KeyError where none is kept or it cannot be read back."""
    try:
        return json.loads(path.read_text(encoding="utf-8"))["value"]
    except (OSError, ValueError, KeyError, TypeError):
        raise KeyError(path) from None


def write_entry(path: Path, value: Any) -> None:
    """Keep ``value`` at ``path`` when JSON holds it exactly (else, or where the cache cannot be written, nothing)."""
    try:
        text = json.dumps({"value": value}, allow_nan=False)
        if json.loads(text)["value"] != value:  # a tuple, a date or a number as a key would come back otherwise
            return
        path.parent.mkdir(parents=True, exist_ok=True)
        partial = path.with_name(f"{path.name}.{os.getpid()}.partial")
        partial.write_text(text, encoding="utf-8")
        os.replace(partial, path)  # whole or not at all, also with another command writing it meanwhile
        _prune(path.parent, path.name.rpartition("-")[0].rpartition("-")[0])
    except (OSError, ValueError, TypeError):
        pass


def _prune(directory: Path, kind: str) -> None:
    """Remove all but the :data:`KEPT` newest entries of ``kind`` (another command may remove one meanwhile)."""
    entries = sorted(directory.glob(f"{kind}-*.json"), key=lambda entry: entry.stat().st_mtime, reverse=True)
    for old in entries[KEPT:]:
        old.unlink(missing_ok=True)


def derived(kind: str, source: bytes, derive: Callable[[], Any]) -> Any:
    """``derive()`` (a JSON value computed from the bytes ``source``), read back from the cache where a command kept
    it before, else computed and kept."""
    path = entry_path(kind, source)
    try:
        return read_entry(path)
    except KeyError:
        value = derive()
        write_entry(path, value)
        return value
