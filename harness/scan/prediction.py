"""A verdict per target for each finding, and for the whole model, from the evidence at hand.

Evidence comes in tiers, the closest to the user's layer first; the first tier that says something decides, the
others are listed beside it:

1. observed on the user's own layer (``--run``: the matched subgraph cut out of the model and run here);
2. observed on the library variant the matcher named (records the user pointed ``--results`` at);
3. claimed upstream for that variant (a ``Claim``: link and strength, never an observation);
4. observed, then claimed, for the case's reported (failing) form: only when the matcher could not name the user's
   form, or when the form named is a variant that inherits the evidence of the failing form it varies
   (``Variant.inherits``, ``Variant.varies``); evidence never crosses to a form of another structure.

Which tier and which evidence decide, and the verdict they give, are the engine's (:func:`harness.judgement.judge`,
the one the planning view's cells are projected from); what each outcome and claim says, the tiers and the verdict
words are :mod:`harness.judgement`'s, the claims are read through the index.json form as the report reads them
(:mod:`harness.store.claims`). This module gathers the evidence and words the reasons. A model with no finding is
``clear`` on every available target: nothing known against it.
"""
from __future__ import annotations

import dataclasses
import functools
from typing import Any, Sequence

from cases.model import Case, Variant
from harness import judgement as j
from harness.matrix import Target
from harness.scan.matching import Finding
from harness.scan.observations import Observation, Observations
from harness.scan.predicted import PredictedBasis, PredictionReading, read_prediction
from harness.store.claims import index_claims, target_claim
from harness.targets.declared import fact_outcome, model_fact_basis, not_applicable_basis, range_claim_basis
from harness.targets.facts import IMPLICIT_INT8


@dataclasses.dataclass(frozen=True)
class Evidence:
    """One observation or one upstream claim about a (case, variant) on a target."""

    kind: str  # its basis (judgement.BASES): observed (a record of this harness) or claimed (upstream, never run here)
    scope: str  # judgement.SCOPES
    case: str
    variant: str
    target: str
    outcome: str
    category: str | None
    source: str  # the results file of an observation, the link of a claim
    nodes: tuple[str, ...] = ()  # an observation's fallback nodes (the user's names for their own layer)
    gpu_nodes: tuple[str, ...] = ()  # a DLA build's nodes that ran on the GPU instead (a device fallback)
    host: str | None = None
    strength: str | None = None
    note: str = ""
    said: str = ""  # a fact, a range claim, a prediction or a not-applicable finding: what it rests on, in words

    @property
    def answer(self) -> str | None:
        """What it says about deploying the pattern (judgement.ANSWERS); None: nothing (an infra-error, an
        unverified record)."""
        return j.answer_of(self)

    @property
    def verdict(self) -> str | None:
        """The verdict this piece alone gives; None when it answers nothing (scan.json writes null)."""
        return j.verdict_of(self) if self.decisive else None

    @property
    def decisive(self) -> bool:
        return self.answer is not None

    def describe(self) -> str:
        """The evidence in one sentence, saying plainly whether it was observed here or claimed upstream."""
        what = self.outcome + (f" ({self.category})" if self.category else "")
        subject = f"{self.case}/{self.variant}"
        if self.kind in (j.NOT_APPLICABLE, j.FACT, j.PREDICTED):
            return f"{j.BASIS[self.kind].said}: {self.said}"
        if self.kind == j.RANGE_CLAIMED:
            whose = f" for the reported form {subject}" if self.scope == j.REPORTED_FORM else ""
            return (f"claimed for {self.said} ({j.strength_label(self.strength)}), not observed here: "
                    f"{what}{whose}" + (f" [{self.source}]" if self.source else ""))
        if self.kind != j.OBSERVED:
            strength = j.strength_label(self.strength)
            whose = f" for the reported form {subject}" if self.scope == j.REPORTED_FORM else ""
            return f"{j.BASIS[self.kind].tag} ({strength}), not observed here: {what}{whose}"
        where = (f"your layer ({self.variant})" if self.scope == j.YOUR_LAYER
                 else f"{j.SCOPE_LABELS[self.scope]} {subject}")
        text = f"{j.BASIS[self.kind].tag} {what} on {where}"
        if self.nodes:
            text += f": {', '.join(self.nodes)} not in the precision asked"
        if self.gpu_nodes:
            text += f"; on the GPU, not the DLA: {', '.join(self.gpu_nodes)} (a device fallback)"
        return text + f" [{self.source}" + (f", host {self.host}]" if self.host else "]")

    def to_dict(self) -> dict[str, Any]:
        return {**dataclasses.asdict(self), "nodes": list(self.nodes), "gpu_nodes": list(self.gpu_nodes),
                "verdict": self.verdict, "text": self.describe()}


def observed(observation: Observation, scope: str) -> Evidence:
    record = observation.record
    failure = record.get("failure") or {}
    return Evidence(j.OBSERVED, scope, record["case"], record["variant"], record["target"], record["outcome"],
                    failure.get("category"), observation.source, tuple(record.get("fallback_nodes") or ()),
                    tuple((record.get("details") or {}).get("dla_fallback_nodes") or ()), host=observation.host,
                    note=failure.get("message") or "")


def claimed(claim: dict[str, Any], case: str, variant: str, scope: str) -> Evidence:
    """A claim as :func:`harness.store.claims.variant_claims` reads it."""
    return Evidence(j.CLAIMED, scope, case, variant, claim["target"], claim["outcome"], claim["category"],
                    claim["source"], strength=claim["strength"], note=claim["note"])


@functools.lru_cache(maxsize=None)
def library_index(case: type[Case]) -> dict[str, Any]:
    """The index.json form of ``case`` alone, built in memory by the function that writes index.json (once a case:
    its claims, range claims, needs and not-applicable backends are all read from it)."""
    from cases.generate import declared_index

    return declared_index([case])


@functools.lru_cache(maxsize=None)
def library_entries(case: type[Case]) -> tuple[dict[str, Any], dict[str, dict[str, Any]]]:
    """The case's index.json entry and its variants' entries by name (what the case declares beyond claims for one
    target: not-applicable backends, needs, range claims)."""
    entry = library_index(case)["cases"][0]
    return entry, {variant["name"]: variant for variant in entry["variants"]}


def not_applicable_on(case: type[Case], variant: str, target: Target) -> list[Evidence]:
    """The case's word that ``target``'s backend has no analogue of its pattern, as evidence (none otherwise)."""
    entry, _ = library_entries(case)
    reason = not_applicable_basis(entry, target, f"case {case.id}")
    return [Evidence(j.NOT_APPLICABLE, j.VARIANT, case.id, variant, target.id, j.NOT_APPLICABLE, None,
                     case.links[0] if case.links else "", said=f"{target.backend}: {reason}")] if reason else []


def fact_on(case: type[Case], variant: str, target: Target, scope: str, explicit: bool = False) -> list[Evidence]:
    """The fact of ``target`` that stops a user's model of ``variant``'s form, with its source and remedy. A model
    that has Q/DQ (``explicit``) needs no calibrator, whatever the library's form of the pattern was built with."""
    _, variants = library_entries(case)
    entry = variants[variant]
    if explicit:
        entry = {**entry, "needs": [need for need in entry.get("needs", []) if need != IMPLICIT_INT8]}
    fact = model_fact_basis(entry, target, where=f"{case.id}/{variant}")
    if fact is None:
        return []
    remedy = f"; what to do: {fact.remedy}" if fact.remedy else ""
    return [Evidence(j.FACT, scope, case.id, variant, target.id, fact_outcome(fact), fact.what, fact.sources[0],
                     strength=fact.certainty, said=f"{fact.cited()}{remedy}")]


def range_claims_on(case: type[Case], variant: str, target: Target, scope: str) -> list[Evidence]:
    """The range claim of ``variant`` that covers ``target`` (the narrowest, then newest), as evidence."""
    _, variants = library_entries(case)
    claim = range_claim_basis(variants[variant], target, where=f"{case.id}/{variant}")
    if claim is None:
        return []
    return [Evidence(j.RANGE_CLAIMED, scope, case.id, variant, target.id, claim.outcome, claim.category,
                     claim.source, strength=claim.strength, note=claim.note,
                     said=f"{claim.scope.describe()}: {claim.basis}")]


@dataclasses.dataclass(frozen=True)
class PredictedNodes:
    """What the engine prediction says of a model on one target: ONNX node -> {"precision", "rule", "layer"}
    (:meth:`~harness.scan.engine_prediction.targets.TargetEngines.node_precisions`), the nodes the model asks a
    quantized precision of (an input from a DequantizeLinear) and the ruleset the prediction follows.

    ``readings``: id(finding) -> what the prediction says at its places (:func:`~harness.scan.predicted.
    read_prediction`), filled as findings are asked; the rulesets that give one prediction share one dict, so each
    finding is read once."""

    precisions: dict[str, dict[str, str]]
    asked: frozenset[str]
    ruleset: str = ""
    readings: dict[int, PredictionReading | None] = dataclasses.field(default_factory=dict, compare=False,
                                                                       repr=False)

    def basis_of(self, finding: Finding) -> PredictedBasis | None:
        """The prediction of the nodes at the finding's places that the model asks a quantized precision of
        (:func:`harness.scan.predicted.predicted_basis`), None where none of them is predicted."""
        if id(finding) not in self.readings:
            nodes = [node for occurrence in finding.occurrences for node in occurrence.nodes if node in self.asked]
            self.readings[id(finding)] = read_prediction(self.precisions, nodes)
        reading = self.readings[id(finding)]
        return None if reading is None else reading.basis(self.ruleset, "at its places")


def predicted_on(finding: Finding, target: Target, predicted: PredictedNodes | None) -> list[Evidence]:
    """The prediction of the nodes at the finding's places that the model asks a quantized precision of: each
    predicted quantized is a pass, one predicted float a fallback (harness.judgement.predicted_outcome; never a
    failure). None where nothing is predicted there."""
    if predicted is None:
        return []
    basis = predicted.basis_of(finding)
    if basis is None:
        return []
    return [Evidence(j.PREDICTED, j.VARIANT, finding.case.id, finding.variant.name if finding.variant else "",
                     target.id, basis.outcome, None, f"ruleset {basis.ruleset}", nodes=basis.nodes, said=basis.said)]


@functools.lru_cache(maxsize=None)
def library_claims(case: type[Case]) -> dict[str, tuple[dict[str, Any], ...]]:
    """Per variant of ``case``, its upstream claims read as the report reads them: from the case's index.json form
    (:func:`library_index`) through :func:`harness.store.claims.index_claims`."""
    claims = index_claims(library_index(case), f"the case library ({case.__module__})")
    return {variant: found for (_, variant), found in claims.items()}


def claims_on(case: type[Case], variant: str, target: Target, scope: str) -> list[Evidence]:
    """The upstream claim for ``variant`` of ``case`` on ``target``, as evidence of ``scope`` (none, or the one
    target_claim shows: a claim naming a GPU architecture only on a Jetson target of that GPU)."""
    claim = target_claim(library_claims(case).get(variant, ()), target.id, target.platform)
    return [claimed(claim, case.id, variant, scope)] if claim else []


@dataclasses.dataclass
class WorkaroundCheck:
    """A workaround variant of the case and what is known of it on one target."""

    variant: Variant
    evidence: list[Evidence]

    @property
    def verdict(self) -> str:
        """As for a finding: the engine's verdict of its evidence (what was observed of it decides, its claims only
        when nothing was)."""
        return j.judge(self.evidence).verdict

    def to_dict(self) -> dict[str, Any]:
        return {"variant": self.variant.name, "description": self.variant.description,
                "knobs": self.variant.knobs.changed(),
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
            layers: Sequence[list[Observation]] | None = None, predicted: PredictedNodes | None = None,
            explicit: bool = False) -> Verdict:
    """The verdict of ``finding`` on ``target``: the engine's judgement of its evidence, with the reason in words.
    ``layers`` (with ``--run``) holds, per occurrence of the finding, the observations of its extracted reproducer on
    this target (empty when it was not extracted or run); ``predicted`` the engine prediction of the model there;
    ``explicit`` whether the model has Q/DQ (then no calibrator fact stops it)."""
    if not target.available:
        return Verdict(target.id, j.UNAVAILABLE, None, f"the target cannot exist: {target.reason}", [], [])
    evidence, uncovered_suffix = _evidence(finding, target, observations, layers, predicted, explicit)
    judged = j.judge(evidence, uncovered=(j.YOUR_LAYER,) if uncovered_suffix else ())
    if judged.basis is not None:
        deciding = judged.deciding
        prefix = (f"no evidence for your form {finding.variant.name}; "
                  if judged.scope == j.REPORTED_FORM and finding.variant is not None else "")
        suffix = uncovered_suffix if judged.scope == j.YOUR_LAYER else ""
        reason = prefix + deciding.describe() + _disagreement(deciding, evidence) + suffix
        return Verdict(target.id, judged.verdict, judged.basis, reason, evidence,
                       _workarounds(finding, target, observations, judged, explicit))
    reason = "no observation, upstream claim, fact or prediction for this pattern on this target"
    if judged.silent:
        reason += (" (only records that say nothing of the pattern: infra-error, the harness or environment failed "
                   "those cells, or unverified, they ran but the backend did not show an expected node's precision)")
    return Verdict(target.id, j.UNVERIFIED, None, reason, evidence,
                   _workarounds(finding, target, observations, judged, explicit))


def _evidence(finding: Finding, target: Target, observations: Observations,
              layers: Sequence[list[Observation]] | None,
              predicted: PredictedNodes | None = None, explicit: bool = False) -> tuple[list[Evidence], str]:
    """The finding's evidence on ``target``, each piece with its basis and scope (the engine orders them), and, when
    not every occurrence was checked on its own layer, what the reason says of that."""
    case = finding.case
    evidence, suffix = [], ""
    evidence += not_applicable_on(case, finding.variant.name if finding.variant else "", target)
    if finding.variant is not None:
        evidence += fact_on(case, finding.variant.name, target, j.VARIANT, explicit)
    if layers is not None:
        evidence += [observed(o, j.YOUR_LAYER) for occurrence in layers for o in occurrence]
        covered = all(any(j.answer(o.record["outcome"]) is not None for o in occurrence) for occurrence in layers)
        checked = sum(bool(occurrence) for occurrence in layers)
        suffix = "" if covered else f" ({checked} of {len(layers)} occurrences checked on their own layer)"
    if finding.variant is not None:
        name = finding.variant.name
        evidence += [observed(o, j.VARIANT) for o in observations.of(case.id, name, target.id)]
        evidence += claims_on(case, name, target, j.VARIANT)
        evidence += range_claims_on(case, name, target, j.VARIANT)
    reported = _reported_forms(finding)
    evidence += [observed(o, j.REPORTED_FORM) for name in reported for o in observations.of(case.id, name, target.id)]
    evidence += [e for name in reported for e in claims_on(case, name, target, j.REPORTED_FORM)]
    evidence += [e for name in reported for e in range_claims_on(case, name, target, j.REPORTED_FORM)]
    evidence += predicted_on(finding, target, predicted)
    return evidence, suffix


def _reported_forms(finding: Finding) -> list[str]:
    """The failing forms whose evidence stands for the finding's when it has none of its own: every failing form of
    the case when the matcher could not name the user's form, the form a variant varies when it inherits that
    form's evidence, else none."""
    variant = finding.variant
    if variant is None:
        return [v.name for v in finding.case.variants if v.role == j.FAILING_ROLE]
    return [variant.varies] if variant.inherits else []


def _disagreement(deciding: Evidence, evidence: list[Evidence]) -> str:
    """When an observation decides, the upstream claims for the same variant that say otherwise."""
    if deciding.kind != j.OBSERVED:
        return ""
    others = [e for e in evidence if e.kind == j.CLAIMED and e.variant == deciding.variant
              and j.verdict_group(e.verdict) != j.verdict_group(deciding.verdict)]
    return "".join(f"; upstream claimed {e.outcome} ({j.strength_label(e.strength)})" for e in others)


def _workarounds(finding: Finding, target: Target, observations: Observations, form: j.Judgement,
                 explicit: bool = False) -> list[WorkaroundCheck]:
    """The case's workaround variants of the finding's form (not the user's own form) and their evidence on
    ``target``, those known to pass first; which of them beside the finding's judgement ``form`` is the engine's
    (:func:`harness.judgement.workaround_listed`)."""
    if not j.lists_workarounds(form):
        return []
    checks = []
    for variant in finding.case.variants:
        if variant.role != j.WORKAROUND_ROLE or variant is finding.variant or not _applies(variant, finding):
            continue
        evidence = fact_on(finding.case, variant.name, target, j.VARIANT, explicit)
        evidence += [observed(o, j.VARIANT) for o in observations.of(finding.case.id, variant.name, target.id)]
        evidence += claims_on(finding.case, variant.name, target, j.VARIANT)
        evidence += range_claims_on(finding.case, variant.name, target, j.VARIANT)
        check = WorkaroundCheck(variant, [e for e in evidence if e.decisive])
        if j.workaround_listed(form, j.judge(check.evidence)):
            checks.append(check)
    return sorted(checks, key=lambda check: j.workaround_rank(check.verdict))


def _applies(workaround: Variant, finding: Finding) -> bool:
    """Whether ``workaround`` is a workaround of the finding's form: every workaround when the user's form is not
    named; else one that varies the finding's form or the form the finding's variant varies. A workaround that
    names no form it varies applies to the case's reported forms, their workarounds and their variations, never to
    a form of its own (a sweep that varies nothing)."""
    variant = finding.variant
    if variant is None:
        return True
    if workaround.varies is None:
        return variant.role in (j.FAILING_ROLE, j.WORKAROUND_ROLE) or variant.varies is not None
    return workaround.varies in (variant.name, variant.varies)


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
    """Combine the per-finding verdicts ``(finding label, verdict)`` of one target: the worst of those that concern
    it (a finding judged on a basis that is never a headline, not applicable to the target's backend, is listed)."""
    if not target.available:
        return ModelVerdict(target, j.UNAVAILABLE, None, f"the target cannot exist: {target.reason}", [])
    if not verdicts:
        return ModelVerdict(target, j.CLEAR, None, "no known INT8 failure pattern of the library in this model", [])
    concerning = [(label, v) for label, v in verdicts if v.basis is None or v.basis in j.HEADLINE]
    if not concerning:
        listed = "; ".join(f"{label}: {v.reason}" for label, v in verdicts)
        return ModelVerdict(target, j.CLEAR, None, f"no pattern found concerns {target.backend} ({listed})",
                            [(name, v.verdict) for name, v in verdicts])
    ranked = sorted(concerning, key=lambda item: j.worst_first(item[1].verdict)) + [
        item for item in verdicts if item not in concerning]
    label, worst = ranked[0]
    return ModelVerdict(target, worst.verdict, worst.basis, f"{label}: {worst.reason}",
                        [(name, v.verdict) for name, v in ranked])
