"""Read JSON Lines results files into one record per (case, variant, target, host), the last record of a cell winning."""
from __future__ import annotations

import dataclasses
import warnings
from pathlib import Path
from typing import Any, Iterable

from harness.store.results_file import numbered_records, validate_record
from harness.store.run_dirs import record_host


class TornLineWarning(UserWarning):
    """The last line of a results file was cut off mid-write (a crash); it was skipped."""


@dataclasses.dataclass(frozen=True)
class Results:
    """The records to report, and what reading the files skipped (one message per skipped line, naming file:line)."""

    records: list[dict[str, Any]]
    skipped: list[str]


def cell_key(record: dict[str, Any]) -> tuple[str, str, str, str | None]:
    """A cell of the matrix on one host: records of a merge (`harness merge`) keep their hosts apart."""
    return record["case"], record["variant"], record["target"], record_host(record)


def read_results(paths: Iterable[Path | str]) -> Results:
    """Records of ``paths`` read in order; a later record of the same cell and host replaces an earlier one.

    A torn last line is skipped with a :class:`TornLineWarning`; any other line that is not a valid record raises
    :class:`harness.store.results_file.RecordError` naming file:line.
    """
    latest: dict[tuple[str, str, str, str | None], dict[str, Any]] = {}
    skipped: list[str] = []
    for path in map(Path, paths):
        for record in _file_records(path, skipped):
            latest[cell_key(record)] = record
    return Results(records=list(latest.values()), skipped=skipped)


def _file_records(path: Path, skipped: list[str]) -> list[dict[str, Any]]:
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no such results file")

    def torn(message: str) -> None:
        warnings.warn(message, TornLineWarning, stacklevel=4)
        skipped.append(message)

    records = []
    for number, record in numbered_records(path, torn):
        validate_record(record, where=f"{path}:{number}")
        records.append(record)
    return records
