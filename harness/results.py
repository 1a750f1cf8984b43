"""The results file: JSON Lines, one validated record per cell, appended the moment the cell ends.

Appending as records arrive means an interrupted run loses at most the cell that was running; a rerun reads the
file back and skips the cells already recorded.
"""
from __future__ import annotations

import json
import sys
from functools import lru_cache
from pathlib import Path
from typing import Any, Iterator

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


def iter_records(path: Path) -> Iterator[dict[str, Any]]:
    """Records of a results file. A torn last line (a crash mid-write) is skipped with a warning on stderr."""
    path = Path(path)
    if not path.exists():
        return
    lines = path.read_text().splitlines()
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            yield json.loads(line)
        except json.JSONDecodeError as err:
            if number == len(lines):
                print(f"warning: {path}:{number}: skipping a torn last line ({err.msg})", file=sys.stderr)
                continue
            raise RecordError(f"{path}:{number}: not a JSON record ({err.msg}); fix or remove that line") from None


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
        """End a file whose last write was cut off with a newline, so the next record starts on its own line."""
        if self.path.exists() and self.path.stat().st_size:
            with self.path.open("rb") as existing:
                existing.seek(-1, 2)
                torn = existing.read(1) != b"\n"
            if torn:
                with self.path.open("a") as fix:
                    fix.write("\n")

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
