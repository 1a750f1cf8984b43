"""Run the cells of a cases directory on one target and append their records to a results file.

Local targets run in this Python (each cell in its own forked process); docker targets run in one container per
target (:mod:`harness.docker`). A target marked unavailable in matrix.yaml still gets one ``unavailable`` record per
cell, so the report shows why the column is empty instead of dropping it.
"""
from __future__ import annotations

import collections
import dataclasses
import fnmatch
import os
import tempfile
import time
from pathlib import Path
from typing import Any, Callable

from harness.matrix import Target
from harness.results import ResultsWriter, recorded_cells
from harness.worker import record as rec
from harness.worker.casedata import load_cells
from harness.worker.environment import observe
from harness.worker.job import cell_key, progress_line, run_job


@dataclasses.dataclass
class RunSummary:
    target: str
    total: int
    skipped: int
    outcomes: collections.Counter
    wall_s: float

    @property
    def harness_broken(self) -> bool:
        """True when some cell says nothing about its pattern because the harness or environment broke."""
        return self.outcomes.get("infra-error", 0) > 0

    def line(self) -> str:
        counts = ", ".join(f"{k} {v}" for k, v in sorted(self.outcomes.items())) or "nothing new"
        return (f"{self.target}: {self.total} cell(s) run, {self.skipped} already recorded and skipped; {counts} "
                f"({self.wall_s:.1f} s)")


def matches(cell: dict[str, Any], pattern: str | None) -> bool:
    """``-k`` selection: a glob or substring of ``case/variant``."""
    if not pattern:
        return True
    name = f"{cell['case']}/{cell['variant']}"
    return fnmatch.fnmatch(name, pattern) or pattern in name


def unavailable_record(cell: dict[str, Any], target: Target) -> dict[str, Any]:
    record = rec.base_record(cell, target.to_job())
    return rec.finish_record(record, outcome="unavailable", stage="generate", duration_s=0.0,
                             environment=observe({}), failure=rec.failure("unavailable", target.reason or ""))


def run_target(
    target: Target,
    cases_dir: Path,
    results_path: Path,
    *,
    pattern: str | None = None,
    jobs: int = 1,
    timeout_s: float = 300.0,
    force: bool = False,
    progress: Callable[[str], None] = print,
) -> RunSummary:
    """Run (or resume) ``target`` over ``cases_dir``; every finished record is validated and appended at once."""
    started = time.perf_counter()
    cells = [c for c in load_cells(cases_dir) if matches(c, pattern)]
    done = set() if force else recorded_cells(results_path, target.id)
    todo = [c for c in cells if cell_key(c) not in done]
    outcomes: collections.Counter = collections.Counter()
    progress(f"{target.id}: {len(todo)} cell(s) to run, {len(cells) - len(todo)} already in {results_path}")
    with ResultsWriter(results_path) as writer:
        def on_record(record: dict[str, Any]) -> None:
            writer.append(record)
            outcomes[record["outcome"]] += 1
            progress(progress_line(sum(outcomes.values()), len(todo), record, started))

        if todo and not target.available:
            for cell in todo:
                on_record(unavailable_record(cell, target))
        elif todo and target.runner == "local":
            job = {"target": target.to_job(), "cases_dir": str(cases_dir), "cells": [list(cell_key(c)) for c in todo],
                   "jobs": jobs, "timeout_s": timeout_s, "work_dir": _work_dir(results_path, target)}
            run_job(job, on_record)
        elif todo:
            from harness.docker.run import run_in_container

            run_in_container(target, Path(cases_dir), todo, on_record, jobs=jobs, timeout_s=timeout_s, progress=progress)
    return RunSummary(target.id, len(todo), len(cells) - len(todo), outcomes, time.perf_counter() - started)


def _work_dir(results_path: Path, target: Target) -> str:
    """Where cells keep their logs and intermediate models: beside the results file, per target."""
    base = Path(os.environ.get("TRT_MATRIX_WORK_DIR") or Path(results_path).resolve().parent / "work")
    try:
        (base / target.id).mkdir(parents=True, exist_ok=True)
    except OSError:
        return tempfile.mkdtemp(prefix=f"trt-matrix-{target.id}-")
    return str(base / target.id)
