"""The evidence layer's three shapes: :class:`Evidence` (one piece, whatever its basis), :class:`Form` (the library
form it is about: a variant of a case as index.json declares it) and :class:`Sources` (what evidence is read from
beyond the form's own declarations: observed records, the user's own layers, a prediction, whether the model has
Q/DQ)."""
from __future__ import annotations

import dataclasses
from typing import Any, Callable, Mapping, Optional, Sequence

from harness import judgement as j
from harness.evidence.observations import Observation, Observations
from harness.matrix import Target

# The fields scan.json writes for a piece of evidence (with its verdict and its sentence), in this order.
WRITTEN_FIELDS = ("kind", "scope", "case", "variant", "target", "outcome", "category", "source", "nodes",
                  "gpu_nodes", "host", "strength", "note", "said", "conditions", "gates")


@dataclasses.dataclass(frozen=True)
class Evidence:
    """One piece of evidence about a library form on a target: an observation of this harness, an upstream claim
    (for the target or over a range of versions), a fact of the target, a prediction from TensorRT's rules or the
    case's word that the target's backend has no analogue of the pattern. The verdict engine
    (:func:`harness.judgement.judge`) reads ``kind``, ``scope`` and ``outcome``; pages word the rest."""

    kind: str  # its basis (judgement.BASES)
    scope: str  # judgement.SCOPES: the user's own layer, the form named, a reported form standing in for it
    case: str
    variant: str  # the form it is about ("" : the case's form was not named)
    target: str
    outcome: str  # what it says, in its basis's words (judgement.BASIS[kind].answers)
    category: str | None
    source: str  # the results file of an observation, the link of a claim or a fact, the ruleset of a prediction
    nodes: tuple[str, ...] = ()  # an observation's fallback nodes, a prediction's nodes predicted float
    gpu_nodes: tuple[str, ...] = ()  # a DLA build's nodes that ran on the GPU instead (a device fallback)
    host: str | None = None
    strength: str | None = None  # a claim's strength, a fact's certainty
    note: str = ""
    said: str = ""  # a fact, a range claim, a prediction or a not-applicable finding: what it rests on, in words
    conditions: tuple[str, ...] = ()  # where it holds: a claim's GPU architecture, a range claim's scope, a ruleset
    # and a claim's own conditions (harness.judgement.Conditions) as they stand on the target, in words
    gates: bool = True  # whether a verdict on it may stop a CI gate (False: a claim whose conditions are not all
    # known to hold on the target, harness.judgement.claim_gates)
    item: Any = dataclasses.field(default=None, compare=False, repr=False)  # what it was read from: the record,
    # the claim, the Fact, the range claim, the prediction, the case's reason

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
        if self.kind in (j.PARSER, j.NOT_APPLICABLE, j.FACT, j.PREDICTED):
            return f"{j.BASIS[self.kind].said}: {self.said}"
        held = self._held()
        if self.kind == j.RANGE_CLAIMED:
            whose = f" for the reported form {subject}" if self.scope == j.REPORTED_FORM else ""
            return (f"claimed for {self.said} ({j.strength_label(self.strength)}), not observed here: "
                    f"{what}{whose}" + (f" [{self.source}]" if self.source else "") + held)
        if self.kind != j.OBSERVED:
            strength = j.strength_label(self.strength)
            whose = f" for the reported form {subject}" if self.scope == j.REPORTED_FORM else ""
            return f"{j.BASIS[self.kind].tag} ({strength}), not observed here: {what}{whose}{held}"
        where = (f"your layer ({self.variant})" if self.scope == j.YOUR_LAYER
                 else f"{j.SCOPE_LABELS[self.scope]} {subject}")
        text = f"{j.BASIS[self.kind].tag} {what} on {where}"
        if self.nodes:
            text += f": {', '.join(self.nodes)} not in the precision asked"
        if self.gpu_nodes:
            text += f"; on the GPU, not the DLA: {', '.join(self.gpu_nodes)} (a device fallback)"
        return text + f" [{self.source}" + (f", host {self.host}]" if self.host else "]")

    def _held(self) -> str:
        """How a claim that does not gate says why: its conditions not known to hold here, in words."""
        if self.gates:
            return ""
        words = [c for c in self.conditions if c not in self.said and not c.startswith("GPU compute capability")]
        return "; not a CI gate here: " + "; ".join(words)

    def to_dict(self) -> dict[str, Any]:
        """As scan.json writes it."""
        written = {name: getattr(self, name) for name in WRITTEN_FIELDS}
        return {**written, "nodes": list(self.nodes), "gpu_nodes": list(self.gpu_nodes),
                "conditions": list(self.conditions), "verdict": self.verdict,
                "text": self.describe()}


@dataclasses.dataclass(frozen=True, eq=False)
class Form:
    """A form of a case's pattern as the library declares it (index.json's case and variant entries, read the same
    for the scan, diagnose, ``--fix`` and the planning view): its upstream claims for one target, its variant entry
    (range claims, needs, the engine predicted from TensorRT's rules), the backends the case says have no analogue."""

    case: str
    variant: str  # "" : the case's form was not named (the matcher found the pattern, not which variant)
    claims: tuple[Mapping[str, Any], ...] = ()  # as harness.store.claims.variant_claims reads them
    entry: Mapping[str, Any] = dataclasses.field(default_factory=dict)  # the variant's index entry; {}: none
    not_applicable: Mapping[str, str] = dataclasses.field(default_factory=dict)  # backend -> why, the case's word
    links: tuple[str, ...] = ()  # the case's upstream links (the first is a not-applicable piece's source)

    @property
    def where(self) -> str:
        """How errors name it: "p11-calibration-cache/as-reported"."""
        return f"{self.case}/{self.variant}"


# Where a prediction comes from: (form, target) -> what the prediction says there (an object with ``outcome``,
# ``ruleset``, ``rules``, ``nodes``, ``said``: harness.scan.predicted.PredictedBasis) or None.
Prediction = Callable[[Form, Any], Optional[Any]]


@dataclasses.dataclass(frozen=True)
class Sources:
    """What evidence is read from besides the forms themselves: the observed records (anything with
    ``of(case, variant, target)``, :class:`~harness.evidence.observations.Observations`), per occurrence of a finding
    the observations of its own extracted layer (``--run``; None: not run), the prediction (the user's model's at a
    finding's places, or the one index.json carries for the library form), whether the user's model has Q/DQ (then
    no calibrator fact stops it) and, for the model's own verdict on a target, the model as the parser's facts read
    it and its opset (what the parser's documented facts are checked against; None: not the model's verdict)."""

    observations: Any = dataclasses.field(default_factory=lambda: Observations([], [], {}))
    layers: Optional[Sequence[Sequence[Observation]]] = None
    prediction: Optional[Prediction] = None
    explicit: bool = False
    graph: Any = None  # the user's model as the parser's facts read it (ParserReading, or its GraphIndex)
    opset: Optional[int] = None  # its default-domain opset


def matrix_target(target: Any) -> bool:
    """Whether ``target`` is a matrix target (what the target's facts, range claims and predictions read); a page's
    column of a target outside the matrix has only its id, backend and platform."""
    return isinstance(target, Target)
