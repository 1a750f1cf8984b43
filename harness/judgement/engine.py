"""The one engine: the evidence for one form on one target in, a verdict with its basis and the evidence that
decided it out. The scan calls :func:`judge` per finding and per workaround; the planning view's cell is
:func:`planning_verdict` of the same judgements of a pattern's failing forms and workarounds (a projection, never a
second decision); ``--fix`` and ``diagnose`` read the scan's verdicts. Standard library only.

Evidence is :class:`harness.evidence.Evidence` (gathered by :func:`harness.evidence.evidence_for`), read here as
:class:`Judgeable`: ``kind`` (a basis: :data:`harness.judgement.bases.BASES`), ``scope`` (what it is about,
:data:`SCOPES`) and ``outcome`` (a word its basis answers). Tiers are scopes, closest to the user's layer first, and
within a scope the bases in precedence order (:data:`TIERS`): the first tier holding evidence that answers something
decides, with the worst verdict of that tier's evidence.
"""
from __future__ import annotations

from typing import Any, Collection, Iterable, NamedTuple, Optional, Protocol, Sequence, Tuple

from harness.judgement.bases import BASES, BASIS, PLANNING_BASES
from harness.judgement.meaning import RAN_WITHOUT_VERDICT, band, meaning
from harness.judgement.vocabulary import (
    BLOCKED, CANNOT_EXIST, CANNOT_EXIST_HERE, CLEAR, DOES_NOT_CONCERN, FAILS, FAILS_AS_REPORTED, FALLBACK, FALLS_BACK, LIKELY, NOT_RUN,
    OBSERVED, PRECISION_FALLBACK, PRECISION_UNVERIFIED, SCAN_FAIL_ON_LEVELS, SCAN_FAILING, SCAN_GOOD, SCAN_VERDICTS,
    SCAN_WORKAROUND_VERDICTS,
    SCOPES, UNAVAILABLE, UNVERIFIED, VERIFIED, WORKAROUND, WORKS, WORKS_AS_REPORTED, YOUR_LAYER,
)



def _tiers() -> Tuple[Tuple[str, str], ...]:
    """(scope, basis) in the order the engine tries them: BASES in order, a basis ``across_scopes`` for every scope
    at its place, the others scope by scope (a run of them: each scope's bases before the next scope's)."""
    tiers, run = [], []
    for basis in (*BASES, None):
        if basis is not None and not basis.across_scopes:
            run.append(basis.name)
            continue
        tiers += [(scope, name) for scope in SCOPES for name in run]
        run = []
        if basis is not None:
            tiers += [(scope, basis.name) for scope in SCOPES]
    return tuple(tiers)


TIERS = _tiers()
SCAN_VERDICT_OF_ANSWER = {FAILS: BLOCKED, FALLS_BACK: FALLBACK, CANNOT_EXIST: UNAVAILABLE, WORKS: LIKELY,
                          DOES_NOT_CONCERN: CLEAR}


class Judgeable(Protocol):
    """What the engine reads of a piece of evidence (:class:`harness.evidence.Evidence`, which this package cannot
    import: it goes into containers): its basis, its scope and the word its basis answers."""

    kind: str
    scope: str
    outcome: str


def answer_of(evidence: Judgeable) -> Optional[str]:
    """What one piece of evidence says about deploying the pattern (None: nothing, e.g. an infra-error record)."""
    return BASIS[evidence.kind].answers[evidence.outcome]


def verdict_of(evidence: Judgeable) -> str:
    """The scan's verdict of one decisive piece of evidence: its answer's, ``verified`` for a pass on the user's own
    layer. A verdict its basis may not give is a bug of the caller."""
    verdict = SCAN_VERDICT_OF_ANSWER[answer_of(evidence)]
    verdict = VERIFIED if verdict == LIKELY and evidence.scope == YOUR_LAYER else verdict
    if verdict not in BASIS[evidence.kind].verdicts:
        raise ValueError(f"evidence {evidence.kind} {evidence.outcome!r} on {evidence.scope} would give "
                         f"{verdict!r}, which that basis may not give: {BASIS[evidence.kind].verdicts}")
    return verdict


def worst_first(verdict: str) -> int:
    """Sort key of the scan's verdicts, worst first."""
    return SCAN_VERDICTS.index(verdict)


class Judgement(NamedTuple):
    """A verdict, the basis it rests on (None: no evidence answered anything) and the evidence that decided it."""

    verdict: str
    basis: Optional[str]
    deciding: Any = None
    scope: Optional[str] = None
    silent: Tuple[Any, ...] = ()  # evidence that answers nothing (infra-error, unverified records)

    @property
    def gates(self) -> bool:
        """Whether this verdict may stop a CI gate: False where the evidence that decided it does not gate (a claim
        whose conditions are not all known to hold on the target: :func:`harness.judgement.claim_gates`)."""
        return getattr(self.deciding, "gates", True)

    @property
    def gate_verdict(self) -> str:
        """The verdict a CI gate reads (:func:`gate_verdict`)."""
        return gate_verdict(self.verdict, self.gates)

    @property
    def unverified_ran(self) -> bool:
        """Nothing decided, and a record ran without showing an expected node's precision."""
        return self.basis is None and any(e.kind == OBSERVED and e.outcome in RAN_WITHOUT_VERDICT
                                          for e in self.silent)


def judge(evidence: Iterable[Judgeable], uncovered: Collection[str] = ()) -> Judgement:
    """The verdict of one form on one target from ``evidence`` (module docstring). A scope in ``uncovered`` (the
    user's layer when not every occurrence of a finding was checked on its own) decides only a failing verdict."""
    evidence = list(evidence)
    silent = tuple(e for e in evidence if answer_of(e) is None)
    for scope, basis in TIERS:
        decisive = [e for e in evidence if e.scope == scope and e.kind == basis and answer_of(e) is not None]
        if not decisive:
            continue
        deciding = min(decisive, key=lambda e: worst_first(verdict_of(e)))
        verdict = verdict_of(deciding)
        if scope in uncovered and verdict not in SCAN_FAILING:
            continue
        return Judgement(verdict, basis, deciding, scope, silent)
    return Judgement(UNVERIFIED, None, silent=silent)


def planning_verdict(form: Judgement, workarounds: Sequence[Judgement] = (), available: bool = True) -> str:
    """The planning view's cell of a pattern on a target: the judgement of its failing forms, then of its
    workarounds, projected. Only observation gives works, workaround, fallback or fails; another basis gives the
    cell of that basis (claimed upstream only)."""
    if not available:
        return CANNOT_EXIST_HERE
    observed = [w.verdict for w in workarounds if w.basis == OBSERVED]
    if form.basis == OBSERVED and form.verdict in SCAN_GOOD:
        return WORKS_AS_REPORTED
    if any(verdict in SCAN_GOOD for verdict in observed):
        return WORKAROUND
    if form.basis == OBSERVED:
        if form.verdict == UNAVAILABLE:
            return CANNOT_EXIST_HERE
        return PRECISION_FALLBACK if FALLBACK in (form.verdict, *observed) else FAILS_AS_REPORTED
    if form.basis in PLANNING_BASES:
        return form.basis
    return PRECISION_UNVERIFIED if form.unverified_ran else NOT_RUN


def lists_workarounds(form: Judgement) -> bool:
    """Whether the scan lists any of a finding's workarounds beside its judgement ``form`` on a target: where the
    finding is expected not to be fine or nothing is known of it (SCAN_WORKAROUND_VERDICTS), and beside a good verdict
    that rests on no observation (a workaround observed to work outranks it, as in :func:`planning_verdict`)."""
    return form.verdict in SCAN_WORKAROUND_VERDICTS or (form.verdict in SCAN_GOOD and form.basis != OBSERVED)


def workaround_listed(form: Judgement, workaround: Judgement) -> bool:
    """Whether the scan lists a workaround judged ``workaround`` beside the finding's ``form``: every one where the
    finding is expected not to be fine; only those known to work where nothing is known of it; beside a good verdict
    on a claim or a prediction, only those observed to work."""
    if not lists_workarounds(form):
        return False
    if form.verdict in SCAN_FAILING:
        return True
    if form.verdict == UNVERIFIED:
        return workaround.verdict in SCAN_GOOD
    return workaround.verdict in SCAN_GOOD and workaround.basis == OBSERVED


def verdict_group(verdict: str) -> Tuple[str, ...]:
    """The group of a scan verdict a reader tells apart, as the verdicts it holds: every good one is one group
    (SCAN_GOOD); any other is a group of its own."""
    return SCAN_GOOD if verdict in SCAN_GOOD else (verdict,)


def workaround_rank(verdict: str) -> Tuple[bool, bool]:
    """How a workaround's verdict ranks among a finding's workarounds, lowest first: known to work, then unknown (no
    verdict), then known to fail or fall back."""
    return verdict not in SCAN_GOOD, verdict != UNVERIFIED


def fix_rank(verdict: str, basis: Optional[str]) -> Tuple[bool, int, bool]:
    """How ``--fix`` ranks a workaround it may apply, best first: verified on the user's own layer, then by the
    precedence of its verdict's basis (BASES' order: observed, claimed, claimed over a range, predicted; anything else
    last), then known to work first."""
    precedence = [b.name for b in BASES]
    return (verdict != VERIFIED, precedence.index(basis) if basis in precedence else len(precedence),
            verdict not in SCAN_GOOD)


# How a cell moved between two records (history and diff): only outcomes compared across nights, on one GPU.
REGRESSION, PROGRESSION, NOT_COMPARED = "regression", "progression", "not-compared"  # what diff and history say
SAME_BAND = "same-band"  # a move within a band: compare tells unchanged from changed by the evidence


def change(before: str, after: str, before_gpu: Optional[str] = None, after_gpu: Optional[str] = None) -> str:
    """How a cell moved from outcome ``before`` to ``after``: down a band (pass, fallback, the failures) a
    regression, up one a progression, else the same band; never compared when either outcome is not compared across
    nights or the records ran on two GPU architectures (both known and different: two cells of the world)."""
    if not (meaning(before).compared and meaning(after).compared):
        return NOT_COMPARED
    if before_gpu and after_gpu and before_gpu != after_gpu:
        return NOT_COMPARED
    return REGRESSION if band(after) < band(before) else PROGRESSION if band(after) > band(before) else SAME_BAND


def gate_verdict(verdict: str, gates: bool = True) -> str:
    """The verdict ``scan --fail-on`` reads: ``verdict`` itself where its evidence gates; a failing verdict resting on
    evidence that does not (a single report inherited by a look-alike, a claim whose GPU, driver or form is not known
    to be the target's) reads as ``unverified``: shown, labelled, and stopping only ``--fail-on unverified``."""
    return verdict if gates or verdict not in SCAN_FAILING else UNVERIFIED


def fails_scan_gate(verdict: str, level: str) -> bool:
    """Whether a target's ``verdict`` makes ``trt-matrix scan --fail-on level`` exit 1: the levels are the verdicts a
    gate can stop at, worst first, and each stops every one before it too."""
    return verdict in SCAN_FAIL_ON_LEVELS[:SCAN_FAIL_ON_LEVELS.index(level) + 1]
