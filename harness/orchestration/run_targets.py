"""Run the cells of a cases directory on one target and append their records to a results file.

Local targets run in this Python (each cell in its own forked process); docker targets run in one container per
target (:mod:`harness.docker`). A target marked unavailable in matrix.yaml still gets one ``unavailable`` record per
cell, so the report shows why the column is empty instead of dropping it.
"""
from __future__ import annotations

import collections
import contextlib
import dataclasses
import fnmatch
import os
import tempfile
import time
from pathlib import Path
from typing import Callable

from harness.matrix import Target
from harness.judgement import BROKEN_OUTCOMES
from harness.store.results_file import ResultsWriter
from harness.worker import record as rec
from harness.worker.casedata import load_cells
from harness.worker.environment import observe
from harness.worker.job import progress_line, run_job
from harness.worker.shapes import Cell, variant_key


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
        return any(self.outcomes.get(outcome, 0) for outcome in BROKEN_OUTCOMES)

    def line(self) -> str:
        counts = ", ".join(f"{k} {v}" for k, v in sorted(self.outcomes.items())) or "nothing new"
        return (f"{self.target}: {self.total} cell(s) run, {self.skipped} already recorded and skipped; {counts} "
                f"({self.wall_s:.1f} s)")


def matches(cell: Cell, pattern: str | None) -> bool:
    """``-k`` selection: a glob or substring of ``case/variant``."""
    if not pattern:
        return True
    name = f"{cell['case']}/{cell['variant']}"
    return fnmatch.fnmatch(name, pattern) or pattern in name


def run_targets(
    targets: list[Target],
    cases_dir: Path,
    results_path: Path,
    *,
    pattern: str | None = None,
    jobs: int = 1,
    timeout_s: float = 300.0,
    force: bool = False,
    progress: Callable[[str], None] = print,
    todo: dict[str, list[Cell]] | None = None,
    annotate: Callable[[rec.Record], rec.Record] | None = None,
    writer: ResultsWriter | None = None,
) -> list[RunSummary]:
    """Run (or resume) ``targets`` over ``cases_dir``; every finished record is validated and appended at once.

    Local and unavailable targets run one after another; docker targets run concurrently, one thread per engine.
    ``todo`` (target id -> cells) replaces the resume rule (cells without a record in ``results_path`` run);
    ``annotate`` completes each record before it is stored; ``writer`` is an open writer of ``results_path`` to
    append to (else one is opened here).
    """
    started = time.perf_counter()
    cells = [c for c in load_cells(cases_dir) if matches(c, pattern)]
    outcomes = {target.id: collections.Counter() for target in targets}
    work_dirs = {target.id: _work_dir(results_path, target) for target in targets}
    with contextlib.nullcontext(writer) if writer else ResultsWriter(results_path) as writer:
        if todo is None:
            todo = {}
            for target in targets:
                done = set() if force else writer.recorded_cells(target.id)
                todo[target.id] = [c for c in cells if variant_key(c) not in done]
                progress(f"{target.id}: {len(todo[target.id])} cell(s) to run, {len(cells) - len(todo[target.id])} "
                         f"already in {results_path}")

        def on_record(record: rec.Record) -> None:
            writer.append(annotate(record) if annotate else record)
            counter = outcomes[record["target"]]
            counter[record["outcome"]] += 1
            progress(progress_line(sum(counter.values()), len(todo[record["target"]]), record, started))

        containers = []
        for target in targets:
            if not todo[target.id]:
                continue
            if not target.available:
                for cell in todo[target.id]:
                    on_record(rec.unavailable(cell, target.to_job(), observe({}), target.reason or ""))
            elif target.runner == "local":
                run_job({"target": target.to_job(), "cases_dir": str(cases_dir), "jobs": jobs, "timeout_s": timeout_s,
                         "cells": [list(variant_key(c)) for c in todo[target.id]],
                         "work_dir": str(work_dirs[target.id])},
                        on_record)
            else:
                containers.append(target)
        if containers:
            from harness.orchestration.docker.containers import run_targets_concurrently

            run_targets_concurrently(containers, Path(cases_dir), todo, on_record, jobs=jobs, timeout_s=timeout_s,
                                     progress=progress, work_dirs=work_dirs)
    wall = time.perf_counter() - started
    return [RunSummary(t.id, len(todo[t.id]), len(cells) - len(todo[t.id]), outcomes[t.id], wall) for t in targets]


def run_target(target: Target, cases_dir: Path, results_path: Path, **options) -> RunSummary:
    """Run (or resume) one target; see :func:`run_targets`."""
    return run_targets([target], cases_dir, results_path, **options)[0]


def _work_dir(results_path: Path, target: Target) -> Path:
    """Where cells keep their logs and intermediate models: beside the results file, per target."""
    base = Path(os.environ.get("TRT_MATRIX_WORK_DIR") or Path(results_path).resolve().parent / "work")
    try:
        (base / target.id).mkdir(parents=True, exist_ok=True)
    except OSError:
        return Path(tempfile.mkdtemp(prefix=f"trt-matrix-{target.id}-"))
    return base / target.id
