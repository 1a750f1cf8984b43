"""P6, activation form: the score MatMul of two activations with and without Q/DQ on its inputs, and the matcher."""
from __future__ import annotations

import numpy as np
import onnx
import onnx_graphsurgeon as gs
import pytest

from cases.generate import export_model
from cases.p6_matmul_int8 import PROJECTION, SCORE
from cases.p6_linear_int8 import LinearInt8
from cases.p6_matmul_int8 import MatMulInt8 as P6

Q, DQ = "QuantizeLinear", "DequantizeLinear"
QDQ = [Q, DQ]
PROJECT = [*QDQ, DQ, "MatMul"]
OPS = {
    "act-x-act-as-reported": [*PROJECT, "MatMul"],
    "act-x-act-qdq-both": [*PROJECT, *QDQ, *QDQ, "MatMul"],
    "act-x-act-qdq-query-only": [*PROJECT, *QDQ, "MatMul"],
}


variant = P6.variant


def graph_of(name):
    return P6.build(variant(name)).graph


def node(graph, op_or_name):
    return next(n for n in graph.nodes if op_or_name in (n.op, n.name))


def test_declaration():
    assert (P6.pattern, P6.mode, P6.opset) == ("P6", "explicit-qdq", 13)
    assert P6.links == ("https://github.com/NVIDIA/TensorRT/issues/4322",)


@pytest.mark.parametrize("v", P6.variants, ids=lambda v: v.name)
def test_each_variant_has_exactly_the_nodes_of_its_form(v):
    assert [n.op for n in P6.build(v).graph.nodes] == OPS[v.name]


@pytest.mark.parametrize("v", P6.variants, ids=lambda v: v.name)
def test_each_variant_passes_the_full_checker_with_strict_shape_inference(v):
    model, _ = export_model(P6, v)
    onnx.checker.check_model(model, full_check=True)
    onnx.shape_inference.infer_shapes(model, strict_mode=True)


@pytest.mark.parametrize("name, quantized", [
    ("act-x-act-as-reported", (False, False)), ("act-x-act-qdq-both", (True, True)),
    ("act-x-act-qdq-query-only", (True, False)),
])
def test_score_matmul_inputs_go_through_qdq_as_the_variant_says(name, quantized):
    graph = graph_of(name)
    score = node(graph, SCORE)
    query_source = score.inputs[0].inputs[0]
    assert [bool(t.inputs) and t.inputs[0].op == DQ for t in score.inputs] == list(quantized)
    if quantized[0]:
        query_source = query_source.inputs[0].inputs[0].inputs[0].inputs[0]
    assert query_source.name == PROJECTION  # the query is the quantized projection's output
    key = score.inputs[1]
    assert (key.inputs[0].inputs[0].inputs[0].inputs[0] if quantized[1] else key) is graph.inputs[1]
    assert graph.inputs[1].name == "proxy_key" and graph.outputs[0].shape == (1, 64, 16)
    assert P6.build(variant(name)).expected_int8 == (PROJECTION, SCORE)


def test_claims_come_from_the_8_6_2_thread_only():
    (failing,) = variant("act-x-act-as-reported").claims
    assert (failing.target, failing.outcome, failing.strength) == ("trt86-orin", "fallback", "issue-thread")
    (fixed,) = variant("act-x-act-qdq-both").claims
    assert (fixed.target, fixed.outcome) == ("trt86-orin", "pass") and "longer than in the FP16" in fixed.note
    assert all(not v.claims for v in P6.variants if v.role == "sweep")
    assert all(v.varies == "act-x-act-as-reported" and not v.inherits for v in P6.variants if v.role != "failing")


# ---- the scanner's matcher ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", [v.name for v in P6.variants])
def test_find_names_the_score_matmul_by_its_form_and_leaves_the_weight_matmul_to_the_linear_case(user_graph, name):
    graph = user_graph(P6, variant(name))
    (match,) = P6.find(graph)
    assert (match.nodes, match.variant) == ((SCORE,), name)
    (projection,) = LinearInt8.find(graph)
    assert (projection.nodes, projection.variant) == ((PROJECTION,), "linear-per-channel-axis-1")


def test_find_works_on_any_node_names(user_graph):
    (found,) = P6.find(user_graph(P6, variant("act-x-act-as-reported"), rename=True))
    assert found.variant == "act-x-act-as-reported" and found.nodes[0].startswith("user_node_")


@pytest.mark.parametrize("name", [v.name for v in LinearInt8.variants])
def test_find_never_names_a_weight_matmul_or_gemm(user_graph, name):
    assert P6.find(user_graph(LinearInt8, LinearInt8.variant(name))) == []


def test_find_nothing_for_float_matmuls(user_graph, fp32_conv_relu_graph):
    assert P6.find(fp32_conv_relu_graph) == []
    graph = user_graph(P6, variant("act-x-act-as-reported"))
    projection = node(graph, PROJECTION)
    projection.inputs[0] = graph.inputs[0]  # no input Q/DQ
    projection.inputs[1] = gs.Constant("float_weight", np.ones((32, 32), np.float32))  # no weight DQ
    assert not any(n.op in (Q, DQ) for n in graph.cleanup().nodes)
    assert P6.find(graph) == []  # a float linear, and an activation MatMul in a network without Q/DQ


def test_find_never_reads_a_fake_quantized_weight_as_an_activation():
    """A MatMul whose operand is computed from constants alone, however many nodes away, is a Linear."""
    from tests.cases.test_matching import fake_quant_linear_graph

    assert P6.find(fake_quant_linear_graph()) == []
    assert P6.find(fake_quant_linear_graph(("Transpose", "Identity", "Reshape", "Identity"))) == []
