"""``diagnose --model MODEL.onnx LAYERS``: the engine predicted from the model (harness.scan.engine_prediction) beside
the one TensorRT built (engine inspector JSON or a verbose build log), layer by layer, with the agreements counted.

Which rules: the TensorRT version the file states (a log's banner), else what the inspector JSON's fields tell (10.0
added Metadata, 11 DataType), else 8.6's. How float layers are typed: the build's precision flags (TREx's build
metadata beside the JSON, the log's ``Precision:`` line or trtexec flags). A model without Q/DQ built with INT8 is
implicit quantization: nothing is predicted, and the comparison says why.
"""
from __future__ import annotations

import json
import re
from typing import Any

from harness.scan.engine_prediction.comparison import compare, output_types
from harness.scan.engine_prediction.predict import has_qdq, predict_engine
from harness.scan.engine_prediction.rules import ruleset_for
from harness.tensorrt.layers import OnnxNames, read_layers_file

_PRECISION_LINE = re.compile(r"\bPrecision: (?P<precisions>[A-Z0-9+]+)\s*$", re.MULTILINE)
# What the inspector JSON's fields tell of its writer (kinds.engine_layers._inspector_version) -> a version.
_WRITER_VERSIONS = (("TensorRT 11", "11.0"), ("TensorRT 10.0", "10.0"))
FP16_FLAGS = ("--fp16", "--best")


def engine_comparison(item: Any, facts: dict[str, Any], model: Any, metadata: dict[str, Any] | None) -> dict[str, Any]:
    """Predicted beside observed for the layers of ``item`` (an identified engine-layers file or log), built from
    ``model`` (onnx.ModelProto); ``facts`` are the file's (its kind's, harness.diagnosis.kinds), ``metadata`` the build metadata
    beside it, if any."""
    version, version_from = _version(facts)
    choice = ruleset_for(version)
    precisions = _build_precisions(item, facts, metadata)
    fp16 = "FP16" in precisions
    base = {"file": str(item.path), "ruleset": choice.ruleset.name, "tensorrt_version": version,
            "ruleset_from": version_from + (f" ({choice.note})" if choice.note else ""),
            "build_precisions": precisions or None}
    if not has_qdq(model.graph) and "INT8" in precisions:
        return {**base, "is_predicted": False, "text": "Not compared: the model has no Q/DQ and the build enabled INT8 "
                "(implicit quantization: TensorRT picks each layer's precision by timing, which no rule predicts)."}
    prediction = predict_engine(model.graph, choice.ruleset, fp16=fp16)
    read = read_layers_file(item.path, OnnxNames.from_model(model))
    try:
        outputs = output_types(json.loads(item.text or ""))
    except ValueError:
        outputs = None  # a log: its layer lines are compared by precision only
    comparison = compare(prediction, read.layers, outputs)
    counts = comparison.counts
    disagreements = comparison.disagreements()
    text = (f"Predicted with {choice.ruleset.name}'s rules ({base['ruleset_from']}; float layers "
            f"{prediction.float_text}): {counts['both_agree']} of {counts['paired']} engine layers agree in precision "
            f"and output type ({counts['by_timing']} of them within the FP16/FP32 choice TensorRT makes by timing), "
            f"{len(disagreements)} disagree; {counts['tensorrt_own']} layer(s) are TensorRT's own reformats and "
            f"shuffles, which no rule predicts")
    if comparison.not_predicted:
        text += f"; {counts['not_predicted']} observed layer(s) hold nodes no predicted layer holds"
    if comparison.not_observed:
        text += f"; {counts['not_observed']} predicted layer(s) were not found in the engine"
    return {**base, "is_predicted": True, "text": text + ".", "float_text": prediction.float_text,
            **comparison.to_dict(), "disagreements": [p.to_dict() for p in disagreements]}


def _version(facts: dict[str, Any]) -> tuple[str | None, str]:
    if facts.get("tensorrt_version"):
        return facts["tensorrt_version"], "the version the file states"
    written = facts.get("written_by") or ""
    for words, version in _WRITER_VERSIONS:
        if words in written:
            return version, f"the inspector JSON's fields: {written}"
    return "8.6", "no version stated and no 10.x/11.x fields in the layers: 8.6's rules"


def _build_precisions(item: Any, facts: dict[str, Any], metadata: dict[str, Any] | None) -> str:
    """The build's precisions, as trtexec prints them ("FP32+FP16+INT8"), or "" where nothing says."""
    if metadata is not None:
        return str(metadata.get("build_options", {}).get("Precision", "")).upper()
    line = _PRECISION_LINE.search(item.text or "")
    if line:
        return line.group("precisions")
    flags = {flag for command in facts.get("commands") or () for flag in command.get("flags", ())}
    return "+".join(["FP16"] if flags.intersection(FP16_FLAGS) else [])
