"""`python -m harness scan` of torchvision's ResNet-18 quantized by ONNX Runtime's static quantizer: its classifier
``/fc/Gemm`` (a weight Gemm) is P6's weight form, and no evidence of the MatMul of two activations reaches it."""
from __future__ import annotations

import json

from tests.harness.commands.test_main import harness
from tests.models.fixtures import p6_results, resnet18_qdq  # noqa: F401
from tests.models.resnet18 import CLASSIFIER


def fc_findings(scan: dict) -> list[dict]:
    return [f for f in scan["findings"] if any(CLASSIFIER in o["nodes"] for o in f["occurrences"])]


def test_the_classifier_gemm_takes_evidence_from_the_weight_gemm_form_only(resnet18_qdq, p6_results, tmp_path):
    result = harness("scan", str(resnet18_qdq), "--results", str(p6_results), "--out", str(tmp_path), check=False)
    # ONNX Runtime's default quantize_static is asymmetric with INT32 biases: the parser refuses the model on every
    # TensorRT target (the gate fails), while each finding keeps its own evidence
    assert result.returncode == 1, result.stderr
    scan = json.loads((tmp_path / "scan.json").read_text())
    (finding,) = fc_findings(scan)
    assert (finding["case"], finding["variant"]) == ("p6-linear-int8", "gemm-per-channel")
    evidence = [e for verdict in finding["verdicts"].values() for e in verdict["evidence"]]
    evidence += [e for verdict in finding["verdicts"].values() for w in verdict["workarounds"] for e in w["evidence"]]
    assert {(e["case"], e["variant"]) for e in evidence} == {("p6-linear-int8", "gemm-per-channel")}
    # the cell ran on ort-cpu; no claim exists for the form; TensorRT targets have the engine prediction of its Gemm
    assert {e["kind"] for e in evidence} == {"observed", "rule-predicted"}
    assert finding["verdicts"]["ort-cpu"]["evidence"][0]["scope"] == "variant"
    # The act x act claim of #4322 (fallback on trt86-orin) says nothing about a weight Gemm.
    orin = finding["verdicts"]["trt86-orin"]
    assert orin["basis"] == "rule-predicted" and {e["kind"] for e in orin["evidence"]} == {"rule-predicted"}
    model_on_orin = next(t for t in scan["targets"] if t["target"] == "trt86-orin")
    assert (model_on_orin["verdict"], model_on_orin["basis"]) == ("blocked", "parser-fact")
    assert "act-x-act" not in json.dumps(finding) and "4322" not in json.dumps(finding)
