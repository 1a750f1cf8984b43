"""Merge run directories from many hosts into one results set.

Cells are kept apart by host: the same (case, variant, target) observed on two hosts stays two records, and is a
*conflict* when their outcomes disagree. Of several runs of one host, the latest run's record of a cell wins. A
damaged results file (torn or corrupt lines, records that break the schema) is reported line by line, its bad lines
are kept verbatim in ``rejected.txt``, and everything else still merges.
"""
from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any, Iterable

from harness.store.results_file import CellKey, ResultsWriter, cell_key, host_name, variant_on_target
from harness.store.run_dirs import LoadedRun, problems_of, read_runs
from harness.worker.record import COMPARED_OUTCOMES, Record

MERGE_FORMAT = "trt-matrix/merge/1"
MERGED_RESULTS = "results.jsonl"
MERGE_MANIFEST = "merge.json"
REJECTED = "rejected.txt"


@dataclasses.dataclass(frozen=True)
class Conflict:
    """One cell whose hosts observed different outcomes (outcomes that say nothing about the pattern aside)."""

    case: str
    variant: str
    target: str
    outcomes: dict[str, str]  # host -> outcome

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


@dataclasses.dataclass
class Merged:
    runs: list[LoadedRun]
    records: list[Record]
    conflicts: list[Conflict]

    @property
    def problems(self) -> list[str]:
        """Every unreadable file and bad line, naming the file (and line)."""
        return problems_of(self.runs)


def merge_runs(paths: Iterable[Path | str]) -> Merged:
    """Read every run directory named by ``paths`` (run dirs or directories holding them) and merge them."""
    runs = read_runs(paths)
    cells: dict[CellKey, Record] = {}
    for run in runs:  # oldest first: a later run of the same host replaces a cell's record
        for record in run.records:  # in file order: a later record of a cell replaces an earlier one
            record = _with_host(record, run)
            cells[cell_key(record)] = record
    records = [cells[key] for key in sorted(cells)]
    return Merged(runs, records, find_conflicts(records))


def _with_host(record: Record, run: LoadedRun) -> Record:
    """The record with its provenance host: a record written by a plain `run` has none, so the run's host is used."""
    if record.get("provenance"):
        return record
    return {**record, "provenance": {"run": run.id, "host": run.host}}


def find_conflicts(records: Iterable[Record]) -> list[Conflict]:
    by_cell: dict[tuple[str, str, str], dict[str, str]] = {}
    for record in records:
        by_cell.setdefault(variant_on_target(record), {})[host_name(record)] = record["outcome"]
    return [
        Conflict(*cell, outcomes=dict(sorted(outcomes.items())))
        for cell, outcomes in sorted(by_cell.items())
        if len({o for o in outcomes.values() if o in COMPARED_OUTCOMES}) > 1
    ]


def write_merged(merged: Merged, out_dir: Path | str) -> Path:
    """Write ``results.jsonl``, ``merge.json`` (sources, problems, conflicts) and ``rejected.txt`` to ``out_dir``."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    with ResultsWriter(out_dir / MERGED_RESULTS, fresh=True) as results:
        for record in merged.records:
            results.append(record)
    rejected = [bad for run in merged.runs for bad in run.bad_lines]
    (out_dir / REJECTED).unlink(missing_ok=True)
    if rejected:
        (out_dir / REJECTED).write_text("".join(f"# {bad}\n{bad.text}\n" for bad in rejected))
    manifest = {
        "format": MERGE_FORMAT,
        "sources": [
            {"path": str(run.path), "run": run.id, "host": run.host, "started_at": run.started_at,
             "status": (run.manifest or {}).get("status"), "records": len(run.records),
             "bad_lines": len(run.bad_lines)}
            for run in merged.runs
        ],
        "records": len(merged.records),
        "problems": merged.problems,
        "conflicts": [c.to_dict() for c in merged.conflicts],
    }
    (out_dir / MERGE_MANIFEST).write_text(json.dumps(manifest, indent=1, sort_keys=True) + "\n")
    return out_dir / MERGED_RESULTS
