"""Diagnose's file kinds: one module per kind, each a :class:`FileKind` with the same four steps.

* ``detect``: whether a file's content is of the kind (told from its content, never its name);
* ``read``: the kind's reader on it: read, damaged (it starts as the kind and breaks), or of no kind after all;
* ``facts``: what the file states, and what the diagnosis looks up of it (layers, tensors, caches, commands);
* ``sentences``: what the diagnosis says of the file.

A kind module defines ``KIND``; importing this package finds every module in it (none is listed by hand), and
content is offered to the kinds in the order of their ``priority``, the lowest first: the first that detects it reads
it. A new kind is one module here (and its test).
"""
from __future__ import annotations

import dataclasses
import functools
import importlib
import pkgutil
from pathlib import Path
from typing import Any, ClassVar, Sequence

from harness.tensorrt.pasted import unpasted

READ, DAMAGED, NO_KIND = "read", "damaged", "no-kind"
NO_KIND_TEXT = "of no kind this command reads"


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
        return KINDS[self.kind].text if self.kind in KINDS else NO_KIND_TEXT


@dataclasses.dataclass
class Content:
    """A file's bytes as the kinds look at them: ``data``; ``text`` decoded as UTF-8 (errors replaced); ``pasted``,
    the text as it was before a paste into an issue thread added quote markers, code fences, colour codes or
    ``&gt;`` (``pasted.unpasted``). What a kind works out once (``cache``) the kinds after it reuse."""

    path: Path
    data: bytes
    cache: dict[str, Any] = dataclasses.field(default_factory=dict)

    @functools.cached_property
    def text(self) -> str:
        return self.data.decode("utf-8", errors="replace")

    @functools.cached_property
    def pasted(self) -> str:
        return unpasted(self.text)

    def once(self, key: str, compute) -> Any:
        """``compute()``, worked out once per file."""
        if key not in self.cache:
            self.cache[key] = compute()
        return self.cache[key]


@dataclasses.dataclass
class KindFacts:
    """What a file states (``facts``, plain data) and what the diagnosis looks up of it: the layers and tensors it
    names (in the user's model), the calibration caches it names (each with whether this build wrote it) and the
    command lines it holds (their flags checked against each target's TensorRT)."""

    facts: dict[str, Any]
    layer_names: list[str] = dataclasses.field(default_factory=list)
    tensors: list[str] = dataclasses.field(default_factory=list)
    caches: list[tuple[Any, bool]] = dataclasses.field(default_factory=list)
    commands: list[dict[str, Any]] = dataclasses.field(default_factory=list)


@dataclasses.dataclass
class Around:
    """What a kind's facts may read besides the file: the other files given and the targets of the matrix."""

    identified: Sequence[Identified]
    matrix: Sequence[Any]


class FileKind:
    """One kind of file ``diagnose`` reads."""

    name: ClassVar[str]  # "tensorrt-log": the kind as the diagnosis (text and JSON) names it
    text: ClassVar[str]  # "a TensorRT build log"
    priority: ClassVar[int]  # the order content is offered to the kinds in, lowest first
    facts_when_damaged: ClassVar[bool] = False  # a damaged file of this kind still states facts (a log's remains)

    def detect(self, content: Content) -> bool:
        raise NotImplementedError

    def read(self, content: Content) -> Identified:
        raise NotImplementedError

    def facts(self, item: Identified, around: Around) -> KindFacts:
        raise NotImplementedError

    def sentences(self, f: Any) -> list[str]:
        """What the diagnosis says of ``f`` (a ``harness.diagnosis.diagnose.FileDiagnosis`` of this kind)."""
        raise NotImplementedError


def _found_kinds() -> dict[str, FileKind]:
    found = []
    for module in pkgutil.iter_modules(__path__):
        if not module.name.startswith("_"):
            found.append(importlib.import_module(f"{__name__}.{module.name}").KIND)
    return {kind.name: kind for kind in sorted(found, key=lambda kind: kind.priority)}


KINDS: dict[str, FileKind] = _found_kinds()  # name -> kind, in the order content is offered to them
