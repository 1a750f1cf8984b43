"""P6, weight form: a Linear (MatMul + Add, or Gemm) with an INT8 weight under Q/DQ, and the matcher."""
from __future__ import annotations

import numpy as np
import onnx
import onnx_graphsurgeon as gs
import pytest

from cases import _graphs as g
from cases.generate import export_model
from cases.p6_linear_int8 import LinearInt8 as P6L

Q, DQ = "QuantizeLinear", "DequantizeLinear"
QDQ = [Q, DQ]
LINEAR = [*QDQ, DQ, "MatMul", "Add"]
OPS = {
    "linear-per-channel-axis-1": LINEAR,
    "linear-per-tensor": LINEAR,
    "linear-per-channel-axis-0": LINEAR,
    "linear-weight-only": [DQ, "MatMul", "Add"],
    "linear-batch-4": LINEAR,
    "gemm-per-channel": [*QDQ, DQ, "Gemm"],
}

variant = P6L.variant


def graph_of(name):
    return P6L.build(variant(name)).graph


def node(graph, op_or_name):
    return next(n for n in graph.nodes if op_or_name in (n.op, n.name))


def test_declaration_is_p6_with_its_own_failing_form_and_no_claims():
    assert (P6L.pattern, P6L.mode, P6L.opset) == ("P6", "explicit-qdq", 13)
    assert "https://github.com/NVIDIA/TensorRT/issues/4322" not in P6L.links
    assert [v.name for v in P6L.variants if v.role == "failing"] == ["linear-per-channel-axis-1"]
    assert not any(v.claims for v in P6L.variants)  # nothing upstream reported for a weight MatMul or Gemm


@pytest.mark.parametrize("v", P6L.variants, ids=lambda v: v.name)
def test_each_variant_has_exactly_the_nodes_of_its_form(v):
    assert [n.op for n in P6L.build(v).graph.nodes] == OPS[v.name]


@pytest.mark.parametrize("v", P6L.variants, ids=lambda v: v.name)
def test_each_variant_passes_the_full_checker_with_strict_shape_inference(v):
    model, _ = export_model(P6L, v)
    onnx.checker.check_model(model, full_check=True)
    onnx.shape_inference.infer_shapes(model, strict_mode=True)


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

# ---- the scanner's matcher ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", [v.name for v in P6L.variants])
def test_find_names_each_weight_layer_by_its_form(user_graph, name):
    (match,) = P6L.find(user_graph(P6L, variant(name)))
    assert match.variant == (name if name != "linear-batch-4" else "linear-per-channel-axis-1")
    assert match.nodes == (f"/mlp/fc1/{'Gemm' if name.startswith('gemm') else 'MatMul'}",)


def test_find_works_on_any_node_names(user_graph):
    (found,) = P6L.find(user_graph(P6L, variant("gemm-per-channel"), rename=True))
    assert found.variant == "gemm-per-channel" and found.nodes[0].startswith("user_node_")


def test_find_nothing_for_float_weights(user_graph, fp32_conv_relu_graph):
    assert P6L.find(fp32_conv_relu_graph) == []
    graph = user_graph(P6L, variant("linear-per-channel-axis-1"))
    node(graph, "MatMul").inputs[1] = gs.Constant("float_weight", np.ones((32, 48), np.float32))
    assert P6L.find(graph) == []  # a float weight: nothing to run in INT8


def test_find_reads_a_fake_quantized_torch_linear_as_a_linear():
    """F.linear(x, fake_quant(W)): MatMul(DQ(Q(x)), Transpose(DQ(Q(W)))), W per output channel: the reported form."""
    from tests.cases.test_matching import fake_quant_linear_graph

    (match,) = P6L.find(fake_quant_linear_graph())
    assert (match.nodes, match.variant) == (("/fc/MatMul",), "linear-per-channel-axis-1")
    (match,) = P6L.find(fake_quant_linear_graph(per_channel=False))
    assert match.variant == "linear-per-tensor"
    (match,) = P6L.find(fake_quant_linear_graph(("Reshape",)))  # the axis cannot be followed through a Reshape
    assert match.variant is None and "axis unknown" in match.note
