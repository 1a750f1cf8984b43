"""Predicted against observed: the layers of a built engine (engine inspector JSON or a verbose layer list, read by
harness/tensorrt/layers.py) set beside the predicted ones, and the agreements counted.

An observed layer is paired with the predicted layer holding most of the ONNX nodes its name (or 10.x Metadata)
names. Layers TensorRT adds on its own (``Reformatting CopyNode ...``, shuffles it names itself) name no node and are
counted apart: no rule predicts layouts. Precision agrees when the observed precision is the predicted one, or, for
a float layer of a weakly typed FP16 build, one of the types TensorRT chooses between by timing (counted apart as
``by_timing``). The output type is compared the same way where the file states it (inspector JSON does, log lines
are read for precision only).
"""
from __future__ import annotations

import collections
import dataclasses
from typing import Any, Mapping, Sequence

from harness.scan.engine_prediction.predict import MOVEMENT, EnginePrediction, PredictedLayer
from harness.tensorrt.layers import EngineLayer, dtype_precision, tensor_type
from harness.judgement import PRECISION_BITS

TENSORRT_OWN_PREFIX = "Reformatting CopyNode"


@dataclasses.dataclass(frozen=True)
class LayerPair:
    observed: EngineLayer
    observed_output: str | None  # the type its (first) output is written in, where the file says
    predicted: PredictedLayer
    precision_agrees: bool | None  # None: the observed precision is unknown (names-only layer list)
    output_agrees: bool | None  # None: the file does not state the output type
    by_timing: bool  # agreement only within the float types TensorRT picks between by timing

    def to_dict(self) -> dict[str, Any]:
        return {"engine": {"name": self.observed.name, "type": self.observed.layer_type,
                             "precision": self.observed.precision, "output_type": self.observed_output},
                "prediction": {"name": self.predicted.name, "precision": self.predicted.precision,
                              "output_type": self.predicted.output_type, "rule": self.predicted.rule,
                              "timing_choice": list(self.predicted.timing_choice)},
                "precision_agrees": self.precision_agrees, "output_agrees": self.output_agrees,
                "by_timing": self.by_timing}


@dataclasses.dataclass
class EngineComparison:
    pairs: list[LayerPair]
    tensorrt_own: list[str]  # observed layers naming no ONNX node: TensorRT's own reformats and shuffles
    not_predicted: list[str]  # observed layers naming nodes no predicted layer holds
    not_observed: list[str]  # predicted compute and reformat layers no observed layer holds
    fused_away: list[str]  # predicted data-movement layers (shuffles) no observed layer holds

    @property
    def counts(self) -> dict[str, int]:
        compared = [p for p in self.pairs if p.precision_agrees is not None]
        outputs = [p for p in self.pairs if p.output_agrees is not None]
        return {"paired": len(self.pairs), "precision_compared": len(compared),
                "precision_agree": sum(p.precision_agrees for p in compared),
                "output_compared": len(outputs), "output_agree": sum(bool(p.output_agrees) for p in outputs),
                "both_agree": sum(1 for p in self.pairs if p.precision_agrees and p.output_agrees is not False),
                "by_timing": sum(p.by_timing for p in self.pairs),
                "tensorrt_own": len(self.tensorrt_own), "not_predicted": len(self.not_predicted),
                "not_observed": len(self.not_observed), "fused_away": len(self.fused_away)}

    @property
    def agreement_rate(self) -> float | None:
        """Share of paired layers whose precision and (where stated) output type agree; None with none paired."""
        counts = self.counts
        return counts["both_agree"] / counts["paired"] if counts["paired"] else None

    def disagreements(self) -> list[LayerPair]:
        return [p for p in self.pairs if p.precision_agrees is False or p.output_agrees is False]

    def to_dict(self) -> dict[str, Any]:
        return {"counts": self.counts, "agreement_rate": self.agreement_rate,
                "pairs": [p.to_dict() for p in self.pairs], "tensorrt_own": self.tensorrt_own,
                "not_predicted": self.not_predicted, "not_observed": self.not_observed,
                "fused_away": self.fused_away}


def output_types(info: Any) -> list[str | None]:
    """The type each layer of decoded inspector JSON writes its first output in (None where not stated), in the
    order harness/worker's reader returns the layers."""
    entries = info.get("Layers", []) if isinstance(info, Mapping) else info if isinstance(info, list) else [info]
    found = []
    for entry in entries:
        outputs = entry.get("Outputs", []) if isinstance(entry, Mapping) else []
        first = outputs[0] if outputs and isinstance(outputs[0], Mapping) else None
        found.append(dtype_precision(tensor_type(first)) if first is not None else None)
    return found


def compare(prediction: EnginePrediction, observed: Sequence[EngineLayer],
            observed_outputs: Sequence[str | None] | None = None) -> EngineComparison:
    holder: dict[str, int] = {}
    for position, layer in enumerate(prediction.layers):
        for node in layer.nodes:
            holder.setdefault(node, position)
    outputs = list(observed_outputs or [])
    pairs, own, not_predicted, seen = [], [], [], set()
    for position, layer in enumerate(observed):
        if layer.name.startswith(TENSORRT_OWN_PREFIX) or not layer.onnx_nodes:
            own.append(layer.name)
            continue
        votes = collections.Counter(holder[node] for node in layer.onnx_nodes if node in holder)
        if not votes:
            not_predicted.append(layer.name)
            continue
        best = max(votes, key=lambda p: (votes[p], prediction.layers[p].kind != MOVEMENT))
        seen.add(best)
        predicted = prediction.layers[best]
        output = outputs[position] if position < len(outputs) else None
        precision_agrees, timed_p = _agrees(layer.precision, predicted.precision, predicted.timing_choice)
        output_agrees, timed_o = _agrees(output, predicted.output_type, predicted.timing_choice)
        pairs.append(LayerPair(layer, output, predicted, precision_agrees, output_agrees, timed_p or timed_o))
    unseen = [layer for position, layer in enumerate(prediction.layers) if position not in seen]
    return EngineComparison(pairs, own, not_predicted, [layer.name for layer in unseen if layer.kind != MOVEMENT],
                            [layer.name for layer in unseen if layer.kind == MOVEMENT])


def _agrees(observed: str | None, predicted: str, choice: tuple[str, ...]) -> tuple[bool | None, bool]:
    if observed is None or observed not in PRECISION_BITS:
        return None, False
    if observed == predicted:
        return True, False
    return (True, True) if observed in choice and predicted in choice else (False, False)
