"""Predicted against observed, per target: for every TensorRT record whose engine layers were read (its ``precision``,
ONNX node -> what the engine computed it in), the engine predicted for its case variant by the target's ruleset
(harness.scan.engine_prediction) is compared node by node, and the agreement rate of each target is counted. Every
night on real GPUs thus checks the documented rules; a rule that disagrees shows up here with its nodes.

The variant's model is read from the cases directory the report is built with (``<case>/<variant>.onnx``); a record
whose model is not there, or whose model has no Q/DQ (implicit quantization: nothing predicted), is not counted. The
float layers are typed as the cell built them: FP16 by timing when its knobs enabled FP16, else the ruleset's own.
"""
from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any, Iterable, Mapping

from harness.scan.engine_prediction.predict import EnginePrediction, has_qdq, predict_engine
from harness.scan.engine_prediction.rules import ruleset_for
from harness.judgement import FP16, PRECISION_BITS

SHOWN_DISAGREEMENTS = 20  # per target


@dataclasses.dataclass
class TargetAgreement:
    target: str
    ruleset: str
    records: int = 0  # records compared
    nodes: int = 0  # nodes with a known observed and a predicted precision
    agree: int = 0
    disagreements: list[dict[str, Any]] = dataclasses.field(default_factory=list)  # the first SHOWN_DISAGREEMENTS
    disagree: int = 0

    @property
    def rate(self) -> float | None:
        return self.agree / self.nodes if self.nodes else None


def engine_agreement(records: Iterable[Mapping[str, Any]], targets: Mapping[str, Any],
                     cases_dir: Path | str) -> list[TargetAgreement]:
    """Per target with at least one comparable TensorRT record, predicted against observed node precisions."""
    cases_dir = Path(cases_dir)
    models: dict[str, Any] = {}
    predictions: dict[tuple[str, str, bool], EnginePrediction | None] = {}
    by_target: dict[str, TargetAgreement] = {}
    for record in records:
        target = targets.get(record.get("target"))
        observed = {node: p for node, p in (record.get("precision") or {}).items() if p in PRECISION_BITS}
        if target is None or record.get("backend") != "tensorrt" or not observed:
            continue
        ruleset = ruleset_for(target.version).ruleset
        fp16 = bool((record.get("knobs") or {}).get(FP16))
        key = (f"{record['case']}/{record['variant']}", ruleset.name, fp16)
        if key not in predictions:
            model = _model(models, cases_dir / f"{key[0]}.onnx")
            predictions[key] = predict_engine(model.graph, ruleset, fp16) if model is not None and has_qdq(
                model.graph) else None
        prediction = predictions[key]
        if prediction is None:
            continue
        entry = by_target.setdefault(target.id, TargetAgreement(target.id, ruleset.name))
        entry.records += 1
        layers = {node: layer for layer in prediction.layers for node in layer.nodes}
        for node, got in observed.items():
            layer = layers.get(node)
            if layer is None:
                continue
            entry.nodes += 1
            if got == layer.precision or (got in layer.timing_choice and layer.precision in layer.timing_choice):
                entry.agree += 1
                continue
            entry.disagree += 1
            if len(entry.disagreements) < SHOWN_DISAGREEMENTS:
                entry.disagreements.append({"cell": key[0], "node": node, "ran": got,
                                            "predicted_precision": layer.precision, "rule": layer.rule})
    return [by_target[t] for t in targets if t in by_target]


def _model(cache: dict[str, Any], path: Path) -> Any:
    if str(path) not in cache:
        import onnx

        cache[str(path)] = onnx.load(path, load_external_data=False) if path.is_file() else None
    return cache[str(path)]
