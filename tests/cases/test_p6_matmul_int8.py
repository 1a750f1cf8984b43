"""P6: MatMul/Gemm with INT8 weights (axis 1, per tensor, axis 0) and activation x activation, and the matcher."""
from __future__ import annotations

import numpy as np
import onnx
import onnx_graphsurgeon as gs
import pytest

from cases import _graphs as g
from cases.generate import export_model
from cases.p6_matmul_int8 import PROJECTION, SCORE
from cases.p6_matmul_int8 import MatMulInt8 as P6

Q, DQ = "QuantizeLinear", "DequantizeLinear"
QDQ = [Q, DQ]
PROJECT = [*QDQ, DQ, "MatMul"]
LINEAR = [*QDQ, DQ, "MatMul", "Add"]
OPS = {
    "act-x-act-as-reported": [*PROJECT, "MatMul"],
    "act-x-act-qdq-both": [*PROJECT, *QDQ, *QDQ, "MatMul"],
    "act-x-act-qdq-query-only": [*PROJECT, *QDQ, "MatMul"],
    "linear-per-channel-axis-1": LINEAR,
    "linear-per-tensor": LINEAR,
    "linear-per-channel-axis-0": LINEAR,
    "linear-weight-only": [DQ, "MatMul", "Add"],
    "linear-batch-4": LINEAR,
    "gemm-per-channel": [*QDQ, DQ, "Gemm"],
}


variant = P6.variant


def graph_of(name):
    return P6.build(variant(name)).graph


def node(graph, op_or_name):
    return next(n for n in graph.nodes if op_or_name in (n.op, n.name))


def test_declaration():
    assert (P6.pattern, P6.mode, P6.opset) == ("P6", "explicit-qdq", 13)
    assert P6.links[0] == "https://github.com/NVIDIA/TensorRT/issues/4322"


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


@pytest.mark.parametrize("name, axis, scale_shape, weight_shape", [
    ("linear-per-channel-axis-1", 1, (48,), (32, 48)), ("linear-per-tensor", None, (), (32, 48)),
    ("linear-per-channel-axis-0", 0, (32,), (32, 48)), ("linear-weight-only", 1, (48,), (32, 48)),
    ("gemm-per-channel", 0, (48,), (48, 32)),
])
def test_weight_is_int8_through_one_dq_with_the_variants_axis(name, axis, scale_shape, weight_shape):
    graph = graph_of(name)
    layer = node(graph, "Gemm" if name.startswith("gemm") else "MatMul")
    dq = layer.inputs[1].inputs[0]
    stored = dq.inputs[0]
    assert dq.op == DQ and stored.values.dtype == np.int8 and stored.shape == weight_shape
    assert dq.attrs == ({} if axis is None else {"axis": axis}) and dq.inputs[1].shape == scale_shape
    scale = dq.inputs[1].values
    assert np.array_equal(stored.values, g.quantize_values(stored.values * (
        scale if axis is None else np.expand_dims(scale, 1 - axis)), scale, axis or 0))
    input_quantized = bool(layer.inputs[0].inputs) and layer.inputs[0].inputs[0].op == DQ
    assert input_quantized == (name != "linear-weight-only")


def test_linear_is_matmul_then_bias_add_and_gemm_is_transposed_with_bias():
    graph = graph_of("linear-per-channel-axis-1")
    matmul, add = node(graph, "MatMul"), node(graph, "Add")
    assert add.inputs[1] is matmul.outputs[0] and add.inputs[0].name == "mlp.fc1.bias"
    assert graph.inputs[0].shape == (1, 64, 32) and graph.outputs[0].shape == (1, 64, 48)
    assert graph_of("linear-batch-4").inputs[0].shape == (4, 64, 32)
    gemm = node(graph_of("gemm-per-channel"), "Gemm")
    assert gemm.attrs["transB"] == 1 and gemm.inputs[2].name == "mlp.fc1.bias"


def test_claims_come_from_the_8_6_2_thread_only():
    (failing,) = variant("act-x-act-as-reported").claims
    assert (failing.target, failing.outcome, failing.strength) == ("trt86-orin", "fallback", "issue-thread")
    (fixed,) = variant("act-x-act-qdq-both").claims
    assert (fixed.target, fixed.outcome) == ("trt86-orin", "pass") and "longer than in the FP16" in fixed.note
    assert all(not v.claims for v in P6.variants if v.role == "sweep")


# ---- the scanner's matcher ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", [v.name for v in P6.variants])
def test_find_names_each_matmul_by_its_form(user_graph, name):
    matches = {m.nodes[0]: m for m in P6.find(user_graph(P6, variant(name)))}
    if name.startswith("act-x-act"):
        assert matches[SCORE].variant == name
        assert matches[PROJECTION].variant == "linear-per-channel-axis-1"
    else:
        (match,) = matches.values()
        assert match.variant == (name if name != "linear-batch-4" else "linear-per-channel-axis-1")


def test_find_works_on_any_node_names(user_graph):
    found = P6.find(user_graph(P6, variant("act-x-act-as-reported"), rename=True))
    assert {m.variant for m in found} == {"act-x-act-as-reported", "linear-per-channel-axis-1"}
    assert all(m.nodes[0].startswith("user_node_") for m in found)


def test_find_nothing_for_float_matmuls(user_graph, fp32_conv_relu_graph):
    assert P6.find(fp32_conv_relu_graph) == []
    graph = user_graph(P6, variant("act-x-act-as-reported"))
    projection = node(graph, PROJECTION)
    projection.inputs[0] = graph.inputs[0]  # no input Q/DQ
    projection.inputs[1] = gs.Constant("float_weight", np.ones((32, 32), np.float32))  # no weight DQ
    assert not any(n.op in (Q, DQ) for n in graph.cleanup().nodes)
    assert P6.find(graph) == []  # a float linear, and an activation MatMul in a network without Q/DQ
