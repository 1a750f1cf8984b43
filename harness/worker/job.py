"""Run a job: the chosen cells of a cases directory on one target, each in its own process, records as they end.

A job is plain JSON so it can travel into a container (:class:`harness.worker.shapes.Job`)::

    {"target": {"id": ..., "backend": ..., "version": ...}, "cases_dir": DIR, "cells": [[case, variant], ...],
     "jobs": 2, "timeout_s": 120, "work_dir": DIR}
"""
from __future__ import annotations

import shutil
import time
from pathlib import Path
from typing import Callable

from harness.worker import record as rec
from harness.worker.backends import load_backend
from harness.worker.casedata import load_cells
from harness.worker.cell import lost_cell_record, run_cell
from harness.worker.environment import arch_mismatch, observe, version_mismatch
from harness.worker.isolation import TaskEnd, run_isolated
from harness.worker.shapes import Cell, Job, variant_key


def select_cells(cases_dir: Path, wanted: list[list[str]] | None) -> list[Cell]:
    cells = load_cells(cases_dir)
    if wanted is None:
        return cells
    by_key = {variant_key(c): c for c in cells}
    unknown = [w for w in wanted if tuple(w) not in by_key]
    if unknown:
        raise ValueError(f"{cases_dir}: the job names cells the cases directory does not have: {unknown}")
    return [by_key[tuple(w)] for w in wanted]


def run_job(job: Job, on_record: Callable[[rec.Record], None]) -> None:
    """Run every cell of ``job`` and pass each finished record to ``on_record`` as soon as it exists."""
    target = job["target"]
    cells = select_cells(Path(job["cases_dir"]), job.get("cells"))
    work_dir = Path(job["work_dir"])
    work_dir.mkdir(parents=True, exist_ok=True)
    try:
        backend = load_backend(target)
        backend.preload()
        environment = observe(backend.environment())
    except Exception as err:
        message = (f"Backend {target['backend']!r} of target {target['id']!r} could not start in this environment: "
                   f"{type(err).__name__}: {err}")
        for cell in cells:
            on_record(rec.infra_error(cell, target, observe({}), "environment", message))
        return
    mismatches = (version_mismatch(target.get("version"), environment.get(f"{backend.name}_version")),
                  arch_mismatch(target.get("gpu_arch"), environment.get("gpu_arch")))
    mismatch = "; ".join(m for m in mismatches if m) or None

    def cell_dir(cell: Cell) -> Path:
        return work_dir / cell["case"] / cell["variant"]

    def execute(cell: Cell) -> rec.Record:
        return run_cell(cell, target, backend, environment, cell_dir(cell))

    def ended(end: TaskEnd) -> None:
        if end.kind == "result":
            record = end.result
            record["duration_s"] = round(end.wall_s, 6)  # wall time as the parent saw it, process overhead included
        else:
            record = lost_cell_record(end.task, target, environment, end.kind, end.detail, end.wall_s,
                                      cell_dir(end.task), end.stderr_path)
        record["env_mismatch"] = mismatch  # the parent compares the observed backend version with the nominal one
        on_record(record)

    def fresh_cell_dir(cell: Cell) -> Path:
        """Empty the cell's work dir just before its process starts (nothing of an earlier run may speak for this
        one: its stage file, logs, models) and return where its stderr goes."""
        shutil.rmtree(cell_dir(cell), ignore_errors=True)
        cell_dir(cell).mkdir(parents=True, exist_ok=True)
        return cell_dir(cell) / "stderr.log"

    run_isolated(cells, execute, jobs=job.get("jobs", 1), timeout_s=job.get("timeout_s", 300.0), on_end=ended,
                 stderr_path_for=fresh_cell_dir)


PROGRESS_REASON_CHARS = 400


def progress_line(done: int, total: int | str, record: rec.Record, started: float) -> str:
    """One line per finished cell; an infra-error says why, so nobody has to open the results file to find out."""
    elapsed = time.perf_counter() - started
    failure = record.get("failure")
    line = (f"[{done}/{total} {elapsed:6.1f}s] {record['target']} {record['case']}/{record['variant']}: "
            f"{record['outcome']}" + (f" ({failure['category']})" if failure else ""))
    if failure and failure["category"] in rec.INFRA_CATEGORIES and failure.get("message"):
        reason = " ".join(failure["message"].split())
        line += ": " + (reason if len(reason) <= PROGRESS_REASON_CHARS else reason[:PROGRESS_REASON_CHARS] + " ...")
    return line
