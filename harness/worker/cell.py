"""Run one cell on a backend and turn what happened into a record."""
from __future__ import annotations

import time
import traceback
from pathlib import Path
from typing import Any

from harness.worker import record as rec
from harness.worker.backends.base import Backend, BackendFailure, CellUnavailable, EnvironmentProblem, StageTracker
from harness.worker.casedata import load_arrays
from harness.worker.metrics import compare

LOG_EXCERPT_CHARS = 4000
STAGE_FILE = "stage"


def excerpt(text: str | None) -> str | None:
    """The head (what went wrong first) and the tail (how it ended) of a long log; the full log stays on disk."""
    if text is None or len(text) <= LOG_EXCERPT_CHARS:
        return text
    head = LOG_EXCERPT_CHARS // 3
    return f"{text[:head]}\n[... {len(text) - LOG_EXCERPT_CHARS} characters left out ...]\n{text[head - LOG_EXCERPT_CHARS:]}"


def run_cell(cell: dict[str, Any], target: dict[str, Any], backend: Backend, environment: dict[str, Any],
             workdir: Path) -> dict[str, Any]:
    """Run ``cell`` on ``backend``; always return a finished record (pass, fallback, mismatch, fail, ...)."""
    record = rec.base_record(cell, target)
    workdir.mkdir(parents=True, exist_ok=True)
    stages = StageTracker(workdir / STAGE_FILE)
    started = time.perf_counter()
    backend_time = None
    finish = dict(environment=environment)
    try:
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
        observed = {n: execution.precision.get(n, "unknown") for n in cell["expected_int8"]}
        fallback = [n for n, p in observed.items() if p not in ("int8", "unknown")]
        unverified = [n for n, p in observed.items() if p == "unknown"]  # the backend could not tell: not a fallback
        outcome = "mismatch" if not metrics["within_tolerance"] else ("fallback" if fallback else "pass")
        finish.update(outcome=outcome, stage="compare", precision=execution.precision, fallback_nodes=fallback,
                      metrics=metrics, warnings=execution.warnings, log=excerpt(execution.log),
                      details={**execution.details, "unverified_int8": unverified})
    except BackendFailure as err:
        finish.update(outcome="fail", stage=stages.current, failure=rec.failure(err.category, err.message, err.node),
                      warnings=err.warnings, log=excerpt(err.log), details=err.details)
    except CellUnavailable as err:
        finish.update(outcome="unavailable", stage=stages.current, failure=rec.failure("unavailable", str(err)))
    except EnvironmentProblem as err:
        finish.update(outcome="infra-error", stage=stages.current, failure=rec.failure("environment", str(err)))
    except Exception as err:  # a bug in the harness, not a result about the pattern
        finish.update(outcome="infra-error", stage=stages.current,
                      failure=rec.failure("harness", f"{type(err).__name__}: {err}"), log=traceback.format_exc())
    return rec.finish_record(record, duration_s=time.perf_counter() - started, backend_time_s=backend_time, **finish)


def ended_without_result(cell: dict[str, Any], target: dict[str, Any], environment: dict[str, Any], kind: str,
                         detail: str, wall_s: float, workdir: Path, stderr_path: Path | None) -> dict[str, Any]:
    """The record of a cell whose process crashed or was killed at its timeout, at the stage it had reached."""
    log = None
    if stderr_path is not None and stderr_path.exists():
        log = excerpt(stderr_path.read_text(errors="replace"))
    stage_file = workdir / STAGE_FILE
    stage = stage_file.read_text() if stage_file.exists() else "generate"
    category = "timeout" if kind == "timeout" else "crash"
    return rec.finish_record(
        rec.base_record(cell, target), outcome=kind, stage=stage, duration_s=wall_s, environment=environment,
        failure=rec.failure(category, f"The cell's process {detail}."), log=log,
    )
