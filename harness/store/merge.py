"""Merge run directories from many hosts into one results set.

A merge is the matrix of ONE night: the newest night among the runs given (or the night asked for), and of that
night, the newest run of each *slot* (host, machine, shard: two machines of one pool both stand, and so do the
shards of a kind; a run resumed or run again on the same machine replaces the earlier one). Every other run is left
out and named (``Merged.left_out``, ``merge.json``): a cell a host did not record that night is absent, never filled
in from an older night. Cells a nightly carried over are part of their run and stay marked as such
(``provenance.carried_over_from``).

A sealed run (``files.json``, :mod:`harness.store.seal`) is checked first. A contributed run (its seal names a
contributor) whose files do not match is refused, naming each file, and merges nothing; it is shown as contributed,
with who ran it and on what machine. A run of the fleet's own whose files do not match has each file reported as
damage, and its readable records still merge (a torn line in transit loses nothing else). Given the plan of the night (``nightly-plan``'s JSON), every planned job with no
run is listed as not run: a kind whose runners were all offline is never shown as passed.

Cells are kept apart by host and machine: the same (case, variant, target) observed on two hosts, or on two machines
of one host kind, stays two records, and is a *conflict* when their outcomes disagree. A damaged results file (torn or corrupt lines, records that break the
schema) is reported line by line, its bad lines are kept verbatim in ``rejected.txt``, and everything else still
merges.
"""
from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any, Iterable

from harness.judgement import COMPARED_OUTCOMES
from harness.store.results_file import (
    UNKNOWN_HOST, ResultsWriter, cell_key, host_name, read_results_file, variant_on_target,
)
from harness.store.run_dirs import RESULTS, LoadedRun, problems_of, read_runs
from harness.store.seal import describe_machine, read_seal, seal_problems
from harness.worker.record import Record

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
    outcomes: dict[str, str]  # host (or "host on machine") -> outcome

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


@dataclasses.dataclass(frozen=True)
class LeftOut:
    """A run the merge did not use, and why."""

    run: LoadedRun
    reason: str

    def __str__(self) -> str:
        return f"{self.run.id} ({self.run.host}, {self.run.path}): {self.reason}"


@dataclasses.dataclass(frozen=True)
class Refused:
    """A sealed run whose files do not match its seal: merged nowhere."""

    run: LoadedRun
    problems: tuple[str, ...]  # each naming the file

    def __str__(self) -> str:
        return f"{self.run.path}: refused, its files do not match its seal: " + "; ".join(self.problems)


@dataclasses.dataclass(frozen=True)
class NotRun:
    """A job of the night's plan with no run: its runners were offline, or it failed before writing a run."""

    host: str
    arch: str | None
    shard: str | None
    reason: str

    def __str__(self) -> str:
        what = " ".join(filter(None, [self.host, self.arch, f"shard {self.shard}" if self.shard else None]))
        return f"{what}: not run ({self.reason})"


@dataclasses.dataclass
class Merged:
    night: str | None  # YYYY-MM-DD, None when no run says its night
    runs: list[LoadedRun]
    records: list[Record]
    conflicts: list[Conflict]
    left_out: list[LeftOut] = dataclasses.field(default_factory=list)
    refused: list[Refused] = dataclasses.field(default_factory=list)
    not_run: list[NotRun] = dataclasses.field(default_factory=list)

    @property
    def problems(self) -> list[str]:
        """Every unreadable file and bad line of the merged runs, naming the file (and line)."""
        return problems_of(self.runs)


def one_night(runs: list[LoadedRun], night: str | None = None) -> tuple[str | None, list[LoadedRun], list[LeftOut]]:
    """The night to merge (``night``, else the newest among ``runs``), the newest run of each slot (host, machine,
    shard) of it, and the runs left out with the reason."""
    if night is None:
        night = max((run.night for run in runs), default=None)
    newest: dict[tuple, LoadedRun] = {}
    left_out = []
    for run in runs:  # oldest first
        if run.night != night:
            left_out.append(LeftOut(run, f"a run of {run.night or 'an unknown night'}, not of {night}"))
            continue
        if run.slot in newest:
            left_out.append(LeftOut(newest[run.slot], f"an earlier run of {run.label} that night ({run.id} is "
                                                      "newer)"))
        newest[run.slot] = run
    return night, [run for run in runs if newest.get(run.slot) is run], left_out


def record_machine(record: Record) -> str | None:
    """The machine a record was observed on (None for records written before machines were recorded)."""
    return (record.get("provenance") or {}).get("machine")


def observer(record: Record) -> str:
    """'x86-gpu', or 'x86-gpu on gpu-07' when the machine is not the host: who observed a record."""
    host, machine = host_name(record), record_machine(record)
    return host if not machine or machine == host else f"{host} on {machine}"


def contribution(run: LoadedRun) -> str | None:
    """'contributed by NAME on MACHINE' for a run whose seal names a contributor, else None."""
    try:
        seal = read_seal(run.path)
    except ValueError:
        return None
    if not seal or not seal.get("contributor"):
        return None
    return f"contributed by {seal['contributor']} on {describe_machine(seal.get('machine'))}"


def merge_runs(paths: Iterable[Path | str], night: str | None = None,
               plan: dict[str, Any] | None = None) -> Merged:
    """Merge the run directories named by ``paths`` (run dirs or directories holding them): one night's matrix
    (see the module docstring); ``plan``: the night's job matrix, whose jobs with no run are listed as not run."""
    readable, refused = [], []
    for run in read_runs(paths):
        problems = seal_problems(run.path)
        if problems and contribution(run) is not None:
            refused.append(Refused(run, tuple(problems)))
            continue
        run.problems.extend(problems)  # the fleet's own run: damage reported, its readable records still merge
        readable.append(run)
    night, runs, left_out = one_night(readable, night)
    cells: dict[tuple, Record] = {}
    for run in runs:  # one run per slot
        for record in run.records:  # in file order: a later record of a cell replaces an earlier one
            record = _with_host(record, run)
            cells[(*cell_key(record), record_machine(record) or run.machine)] = record
    records = [cells[key] for key in sorted(cells, key=lambda k: tuple(str(part or "") for part in k))]
    not_run = not_run_jobs(plan, runs) if plan else []
    return Merged(night, runs, records, find_conflicts(records), left_out, refused, not_run)


def not_run_jobs(plan: dict[str, Any], runs: list[LoadedRun]) -> list[NotRun]:
    """The jobs of ``plan`` (nightly-plan's JSON: ``include`` and ``not_run``) that no run of ``runs`` stands for."""
    found = [NotRun(job["host"], job.get("arch") or None, job.get("shard") or None, job["reason"])
             for job in plan.get("not_run", [])]
    for job in plan.get("include", []):
        arch, shard = job.get("arch") or None, job.get("shard") or None
        if not any(run.host == job["host"] and (arch is None or run.gpu_arch == arch)
                   and (shard in (None, "1/1") or run.shard == shard) for run in runs):
            found.append(NotRun(job["host"], arch, shard, "planned, but no run of it was merged: its job failed "
                                "before writing a run directory, or never found a runner"))
    return found


def _with_host(record: Record, run: LoadedRun) -> Record:
    """The record with its provenance host: a record written by a plain `run` has none, so the run's host is used."""
    if record.get("provenance"):
        return record
    return {**record, "provenance": {"run": run.id, "host": run.host}}


def find_conflicts(records: Iterable[Record]) -> list[Conflict]:
    by_cell: dict[tuple[str, str, str], dict[str, str]] = {}
    for record in records:
        by_cell.setdefault(variant_on_target(record), {})[observer(record)] = record["outcome"]
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
        "night": merged.night,
        "left_out": [{"path": str(gone.run.path), "run": gone.run.id, "host": gone.run.host, "reason": gone.reason}
                     for gone in merged.left_out],
        "sources": [
            {"path": str(run.path), "run": run.id, "host": run.host, "machine": run.machine, "shard": run.shard,
             "gpu_arch": run.gpu_arch, "contributed": contribution(run), "started_at": run.started_at,
             "status": (run.manifest or {}).get("status"), "records": len(run.records),
             "bad_lines": len(run.bad_lines)}
            for run in merged.runs
        ],
        "refused": [{"path": str(r.run.path), "run": r.run.id, "problems": list(r.problems)} for r in merged.refused],
        "not_run": [dataclasses.asdict(n) for n in merged.not_run],
        "records": len(merged.records),
        "problems": merged.problems,
        "conflicts": [c.to_dict() for c in merged.conflicts],
    }
    (out_dir / MERGE_MANIFEST).write_text(json.dumps(manifest, indent=1, sort_keys=True) + "\n")
    return out_dir / MERGED_RESULTS


@dataclasses.dataclass(frozen=True)
class ReadRecord:
    """A record of a result set, the file it was read from, and the host of its run directory (None if unnamed)."""

    record: Record
    source: Path
    run_host: str | None


def read_result_set(path: Path | str, problems: list[str]) -> list[ReadRecord]:
    """Every record of a results file, a merged directory (``merge --out``), a run directory or a directory holding
    run directories; what could not be read is added to ``problems`` (a path that is none of these raises
    RunDirError)."""
    path = Path(path)
    if path.is_file() or (path / MERGE_MANIFEST).is_file():
        results = path if path.is_file() else path / MERGED_RESULTS
        read = read_results_file(results)
        problems.extend(map(str, read.bad_lines))
        return [ReadRecord(record, results, None) for record in read.records]
    runs = read_runs([path])
    problems.extend(problems_of(runs))
    return [ReadRecord(record, run.path / RESULTS, None if run.host == UNKNOWN_HOST else run.host)
            for run in runs for record in run.records]
