"""The case library as the report sees it: the ``index.json`` of a cases directory (or the copy a nightly run keeps).

The report never imports the Python case library: everything it shows about a case (title, pattern, links, what to
do, per-backend notes) and about a variant (role, description, build mode, upstream claims) comes from the index
that ``trt-matrix generate`` wrote, so rendering needs neither onnx-graphsurgeon nor this checkout's cases.
"""
from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any, Iterable, Mapping

from harness.worker.errors import InputError
from harness.scan.predicted import index_predictions
from harness.store.claims import ClaimsError, target_claim, variant_claims

INDEX_FORMAT = "trt-matrix/cases/1"
INDEX_FILE = "index.json"


class CaseIndexError(InputError):
    """An index.json the report cannot use; the message names the file and the field."""


@dataclasses.dataclass(frozen=True)
class VariantRow:
    """One row: a variant of a case, and what upstream claimed for it per target (claims are never observations)."""

    case: str
    case_title: str
    case_links: tuple[str, ...]
    pattern: str
    variant: str
    role: str
    description: str
    mode: str
    claims: tuple[dict[str, Any], ...] = ()
    backend_notes: Mapping[str, str] = dataclasses.field(default_factory=dict)  # backend -> what its cells show
    remedy: str | None = None  # the case's "what to do", when the library says
    varies: str | None = None  # the failing variant this variant varies; None: a form of its own
    inherits: bool = False  # the varied form's evidence stands for this variant when it has none of its own
    # its index entry: needs, range claims, the engine predicted from TensorRT's documented rules
    declared: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    not_applicable: Mapping[str, str] = dataclasses.field(default_factory=dict)  # backend -> why the case says so

    @property
    def key(self) -> tuple[str, str]:
        return self.case, self.variant

    def claim_for(self, target_id: str, platform: str | None = None,
                  gpu_arch: str | None = None) -> dict[str, Any] | None:
        return target_claim(self.claims, target_id, platform, gpu_arch)

    def note_for(self, backend: str) -> str | None:
        return self.backend_notes.get(backend)


def _field(where: str, mapping: dict[str, Any], name: str, kind: type | tuple[type, ...], default: Any = ...) -> Any:
    value = mapping.get(name, default)
    if value is ... or not isinstance(value, kind):
        names = kind.__name__ if isinstance(kind, type) else " or ".join(k.__name__ for k in kind)
        found = "missing" if value is ... else f"a {type(value).__name__}"
        raise CaseIndexError(f"{where}: field {name!r} must be a {names}, found {found}")
    return value


def rows_from_index(index: Any, where: str) -> list[VariantRow]:
    """Rows of a parsed index.json, in its order; ``where`` (the file) prefixes every error."""
    if not isinstance(index, dict) or index.get("format") != INDEX_FORMAT:
        found = index.get("format") if isinstance(index, dict) else type(index).__name__
        raise CaseIndexError(f"{where}: field 'format' is {found!r}, expected {INDEX_FORMAT!r}")
    rows = []
    for i, case in enumerate(_field(where, index, "cases", list)):
        at = f"{where}: cases[{i}]"
        if not isinstance(case, dict):
            raise CaseIndexError(f"{at}: a case must be an object")
        case_id = _field(at, case, "id", str)
        at = f"{where}: cases[{i}] ({case_id})"
        notes = _field(at, case, "backend_notes", dict, {})
        if not all(isinstance(v, str) for v in notes.values()):
            raise CaseIndexError(f"{at}: field 'backend_notes' must map a backend to a text")
        remedy = _field(at, case, "remedy", (str, type(None)), None)
        shared = dict(case_title=_field(at, case, "title", str), case_links=tuple(_field(at, case, "links", list, [])),
                      pattern=_field(at, case, "pattern", str), backend_notes=dict(notes), remedy=remedy or None)
        for j, variant in enumerate(_field(at, case, "variants", list)):
            vat = f"{at}.variants[{j}]"
            if not isinstance(variant, dict):
                raise CaseIndexError(f"{vat}: a variant must be an object")
            try:
                claims = variant_claims(variant, vat)
                index_predictions(variant, vat)
            except (ClaimsError, ValueError) as err:
                raise CaseIndexError(str(err)) from None
            # An index written before variants carried links has neither key: no link, nothing inherited.
            varies = _field(vat, variant, "varies", (str, type(None)), None)
            inherits = _field(vat, variant, "inherits", bool, False)
            if inherits and varies is None:
                raise CaseIndexError(f"{vat}: field 'inherits' is true but field 'varies' names no failing variant")
            rows.append(VariantRow(case=case_id, variant=_field(vat, variant, "name", str),
                                   role=_field(vat, variant, "role", str),
                                   description=_field(vat, variant, "description", str, ""),
                                   mode=_field(vat, variant, "mode", str), claims=claims, varies=varies,
                                   inherits=inherits, declared=variant,
                                   not_applicable=dict(case.get("not_applicable") or {}), **shared))
    return rows


def read_index(path: Path | str) -> list[VariantRow]:
    """Rows of the index.json at ``path`` (a cases directory or the file itself)."""
    path = Path(path)
    if path.is_dir():
        path = path / INDEX_FILE
    try:
        index = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise CaseIndexError(f"{path}: no such file; a cases directory's index is written by "
                             "`trt-matrix generate --out DIR`") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as err:
        raise CaseIndexError(f"{path}: not valid JSON ({err})") from None
    return rows_from_index(index, str(path))


def merge_rows(libraries: Iterable[list[VariantRow]]) -> list[VariantRow]:
    """One set of rows from the indexes of several runs, oldest first: a later index's case replaces an earlier one's,
    and a case only an earlier index has keeps its rows (its records may still be in the report)."""
    cases: dict[str, list[VariantRow]] = {}
    for rows in libraries:
        latest: dict[str, list[VariantRow]] = {}
        for row in rows:
            latest.setdefault(row.case, []).append(row)
        cases.update(latest)
    return [row for rows in cases.values() for row in rows]
