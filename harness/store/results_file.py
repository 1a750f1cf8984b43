"""The results file: JSON Lines, one validated record per cell, appended the moment the cell ends.

Appending as records arrive means an interrupted run loses at most the cell that was running; a rerun reads the
file back and skips the cells already recorded.
"""
from __future__ import annotations

import dataclasses
import json
import sys
from functools import lru_cache
from pathlib import Path
from typing import Any, Callable, Iterator

import jsonschema

SCHEMA_PATH = Path(__file__).resolve().parent / "record.schema.json"


class RecordError(ValueError):
    """A record that does not satisfy record.schema.json; the message names the field."""


@lru_cache(maxsize=1)
def _validator() -> jsonschema.protocols.Validator:
    schema = json.loads(SCHEMA_PATH.read_text())
    cls = jsonschema.validators.validator_for(schema)
    cls.check_schema(schema)
    return cls(schema)


def validate_record(record: Any, where: str = "record") -> None:
    """Raise RecordError naming the first offending field when ``record`` breaks the schema."""
    error = jsonschema.exceptions.best_match(_validator().iter_errors(record))
    if error is not None:
        field = "/".join(str(p) for p in error.absolute_path) or "(top level)"
        raise RecordError(f"{where}: field {field!r}: {error.message} (schema: {SCHEMA_PATH.name})")


def numbered_records(path: Path, on_torn_tail: Callable[[str], None]) -> Iterator[tuple[int, dict[str, Any]]]:
    """(line number, record) pairs of a results file; a torn last line (a crash mid-write) goes to ``on_torn_tail``."""
    path = Path(path)
    lines = path.read_text(encoding="utf-8").splitlines()
    last = max((n for n, line in enumerate(lines, start=1) if line.strip()), default=0)
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            yield number, json.loads(line)
        except json.JSONDecodeError as err:
            if number != last:
                raise RecordError(f"{path}:{number}: not a JSON record ({err.msg}); fix or remove that line") from None
            on_torn_tail(f"{path}:{number}: skipped a torn last line ({err.msg}); the cell it held has no record")


@dataclasses.dataclass(frozen=True)
class BadLine:
    """A line of a results file that is not a valid record: where it is, why, and its text (nothing is lost)."""

    path: Path
    line: int
    reason: str
    text: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.reason}"


def scan_records(path: Path) -> tuple[list[tuple[int, dict[str, Any]]], list[BadLine]]:
    """Every valid (line number, record) of a results file, and every line that is not one, for readers that must
    keep going past damage (merging many hosts' files): a torn last line, a line that is not JSON, or a record
    that breaks the schema (the reason names the field)."""
    path = Path(path)
    raw = path.read_bytes()
    lines = raw.decode("utf-8", errors="replace").split("\n")
    torn_tail = not raw.endswith(b"\n") and bool(lines[-1].strip())
    good, bad = [], []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as err:
            reason = ("torn last line (the file ends mid-record: the writer died while writing it)"
                      if torn_tail and number == len(lines) else f"not a JSON record ({err.msg}, column {err.colno})")
            bad.append(BadLine(path, number, reason, line))
            continue
        try:
            validate_record(record, where="record")
        except RecordError as err:
            bad.append(BadLine(path, number, str(err), line))
            continue
        good.append((number, record))
    return good, bad


def iter_records(path: Path) -> Iterator[dict[str, Any]]:
    """Records of a results file (none if it does not exist yet); a torn last line is skipped with a warning."""
    if Path(path).exists():
        for _, record in numbered_records(path, lambda message: print(f"warning: {message}", file=sys.stderr)):
            yield record


def recorded_cells(path: Path, target_id: str) -> set[tuple[str, str]]:
    """(case, variant) pairs that already have a record for ``target_id`` in ``path``."""
    return {(r["case"], r["variant"]) for r in iter_records(path) if r.get("target") == target_id}


class ResultsWriter:
    """Appends validated records to a results file, one line each, flushed as it is written."""

    def __init__(self, path: Path):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._repair_torn_tail()
        self._file = self.path.open("a")

    def _repair_torn_tail(self) -> None:
        """Cut a last line left unfinished by a crash, keeping it in ``<results>.torn`` for inspection.

        The cell it belonged to has no complete record, so a resumed run runs that cell again.
        """
        if not self.path.exists() or not self.path.stat().st_size:
            return
        data = self.path.read_bytes()
        if data.endswith(b"\n"):
            return
        keep = data.rfind(b"\n") + 1
        with self.path.with_name(self.path.name + ".torn").open("ab") as torn:
            torn.write(data[keep:] + b"\n")
        with self.path.open("r+b") as results:
            results.truncate(keep)
        print(f"warning: {self.path}: an unfinished last line was moved to {self.path.name}.torn; its cell runs again",
              file=sys.stderr)

    def append(self, record: dict[str, Any]) -> None:
        validate_record(record, where=f"record for {record.get('case')}/{record.get('variant')} on {record.get('target')}")
        self._file.write(json.dumps(record, sort_keys=True, allow_nan=False) + "\n")
        self._file.flush()

    def close(self) -> None:
        self._file.close()

    def __enter__(self) -> "ResultsWriter":
        return self

    def __exit__(self, *exc) -> None:
        self.close()
