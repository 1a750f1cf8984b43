"""What an outcome means, once, for every page and command: the scan, the planning view, the matrix, history, diff
and the nightly all read it from here.

Per outcome (the vocabulary :data:`harness.worker.record.OUTCOMES`): the *answer* it gives a deployment (works,
falls back, fails, cannot exist, or nothing), its *severity* (which record of a cell speaks when hosts differ),
whether it is *evidence* about the pattern, whether it is *compared* night to night, whether a nightly *retries* it,
whether it means the harness or environment *broke*, and how a page shows it. Then the upstream claims: their
answers, their strength labels, and the one reader of claims from a cases directory's ``index.json``. Then the
evidence tiers of the scan and the two verdict vocabularies that rest on all of this: the scan's (one user's
model on one target) and the planning view's (one pattern on one target), with the mapping between them.

Timeouts, decided once: a ``timeout`` is evidence about the pattern and a failure for a deployment. A minimal
reproducer that builds and runs in seconds elsewhere and is still running at the cell's time limit would hang a
deployment's build too, so the scan says ``blocked``, the planning view ``fails`` and the record's claim check
judges it. The limit is the harness's, though, and a loaded host can reach it: a timeout is run again every night
and never counted as a regression or a progression (history and diff list it as not compared).

Evidence about the pattern (``pass``, ``fallback``, ``mismatch``, ``fail``, ``crash``, ``timeout``) is
:data:`harness.worker.record.OBSERVED_OUTCOMES`: the worker judges upstream claims with it inside containers, where
this module cannot be imported. ``infra-error`` (the harness or environment broke) says nothing about the pattern
anywhere; ``unavailable`` says the cell cannot exist on the target.

Fallback, decided once for every precision: a cell asks each expected node for a precision (INT8, FP8, FP4, FP16,
BF16: Q/DQ nodes, a builder flag, the graph's own types); a node that ran in another precision and not a narrower
one (:data:`harness.worker.record.PRECISION_WIDTH`) fell back, so an FP8 request built FP32 without a word (P15,
P18) is a ``fallback`` like an INT8 one, its asked/got pairs in the record.

Unverified, decided once: a cell that ran within tolerance while the backend did not show the precision of an
expected node is ``unverified``. It ran (``ran``), but it answers nothing about the pattern (``answer`` None, no
severity, not evidence, no claim is judged against it): a pass needs every expected node seen in its precision, and
a node not seen is not a fallback either. Nothing broke, so it is not ``broken`` (a run with one exits 0), and the
backend will hide the same node tomorrow, so it is not ``retried``; a move to or from it is no regression
(``compared`` False). The scan and the planning view say ``unverified`` for it where nothing decisive is known.
"""
from __future__ import annotations

import dataclasses
from typing import Any, Mapping

from harness.matrix import PLATFORM_ARCH
from harness.worker.environment import compute_capability
from harness.worker.errors import InputError
from harness.worker.record import OBSERVED_OUTCOMES, OUTCOMES, claim_for

# What an outcome or a claim says about deploying the pattern on the target, best first.
WORKS, FALLS_BACK, FAILS, CANNOT_EXIST = "works", "falls-back", "fails", "cannot-exist"
ANSWERS = (WORKS, FALLS_BACK, FAILS, CANNOT_EXIST)


@dataclasses.dataclass(frozen=True)
class Meaning:
    """What one outcome means (see the module docstring)."""

    outcome: str
    answer: str | None  # one of ANSWERS; None: it says nothing about the pattern
    severity: int | None  # how bad for a deployment, higher worse; None when it is no evidence
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
MEANINGS: dict[str, Meaning] = {m.outcome: m for m in (
    # outcome, answer, severity, ran, compared, retried, broken, symbol, text
    _M("pass", WORKS, 0, True, True, False, False, "✓",
       "ran within tolerance, every expected node in the precision asked (INT8, FP8, FP16, ...)"),
    _M("fallback", FALLS_BACK, 1, True, True, False, False, "↓",
       "within tolerance, but expected nodes ran wider than asked (e.g. int8 -> fp32, fp8 -> fp32)"),
    _M("mismatch", FAILS, 2, True, True, False, False, "≠", "ran, output outside the tolerance vs FP32"),
    _M("unverified", None, None, True, False, False, False, "?",
       "ran within tolerance, but the backend did not show the precision of an expected node"),
    _M("fail", FAILS, 3, False, True, False, False, "✗", "the backend refused the model (parse/build/run error)"),
    _M("crash", FAILS, 3, False, True, False, False, "‼", "the cell's process died (signal, abort)"),
    _M("timeout", FAILS, 3, False, False, True, False, "◷",
       "killed at the harness's time limit: a failure, never a regression"),
    _M("unavailable", CANNOT_EXIST, None, False, False, False, False, "⊘",
       "cannot exist on this target (e.g. API missing)"),
    _M("infra-error", None, None, False, False, True, True, "⚠",
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


def answer(outcome: str) -> str | None:
    """What an observed outcome says about deploying the pattern (None: nothing)."""
    return meaning(outcome).answer


def severity(outcome: str) -> int | None:
    return meaning(outcome).severity


# `harness run --fail-on LEVEL`: the levels, mildest first; a cell fails the gate when its outcome is evidence at
# least as severe as the level's (fallback: a fallback or any failure; mismatch: a mismatch or a failure; fail:
# fail, crash, timeout).
RUN_FAIL_ON_LEVELS = ("fallback", "mismatch", "fail")


def fails_gate(outcome: str, level: str) -> bool:
    """Whether a cell with ``outcome`` fails ``harness run --fail-on level`` (unverified, infra-error and unavailable
    never do: they are no evidence; infra-error has an exit status of its own)."""
    return severity(outcome) is not None and severity(outcome) >= severity(level)


def band(outcome: str) -> int:
    """A compared outcome's band for history and diff, higher better: pass, fallback, then every failure."""
    if not meaning(outcome).compared:
        raise ValueError(f"outcome {outcome!r} is not compared across nights; compared: {COMPARED_OUTCOMES}")
    return len(ANSWERS) - ANSWERS.index(answer(outcome))


# Upstream claims: what each claimed outcome (cases.model.CLAIM_OUTCOMES) answers, and how strong a claim is.
CLAIM_ANSWERS = {"pass": WORKS, "fallback": FALLS_BACK, "mismatch": FAILS, "fail": FAILS, "unsupported": FAILS}
STRENGTH_LABELS = {"issue-thread": "issue thread", "write-up-only": "write-up only", "documentation": "documentation"}
CLAIM_FIELDS = ("target", "outcome", "source", "strength")  # the strings every claim carries


def claim_answer(claimed_outcome: str) -> str:
    return CLAIM_ANSWERS[claimed_outcome]


def target_claim(claims, target_id: str, platform: str | None = None,
                 gpu_arch: str | None = None) -> dict[str, Any] | None:
    """The upstream claim a page or the scan shows for ``target_id``. A claim naming a GPU architecture counts where
    the GPU is known: the architecture the records ran on (``gpu_arch``, "sm_120"), else the one the platform fixes
    (Orin, Thor); on a target of any GPU (x86) with no records, only a claim naming none (the others speak of some
    hosts only, and judge the records of those hosts)."""
    arch = gpu_arch if gpu_arch not in (None, "any") else PLATFORM_ARCH.get(platform or "")
    return claim_for(claims, target_id, compute_capability(arch))


def strength_label(strength: str | None) -> str:
    return STRENGTH_LABELS.get(strength or "", strength or "unknown strength")


class ClaimsError(InputError):
    """Claims in an index.json that cannot be read (bad input from the user's cases directory); the message names the
    file and the field."""


def variant_claims(entry: Mapping[str, Any], where: str) -> tuple[dict[str, Any], ...]:
    """The upstream claims of one variant entry of ``index.json`` (``where`` names it in errors), as dicts with
    ``target``, ``outcome``, ``source``, ``strength``, ``category`` and ``note``."""
    claims = entry.get("claims", [])
    if not isinstance(claims, list):
        raise ClaimsError(f"{where}: field 'claims' must be a list, found a {type(claims).__name__}")
    read = []
    for k, claim in enumerate(claims):
        if not isinstance(claim, dict) or not all(isinstance(claim.get(f), str) for f in CLAIM_FIELDS):
            raise ClaimsError(f"{where}.claims[{k}]: a claim needs the strings 'target', 'outcome', 'source' and "
                              "'strength'")
        for field, known in (("outcome", CLAIM_ANSWERS), ("strength", STRENGTH_LABELS)):
            if claim[field] not in known:
                raise ClaimsError(f"{where}.claims[{k}]: field {field!r} is {claim[field]!r}, not one of "
                                  f"{tuple(known)}")
        read.append({"category": None, "note": "", **claim})
    return tuple(read)


def index_claims(index: Mapping[str, Any], where: str) -> dict[tuple[str, str], tuple[dict[str, Any], ...]]:
    """Per (case, variant), the upstream claims of a parsed ``index.json`` (what ``python -m harness generate``
    writes, or the same built in memory by ``cases.generate.declared_index``)."""
    found = {}
    for i, case in enumerate(index.get("cases", [])):
        for j, variant in enumerate(case.get("variants", [])):
            found[(case["id"], variant["name"])] = variant_claims(
                variant, f"{where}: cases[{i}] ({case['id']}).variants[{j}]")
    return found


# The scan's evidence tiers, closest to the user's layer first (harness.scan.prediction): the first tier with
# evidence decides. Each is (scope, kind): what the evidence is about and whether it was observed or claimed.
SCOPE_LABELS = {"your-layer": "your layer", "variant": "the library variant", "reported-form": "the reported form"}
TIERS = (("your-layer", "observed"), ("variant", "observed"), ("variant", "claimed"),
         ("reported-form", "observed"), ("reported-form", "claimed"))

# The scan's verdicts (one user's model on one target), worst first, and what they mean.
BLOCKED, FALLBACK, UNAVAILABLE, UNVERIFIED, LIKELY, VERIFIED, CLEAR = (
    "blocked", "fallback", "unavailable", "unverified", "likely", "verified", "clear")
SCAN_VERDICTS = (BLOCKED, FALLBACK, UNAVAILABLE, UNVERIFIED, LIKELY, VERIFIED, CLEAR)
SCAN_VERDICT_OF_ANSWER = {FAILS: BLOCKED, FALLS_BACK: FALLBACK, CANNOT_EXIST: UNAVAILABLE, WORKS: LIKELY}
SCAN_GOOD = (LIKELY, VERIFIED)  # expected to build in INT8
SCAN_FAILING = (BLOCKED, FALLBACK)  # expected not to, or not all in INT8: the scan lists the workarounds
SCAN_WORKAROUND_VERDICTS = (*SCAN_FAILING, UNVERIFIED)  # the verdicts a finding lists the library's workarounds for
SCAN_VERDICT_SYMBOLS = {BLOCKED: "✗", FALLBACK: "↓", UNAVAILABLE: "⊘", UNVERIFIED: "?", LIKELY: "✓", VERIFIED: "✔",
                        CLEAR: "○"}
SCAN_VERDICT_MEANINGS = {
    BLOCKED: "observed or claimed upstream to fail (the category is given), mismatch, crash or time out",
    FALLBACK: "builds, but nodes run wider than asked: INT8, FP8 or FP16 requested, another precision ran (named)",
    UNAVAILABLE: "the target cannot run it at all (the reason is given)",
    UNVERIFIED: "no observation and no upstream claim either way (infra-error records are none, and unverified ones: "
                "ran, but the backend did not show an expected node's precision)",
    LIKELY: "passed on the library's minimal graph, or claimed upstream to pass",
    VERIFIED: "your own layer, cut out of the model, passed on that target (--run)",
    CLEAR: "no known pattern of the library in the model (no guarantee that it builds)",
}


def scan_verdict(answer_: str, own_layer: bool = False) -> str:
    """The scan's verdict of one piece of evidence with this answer (``own_layer``: observed on the user's layer)."""
    verdict = SCAN_VERDICT_OF_ANSWER[answer_]
    return VERIFIED if verdict == LIKELY and own_layer else verdict


# The planning view's verdicts (one pattern on one target), best first, and what they mean.
(WORKS_AS_REPORTED, WORKAROUND, PRECISION_FALLBACK, FAILS_AS_REPORTED, CLAIMED, PRECISION_UNVERIFIED, NOT_RUN,
 CANNOT_EXIST_HERE) = ("works", "workaround", "fallback", "fails", "claimed", "unverified", "not-run", "cannot-exist")
PLANNING_VERDICTS = (WORKS_AS_REPORTED, WORKAROUND, PRECISION_FALLBACK, FAILS_AS_REPORTED, CLAIMED,
                     PRECISION_UNVERIFIED, NOT_RUN, CANNOT_EXIST_HERE)
PLANNING_VERDICT_OF_ANSWER = {WORKS: WORKS_AS_REPORTED, FALLS_BACK: PRECISION_FALLBACK, FAILS: FAILS_AS_REPORTED,
                              CANNOT_EXIST: CANNOT_EXIST_HERE}
PLANNING_LABELS = {
    WORKS_AS_REPORTED: "works as reported", WORKAROUND: "works with workaround", PRECISION_FALLBACK:
    "precision fallback", FAILS_AS_REPORTED: "fails", CLAIMED: "claimed upstream only", PRECISION_UNVERIFIED:
    "precision unverified", NOT_RUN: "not run",
    CANNOT_EXIST_HERE: "cannot exist",
}
PLANNING_SYMBOLS = {WORKS_AS_REPORTED: "✓", WORKAROUND: "W", PRECISION_FALLBACK: "↓", FAILS_AS_REPORTED: "✗",
                    CLAIMED: "?", PRECISION_UNVERIFIED: "◌", NOT_RUN: "–", CANNOT_EXIST_HERE: "⊘"}
PLANNING_MEANINGS = {
    WORKS_AS_REPORTED: "the failing form as upstream reported it ran within tolerance with every expected node in the "
                       "precision asked",
    WORKAROUND: "the failing form does not work here, the named workaround variant does",
    PRECISION_FALLBACK: "it runs within tolerance, but the named expected nodes ran wider than asked (the asked -> got "
                        "precisions are shown where they are not INT8 -> a float)",
    FAILS_AS_REPORTED: "the backend refused it, crashed, timed out or its output is outside tolerance (category and "
                       "node)",
    CLAIMED: "not run here: only what an upstream issue or write-up reported (never an observation)",
    PRECISION_UNVERIFIED: "it ran within tolerance, but the backend did not show the precision of an expected node, "
                          "and no upstream claim either way: no verdict (never a pass)",
    NOT_RUN: "no record and no upstream claim (or only infra-errors: the harness failed, not the pattern)",
    CANNOT_EXIST_HERE: "the target, or this pattern's API on it, does not exist",
}

# The mapping between the two, written down once: where the planning view shows a pattern's cell as KIND, a scan of
# a model holding that pattern's failing form (as the library builds it) gives that form one of these verdicts on
# the same target. Both read the same records and the same claims.
SCAN_VERDICTS_OF_PLANNING = {
    WORKS_AS_REPORTED: (LIKELY,),  # observed pass
    # the form's own failure, or (unverified) the form not run and nothing claimed of it; either way the scan lists
    # the workaround as likely (a form claimed upstream to pass is likely, and the scan lists no workaround then)
    WORKAROUND: (BLOCKED, FALLBACK, UNVERIFIED),
    PRECISION_FALLBACK: (FALLBACK, BLOCKED),  # blocked: the form fails, and its best workaround falls back
    FAILS_AS_REPORTED: (BLOCKED,),
    CLAIMED: (BLOCKED, FALLBACK, LIKELY),  # what the claim answers, with the basis "claimed"
    PRECISION_UNVERIFIED: (UNVERIFIED,),  # the unverified record decides nothing, in the scan as here
    NOT_RUN: (UNVERIFIED,),
    CANNOT_EXIST_HERE: (UNAVAILABLE,),
}
