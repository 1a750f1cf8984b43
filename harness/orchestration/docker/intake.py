"""What comes out of a worker container, before it is stored: capped lines, then one validated record per cell.

A record is stored through ``on_record`` (which validates it against the record schema) at most once per cell; a
record that fails validation is replaced by an infra-error record and its raw text is kept for inspection; cells
that end the run without a record get an infra-error record saying why.
"""
from __future__ import annotations

import dataclasses
import json
import re
import time
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator

from harness.matrix import Target
from harness.store.results_file import RecordError
from harness.worker import record as rec
from harness.worker.__main__ import RECORD_PREFIX
from harness.worker.environment import observe
from harness.worker.shapes import Cell, variant_key

OnRecord = Callable[[rec.Record], None]
Progress = Callable[[str], None]


@dataclasses.dataclass
class OversizedLine:
    """A line longer than the cap: only its size and first bytes are kept."""

    size: int
    head: str


OVERSIZED_HEAD_BYTES = 200


def capped_lines(chunks: Iterable[bytes], max_bytes: int) -> Iterator[str | OversizedLine]:
    """Lines of a byte stream; a line over ``max_bytes`` comes out as an OversizedLine and is never held whole."""
    buffer = b""
    oversized: OversizedLine | None = None  # the line being skipped while its end has not arrived
    for chunk in chunks:
        buffer += chunk
        while True:
            newline = buffer.find(b"\n")
            line, buffer = (buffer, b"") if newline < 0 else (buffer[:newline], buffer[newline + 1:])
            if oversized is None and len(line) > max_bytes:
                oversized = OversizedLine(0, line[:OVERSIZED_HEAD_BYTES].decode(errors="replace"))
            if oversized is not None:
                oversized.size += len(line)
                line = b""
            if newline < 0:
                buffer = line  # an unfinished line under the cap waits for the rest
                break
            yield oversized or line.decode(errors="replace")
            oversized = None
    if oversized is not None or buffer:
        yield oversized or buffer.decode(errors="replace")


class RecordIntake:
    """Takes records coming out of a container: one stored record per cell, validated, the rest infra-error."""

    def __init__(self, target: Target, cells: list[Cell], on_record: OnRecord, progress: Progress,
                 work_dir: Path, engine: str, record_cap_bytes: int):
        self.target, self.on_record, self.progress, self.work_dir = target, on_record, progress, work_dir
        self.record_cap_bytes = record_cap_bytes
        self.cells = {variant_key(c): c for c in cells}
        self.stored: set[tuple[str, str]] = set()
        self.details: dict[str, Any] = {"engine": engine, "work_dir": str(work_dir)}
        self.environment: dict[str, Any] | None = None  # as the container observed it, from its first record
        self.env_mismatch: str | None = None
        self.problems: list[str] = []  # what went wrong with output that was not stored, for the missing cells

    def take_line(self, line: str | OversizedLine, source: str) -> None:
        """One line of output: a record (stored when new), an oversized line (noted), anything else ignored."""
        if isinstance(line, OversizedLine):
            if line.head.startswith(RECORD_PREFIX) or source == "results file":
                self.note(f"a record line of {line.size} bytes from the {source} was over the cap of "
                          f"{self.record_cap_bytes} bytes per record (ContainerLimits.record_bytes) and was not "
                          f"stored (it began: {line.head[:120]!r})")
            return
        if source == "log stream":
            if not line.startswith(RECORD_PREFIX):
                return
            line = line[len(RECORD_PREFIX):]
        if line.strip():
            self.take_record_text(line, source)

    def take_record_text(self, text: str, source: str) -> None:
        try:
            record = json.loads(text)
            key = variant_key(record)
        except (json.JSONDecodeError, TypeError, KeyError) as err:
            path = self._keep_raw("unparsable", text)
            self.note(f"the {source} carried a line that is not a record ({type(err).__name__}: {err}); kept at {path}")
            return
        if key in self.stored:
            return
        if key not in self.cells or record.get("target") != self.target.id:
            path = self._keep_raw("unexpected", text)
            self.progress(f"{self.target.id}: warning: the {source} carried a record for {key} on target "
                          f"{record.get('target')!r}, which this run did not ask for; not stored, kept at {path}")
            return
        try:
            self.on_record(record)
        except RecordError as err:
            path = self._keep_raw(f"{key[0]}--{key[1]}", text)
            self._store_infra_error(self.cells[key], "harness",
                                    f"The record the container produced for this cell was not stored because it does "
                                    f"not satisfy the record schema: {err}. Its raw text is kept at {path}.")
            return
        self.stored.add(key)
        if self.environment is None and isinstance(record.get("environment"), dict):
            self.environment, self.env_mismatch = record["environment"], record.get("env_mismatch")

    def missing(self) -> list[Cell]:
        return [cell for key, cell in self.cells.items() if key not in self.stored]

    def fail_missing(self, reason: str, log_tail: str | None = None) -> None:
        """One infra-error record, saying ``reason``, for every cell that has no stored record yet."""
        missing = self.missing()
        if not missing:
            return
        if self.problems:
            reason += " Also: " + "; ".join(self.problems) + "."
        self.progress(f"{self.target.id}: {len(missing)} cell(s) without a record: {reason.splitlines()[0]}")
        for cell in missing:
            self._store_infra_error(cell, "environment", reason, log_tail)

    def _store_infra_error(self, cell: Cell, category: str, message: str, log: str | None = None) -> None:
        environment = dict(self.environment) if self.environment else observe({})
        if self.environment is None:
            environment["observed_on"] = "the harness host: the container reported no environment"
        self.on_record(rec.infra_error(cell, self.target.to_job(), environment, category, message, log=log,
                                       details={"container": dict(self.details)}, env_mismatch=self.env_mismatch))
        self.stored.add(variant_key(cell))

    def note(self, problem: str) -> None:
        """A problem with output that was not stored; the infra-error records of the missing cells repeat it."""
        self.problems.append(problem)
        self.progress(f"{self.target.id}: warning: {problem}")

    def _keep_raw(self, name: str, text: str) -> Path:
        directory = self.work_dir / "rejected-records"
        directory.mkdir(parents=True, exist_ok=True)
        path = directory / f"{re.sub(r'[^A-Za-z0-9_.-]+', '_', name)}-{time.time_ns()}.json"
        path.write_text(text)
        return path
