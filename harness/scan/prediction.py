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
words are :mod:`harness.judgement`'s; the evidence is :func:`harness.evidence.evidence_for`'s, of the case's forms
read from its index.json form as the planning view reads a written index. This module names the forms (the
finding's, those standing in for it, its workarounds) and words the reasons. A model with no finding is
``clear`` on every available target: nothing known against it.
"""
from __future__ import annotations

import dataclasses
import functools
from typing import Any, NamedTuple, Sequence

from cases.model import Case, Variant
from harness import judgement as j
from harness.evidence import Evidence, Form, Observation, Observations, Sources, evidence_for
from harness.evidence.producers.parser import refusal_words
from harness.matrix import Target
from harness.scan.matching import Finding
from harness.scan.predicted import PredictionReading, PredictedBasis, read_prediction
from harness.store.claims import variant_claims
from harness.targets.facts import FP4_QDQ, FP8_QDQ


@functools.lru_cache(maxsize=None)
def library_entries(case: type[Case]) -> tuple[dict[str, Any], dict[str, dict[str, Any]]]:
    """The case's index.json entry and its variants' entries by name, built in memory by the function that writes
    index.json (once a case: its forms are read from it as the planning view reads a written index)."""
    from cases.generate import declared_case

    entry = declared_case(case)
    return entry, {variant["name"]: variant for variant in entry["variants"]}


@functools.lru_cache(maxsize=None)
def library_form(case: type[Case], variant: str) -> Form:
    """The evidence layer's form of ``variant`` of ``case`` ("": the case's form not named), read from the case's
    index.json form (:func:`library_entries`) as the planning view reads a written index: its claims through
    :func:`harness.store.claims.variant_claims`."""
    entry, variants = library_entries(case)
    where = f"the case library ({case.__module__}): {case.id}"
    declared = variants.get(variant, {})
    claims = variant_claims(declared, f"{where}/{variant}") if variant else ()
    return Form(case.id, variant, claims, declared, entry.get("not_applicable", {}), tuple(case.links))


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


class WorkaroundCheck(NamedTuple):
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


class Verdict(NamedTuple):
    target: str
    verdict: str
    basis: str | None  # "observed", "claimed", or None (no evidence, or the target is unavailable)
    reason: str
    evidence: list[Evidence]
    workarounds: list[WorkaroundCheck]
    gates: bool = True  # False: the evidence that decided it does not gate (harness.judgement.gate_verdict)

    @property
    def gate_verdict(self) -> str:
        """The verdict ``--fail-on`` reads (:func:`harness.judgement.gate_verdict`)."""
        return j.gate_verdict(self.verdict, self.gates)

    def to_dict(self) -> dict[str, Any]:
        return {"target": self.target, "verdict": self.verdict, "basis": self.basis, "reason": self.reason,
                "gates": self.gates,
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
                       _workarounds(finding, target, observations, judged, explicit), judged.gates)
    reason = "no observation, upstream claim, fact or prediction for this pattern on this target"
    if judged.silent:
        reason += (" (only records that say nothing of the pattern: infra-error, the harness or environment failed "
                   "those cells, or unverified, they ran but the backend did not show an expected node's precision)")
    return Verdict(target.id, j.UNVERIFIED, None, reason, evidence,
                   _workarounds(finding, target, observations, judged, explicit))


def _evidence(finding: Finding, target: Target, observations: Observations,
              layers: Sequence[list[Observation]] | None,
              predicted: PredictedNodes | None = None, explicit: bool = False) -> tuple[list[Evidence], str]:
    """The finding's evidence on ``target`` (:func:`harness.evidence.evidence_for` of its form, the forms standing in
    for it, its own layers and the model's prediction at its places), and, when not every occurrence was checked on
    its own layer, what the reason says of that."""
    suffix = ""
    if layers is not None:
        covered = all(any(j.answer(o.record["outcome"]) is not None for o in occurrence) for occurrence in layers)
        checked = sum(bool(occurrence) for occurrence in layers)
        suffix = "" if covered else f" ({checked} of {len(layers)} occurrences checked on their own layer)"
    prediction = None if predicted is None else (lambda form, target: predicted.basis_of(finding))
    sources = Sources(observations, layers, prediction, explicit)
    form = library_form(finding.case, finding.variant.name if finding.variant else "")
    stand_ins = [library_form(finding.case, name) for name in _reported_forms(finding)]
    return evidence_for(form, target, sources, stand_ins), suffix


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
    sources = Sources(observations, explicit=explicit)  # the user's layers and the model's prediction are the finding's
    for variant in finding.case.variants:
        if variant.role != j.WORKAROUND_ROLE or variant is finding.variant or not _applies(variant, finding):
            continue
        evidence = evidence_for(library_form(finding.case, variant.name), target, sources)
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
    """The model's verdict on one target: what stops the whole model there (the ONNX parser refuses it, a fact of the
    target stops its quantized types), else the worst of its findings' (``clear`` when nothing was found), capped
    at ``unverified`` where the parser's documents leave a question about the model open."""

    target: Target
    verdict: str
    basis: str | None
    reason: str
    findings: list[tuple[str, str]]  # (finding label, its verdict), worst first
    gate_verdict: str = ""  # what --fail-on reads: the worst of the findings' gate verdicts ("": the verdict)
    evidence: list[Evidence] = dataclasses.field(default_factory=list)  # about the whole model (model_evidence)

    def __post_init__(self):
        self.gate_verdict = self.gate_verdict or self.verdict

    def to_dict(self) -> dict[str, Any]:
        t = self.target
        return {"target": t.id, "title": t.title, "backend": t.backend, "platform": t.platform, "version": t.version,
                "available": t.available, "verdict": self.verdict, "gate_verdict": self.gate_verdict,
                "basis": self.basis, "reason": self.reason,
                "findings": [{"finding": label, "verdict": verdict} for label, verdict in self.findings],
                "model_evidence": [e.to_dict() for e in self.evidence]}


MODEL_FORM = "model"
# The model's verdicts that say it builds (in the precision asked or not): where the parser's documents leave a
# question about the model open, none of them is said unless it was observed.
ASSUMES_PARSED = (*j.SCAN_GOOD, j.CLEAR, j.FALLBACK)  # the case name of evidence about the whole model rather than one pattern's form


def model_evidence(target: Target, graph: Any, opset: int | None, quantized: frozenset[str] = frozenset(),
                   explicit: bool = False) -> list[Evidence]:
    """What is known of the whole model on ``target`` before any pattern (:func:`harness.evidence.evidence_for` of
    the model as a form of its own): the ONNX parser's documented facts of the target's TensorRT version applied to
    ``graph`` (the model as the parser's facts read it, ``parser_check.read_for_parser``, or its GraphIndex), and
    the target's facts that stop what the model itself needs (``quantized``: the
    types its Q/DQ quantize to; FP8 and FP4 need a GPU that has them)."""
    if not target.available:
        return []
    needs = [need for element, need in (("FP8", FP8_QDQ), ("FP4", FP4_QDQ)) if element in quantized]
    form = Form(MODEL_FORM, "", entry={"needs": needs} if needs else {})
    return evidence_for(form, target, Sources(explicit=explicit, graph=graph, opset=opset))


def _model_reason(judged: j.Judgement, evidence: list[Evidence]) -> str:
    """Why the whole model is stopped on a target: every refusal of the deciding basis, each rule once (the
    documents and remedies are the evidence's: scan.json and the answer's fix lines carry them)."""
    pieces = [e for e in evidence if e.kind == judged.basis and e.decisive]
    if judged.basis == j.PARSER:
        return "the ONNX parser refuses the model: " + "; ".join(parser_words(e) for e in pieces)
    return pieces[0].describe()


def parser_words(piece: Evidence) -> str:
    """A parser fact in words, without its version and document (the same on every version it holds for)."""
    return refusal_words(piece.category, piece.item)


def model_verdict(target: Target, verdicts: Sequence[tuple[str, Verdict]],
                  evidence: Sequence[Evidence] = ()) -> ModelVerdict:
    """The model's verdict on one target. ``evidence`` (:func:`model_evidence`) comes first: a model the ONNX
    parser of the target's version refuses, or whose quantized types a fact of the target stops, is ``blocked``
    there whatever its patterns say (they are listed). Else the per-finding verdicts ``(finding label, verdict)``
    combine: the worst of those that concern it (a finding judged on a basis that is never a headline, not
    applicable to the target's backend, is listed); a verdict that would say the model builds (``likely``,
    ``clear``, ``fallback``: :data:`ASSUMES_PARSED`), not observed, is ``unverified`` where the parser's documents
    leave a question about the model open."""
    evidence = list(evidence)
    if not target.available:
        return ModelVerdict(target, j.UNAVAILABLE, None, f"the target cannot exist: {target.reason}", [])
    judged = j.judge(evidence)
    listed = sorted(verdicts, key=lambda item: j.worst_first(item[1].verdict))
    if judged.basis is not None and judged.verdict in (j.BLOCKED, j.UNAVAILABLE):
        return ModelVerdict(target, judged.verdict, judged.basis, _model_reason(judged, evidence),
                            [(name, v.verdict) for name, v in listed], evidence=evidence)
    combined = _combined(target, verdicts)
    open_questions = [e for e in evidence if e.kind == j.PARSER and not e.decisive]
    if open_questions and combined.verdict in ASSUMES_PARSED and combined.basis != j.OBSERVED:
        said = "; ".join(parser_words(e) for e in open_questions)
        combined = ModelVerdict(target, j.UNVERIFIED, None, f"the ONNX parser's documents do not settle {said} "
                                f"(the patterns alone: {combined.verdict}, {combined.reason})", combined.findings)
    combined.evidence = evidence
    return combined


def _combined(target: Target, verdicts: Sequence[tuple[str, Verdict]]) -> ModelVerdict:
    """The worst verdict of the findings that concern ``target``."""
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
    gate = min((v.gate_verdict for _, v in concerning), key=j.worst_first)
    return ModelVerdict(target, worst.verdict, worst.basis, f"{label}: {worst.reason}",
                        [(name, v.verdict) for name, v in ranked], gate)
