"""What each outcome and each upstream claim means, and the run's gate.

Per outcome (:data:`harness.judgement.vocabulary.OUTCOMES`): the *answer* it gives a deployment (works, falls back,
fails, cannot exist, or nothing), its *severity* (which record of a cell speaks when hosts differ), whether it is
*evidence* about the pattern, whether it is *compared* night to night, whether a nightly *retries* it, whether it
means the harness or environment *broke*, and how a page shows it. Then the upstream claims: their answers, their
strength labels, which claim holds for a cell, and whether an observation agrees with it (the worker judges records
with :func:`agreement` inside containers: standard library only).
"""
from __future__ import annotations

from typing import Any, Iterable, Mapping, NamedTuple, Optional, Tuple

from harness.judgement.vocabulary import (
    ANSWERS, CANNOT_EXIST, CRASH, FAIL, FAILS, FAILURE_OUTCOMES, FALLBACK, FALLS_BACK, FP16, INFRA_ERROR,
    MISMATCH, OBSERVED_OUTCOMES, OUTCOMES, PASS, PRECISION_BITS, TIMEOUT, UNAVAILABLE, UNSUPPORTED, UNVERIFIED, WORKS,
)


class Meaning(NamedTuple):
    """What one outcome means (see the module docstring)."""

    outcome: str
    answer: Optional[str]  # one of ANSWERS; None: it says nothing about the pattern
    severity: Optional[int]  # how bad for a deployment, higher worse; None when it is no evidence
    ran: bool  # the cell ran to the end (its failure field, if any, is not a failure)
    compared: bool  # compared night to night: a move between compared outcomes can be a regression
    retried: bool  # never settled: a nightly runs the cell again whatever its fingerprints
    broken: bool  # the harness or environment broke: a run with one exits with the "broken" status
    symbol: str
    text: str  # what it means, in a phrase (the report's legend)

    @property
    def evidence(self) -> bool:
        """An observation of what the backend did with the pattern (judged against upstream claims)."""
        return self.outcome in OBSERVED_OUTCOMES


_M = Meaning
MEANINGS = {m.outcome: m for m in (
    # outcome, answer, severity, ran, compared, retried, broken, symbol, text
    _M(PASS, WORKS, 0, True, True, False, False, "✓",
       "ran within tolerance, every expected node in the precision asked (INT8, FP8, FP16, ...)"),
    _M(FALLBACK, FALLS_BACK, 1, True, True, False, False, "↓",
       "within tolerance, but expected nodes ran wider than asked (e.g. int8 -> fp32, fp8 -> fp32)"),
    _M(MISMATCH, FAILS, 2, True, True, False, False, "≠", "ran, output outside the tolerance vs FP32"),
    _M(UNVERIFIED, None, None, True, False, False, False, "?",
       "ran within tolerance, but the backend did not show the precision of an expected node"),
    _M(FAIL, FAILS, 3, False, True, False, False, "✗", "the backend refused the model (parse/build/run error)"),
    _M(CRASH, FAILS, 3, False, True, False, False, "‼", "the cell's process died (signal, abort)"),
    _M(TIMEOUT, FAILS, 3, False, False, True, False, "◷",
       "killed at the harness's time limit: a failure, never a regression"),
    _M(UNAVAILABLE, CANNOT_EXIST, None, False, False, False, False, "⊘",
       "cannot exist on this target (e.g. API missing)"),
    _M(INFRA_ERROR, None, None, False, False, True, True, "⚠",
       "harness/environment failed: says nothing of the pattern"),
)}
del _M

RAN_OUTCOMES = tuple(o for o, m in MEANINGS.items() if m.ran)
EVIDENCE_OUTCOMES = tuple(o for o, m in MEANINGS.items() if m.evidence)
COMPARED_OUTCOMES = tuple(o for o, m in MEANINGS.items() if m.compared)
NOT_COMPARED_OUTCOMES = tuple(o for o, m in MEANINGS.items() if not m.compared)
RAN_WITHOUT_VERDICT = tuple(o for o, m in MEANINGS.items() if m.ran and m.answer is None)  # unverified
RETRIED_OUTCOMES = tuple(o for o, m in MEANINGS.items() if m.retried)
BROKEN_OUTCOMES = tuple(o for o, m in MEANINGS.items() if m.broken)
OUTCOME_SYMBOLS = {o: m.symbol for o, m in MEANINGS.items()}
WORST_FIRST = tuple(sorted(OUTCOMES, key=lambda o: (
    MEANINGS[o].severity is None, -(MEANINGS[o].severity or 0), OUTCOMES.index(o))))  # no-evidence outcomes last
# How much a cell with each outcome calls for attention when a page sorts rows worst first: failures, then a
# fallback, then a broken harness or a cell that ran without a verdict, then nothing (a pass, a cell that cannot
# exist).
ATTENTION = {o: m.severity + 1 if m.severity else 1 if m.broken or (m.ran and m.answer is None) else 0
             for o, m in MEANINGS.items()}


def meaning(outcome: str) -> Meaning:
    try:
        return MEANINGS[outcome]
    except KeyError:
        raise ValueError(f"outcome {outcome!r} is not one of {OUTCOMES}") from None


def answer(outcome: str) -> Optional[str]:
    """What an observed outcome says about deploying the pattern (None: nothing)."""
    return meaning(outcome).answer


def severity(outcome: str) -> Optional[int]:
    return meaning(outcome).severity


def fails_gate(outcome: str, level: str) -> bool:
    """Whether a cell with ``outcome`` fails ``trt-matrix run --fail-on level`` (RUN_FAIL_ON_LEVELS; unverified,
    infra-error and unavailable never do: they are no evidence; infra-error has an exit status of its own)."""
    return severity(outcome) is not None and severity(outcome) >= severity(level)


def band(outcome: str) -> int:
    """A compared outcome's band for history and diff, higher better: pass, fallback, then every failure."""
    if not meaning(outcome).compared:
        raise ValueError(f"outcome {outcome!r} is not compared across nights; compared: {COMPARED_OUTCOMES}")
    return len(ANSWERS) - ANSWERS.index(answer(outcome))


def predicted_float(precision: str) -> bool:
    """Whether a node asked a quantized precision and predicted in ``precision`` by TensorRT's documented rules runs
    float (16 bits or wider): a predicted fallback."""
    return PRECISION_BITS[precision] >= PRECISION_BITS[FP16]


def predicted_outcome(precisions: Iterable[str]) -> Optional[str]:
    """The predicted basis's word for the nodes a form asks a quantized precision of, from their predicted
    precisions: ``fallback`` where one is predicted float, ``pass`` where every one is predicted quantized. A
    precision the rules do not name (``unknown``: a quantized type the version documents no Q/DQ of) predicts
    nothing; None where nothing is predicted. Never a failure: the rules say how TensorRT types layers, not whether
    it builds."""
    named = [p for p in precisions if p in PRECISION_BITS]
    if not named:
        return None
    return FALLBACK if any(predicted_float(p) for p in named) else PASS


# Upstream claims: what each claimed outcome answers, and how strong a claim is.
CLAIM_ANSWERS = {PASS: WORKS, FALLBACK: FALLS_BACK, MISMATCH: FAILS, FAIL: FAILS, UNSUPPORTED: FAILS}
STRENGTH_LABELS = {"issue-thread": "issue thread", "write-up-only": "write-up only", "documentation": "documentation"}
CLAIM_FIELDS = ("target", "outcome", "source", "strength")  # the strings every claim carries


def claim_answer(claimed_outcome: str) -> str:
    return CLAIM_ANSWERS[claimed_outcome]


def strength_label(strength: Optional[str]) -> str:
    return STRENGTH_LABELS.get(strength or "", strength or "unknown strength")


def claim_for(claims: Iterable[Mapping[str, Any]], target_id: str,
              compute_capability: Optional[str] = None) -> Optional[Mapping[str, Any]]:
    """The upstream claim for ``target_id`` among ``claims``, or None. A claim naming a GPU architecture
    (``architecture``: a compute capability such as "8.7", or "10.0+" for that one and newer) holds only for cells that
    ran on it, and then before a claim naming none."""
    mine = [claim for claim in claims if claim["target"] == target_id
            and _ran_on(claim.get("architecture"), compute_capability)]
    return next((claim for claim in mine if claim.get("architecture")), next(iter(mine), None))


def _ran_on(architecture: Optional[str], compute_capability: Optional[str]) -> bool:
    """Whether a cell on ``compute_capability`` ("8.7") is one a claim on ``architecture`` ("8.7", "10.0+", None:
    any) speaks of."""
    if architecture is None:
        return True
    if not compute_capability:
        return False

    def number(text: str) -> Tuple[int, ...]:
        return tuple(int(part) for part in text.rstrip("+").split("."))

    if architecture.endswith("+"):
        return number(compute_capability) >= number(architecture)
    return number(compute_capability) == number(architecture)


def agreement(expectation: Optional[Mapping[str, Any]], outcome: str,
              failure: Optional[Mapping[str, Any]]) -> Optional[bool]:
    """Whether an observed outcome matches the upstream claim; None when there is no claim or nothing observed."""
    if expectation is None or outcome not in OBSERVED_OUTCOMES:
        return None
    claimed = expectation["outcome"]
    if claimed == FAIL:
        if outcome not in FAILURE_OUTCOMES:
            return False
        category = expectation.get("category")
        return category is None or outcome == TIMEOUT or (failure or {}).get("category") == category
    if claimed == UNSUPPORTED:
        return outcome == FAIL
    return outcome == claimed
