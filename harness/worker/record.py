"""How a cell can end, and the one place every record is built.

A cell ends in exactly one record. Its ``outcome`` is one of :data:`OUTCOMES`: ``pass``, ``fallback``, ``mismatch``
and ``unverified`` (it ran to the end, :func:`ran`), ``fail`` (the backend refused it, :func:`failed`), ``crash`` and
``timeout`` (its process died or hung, :func:`ended_without_result`), ``infra-error`` (the harness or environment
broke, :func:`infra_error`) and ``unavailable`` (the cell cannot exist on the target, :func:`unavailable`). Every
builder goes through :func:`build`, which looks up the upstream claim for the target once and stores it with the
verdict (``expectation``, ``agrees``); readers take both from the record.

The stored form must satisfy ``harness/store/record.schema.json`` (a test keeps its enums equal to the vocabulary
below). Standard library only, Python 3.8 and later: this module runs inside worker containers.
"""
from __future__ import annotations

import copy
import datetime
from typing import Any, Dict, Iterable, List, Literal, Optional, TypedDict, get_args

from harness.judgement.meaning import agreement, claim_for
from harness.judgement.vocabulary import (
    CRASH, FAIL, FALLBACK, INFRA_ERROR, INT8, LOST_CELL_OUTCOMES, MISMATCH, OBSERVED_OUTCOMES, OUTCOMES, PASS,
    PRECISION_BITS, PRECISIONS, REQUESTED_PRECISIONS, TIMEOUT, UNAVAILABLE, UNKNOWN_PRECISION, UNVERIFIED,
)
from harness.worker.shapes import Cell, ClaimDict, JobTarget

SCHEMA_ID = "trt-matrix/record/1"

Stage = Literal["generate", "parse", "build", "inspect", "infer", "compare"]
Mode = Literal["implicit-int8", "explicit-qdq", "float"]

STAGES = get_args(Stage)
# A failure's category (crash, timeout and unavailable are also the outcomes of their cells).
FAILURE_CATEGORIES = (
    "no-implementation", "internal-assert", "cuda-runtime", "calibration", "parser", "out-of-memory", CRASH,
    TIMEOUT, "unsupported-api", "unsupported-op", "runtime-error", "harness", "environment", "env-mismatch",
    UNAVAILABLE,
)
# The outcomes (OUTCOMES, OBSERVED_OUTCOMES: the evidence judged against upstream claims here, inside the container,
# LOST_CELL_OUTCOMES), the precisions (PRECISIONS, REQUESTED_PRECISIONS, PRECISION_BITS: what a fallback is) and
# claim_for/agreement are harness.judgement's, which every other meaning of an outcome is too.
MODES = get_args(Mode)

INFRA_CATEGORIES = ("harness", "environment")  # the failure categories of an infra-error


class RecordInvariantError(Exception):
    """A record builder was called against its contract (an outcome, stage or category outside the vocabulary): a bug
    in the harness, never a user's bad input."""


class Failure(TypedDict):
    category: str  # one of FAILURE_CATEGORIES
    message: str
    node: Optional[str]


class Provenance(TypedDict, total=False):
    """Set by a nightly run (or by merge for records of a plain run): where the record belongs."""

    run: str
    host: str
    inputs_sha256: str
    environment_sha256: Optional[str]
    carried_over_from: Optional[str]


class _RecordFields(TypedDict):
    schema: str
    case: str
    variant: str
    target: str
    backend: str
    mode: str
    knobs: Dict[str, Any]
    expected_int8: List[str]
    requested_precision: Dict[str, str]  # every expected node -> the precision the cell asked for (int8, fp8, ...)
    expectation: Optional[ClaimDict]  # the upstream claim for this target, when there is one
    agrees: Optional[bool]  # whether the outcome matches it; None without a claim or without an observation
    env_mismatch: Optional[str]
    started_at: str
    outcome: str  # one of OUTCOMES
    stage: str  # one of STAGES: reached (pass) or failed in
    failure: Optional[Failure]
    precision: Dict[str, str]  # ONNX node -> one of PRECISIONS: what the backend ran
    fallback_nodes: List[str]  # expected nodes that ran in another precision than asked, not a narrower one
    metrics: Optional[Dict[str, Any]]
    warnings: Dict[str, int]
    environment: Dict[str, Any]
    duration_s: float
    backend_time_s: Optional[float]
    log: Optional[str]
    details: Dict[str, Any]


class Record(_RecordFields, total=False):
    """One cell's record, as stored in a results file (``harness/store/record.schema.json``)."""

    provenance: Provenance


def now_iso() -> str:
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")


def failure(category: str, message: str, node: Optional[str] = None) -> Failure:
    if category not in FAILURE_CATEGORIES:
        raise RecordInvariantError(f"failure category {category!r} is not one of {FAILURE_CATEGORIES}")
    return {"category": category, "message": message, "node": node}


def build(
    cell: Cell,
    target: JobTarget,
    *,
    outcome: str,
    stage: str,
    environment: Dict[str, Any],
    duration_s: float,
    started_at: Optional[str] = None,
    failure: Optional[Failure] = None,
    precision: Optional[Dict[str, str]] = None,
    fallback_nodes: Optional[List[str]] = None,
    metrics: Optional[Dict[str, Any]] = None,
    warnings: Optional[Dict[str, int]] = None,
    backend_time_s: Optional[float] = None,
    log: Optional[str] = None,
    details: Optional[Dict[str, Any]] = None,
    env_mismatch: Optional[str] = None,
) -> Record:
    """The record of ``cell`` on ``target``, judged against the cell's upstream claim for that target.

    Every builder below goes through here; call a builder when one fits the way the cell ended.
    """
    if outcome not in OUTCOMES:
        raise RecordInvariantError(f"outcome {outcome!r} is not one of {OUTCOMES}")
    if stage not in STAGES:
        raise RecordInvariantError(f"stage {stage!r} is not one of {STAGES}")
    expectation = claim_for(cell.get("claims", []), target["id"], environment.get("compute_capability"))
    return {
        "schema": SCHEMA_ID,
        "case": cell["case"],
        "variant": cell["variant"],
        "target": target["id"],
        "backend": target["backend"],
        "mode": cell["mode"],
        "knobs": cell.get("knobs", {}),
        "expected_int8": list(cell.get("expected_int8", [])),
        "requested_precision": requested_precision(cell),
        "expectation": expectation,
        "agrees": agreement(expectation, outcome, failure),
        "env_mismatch": env_mismatch,
        "started_at": started_at or now_iso(),
        "outcome": outcome,
        "stage": stage,
        "failure": failure,
        "precision": precision or {},
        "fallback_nodes": fallback_nodes or [],
        "metrics": metrics,
        "warnings": warnings or {},
        "environment": environment,
        "duration_s": round(duration_s, 6),
        "backend_time_s": None if backend_time_s is None else round(backend_time_s, 6),
        "log": log,
        "details": details or {},
    }


def requested_precision(cell: Cell) -> Dict[str, str]:
    """Every expected node of ``cell`` and the precision it is asked for: index.json's ``expected_precision`` (the
    ``expected_int8`` nodes first, in their order), or its ``expected_int8`` nodes asked for INT8 in a cases directory
    written before there was one."""
    int8 = cell.get("expected_int8", [])
    asked = cell.get("expected_precision")
    if asked is None:
        return dict.fromkeys(int8, INT8)
    return {**{node: asked[node] for node in int8 if node in asked}, **asked}  # expected_int8's build order first


def fell_back(asked: str, got: str) -> bool:
    """Whether a node asked for ``asked`` that ran in ``got`` fell back: another precision, not a narrower one
    (PRECISION_BITS), so wider (fp8 -> fp32, the silent loss of P15 and P18) or another format of the same width
    (int8 where fp8 was asked, bf16 where fp16 was: INT8 and FP8 E4M3 quantize to different grids with different
    ranges, so the accuracy planned for is not the one got, and no backend swaps one for the other unasked). A node
    that ran narrower than asked is judged by the tolerance (mismatch); ``unknown`` never falls back (unverified)."""
    return got != asked and got in PRECISION_BITS and PRECISION_BITS[got] >= PRECISION_BITS[asked]


def ran(cell: Cell, target: JobTarget, environment: Dict[str, Any], *, metrics: Dict[str, Any],
        precision: Dict[str, str], started_at: str, duration_s: float, backend_time_s: Optional[float],
        warnings: Optional[Dict[str, int]] = None, log: Optional[str] = None,
        details: Optional[Dict[str, Any]] = None) -> Record:
    """A cell that ran to the end: ``mismatch`` when its output is outside the tolerance, else ``fallback`` when an
    expected node ran in another precision than asked (not a narrower one: PRECISION_BITS), else ``unverified`` when
    the backend did not show the precision of an expected node, else ``pass``: every expected node seen running in
    the precision it was asked for (INT8, FP8, FP16, ...).

    The asked/got pair of every node that fell back is in ``details.fallback_precision`` and the unverified nodes in
    ``details.unverified_nodes`` (whatever the outcome: a fallback or a mismatch is decided without them)."""
    asked = requested_precision(cell)
    got = {node: precision.get(node, UNKNOWN_PRECISION) for node in asked}
    fallback = [node for node in asked if fell_back(asked[node], got[node])]
    unverified = [node for node in asked if got[node] == UNKNOWN_PRECISION]
    outcome = (MISMATCH if not metrics["within_tolerance"] else FALLBACK if fallback
               else UNVERIFIED if unverified else PASS)
    details = {**(details or {}), "unverified_nodes": unverified,
               "fallback_precision": {node: {"asked": asked[node], "got": got[node]} for node in fallback}}
    return build(cell, target, outcome=outcome, stage="compare", environment=environment, started_at=started_at,
                 duration_s=duration_s, backend_time_s=backend_time_s, precision=precision, fallback_nodes=fallback,
                 metrics=metrics, warnings=warnings, log=log, details=details)


def failed(cell: Cell, target: JobTarget, environment: Dict[str, Any], *, stage: str, category: str, message: str,
           node: Optional[str], started_at: str, duration_s: float, backend_time_s: Optional[float],
           warnings: Optional[Dict[str, int]] = None, log: Optional[str] = None,
           details: Optional[Dict[str, Any]] = None) -> Record:
    """A cell the backend refused at ``stage`` (``fail``): a result about the pattern."""
    return build(cell, target, outcome=FAIL, stage=stage, environment=environment, started_at=started_at,
                 duration_s=duration_s, backend_time_s=backend_time_s, failure=failure(category, message, node),
                 warnings=warnings, log=log, details=details)


def unavailable(cell: Cell, target: JobTarget, environment: Dict[str, Any], reason: str, *, stage: str = "generate",
                started_at: Optional[str] = None, duration_s: float = 0.0,
                backend_time_s: Optional[float] = None) -> Record:
    """A cell that cannot exist on ``target`` (an API this version lacks, a platform without the version)."""
    return build(cell, target, outcome=UNAVAILABLE, stage=stage, environment=environment, started_at=started_at,
                 duration_s=duration_s, backend_time_s=backend_time_s, failure=failure(UNAVAILABLE, reason))


def infra_error(cell: Cell, target: JobTarget, environment: Dict[str, Any], category: str, message: str, *,
                stage: str = "generate", started_at: Optional[str] = None, duration_s: float = 0.0,
                backend_time_s: Optional[float] = None, log: Optional[str] = None,
                details: Optional[Dict[str, Any]] = None, env_mismatch: Optional[str] = None) -> Record:
    """A cell the harness (``category`` "harness") or its environment ("environment") failed: says nothing about
    the pattern."""
    if category not in INFRA_CATEGORIES:
        raise RecordInvariantError(f"infra-error category {category!r} is not one of {INFRA_CATEGORIES}")
    return build(cell, target, outcome=INFRA_ERROR, stage=stage, environment=environment, started_at=started_at,
                 duration_s=duration_s, backend_time_s=backend_time_s, failure=failure(category, message), log=log,
                 details=details, env_mismatch=env_mismatch)


def ended_without_result(cell: Cell, target: JobTarget, environment: Dict[str, Any], kind: str, detail: str, *,
                         stage: str, duration_s: float, log: Optional[str]) -> Record:
    """A cell whose process crashed (``kind`` CRASH) or was killed at its timeout (TIMEOUT) at ``stage``;
    ``detail`` says how it ended, e.g. "was killed by signal 11 (SIGSEGV)"."""
    if kind not in LOST_CELL_OUTCOMES:
        raise RecordInvariantError(f"a cell without a result ends in one of {LOST_CELL_OUTCOMES}, not {kind!r}")
    return build(cell, target, outcome=kind, stage=stage, environment=environment, duration_s=duration_s,
                 failure=failure(kind, f"The cell's process {detail}."), log=log)


def judged_again(record: Record, claims: Iterable[ClaimDict]) -> Record:
    """A copy of ``record`` judged against ``claims`` (the cell's current upstream claims) instead of those it was
    built with."""
    again = copy.deepcopy(record)
    again["expectation"] = claim_for(claims, record["target"],
                                     (record.get("environment") or {}).get("compute_capability"))
    again["agrees"] = agreement(again["expectation"], record["outcome"], record["failure"])
    return again
