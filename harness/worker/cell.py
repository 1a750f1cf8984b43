"""Run one cell on a backend and turn what happened into a record."""
from __future__ import annotations

import time
import traceback
from pathlib import Path
from typing import Any

from harness.worker import record as rec
from harness.worker.backends.base import Backend, BackendFailure, CellUnavailable, EnvironmentProblem, StageTracker
from harness.worker.casedata import damaged_input, load_arrays
from harness.worker.metrics import compare
from harness.worker.shapes import Cell, JobTarget

LOG_EXCERPT_CHARS = 4000
STAGE_FILE = "stage"


def excerpt(text: str | None) -> str | None:
    """The head (what went wrong first) and the tail (how it ended) of a long log; the full log stays on disk."""
    if text is None or len(text) <= LOG_EXCERPT_CHARS:
        return text
    head = LOG_EXCERPT_CHARS // 3
    return f"{text[:head]}\n[... {len(text) - LOG_EXCERPT_CHARS} characters left out ...]\n{text[head - LOG_EXCERPT_CHARS:]}"


def run_cell(cell: Cell, target: JobTarget, backend: Backend, environment: dict[str, Any],
             workdir: Path) -> rec.Record:
    """Run ``cell`` on ``backend``; always return a finished record (pass, fallback, mismatch, fail, ...)."""
    started_at = rec.now_iso()
    workdir.mkdir(parents=True, exist_ok=True)
    stages = StageTracker(workdir / STAGE_FILE)
    started = time.perf_counter()
    backend_time = None

    def timing() -> dict[str, Any]:
        return dict(started_at=started_at, duration_s=time.perf_counter() - started, backend_time_s=backend_time)

    try:
        damage = damaged_input(cell)
        if damage:
            raise EnvironmentProblem(f"damaged input: {damage}")
        reason = backend.unavailable_reason(cell)
        if reason:
            raise CellUnavailable(reason)
        arrays = load_arrays(cell)
        backend_started = time.perf_counter()
        try:
            execution = backend.run(cell, arrays, workdir, stages)
        finally:
            backend_time = time.perf_counter() - backend_started
        stages.enter("compare")
        metrics = compare(execution.outputs, arrays["reference"], cell["tolerance"])
        return rec.ran(cell, target, environment, metrics=metrics, precision=execution.precision,
                       warnings=execution.warnings, log=excerpt(execution.log), details=execution.details, **timing())
    except BackendFailure as err:
        return rec.failed(cell, target, environment, stage=stages.current, category=err.category, message=err.message,
                          node=err.node, warnings=err.warnings, log=excerpt(err.log), details=err.details, **timing())
    except CellUnavailable as err:
        return rec.unavailable(cell, target, environment, str(err), stage=stages.current, **timing())
    except EnvironmentProblem as err:
        return rec.infra_error(cell, target, environment, "environment", str(err), stage=stages.current, **timing())
    except Exception as err:  # a bug in the harness, not a result about the pattern
        return rec.infra_error(cell, target, environment, "harness", f"{type(err).__name__}: {err}",
                               stage=stages.current, log=traceback.format_exc(), **timing())


class StageUnreadable(Exception):
    """The stage file of a cell's process cannot be read: where the cell was is unknown."""


def reached_stage(workdir: Path) -> str:
    """The stage the cell's process had reached, as it last wrote it to its work directory. The cell started from
    an empty work dir, so no stage file means it never left ``generate``; a file that cannot be read (or holds no
    stage) raises StageUnreadable naming it."""
    stage_file = workdir / STAGE_FILE
    try:
        stage = stage_file.read_text() if stage_file.exists() else "generate"
    except (OSError, UnicodeDecodeError) as err:
        raise StageUnreadable(f"{stage_file}: {type(err).__name__}: {err}") from None
    if stage not in rec.STAGES:
        raise StageUnreadable(f"{stage_file}: holds {stage[:40]!r}, not one of {', '.join(rec.STAGES)}")
    return stage


def lost_cell_record(cell: Cell, target: JobTarget, environment: dict[str, Any], kind: str, detail: str,
                     wall_s: float, workdir: Path, stderr_path: Path | None) -> rec.Record:
    """The record of a cell whose process crashed or was killed at its timeout, at the stage it had reached; an
    infra-error when that stage cannot be read (a timeout or crash at an unknown stage says nothing reliable)."""
    log = stderr_excerpt(stderr_path)
    try:
        stage = reached_stage(workdir)
    except StageUnreadable as err:
        return rec.infra_error(cell, target, environment, "harness", f"The cell's process {detail}, and the stage it "
                               f"had reached cannot be read ({err}): this says nothing about the pattern.",
                               duration_s=wall_s, log=log)
    return rec.ended_without_result(cell, target, environment, kind, detail, stage=stage, duration_s=wall_s, log=log)


def stderr_excerpt(stderr_path: Path | None) -> str | None:
    """What the cell's process wrote to stderr (head and tail), or None when it wrote nothing there."""
    if stderr_path is None or not stderr_path.exists():
        return None
    return excerpt(stderr_path.read_text(errors="replace"))
