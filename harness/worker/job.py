"""Run a job: the chosen cells of a cases directory on one target, each in its own process, records as they end.

A job is plain JSON so it can travel into a container::

    {"target": {"id": ..., "backend": ..., "version": ...}, "cases_dir": DIR, "cells": [[case, variant], ...],
     "jobs": 2, "timeout_s": 120, "work_dir": DIR}
"""
from __future__ import annotations

import time
from pathlib import Path
from typing import Any, Callable

from harness.worker import record as rec
from harness.worker.backends import load_backend
from harness.worker.casedata import load_cells
from harness.worker.cell import ended_without_result, run_cell
from harness.worker.environment import observe, version_mismatch
from harness.worker.isolation import TaskEnd, run_isolated


def cell_key(cell_or_record: dict[str, Any]) -> tuple[str, str]:
    return cell_or_record["case"], cell_or_record["variant"]


def select_cells(cases_dir: Path, wanted: list[list[str]] | None) -> list[dict[str, Any]]:
    cells = load_cells(cases_dir)
    if wanted is None:
        return cells
    by_key = {cell_key(c): c for c in cells}
    unknown = [w for w in wanted if tuple(w) not in by_key]
    if unknown:
        raise ValueError(f"{cases_dir}: the job names cells the cases directory does not have: {unknown}")
    return [by_key[tuple(w)] for w in wanted]


def _infra_records(cells, target, environment, message: str) -> list[dict[str, Any]]:
    """One infra-error record per cell, for a target whose backend could not even start."""
    return [
        rec.finish_record(rec.base_record(c, target), outcome="infra-error", stage="generate", duration_s=0.0,
                          environment=environment, failure=rec.failure("environment", message))
        for c in cells
    ]


def run_job(job: dict[str, Any], on_record: Callable[[dict[str, Any]], None]) -> None:
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
        for record in _infra_records(cells, target, observe({}), message):
            on_record(record)
        return
    mismatch = version_mismatch(target.get("version"), environment.get(f"{backend.name}_version"))

    def cell_dir(cell: dict[str, Any]) -> Path:
        return work_dir / cell["case"] / cell["variant"]

    def execute(cell: dict[str, Any]) -> dict[str, Any]:
        return run_cell(cell, target, backend, environment, cell_dir(cell))

    def ended(end: TaskEnd) -> None:
        if end.kind == "result":
            record = end.result
            record["duration_s"] = round(end.wall_s, 6)  # wall time as the parent saw it, process overhead included
        else:
            record = ended_without_result(end.task, target, environment, end.kind, end.detail, end.wall_s,
                                          cell_dir(end.task), end.stderr_path)
        record["env_mismatch"] = mismatch
        on_record(record)

    def stderr_path(cell: dict[str, Any]) -> Path:
        cell_dir(cell).mkdir(parents=True, exist_ok=True)
        return cell_dir(cell) / "stderr.log"

    run_isolated(cells, execute, jobs=job.get("jobs", 1), timeout_s=job.get("timeout_s", 300.0), on_end=ended,
                 stderr_path_for=stderr_path)


def progress_line(done: int, total: int, record: dict[str, Any], started: float) -> str:
    elapsed = time.perf_counter() - started
    return (f"[{done}/{total} {elapsed:6.1f}s] {record['target']} {record['case']}/{record['variant']}: "
            f"{record['outcome']}" + (f" ({record['failure']['category']})" if record.get("failure") else ""))
