"""P3: the residual Add with and without a Q/DQ pair on its identity branch, and the matcher that tells them apart."""
from __future__ import annotations

import numpy as np
import onnx
import onnx_graphsurgeon as gs
import pytest

from cases.generate import export_model
from cases.p3_residual_add_qdq import ADD, CONV, REPORTED, RESIDUAL_QUANTIZER
from cases.p3_residual_add_qdq import ResidualAddQdq as P3

Q, DQ = "QuantizeLinear", "DequantizeLinear"
QDQ = [Q, DQ]
CONV_OPS = [*QDQ, *QDQ, "Conv"]
OPS = {
    "identity-float": [*CONV_OPS, "Add", "Relu"],
    "identity-qdq": [*CONV_OPS, *QDQ, "Add", "Relu"],
    "qdq-after-add": [*CONV_OPS, "Add", *QDQ, "Relu"],
    "every-tensor-qdq": [*CONV_OPS, *QDQ, *QDQ, "Add", *QDQ, "Relu"],
    "channels-64": [*CONV_OPS, "Add", "Relu"],
    "channels-64-identity-qdq": [*CONV_OPS, *QDQ, "Add", "Relu"],
}


variant = P3.variant


def graph_of(name):
    return P3.build(variant(name)).graph


def add_of(graph):
    return next(n for n in graph.nodes if n.name == ADD)


def test_declaration():
    assert (P3.pattern, P3.mode, P3.opset) == ("P3", "explicit-qdq", 13)
    assert P3.links == ("https://github.com/NVIDIA/TensorRT/issues/1992", "https://github.com/NVIDIA/TensorRT/issues/2204")
    assert all(not v.claims for v in P3.variants)  # neither thread names a version of the matrix


@pytest.mark.parametrize("v", P3.variants, ids=lambda v: v.name)
def test_each_variant_has_exactly_the_nodes_of_its_form(v):
    assert [n.op for n in P3.build(v).graph.nodes] == OPS[v.name]


@pytest.mark.parametrize("v", P3.variants, ids=lambda v: v.name)
def test_each_variant_passes_the_full_checker_with_strict_shape_inference(v):
    model, _ = export_model(P3, v)
    onnx.checker.check_model(model, full_check=True)
    onnx.shape_inference.infer_shapes(model, strict_mode=True)


@pytest.mark.parametrize("v", P3.variants, ids=lambda v: v.name)
def test_identity_branch_has_a_qdq_pair_exactly_when_the_variant_says(v):
    graph = P3.build(v).graph
    identity = add_of(graph).inputs[1]
    if v.params["identity_qdq"]:
        dq = identity.inputs[0]
        q = dq.inputs[0].inputs[0]
        assert (q.op, dq.op) == (Q, DQ) and q.name == f"{RESIDUAL_QUANTIZER}/QuantizeLinear"
        assert q.inputs[0] is graph.inputs[0]
    else:
        assert identity is graph.inputs[0]
        assert not any(RESIDUAL_QUANTIZER in n.name for n in graph.nodes)


@pytest.mark.parametrize("v", P3.variants, ids=lambda v: v.name)
def test_conv_path_and_add_output(v):
    graph = P3.build(v).graph
    add = add_of(graph)
    conv_side = add.inputs[0].inputs[0]
    if v.params["conv_output_qdq"]:
        conv_side = conv_side.inputs[0].inputs[0].inputs[0].inputs[0]
    assert conv_side.name == CONV and conv_side.inputs[1].inputs[0].attrs == {"axis": 0}
    reader = add.outputs[0].outputs[0]
    assert reader.op == (Q if v.params["add_output_qdq"] else "Relu")
    assert graph.outputs[0].inputs[0].op == "Relu"
    channels = v.params["channels"]
    assert graph.inputs[0].shape == graph.outputs[0].shape == (1, channels, 16, 16)
    assert P3.build(v).expected_int8 == (CONV, ADD)


def test_variants_differ_from_the_failing_form_in_their_parameters_only():
    changed = {v.name: {k: x for k, x in v.params.items() if REPORTED[k] != x} for v in P3.variants}
    assert changed == {
        "identity-float": {}, "identity-qdq": {"identity_qdq": True}, "qdq-after-add": {"add_output_qdq": True},
        "every-tensor-qdq": {"identity_qdq": True, "conv_output_qdq": True, "add_output_qdq": True},
        "channels-64": {"channels": 64}, "channels-64-identity-qdq": {"channels": 64, "identity_qdq": True},
    }
    assert variant("identity-float").role == "failing" and variant("identity-qdq").role == "workaround"


# ---- the scanner's matcher ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("name, expected", [
    ("identity-float", "identity-float"), ("identity-qdq", "identity-qdq"), ("qdq-after-add", "qdq-after-add"),
    ("every-tensor-qdq", "every-tensor-qdq"), ("channels-64", "identity-float"),
    ("channels-64-identity-qdq", "identity-qdq"),
])
def test_find_reports_the_add_and_names_its_form(user_graph, name, expected):
    (match,) = P3.find(user_graph(P3, variant(name)))
    assert match.case == P3.id and match.variant == expected and match.nodes[:2] == (ADD, CONV)
    if variant(name).params["identity_qdq"]:
        assert match.nodes[2:] == (f"{RESIDUAL_QUANTIZER}/QuantizeLinear", f"{RESIDUAL_QUANTIZER}/DequantizeLinear")
        assert "through a Q/DQ pair" in match.note
    else:
        assert len(match.nodes) == 2 and "without Q/DQ" in match.note


def test_find_works_on_any_node_names(user_graph):
    (match,) = P3.find(user_graph(P3, variant("identity-float"), rename=True))
    assert match.variant == "identity-float" and all(n.startswith("user_node_") for n in match.nodes)


def test_find_nothing_in_fp32_graphs_or_a_bias_add(user_graph, fp32_conv_relu_graph):
    assert P3.find(fp32_conv_relu_graph) == []
    graph = user_graph(P3, variant("identity-float"))
    add = add_of(graph)
    conv = add.inputs[0].inputs[0]
    add.inputs[1] = gs.Constant("bias", np.zeros((1, 32, 1, 1), np.float32))  # a constant, not an identity branch
    assert conv.op == "Conv" and P3.find(graph.cleanup()) == []
