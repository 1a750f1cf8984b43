"""The predicted basis read from index.json's ``predicted_engine``: the ruleset of the target's version, nothing off
TensorRT's GPU or for an index written without it, a float node a fallback that names it, a precision the rules do
not name no prediction at all."""
from __future__ import annotations

import pytest

from harness import judgement as j
from harness.matrix import load_matrix
from harness.scan.predicted import predicted_basis, variant_predicted_basis

MATRIX = load_matrix()
INT8 = {"precision": j.INT8, "rule": "weighted-int8-output"}
FLOAT = {"precision": j.FP32, "rule": "float-layer"}
ENTRY = {"predicted_engine": {"trt-8.6": {"/conv": INT8, "/matmul": FLOAT}, "trt-10.12": {"/conv": INT8}}}


@pytest.mark.parametrize("target_id, outcome, ruleset", [
    ("trt1016-x86", j.PASS, "trt-10.12"), ("trt86-orin", j.FALLBACK, "trt-8.6"), ("trt92-x86", j.FALLBACK, "trt-8.6"),
    ("trt100-x86", None, None),  # an index written with other rulesets than the target's predicts nothing there
    ("trt107-orin-dla", None, None), ("ort-cpu", None, None),  # DLA's rules decide there; ONNX Runtime has no engine
])
def test_a_target_is_predicted_with_the_ruleset_of_its_version(target_id, outcome, ruleset):
    found = variant_predicted_basis(ENTRY, MATRIX[target_id])
    assert (found.outcome, found.ruleset) == (outcome, ruleset) if outcome else found is None


def test_a_float_node_is_a_fallback_named_with_its_rule_and_a_borrowed_ruleset_says_so():
    found = variant_predicted_basis(ENTRY, MATRIX["trt92-x86"])
    assert found.nodes == ("/matmul",) and found.rules == ("float-layer",)
    assert found.said.startswith("1 of 2 quantized node(s) the form expects predicted float (/matmul); rules "
                                 "float-layer (ruleset trt-8.6); TensorRT 9.2")


def test_an_index_without_a_prediction_and_a_precision_the_rules_do_not_name_predict_nothing():
    assert variant_predicted_basis({}, MATRIX["trt1016-x86"]) is None
    unsupported = {"/conv": {"precision": j.UNKNOWN_PRECISION, "rule": "quantized-type-unsupported"}}
    assert predicted_basis(unsupported, ["/conv"], "trt-8.6", "at its places") is None
    assert predicted_basis({**unsupported, "/gemm": INT8}, ["/conv", "/gemm"], "trt-8.6", "here").said.startswith(
        "all 1 quantized node(s) here predicted in the precision asked")
