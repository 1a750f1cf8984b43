"""A verdict per target for each finding, and for the whole model, from the evidence at hand.

Evidence comes in tiers, the closest to the user's layer first; the first tier that says something decides, the
others are listed beside it:

1. observed on the user's own layer (``--run``: the matched subgraph cut out of the model and run here);
2. observed on the library variant the matcher named (records the user pointed ``--results`` at);
3. claimed upstream for that variant (a ``Claim``: link and strength, never an observation);
4. observed, then claimed, for the case's reported (failing) form, when the user's form is that form or a sweep of
   it (a workaround form does not inherit the failing form's evidence).

Verdicts, worst first: ``blocked`` (fails, mismatches, crashes or hangs, or is claimed to), ``fallback`` (runs, but
expected-INT8 nodes ran in another precision), ``unavailable`` (the target cannot run it at all), ``unverified``
(no evidence either way), ``likely`` (passed on the library's minimal graph, or claimed to), ``verified`` (passed on
the user's own layer). A model with no finding is ``clear`` on every available target: nothing known against it.
"""
from __future__ import annotations

import dataclasses
from typing import Any, Iterable, Sequence

from cases.model import Claim, Knobs, Variant
from harness.matrix import Target
from harness.scan.matching import Finding
from harness.scan.observations import Observation, Observations

VERDICTS = ("blocked", "fallback", "unavailable", "unverified", "likely", "verified", "clear")  # worst first
FAIL_ON = {  # --fail-on LEVEL: the verdicts that make the scan exit 1
    "blocked": ("blocked",),
    "fallback": ("blocked", "fallback"),
    "unverified": ("blocked", "fallback", "unverified"),
}
OUTCOME_VERDICTS = {
    "pass": "likely", "fallback": "fallback", "mismatch": "blocked", "fail": "blocked", "crash": "blocked",
    "timeout": "blocked", "unavailable": "unavailable", "unsupported": "blocked",
}
NOT_EVIDENCE = ("infra-error",)  # the harness or environment broke: says nothing about the pattern
SCOPES = {
    "your-layer": "your layer",
    "variant": "the library variant",
    "reported-form": "the reported form",
}
STRENGTH_WORDS = {"issue-thread": "issue thread", "write-up-only": "write-up only", "documentation": "documentation"}


@dataclasses.dataclass(frozen=True)
class Evidence:
    """One observation or one upstream claim about a (case, variant) on a target."""

    kind: str  # "observed" (a record of this harness) or "claimed" (upstream, never run here)
    scope: str  # key of SCOPES
    case: str
    variant: str
    target: str
    outcome: str
    category: str | None
    source: str  # the results file of an observation, the link of a claim
    nodes: tuple[str, ...] = ()  # an observation's fallback nodes (the user's names for their own layer)
    host: str | None = None
    strength: str | None = None
    note: str = ""

    @property
    def verdict(self) -> str:
        verdict = OUTCOME_VERDICTS[self.outcome]
        return "verified" if verdict == "likely" and self.scope == "your-layer" else verdict

    @property
    def decisive(self) -> bool:
        return self.outcome not in NOT_EVIDENCE

    def describe(self) -> str:
        """The evidence in one sentence, saying plainly whether it was observed here or claimed upstream."""
        what = self.outcome + (f" ({self.category})" if self.category else "")
        subject = f"{self.case}/{self.variant}"
        if self.kind == "claimed":
            strength = STRENGTH_WORDS.get(self.strength, self.strength)
            whose = f" for the reported form {subject}" if self.scope == "reported-form" else ""
            return f"claimed upstream ({strength}), not observed here: {what}{whose}"
        where = f"your layer ({self.variant})" if self.scope == "your-layer" else f"{SCOPES[self.scope]} {subject}"
        text = f"observed {what} on {where}"
        if self.nodes:
            text += f": {', '.join(self.nodes)} not in INT8"
        return text + f" [{self.source}" + (f", host {self.host}]" if self.host else "]")

    def to_dict(self) -> dict[str, Any]:
        return {**dataclasses.asdict(self), "nodes": list(self.nodes), "verdict": self.verdict,
                "text": self.describe()}


def observed(observation: Observation, scope: str) -> Evidence:
    record = observation.record
    failure = record.get("failure") or {}
    return Evidence("observed", scope, record["case"], record["variant"], record["target"], record["outcome"],
                    failure.get("category"), observation.source, tuple(record.get("fallback_nodes") or ()),
                    host=observation.host, note=failure.get("message") or "")


def claimed(claim: Claim, case: str, variant: str, scope: str) -> Evidence:
    return Evidence("claimed", scope, case, variant, claim.target, claim.outcome, claim.category, claim.source,
                    strength=claim.strength, note=claim.note)


@dataclasses.dataclass
class WorkaroundCheck:
    """A workaround variant of the case and what is known of it on one target."""

    variant: Variant
    evidence: list[Evidence]

    @property
    def verdict(self) -> str:
        return _decide(self.evidence)[0] if self.evidence else "unverified"

    def to_dict(self) -> dict[str, Any]:
        knobs = {k: v for k, v in self.variant.knobs.to_dict().items() if v != Knobs().to_dict()[k]}
        return {"variant": self.variant.name, "description": self.variant.description, "knobs": knobs,
                "verdict": self.verdict, "evidence": [e.to_dict() for e in self.evidence]}


@dataclasses.dataclass
class Verdict:
    target: str
    verdict: str
    basis: str | None  # "observed", "claimed", or None (no evidence, or the target is unavailable)
    reason: str
    evidence: list[Evidence]
    workarounds: list[WorkaroundCheck]

    def to_dict(self) -> dict[str, Any]:
        return {"target": self.target, "verdict": self.verdict, "basis": self.basis, "reason": self.reason,
                "evidence": [e.to_dict() for e in self.evidence],
                "workarounds": [w.to_dict() for w in self.workarounds]}


def predict(finding: Finding, target: Target, observations: Observations,
            layers: Sequence[list[Observation]] | None = None) -> Verdict:
    """The verdict of ``finding`` on ``target``. ``layers`` (with ``--run``) holds, per occurrence of the finding,
    the observations of its extracted reproducer on this target (empty when it was not extracted or run)."""
    if not target.available:
        return Verdict(target.id, "unavailable", None, f"the target cannot exist: {target.reason}", [], [])
    tiers = _tiers(finding, target.id, observations, layers)
    evidence = [e for tier in tiers for e in tier.evidence]
    for tier in tiers:
        decisive = [e for e in tier.evidence if e.decisive]
        if decisive and tier.decides(decisive):
            verdict, deciding = _decide(decisive)
            reason = tier.prefix + deciding.describe() + _disagreement(deciding, evidence) + tier.suffix
            return Verdict(target.id, verdict, deciding.kind, reason, evidence, _workarounds(finding, target.id,
                                                                                           observations, verdict))
    reason = "no observation or upstream claim for this pattern on this target"
    if any(not e.decisive for e in evidence):
        reason += " (only infra-error records: the harness or environment failed those cells)"
    return Verdict(target.id, "unverified", None, reason, evidence,
                   _workarounds(finding, target.id, observations, "unverified"))


@dataclasses.dataclass
class _Tier:
    evidence: list[Evidence]
    prefix: str = ""
    suffix: str = ""
    covered: bool = True  # every occurrence has evidence in this tier (only the your-layer tier can fall short)

    def decides(self, decisive: list[Evidence]) -> bool:
        """A tier that does not cover every occurrence decides only when some occurrence fails or falls back."""
        return self.covered or VERDICTS.index(_decide(decisive)[0]) < VERDICTS.index("unavailable")


def _tiers(finding: Finding, target: str, observations: Observations,
           layers: Sequence[list[Observation]] | None) -> list[_Tier]:
    case = finding.case
    tiers = []
    if layers is not None:
        layer_evidence = [observed(o, "your-layer") for occurrence in layers for o in occurrence]
        covered = all(any(o.record["outcome"] not in NOT_EVIDENCE for o in occurrence) for occurrence in layers)
        checked = sum(bool(occurrence) for occurrence in layers)
        suffix = "" if covered else f" ({checked} of {len(layers)} occurrences checked on their own layer)"
        tiers.append(_Tier(layer_evidence, suffix=suffix, covered=covered))
    if finding.variant is not None:
        name = finding.variant.name
        tiers.append(_Tier([observed(o, "variant") for o in observations.of(case.id, name, target)]))
        claims = [c for c in finding.variant.claims if c.target == target]
        tiers.append(_Tier([claimed(c, case.id, name, "variant") for c in claims]))
    if finding.variant is None or finding.variant.inherits:
        reported = [v for v in case.variants if v.role == "failing"
                    and (finding.variant is None or v.name == finding.variant.varies)]
        prefix = f"no evidence for your form {finding.variant.name}; " if finding.variant is not None else ""
        tiers.append(_Tier([observed(o, "reported-form") for v in reported
                            for o in observations.of(case.id, v.name, target)], prefix=prefix))
        tiers.append(_Tier([claimed(c, case.id, v.name, "reported-form") for v in reported
                            for c in v.claims if c.target == target], prefix=prefix))
    return tiers


def _decide(evidence: Iterable[Evidence]) -> tuple[str, Evidence]:
    """The worst verdict among ``evidence`` and the evidence that gives it."""
    deciding = min(evidence, key=lambda e: VERDICTS.index(e.verdict))
    return deciding.verdict, deciding


def _disagreement(deciding: Evidence, evidence: list[Evidence]) -> str:
    """When an observation decides, the upstream claims for the same variant that say otherwise."""
    if deciding.kind != "observed":
        return ""
    others = [e for e in evidence if e.kind == "claimed" and e.variant == deciding.variant
              and _band(e.verdict) != _band(deciding.verdict)]
    return "".join(f"; upstream claimed {e.outcome} ({STRENGTH_WORDS.get(e.strength, e.strength)})" for e in others)


def _band(verdict: str) -> str:
    return "good" if verdict in ("likely", "verified") else verdict


def _workarounds(finding: Finding, target: str, observations: Observations, verdict: str) -> list[WorkaroundCheck]:
    """The case's workaround variants (not the user's own form) and their evidence on ``target``, those known to
    pass first; none when the finding is expected to be fine there, and only those known to pass when nothing is
    known of the finding itself."""
    if verdict in ("likely", "verified", "unavailable"):
        return []
    checks = []
    for variant in finding.case.variants:
        if variant.role != "workaround" or variant is finding.variant:
            continue
        evidence = [observed(o, "variant") for o in observations.of(finding.case.id, variant.name, target)]
        evidence += [claimed(c, finding.case.id, variant.name, "variant") for c in variant.claims if c.target == target]
        checks.append(WorkaroundCheck(variant, [e for e in evidence if e.decisive]))
    if verdict == "unverified":
        checks = [check for check in checks if _workaround_rank(check.verdict) == 0]
    return sorted(checks, key=lambda check: _workaround_rank(check.verdict))


def _workaround_rank(verdict: str) -> int:
    """Known to pass first, then unknown, then known to fail."""
    return {"verified": 0, "likely": 0, "unverified": 1}.get(verdict, 2)


@dataclasses.dataclass
class ModelVerdict:
    """The model's verdict on one target: the worst of its findings' (``clear`` when nothing was found)."""

    target: Target
    verdict: str
    basis: str | None
    reason: str
    findings: list[tuple[str, str]]  # (finding label, its verdict), worst first

    def to_dict(self) -> dict[str, Any]:
        t = self.target
        return {"target": t.id, "title": t.title, "backend": t.backend, "platform": t.platform, "version": t.version,
                "available": t.available, "verdict": self.verdict, "basis": self.basis, "reason": self.reason,
                "findings": [{"finding": label, "verdict": verdict} for label, verdict in self.findings]}


def model_verdict(target: Target, verdicts: Sequence[tuple[str, Verdict]]) -> ModelVerdict:
    """Combine the per-finding verdicts ``(finding label, verdict)`` of one target."""
    if not target.available:
        return ModelVerdict(target, "unavailable", None, f"the target cannot exist: {target.reason}", [])
    if not verdicts:
        return ModelVerdict(target, "clear", None, "no known INT8 failure pattern of the library in this model", [])
    ranked = sorted(verdicts, key=lambda item: VERDICTS.index(item[1].verdict))
    label, worst = ranked[0]
    return ModelVerdict(target, worst.verdict, worst.basis, f"{label}: {worst.reason}",
                        [(name, v.verdict) for name, v in ranked])


def fails(verdict: str, fail_on: str) -> bool:
    """Whether ``verdict`` makes the scan exit 1 under ``--fail-on fail_on``."""
    return verdict in FAIL_ON[fail_on]
