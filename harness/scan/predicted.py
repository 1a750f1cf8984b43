"""The engine TensorRT's documented rules predict for a library variant, as its index.json entry carries it, and what
a prediction says of a form's quantized nodes on a target (:class:`PredictedBasis`, worded once), which the evidence
layer's predicted producer (:mod:`harness.evidence.producers.predicted`) turns into evidence: the user's model's
prediction at a finding's places for the scan, :func:`library_prediction` for the planning view.

``trt-matrix generate`` and the nightly's generation write, for each variant with Q/DQ,
``predicted_engine`` (:func:`predicted_entry`, handed to cases.generate as ``entry_extras``: the library imports none
of the harness): per ruleset (harness.scan.engine_prediction.rules.RULESETS), each expected node asked a quantized
precision (INT8, FP8, FP4) -> ``{"precision", "rule"}`` of the engine predicted from the variant's graph, float layers
typed as the cell builds them (FP16 by timing where its knobs enable FP16). The planning view reads it for a
TensorRT target on a GPU with the ruleset of the target's version: the report never loads a model (the index is all
it reads, and all a nightly's run directory keeps).
"""
from __future__ import annotations

import functools
from typing import Any, Iterable, Mapping, NamedTuple

from harness import judgement as j
from harness.scan.engine_prediction.predict import GraphFacts, has_qdq, predict_engine
from harness.scan.engine_prediction.rules import RULESETS, ruleset_for
from harness.scan.engine_prediction.targets import not_predicted_reason

PREDICTED_FIELD = "predicted_engine"
QUANTIZED_PRECISIONS = tuple(p for p in j.PRECISION_ORDER if not j.predicted_float(p))  # what a node may be asked
EXPECTED_PLACES = "the form expects"  # the nodes a library variant's prediction is of, in its evidence's words


class PredictedBasis(NamedTuple):
    """What the prediction of a form's quantized nodes says on one target, for the predicted basis."""

    outcome: str  # the basis's word: pass (every node predicted quantized) or fallback (one predicted float)
    ruleset: str
    rules: tuple[str, ...]  # the rules that decided the float nodes (else every node's)
    nodes: tuple[str, ...]  # the nodes predicted float
    said: str  # the nodes, the rules and the ruleset, in words


class PredictionReading(NamedTuple):
    """What a prediction says of a form's quantized nodes, whichever ruleset gave it: read once for every ruleset
    that gives the same prediction (:meth:`basis` names the ruleset)."""

    outcome: str  # pass (every node predicted quantized) or fallback (one predicted float)
    nodes: tuple[str, ...]  # the nodes predicted in a known precision
    wider: tuple[str, ...]  # those predicted float
    rules: tuple[str, ...]  # the rules that decided the float nodes (else every node's)

    def basis(self, ruleset: str, places: str, note: str | None = None) -> PredictedBasis:
        """The predicted basis under ``ruleset`` (see :func:`predicted_basis`)."""
        wider = self.wider
        what = (f"{len(wider)} of {len(self.nodes)} quantized node(s) {places} predicted float "
                f"({', '.join(wider[:3])}{' ...' if len(wider) > 3 else ''})" if wider
                else f"all {len(self.nodes)} quantized node(s) {places} predicted in the precision asked")
        said = f"{what}; rules {', '.join(self.rules)} (ruleset {ruleset})" + (f"; {note}" if note else "")
        return PredictedBasis(self.outcome, ruleset, self.rules, wider, said)


def read_prediction(predicted: Mapping[str, Mapping[str, str]], nodes: Iterable[str]) -> PredictionReading | None:
    """What ``predicted`` (ONNX node -> {"precision", "rule"}) says of ``nodes`` (those a form asks a quantized
    precision of); None where none of them is predicted."""
    nodes = [node for node in dict.fromkeys(nodes) if node in predicted]  # a node at two places counts once
    outcome = j.predicted_outcome(predicted[node]["precision"] for node in nodes)
    if outcome is None:
        return None
    nodes = [node for node in nodes if predicted[node]["precision"] in j.PRECISION_BITS]
    wider = [node for node in nodes if j.predicted_float(predicted[node]["precision"])]
    rules = tuple(sorted({predicted[node]["rule"] for node in (wider or nodes)}))
    return PredictionReading(outcome, tuple(nodes), tuple(wider), rules)


def predicted_basis(predicted: Mapping[str, Mapping[str, str]], nodes: Iterable[str], ruleset: str, places: str,
                    note: str | None = None) -> PredictedBasis | None:
    """The prediction of ``nodes`` (those a form asks a quantized precision of) from ``predicted`` (ONNX node ->
    {"precision", "rule"} under ``ruleset``); ``places`` says where the nodes are ("at its places"), ``note`` why the
    ruleset where the version is not documented itself. None where none of them is predicted."""
    reading = read_prediction(predicted, nodes)
    return None if reading is None else reading.basis(ruleset, places, note)


def variant_predictions(graph: Any, expected_precision: Mapping[str, str],
                        fp16: bool = False) -> dict[str, dict[str, dict[str, str]]]:
    """``predicted_engine`` of a variant: per ruleset, the predicted precision and rule of each node of
    ``expected_precision`` asked a quantized precision, from ``graph`` (an onnx.GraphProto); empty for a graph
    without Q/DQ (implicit quantization: TensorRT picks by timing, nothing is predicted)."""
    asked = [node for node, precision in expected_precision.items() if precision in QUANTIZED_PRECISIONS]
    if not asked or not has_qdq(graph):
        return {}
    facts = GraphFacts(graph)
    found = {}
    for ruleset in RULESETS:
        precisions = predict_engine(facts, ruleset, fp16).node_precisions()
        found[ruleset.name] = {node: {"precision": precisions[node]["precision"], "rule": precisions[node]["rule"]}
                               for node in asked if node in precisions}
    return found


def predicted_entry(variant: Any, model: Any, requested: Mapping[str, str]) -> dict[str, Any]:
    """The ``predicted_engine`` field of a library variant's index entry (cases.generate's ``entry_extras``), from its
    exported model (an onnx.ModelProto) and every expected node with the precision asked; float layers as its cell
    builds them (its knobs' FP16). Empty for a variant without Q/DQ."""
    predicted = variant_predictions(model.graph, requested, fp16=variant.knobs.fp16)
    return {PREDICTED_FIELD: predicted} if predicted else {}


def index_predictions(entry: Mapping[str, Any], where: str = "variant") -> Mapping[str, Mapping[str, Any]]:
    """The ``predicted_engine`` of a variant entry of index.json (none in an index written before it existed, or for
    a variant without Q/DQ); a ValueError naming the field when it is not one."""
    found = entry.get(PREDICTED_FIELD, {})
    if not isinstance(found, Mapping) or not all(
            isinstance(nodes, Mapping) and all(isinstance(p, Mapping) and isinstance(p.get("precision"), str)
                                               and isinstance(p.get("rule"), str) for p in nodes.values())
            for nodes in found.values()):
        raise ValueError(f"{where}: field {PREDICTED_FIELD!r} must map a ruleset to its nodes, each node to its "
                         f"'precision' and 'rule', found {found!r}")
    return found


def variant_predicted_basis(entry: Mapping[str, Any], target: Any) -> PredictedBasis | None:
    """What the prediction carried by a variant entry (checked by :func:`index_predictions` when its index was read)
    says on ``target`` (a matrix Target), with the ruleset of the target's version; None where nothing is predicted
    there (not TensorRT on a GPU, no Q/DQ, an index without it)."""
    found = entry.get(PREDICTED_FIELD)
    if not found or not_predicted_reason(target) is not None:
        return None
    choice = _ruleset_for(target.version)
    nodes = found.get(choice.ruleset.name)
    if nodes is None:
        return None
    return predicted_basis(nodes, nodes, choice.ruleset.name, EXPECTED_PLACES, choice.note)


def library_prediction(form: Any, target: Any) -> PredictedBasis | None:
    """What the prediction index.json carries for a library form (a :class:`harness.evidence.Form`) says on
    ``target`` (:func:`variant_predicted_basis`): the planning view's source of the predicted basis."""
    return variant_predicted_basis(form.entry, target) if form.entry else None


_ruleset_for = functools.lru_cache(maxsize=None)(ruleset_for)  # a planning view asks it per variant and target
