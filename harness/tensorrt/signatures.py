"""What a failure pattern looks like in a TensorRT log, as the classifier reads it: known failures (a message an
upstream report names) and known forms (a failing node's name or warning lines a pattern gives, weaker).

Each pattern declares its own in its case (``cases/<pattern>.py``, ``Case.log_signatures``); the library's table
(:func:`cases.model.library_signatures`) is handed to the classifier by the caller, and written into a generated
cases directory's ``index.json`` (``log_signatures``) for the worker, which reads it back with
:meth:`LogSignatures.from_json`. Standard library only (runs inside worker images).
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Mapping, NamedTuple


# A layer that leaves the DLA for the GPU, one line per layer (P20 declares it as its known form; the classifier counts
# it among the warnings, and dla_fallbacks reads the layer and the reason). Every form names DLA: the engine scans
# for that literal first.
DLA_FALLBACK_LINE = (
    r"DLA(?:\. Switching this layer's device type to GPU|(?<=will not run on DLA)| layer: .*Switching to GPU "
    r"fallback|, falling back to GPU|\b.*?\. Switching (?:to GPU for layer\b|\S.* device type to GPU))")


class KnownFailure(NamedTuple):
    """A failure message an upstream report names: what it is, the failure pattern it belongs to, the report.

    ``example``: the message as the report prints it (the classifier must name this failure from it; for a failure
    told by its context, ``when_text``, the example holds that context too). A message
    TensorRT also prints as the reason of a skipped tactic (``skip_reason``) names the failure of a build that then
    ends without an implementation for a node; a failure that such a build ends with (``yields_to_skip_reason``,
    a Myelin ForeignNode without implementation) gives way to that reason."""

    id: str
    category: str  # the category the message is classified as
    message: str  # a regular expression's source, with ``flags``
    source: str
    example: str
    pattern: str = ""  # the failure-patterns.md id: the case that declares the signature fills it in
    skip_reason: bool = False
    yields_to_skip_reason: bool = False
    # A failure that prints another known failure's message and is told from it by the text around it: it names the
    # message instead of ``instead_of`` (that failure's id) when the whole text matches ``when_text`` (a regular
    # expression's source), e.g. a DLA build's ForeignNode without implementation, not P8's Myelin region.
    instead_of: str = ""
    when_text: str = ""
    flags: int = 0  # ``message``'s (re.IGNORECASE)

    def search(self, text: str) -> re.Match | None:
        """Where ``message`` is in ``text`` (compiled at the first search of a process: a scan, which reads no log,
        compiles none of the library's)."""
        return re.search(self.message, text, self.flags)


class KnownForm(NamedTuple):
    """A form that a failure pattern gives a log, weaker than a known failure's message: the failing node's name
    (``kind`` a failure category, ``form`` matched against ``LogClassification.node``) or warning lines (``kind`` a
    warning kind, ``form`` matched against each line's body). Other models can take the same form: ``note`` says
    what it does not tell apart. ``example``: a log line of that form, from the report."""

    id: str
    kind: str
    form: str  # a regular expression's source, with ``flags``
    source: str
    note: str
    example: str
    pattern: str = ""  # the failure-patterns.md id: the case that declares the signature fills it in
    flags: int = 0  # ``form``'s (re.IGNORECASE)

    def search(self, text: str) -> re.Match | None:
        """Where ``form`` is in ``text`` (compiled at the first search of a process)."""
        return re.search(self.form, text, self.flags)


_REGEX_FIELDS = {KnownFailure: "message", KnownForm: "form"}


@dataclass(frozen=True)
class LogSignatures:
    """The classifier's table: known failures checked in this order, then known forms."""

    failures: tuple[KnownFailure, ...] = ()
    forms: tuple[KnownForm, ...] = ()

    def __post_init__(self) -> None:
        ids = [s.id for s in (*self.failures, *self.forms)]
        repeated = sorted({i for i in ids if ids.count(i) > 1})
        if repeated:
            raise ValueError(f"log signature ids repeat: {repeated}")

    def to_json(self) -> dict[str, list[dict[str, Any]]]:
        return {"failures": [_entry(s) for s in self.failures], "forms": [_entry(s) for s in self.forms]}

    @classmethod
    def from_json(cls, data: Mapping[str, Any] | None, where: str = "log_signatures") -> "LogSignatures":
        """The table ``to_json`` wrote; a ValueError naming ``where`` and the field when an entry is not one."""
        if not data:
            return NO_SIGNATURES
        if not isinstance(data, Mapping):
            raise ValueError(f"{where}: must be an object with 'failures' and 'forms', found {type(data).__name__}")
        return cls(tuple(_signature(KnownFailure, e, f"{where}.failures[{i}]")
                         for i, e in enumerate(data.get("failures") or ())),
                   tuple(_signature(KnownForm, e, f"{where}.forms[{i}]") for i, e in enumerate(data.get("forms") or ())))


NO_SIGNATURES = LogSignatures()


def _entry(signature: KnownFailure | KnownForm) -> dict[str, Any]:
    return {**signature._asdict(), "flags": int(signature.flags)}


def _signature(kind: type, entry: Any, where: str) -> KnownFailure | KnownForm:
    fields = kind._fields
    if not isinstance(entry, Mapping):
        raise ValueError(f"{where}: must be an object, found {type(entry).__name__}")
    unknown = sorted(set(entry) - set(fields))
    missing = sorted(name for name in fields if name not in entry and name not in kind._field_defaults)
    if unknown or missing:
        raise ValueError(f"{where}: " + "; ".join(filter(None, (
            unknown and f"unknown field(s) {unknown}", missing and f"missing field(s) {missing}"))))
    regex_field = _REGEX_FIELDS[kind]
    try:
        flags = int(entry.get("flags", 0))
        re.compile(entry[regex_field], flags)
    except (re.error, TypeError, ValueError) as err:
        raise ValueError(f"{where}.{regex_field}: not a regular expression ({err})") from None
    return kind(**{**{name: entry[name] for name in fields if name in entry}, "flags": flags})
