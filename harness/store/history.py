"""The history store: a plain directory of run directories, read as series of runs per (target, host).

A *series* is what one host observed for one target, night after night. Its trend strip shows each cell's outcome
over the last N runs of the series; its last change compares the last two runs (see :mod:`harness.store.compare`).
"""
from __future__ import annotations

import dataclasses
import shutil
from pathlib import Path
from typing import Iterable

from harness.store.compare import Comparison, compare_records
from harness.store.run_dirs import LoadedRun, RunDirError, find_run_dirs, problems_of, read_run, read_runs
from harness.worker.record import Record
from harness.worker.shapes import VariantKey, variant_key

DEFAULT_LAST = 14


@dataclasses.dataclass(frozen=True)
class Series:
    """The runs of one target on one host, oldest first, each with its last record per cell of that target."""

    target: str
    host: str
    runs: tuple[LoadedRun, ...]

    @property
    def name(self) -> str:
        return f"{self.target}@{self.host}"

    def records_of(self, run: LoadedRun) -> dict[VariantKey, Record]:
        """(case, variant) -> the last record of that cell of this series' target in ``run``."""
        return {variant_key(r): r for r in run.records if r["target"] == self.target}

    def strip(self, last: int = DEFAULT_LAST) -> tuple[list[LoadedRun], dict[VariantKey, list[Record | None]]]:
        """The last ``last`` runs, and per cell seen in them its record in each run (None where it has none)."""
        runs = list(self.runs[-last:])
        per_run = [self.records_of(run) for run in runs]
        cells = sorted({cell for records in per_run for cell in records})
        return runs, {cell: [records.get(cell) for records in per_run] for cell in cells}

    def last_change(self) -> Comparison | None:
        """The cells of the last run against the run before it; None while the series has a single run."""
        if len(self.runs) < 2:
            return None
        old, new = self.runs[-2:]
        return compare_records(self.records_of(old).values(), self.records_of(new).values(), old.id, new.id)


@dataclasses.dataclass
class History:
    root: Path
    runs: list[LoadedRun]  # oldest first

    def series(self) -> list[Series]:
        """Every (target, host) series, by target then host."""
        members: dict[tuple[str, str], list[LoadedRun]] = {}
        for run in self.runs:
            for target in sorted({r["target"] for r in run.records}):
                members.setdefault((target, run.host), []).append(run)
        return [Series(target, host, tuple(runs)) for (target, host), runs in sorted(members.items())]

    def problems(self) -> list[str]:
        """Everything that could not be read, each naming the file (and line)."""
        return problems_of(self.runs)


def load_history(root: Path | str) -> History:
    """Read every run directory below ``root`` (an empty or missing store is an empty history)."""
    root = Path(root)
    try:
        runs = read_runs([root]) if root.is_dir() else []
    except RunDirError:
        runs = []
    return History(root, runs)


def add_runs(root: Path | str, sources: Iterable[Path | str]) -> list[Path]:
    """Copy the run directories named by ``sources`` into the store ``root`` (a run already there is replaced:
    the copy being added is the later, resumed state of the same run). Returns the stored paths."""
    root = Path(root)
    root.mkdir(parents=True, exist_ok=True)
    stored = []
    for source in find_run_dirs(sources):
        run = read_run(source)
        destination = root / run.id
        if destination.resolve() == source.resolve():
            stored.append(destination)
            continue
        staging = root / f".adding-{run.id}"
        shutil.rmtree(staging, ignore_errors=True)
        shutil.copytree(source, staging, ignore=shutil.ignore_patterns("*.onnx", "*.npz", "*.engine", "*.plan"))
        if destination.exists():
            shutil.rmtree(destination)
        staging.rename(destination)
        stored.append(destination)
    return stored
