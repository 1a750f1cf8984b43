"""The one-record-per-cell vocabulary, and constructors for the records a cell can end in.

The JSON Schema that every stored record must satisfy is ``harness/store/record.schema.json``; the host validates records
against it before it stores them. This module stays standard-library only: it runs inside worker containers.
"""
from __future__ import annotations

import datetime
from typing import Any

SCHEMA_ID = "trt-matrix/record/1"

OUTCOMES = ("pass", "fallback", "mismatch", "fail", "unavailable", "timeout", "crash", "infra-error")
STAGES = ("generate", "parse", "build", "inspect", "infer", "compare")
FAILURE_CATEGORIES = (
    "no-implementation",
    "internal-assert",
    "cuda-runtime",
    "calibration",
    "parser",
    "out-of-memory",
    "crash",
    "timeout",
    "unsupported-api",
    "unsupported-op",
    "runtime-error",
    "harness",
    "environment",
    "env-mismatch",
    "unavailable",
)
PRECISIONS = ("int8", "fp16", "fp32", "bf16", "fp8", "unknown")
# Outcomes that say something about the pattern; the others say something about the harness or environment.
OBSERVED_OUTCOMES = ("pass", "fallback", "mismatch", "fail", "crash", "timeout")


def now_iso() -> str:
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")


def base_record(cell: dict[str, Any], target: dict[str, Any]) -> dict[str, Any]:
    """The fields every record has, before the cell ran: identity, mode, knobs, expectation."""
    expectation = next((c for c in cell.get("claims", []) if c["target"] == target["id"]), None)
    return {
        "schema": SCHEMA_ID,
        "case": cell["case"],
        "variant": cell["variant"],
        "target": target["id"],
        "backend": target["backend"],
        "mode": cell["mode"],
        "knobs": cell.get("knobs", {}),
        "expected_int8": list(cell.get("expected_int8", [])),
        "expectation": expectation,
        "env_mismatch": None,
        "started_at": now_iso(),
    }


def finish_record(
    record: dict[str, Any],
    *,
    outcome: str,
    stage: str,
    duration_s: float,
    environment: dict[str, Any],
    failure: dict[str, Any] | None = None,
    precision: dict[str, str] | None = None,
    fallback_nodes: list[str] | None = None,
    metrics: dict[str, Any] | None = None,
    warnings: dict[str, int] | None = None,
    backend_time_s: float | None = None,
    log: str | None = None,
    details: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Complete ``record`` with what was observed and whether it agrees with the upstream claim."""
    if outcome not in OUTCOMES:
        raise ValueError(f"outcome {outcome!r} is not one of {OUTCOMES}")
    if stage not in STAGES:
        raise ValueError(f"stage {stage!r} is not one of {STAGES}")
    record.update(
        outcome=outcome,
        stage=stage,
        failure=failure,
        precision=precision or {},
        fallback_nodes=fallback_nodes or [],
        metrics=metrics,
        warnings=warnings or {},
        environment=environment,
        duration_s=round(duration_s, 6),
        backend_time_s=None if backend_time_s is None else round(backend_time_s, 6),
        log=log,
        details=details or {},
    )
    record["agrees"] = agreement(record["expectation"], outcome, failure)
    return record


def agreement(expectation: dict[str, Any] | None, outcome: str, failure: dict[str, Any] | None) -> bool | None:
    """Whether an observed outcome matches the upstream claim; None when there is no claim or nothing observed."""
    if expectation is None or outcome not in OBSERVED_OUTCOMES:
        return None
    claimed = expectation["outcome"]
    if claimed == "fail":
        if outcome not in ("fail", "crash"):
            return False
        category = expectation.get("category")
        return category is None or (failure or {}).get("category") == category
    if claimed == "unsupported":
        return outcome == "fail"
    return outcome == claimed


def failure(category: str, message: str, node: str | None = None) -> dict[str, Any]:
    if category not in FAILURE_CATEGORIES:
        raise ValueError(f"failure category {category!r} is not one of {FAILURE_CATEGORIES}")
    return {"category": category, "message": message, "node": node}
