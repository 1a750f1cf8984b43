"""Results files: JSON Lines, one validated record per line, appended the moment a cell ends. The one reader, the
one writer, and the key of a record.

Appending as records arrive means an interrupted run loses at most the cell that was running. Reading keeps every
line that is not a valid record as a :class:`BadLine` (where, why, its text): a torn last line (the writer died
mid-line), a line that is not JSON, a record that breaks ``record.schema.json``. A reader that must not go on past
damage (the report) reads strictly; the others keep going and report it. The writer, before it appends, moves
damaged lines aside (a torn last line to ``<results>.torn``, any other to ``<results>.rejected``) with a warning,
so a resumed run runs their cells again instead of resuming over them.
"""
from __future__ import annotations

import dataclasses
import json
import os
import sys
from functools import lru_cache
from pathlib import Path
from typing import Any, Iterable

from harness.worker.errors import RecordError  # noqa: F401  (raised here; importers name it from here)
from harness.worker.record import Record
from harness.worker.shapes import VariantKey, variant_key

SCHEMA_PATH = Path(__file__).resolve().parent / "record.schema.json"
UNKNOWN_HOST = "unknown-host"  # the host of a record that names none (written by a plain `run`)
TORN_TAIL = "torn last line (the file ends mid-record: the writer died while writing it)"

CellKey = tuple[str, str, str, "str | None", "str | None"]  # case, variant, target, host, GPU architecture


@lru_cache(maxsize=1)
def _validator() -> "jsonschema.protocols.Validator":  # noqa: F821
    import jsonschema  # imported when a record is first checked: a command that reads none does not pay for it

    schema = json.loads(SCHEMA_PATH.read_text())
    cls = jsonschema.validators.validator_for(schema)
    cls.check_schema(schema)
    return cls(schema)


def schema_problem(record: Any) -> str | None:
    """What makes ``record`` break the schema (naming the first offending field), or None when it satisfies it."""
    validator = _validator()
    if validator.is_valid(record):
        return None
    import jsonschema

    error = jsonschema.exceptions.best_match(validator.iter_errors(record))
    field = "/".join(str(p) for p in error.absolute_path) or "(top level)"
    return f"field {field!r}: {error.message} (schema: {SCHEMA_PATH.name})"


def validate_record(record: Any, where: str = "record") -> None:
    """Raise RecordError naming the first offending field when ``record`` breaks the schema."""
    problem = schema_problem(record)
    if problem is not None:
        raise RecordError(f"{where}: {problem}")


def record_host(record: Record) -> str | None:
    """The host a record was observed on, as the nightly run that wrote it says (None for plain `run` records)."""
    return (record.get("provenance") or {}).get("host")


def host_name(record: Record) -> str:
    """The record's host, or UNKNOWN_HOST when it names none."""
    return record_host(record) or UNKNOWN_HOST


def record_gpu_arch(record: Record) -> str | None:
    """The GPU architecture a record's cell ran on (sm_87), as its environment observed it; None when it has none."""
    return (record.get("environment") or {}).get("gpu_arch")


def cell_key(record: Record) -> CellKey:
    """(case, variant, target, host, GPU architecture): the cell of the matrix a record fills. Records of one cell
    from two hosts, or from two GPU architectures of one host kind (x86 servers of different GPUs), are two cells;
    the last record of a cell supersedes the earlier ones."""
    return record["case"], record["variant"], record["target"], record_host(record), record_gpu_arch(record)


def variant_on_target(record: Record) -> tuple[str, str, str]:
    """(case, variant, target): a cell with its hosts taken together, e.g. to find hosts that disagree."""
    return record["case"], record["variant"], record["target"]


@dataclasses.dataclass(frozen=True)
class BadLine:
    """A line of a results file that is not a valid record: where it is, why, and its text (nothing is lost)."""

    path: Path
    line: int
    reason: str
    text: str
    torn: bool = False  # the last line, cut off mid-record

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.reason}"


@dataclasses.dataclass
class ResultsFile:
    """A results file as read: its valid records in file order, and every line that is not one."""

    path: Path
    records: list[Record]
    bad_lines: list[BadLine]

    def latest(self) -> dict[CellKey, Record]:
        """The last record of every cell."""
        return {cell_key(record): record for record in self.records}


def read_results_file(path: Path | str, *, strict: bool = False) -> ResultsFile:
    """Every valid record of a results file and every line that is not one (see the module docstring).

    ``strict``: a damaged line other than a torn last line raises RecordError naming file, line and reason (a torn
    last line is only reported: it is what a crash mid-write leaves, and the cell it held has no record).
    """
    path = Path(path)
    raw = path.read_bytes()
    lines = raw.decode("utf-8", errors="replace").split("\n")
    torn_tail = not raw.endswith(b"\n") and bool(lines[-1].strip())
    records: list[Record] = []
    bad: list[BadLine] = []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        torn = torn_tail and number == len(lines)
        try:
            record = json.loads(line)
        except json.JSONDecodeError as err:
            reason = TORN_TAIL if torn else f"not a JSON record ({err.msg}, column {err.colno})"
            bad.append(BadLine(path, number, reason, line, torn=torn))
        else:
            problem = schema_problem(record)
            if problem is None:
                records.append(record)
                continue
            bad.append(BadLine(path, number, problem, line))
        if strict and not bad[-1].torn:
            raise RecordError(f"{bad[-1]}; fix or remove that line")
    return ResultsFile(path, records, bad)


@dataclasses.dataclass(frozen=True)
class Results:
    """The records of several results files, the last record of a cell winning, and the torn last lines skipped
    (one message each, naming file:line)."""

    records: list[Record]
    skipped: list[str]


def read_results(paths: Iterable[Path | str]) -> Results:
    """Read ``paths`` strictly, in order: a later record of a cell (case, variant, target, host) replaces an earlier
    one. A missing file raises FileNotFoundError, any damaged line but a torn last one RecordError."""
    latest: dict[CellKey, Record] = {}
    skipped: list[str] = []
    for path in map(Path, paths):
        if not path.is_file():
            raise FileNotFoundError(f"{path}: no such results file")
        read = read_results_file(path, strict=True)
        latest.update(read.latest())
        skipped += [str(bad) for bad in read.bad_lines]
    return Results(records=list(latest.values()), skipped=skipped)


class ResultsWriter:
    """Appends validated records to a results file, one line each, flushed as it is written.

    Opening it reads the file once: damaged lines are moved aside (see the module docstring). :attr:`records` holds
    the valid records of the file, those already there (for a run that resumes) and those appended since.
    ``fresh`` starts an empty file instead.
    """

    def __init__(self, path: Path | str, *, fresh: bool = False):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        if fresh:
            self.path.unlink(missing_ok=True)
        self.records: list[Record] = []
        if self.path.is_file():
            existing = read_results_file(self.path)
            self._set_aside(existing.bad_lines)
            self.records = existing.records
        self._file = self.path.open("a")

    def recorded_cells(self, target_id: str) -> set[VariantKey]:
        """(case, variant) of the cells that have a valid record for ``target_id`` in the file."""
        return {variant_key(r) for r in self.records if r["target"] == target_id}

    def _set_aside(self, bad: list[BadLine]) -> None:
        """Move ``bad`` lines out of the file, keeping each in ``<results>.torn`` (a torn last line) or
        ``<results>.rejected`` (any other), and say so; the cells they belonged to have no record and run again."""
        if not bad:
            return
        lines: list[bytes | None] = list(self.path.read_bytes().split(b"\n"))
        for line in bad:
            aside = self.path.with_name(self.path.name + (".torn" if line.torn else ".rejected"))
            with aside.open("ab") as out:
                out.write(lines[line.line - 1] + b"\n")
            lines[line.line - 1] = None
            if line.torn:
                print(f"warning: {self.path}: an unfinished last line was moved to {aside.name}; its cell runs again",
                      file=sys.stderr)
            else:
                print(f"warning: {line}; moved to {aside.name}, its cell runs again", file=sys.stderr)
        text = b"\n".join(part for part in lines if part is not None)
        if text and not text.endswith(b"\n"):
            text += b"\n"
        staging = self.path.with_name(f".{self.path.name}.{os.getpid()}.tmp")
        staging.write_bytes(text)
        os.replace(staging, self.path)

    def append(self, record: Record) -> None:
        where = f"record for {record.get('case')}/{record.get('variant')} on {record.get('target')}"
        validate_record(record, where=where)
        self._file.write(json.dumps(record, sort_keys=True, allow_nan=False) + "\n")
        self._file.flush()
        self.records.append(record)

    def close(self) -> None:
        self._file.close()

    def __enter__(self) -> "ResultsWriter":
        return self

    def __exit__(self, *exc) -> None:
        self.close()
