"""The predicted engine of a model on each target of the matrix: one prediction per distinct ruleset behaviour (not
per target), the graph read once.

Rulesets that would give the same engine for this model (the model uses no type whose support they differ on, and
they type float layers alike) share one prediction: an INT8 ResNet with FP32 inputs is predicted once for every
TensorRT version. Targets that are not TensorRT on a GPU get none, with the reason: ONNX Runtime has no engine, a DLA
target follows DLA's rules, not these. A model without Q/DQ gets none either: under implicit quantization TensorRT
chooses each layer's precision by timing.
"""
from __future__ import annotations

import collections
from typing import Any, NamedTuple, Sequence

from harness.scan.engine_prediction.predict import (
    _RULE_SUPPORTING,
    FP16,
    FP32,
    EnginePrediction,
    GraphFacts,
    PredictedLayer,
    has_qdq,
    predict_engine,
)
from harness.scan.engine_prediction.rules import RULES, RULESETS, Ruleset, ruleset_for

NOT_EXPLICIT = ("no Q/DQ in the model: with INT8 enabled TensorRT quantizes it implicitly and picks each layer's "
                "precision by timing, which no documented rule predicts; add Q/DQ (scan --to-explicit) to know "
                "before the build")


NO_TENSORRT_TARGET = "no TensorRT target on a GPU among the chosen targets"


class TargetEngines(NamedTuple):
    """Per target, the ruleset it is predicted with and the prediction (shared between targets alike)."""

    predictions: list[EnginePrediction]  # distinct ones, the primary (most targets) first
    rulesets_of: list[list[str]]  # per prediction, the rulesets that give it
    targets: dict[str, dict[str, Any]]  # target id -> {"ruleset", "note", "prediction": index}
    not_predicted: dict[str, str]  # target id -> why no prediction
    reason: str | None = None  # why nothing is predicted at all

    def for_target(self, target_id: str) -> EnginePrediction | None:
        entry = self.targets.get(target_id)
        return self.predictions[entry["prediction"]] if entry else None

    def node_precisions(self, target_id: str) -> dict[str, dict[str, str]]:
        """ONNX node -> {"precision", "rule", "layer"} predicted on ``target_id`` (empty where nothing is predicted):
        what a verdict can take as ``predicted`` evidence, never as an observation."""
        prediction = self.for_target(target_id)
        return prediction.node_precisions() if prediction is not None else {}

    def to_dict(self) -> dict[str, Any]:
        if not self.predictions:
            return {"is_predicted": False, "reason": self.reason, "ruleset": None, "float_precision": None,
                    "layers": [], "targets": self.targets, "not_predicted": self.not_predicted}
        primary = self.predictions[0]
        used = {layer.rule for prediction in self.predictions for layer in prediction.layers}
        return {
            "is_predicted": True, "reason": None, **primary.to_dict(), "rulesets": self.rulesets_of[0],
            "rules": {rule_id: RULES[rule_id].to_dict() for rule_id in sorted(used)},
            "targets": self.targets, "not_predicted": self.not_predicted,
            "other_predictions": [
                {"rulesets": rulesets, "ruleset": prediction.ruleset.name,
                 "float_precision": prediction.float_precision, "float_text": prediction.float_text,
                 "summary": prediction.summary(), "differs": _differing(primary.layers, prediction.layers)}
                for prediction, rulesets in zip(self.predictions[1:], self.rulesets_of[1:])],
        }


def not_predicted_reason(target: Any) -> str | None:
    """Why ``target`` (harness.matrix.Target) gets no prediction whatever the model: not TensorRT on a GPU. None for
    a target predicted by the ruleset of its version (rules.ruleset_for)."""
    if target.backend != "tensorrt":
        return f"{target.backend}: no TensorRT engine to predict"
    if getattr(target, "dla_core", None) is not None:
        return "a DLA build: DLA's own layer rules decide, not the GPU's explicit quantization"
    return None


def predict_targets(graph: Any, targets: Sequence[Any], fp16: bool = False) -> TargetEngines:
    """The engine of ``graph`` (an ``onnx.GraphProto``) on each of ``targets`` (harness.matrix.Target)."""
    not_predicted = {}
    wanted: list[tuple[Any, Ruleset, str | None]] = []
    for target in targets:
        reason = not_predicted_reason(target)
        if reason is not None:
            not_predicted[target.id] = reason
        else:
            choice = ruleset_for(target.version)
            wanted.append((target, choice.ruleset, choice.note))
    if not wanted:
        return TargetEngines([], [], {}, not_predicted, NO_TENSORRT_TARGET)
    if not has_qdq(graph):
        return TargetEngines([], [], {}, {**not_predicted, **{t.id: NOT_EXPLICIT for t, _, _ in wanted}},
                             NOT_EXPLICIT)
    facts = GraphFacts(graph)
    keys: dict[tuple, list[tuple[Any, Ruleset, str | None]]] = collections.OrderedDict()
    for target, ruleset, note in wanted:
        keys.setdefault(_behaviour(facts, ruleset, fp16), []).append((target, ruleset, note))
    # the primary prediction: the one most targets share, the newest ruleset on a tie
    order = sorted(keys, key=lambda k: (-len(keys[k]), -max(RULESETS.index(r) for _, r, _ in keys[k])))
    predictions, rulesets_of, by_target = [], [], {}
    for position, key in enumerate(order):
        members = keys[key]
        newest = max((r for _, r, _ in members), key=RULESETS.index)
        prediction = predict_engine(facts, newest, fp16)
        if len({r.strongly_typed_only for _, r, _ in members}) > 1:
            prediction.float_text = (f"{prediction.float_precision.upper()} on every version here: weakly typed builds "
                                     "(INT8 enabled, not FP16) and strongly typed ones (TensorRT 11, the model's own "
                                     "type) type this model's float layers alike")
        predictions.append(prediction)
        rulesets_of.append(sorted({r.name for _, r, _ in members}, key=lambda n: [s.name for s in RULESETS].index(n)))
        for target, ruleset, note in members:
            by_target[target.id] = {"ruleset": ruleset.name, "note": note, "prediction": position}
    return TargetEngines(predictions, rulesets_of, by_target, not_predicted)


def _behaviour(facts: GraphFacts, ruleset: Ruleset, fp16: bool) -> tuple:
    """What decides this model's engine under ``ruleset``: how floats are typed, which of its quantized types the
    ruleset supports."""
    if ruleset.strongly_typed_only:  # the tensors' own types: alike with a weak FP32 build when all are FP32
        floats = FP32 if facts.typed_floats == {FP32} else "typed " + ",".join(sorted(facts.typed_floats))
    else:
        floats = FP16 + " by timing" if fp16 else FP32
    supported = tuple(sorted((kind, ruleset.has(rule)) for kind, rule in _RULE_SUPPORTING.items()
                             if kind in facts.quantized_types))
    return floats, supported


def _differing(primary: list[PredictedLayer], other: list[PredictedLayer]) -> list[dict[str, Any]]:
    """The layers of ``other`` that are not in ``primary`` as they are (by name, precision, output and rule)."""
    known = {(layer.name, layer.precision, layer.output_type, layer.rule) for layer in primary}
    return [layer.to_dict() for layer in other
            if (layer.name, layer.precision, layer.output_type, layer.rule) not in known]
