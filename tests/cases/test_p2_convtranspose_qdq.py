"""P2: the Q/DQ ConvTranspose + BN + ReLU: weight DQ axis, Cin != Cout, the BN workarounds, and the matcher."""
from __future__ import annotations

import numpy as np
import onnx
import onnx.reference
import pytest

from cases.generate import export_model, reference_model
from cases.p2_convtranspose_qdq import DECONV, REPORTED, WEIGHT
from cases.p2_convtranspose_qdq import ConvTransposeQdq as P2

Q, DQ = "QuantizeLinear", "DequantizeLinear"
QDQ = [Q, DQ]
OPS = {
    "as-reported": [*QDQ, *QDQ, "ConvTranspose", "BatchNormalization", "Relu", *QDQ],
    "weight-axis-0": [*QDQ, *QDQ, "ConvTranspose", "BatchNormalization", "Relu", *QDQ],
    "qdq-before-bn": [*QDQ, *QDQ, "ConvTranspose", *QDQ, "BatchNormalization", "Relu", *QDQ],
    "bn-folded": [*QDQ, *QDQ, "ConvTranspose", "Relu", *QDQ],
    "weight-per-tensor": [*QDQ, *QDQ, "ConvTranspose", "BatchNormalization", "Relu", *QDQ],
    "cin-eq-cout-axis-1": [*QDQ, *QDQ, "ConvTranspose", "BatchNormalization", "Relu", *QDQ],
    "cin-eq-cout-axis-0": [*QDQ, *QDQ, "ConvTranspose", "BatchNormalization", "Relu", *QDQ],
    "depthwise": [*QDQ, *QDQ, "ConvTranspose", "BatchNormalization", "Relu", *QDQ],
}


variant = P2.variant


def deconv_of(name):
    return next(n for n in P2.build(variant(name)).graph.nodes if n.name == DECONV)


def weight_dq(deconv):
    return deconv.inputs[1].inputs[0]


def test_declaration():
    assert (P2.pattern, P2.mode, P2.opset) == ("P2", "explicit-qdq", 13)
    assert "https://github.com/NVIDIA/TensorRT/issues/1694" in P2.links
    assert all(not v.claims for v in P2.variants)  # no thread names a version of the matrix (module docstring)


@pytest.mark.parametrize("v", P2.variants, ids=lambda v: v.name)
def test_each_variant_has_exactly_the_nodes_of_its_form(v):
    assert [n.op for n in P2.build(v).graph.nodes] == OPS[v.name]


@pytest.mark.parametrize("v", P2.variants, ids=lambda v: v.name)
def test_each_variant_passes_the_full_checker_with_strict_shape_inference(v):
    model, _ = export_model(P2, v)
    onnx.checker.check_model(model, full_check=True)
    onnx.shape_inference.infer_shapes(model, strict_mode=True)


@pytest.mark.parametrize("name, axis, scales", [
    ("as-reported", 1, 32), ("weight-axis-0", 0, 64), ("weight-per-tensor", None, None),
    ("cin-eq-cout-axis-1", 1, 64), ("cin-eq-cout-axis-0", 0, 64), ("depthwise", 0, 64),
])
def test_weight_dq_axis_and_scale_count(name, axis, scales):
    deconv = deconv_of(name)
    dq = weight_dq(deconv)
    q = dq.inputs[0].inputs[0]
    assert q.op == Q and q.inputs[0].name == WEIGHT and q.attrs == dq.attrs
    assert dq.attrs == ({} if axis is None else {"axis": axis})
    assert dq.inputs[1].shape == (() if scales is None else (scales,))
    p = variant(name).params
    assert q.inputs[0].shape == (p["in_channels"], p["out_channels"] // p["groups"], 2, 2)


def test_failing_form_is_cin_ne_cout_k2_s2_with_the_2280_names():
    graph = P2.build(variant("as-reported")).graph
    deconv = deconv_of("as-reported")
    assert deconv.attrs["kernel_shape"] == [2, 2] and deconv.attrs["strides"] == [2, 2] and deconv.attrs["group"] == 1
    assert weight_dq(deconv).inputs[0].inputs[0].name == "/backbone/ida_up/up_1/_weight_quantizer/QuantizeLinear"
    assert graph.inputs[0].shape == (1, 64, 16, 16) and graph.outputs[0].shape == (1, 32, 32, 32)
    assert deconv.inputs[0].inputs[0].op == DQ  # quantized input
    bn = deconv.outputs[0].outputs[0]
    relu = bn.outputs[0].outputs[0]
    q = relu.outputs[0].outputs[0]
    assert (bn.op, relu.op, q.op) == ("BatchNormalization", "Relu", Q)
    assert P2.build(variant("as-reported")).expected_int8 == (DECONV,)


def test_qdq_before_bn_puts_a_pair_between_deconv_and_bn():
    deconv = deconv_of("qdq-before-bn")
    q = deconv.outputs[0].outputs[0]
    dq = q.outputs[0].outputs[0]
    assert (q.op, dq.op, dq.outputs[0].outputs[0].op) == (Q, DQ, "BatchNormalization")


def test_folded_bn_computes_what_deconv_plus_bn_computes():
    """The folded weights and bias are BN folded exactly (compared in float, before any Q/DQ)."""
    def float_model(name):
        model, _ = export_model(P2, variant(name))
        graph = model.graph
        by_output = {n.output[0]: n for n in graph.node}
        deconv = next(n for n in graph.node if n.op_type == "ConvTranspose")
        weight_q = by_output[by_output[deconv.input[1]].input[0]]
        deconv.input[1] = weight_q.input[0]  # bypass the weight Q/DQ: the float weight
        return model, deconv.output[0]

    x = np.random.default_rng(1).standard_normal((1, 64, 16, 16)).astype(np.float32)
    outputs = []
    for name, after in (("as-reported", "BatchNormalization"), ("bn-folded", "ConvTranspose")):
        model, _ = float_model(name)
        node = next(n for n in model.graph.node if n.op_type == after)
        model.graph.output[0].name = node.output[0]
        evaluator = onnx.reference.ReferenceEvaluator(reference_model(model))
        outputs.append(evaluator.run([node.output[0]], {"input": x})[0])
    np.testing.assert_allclose(outputs[0], outputs[1], atol=1e-4)
    folded = deconv_of("bn-folded")
    assert len(folded.inputs) == 3 and folded.inputs[2].name == "backbone.ida_up.up_1.bias"


def test_sweeps_change_only_their_parameters():
    changed = {v.name: {k: x for k, x in v.params.items() if REPORTED[k] != x} for v in P2.variants}
    assert changed == {
        "as-reported": {}, "weight-axis-0": {"weight_axis": 0}, "qdq-before-bn": {"qdq_before_bn": True},
        "bn-folded": {"bn": "folded"}, "weight-per-tensor": {"weight_axis": None},
        "cin-eq-cout-axis-1": {"out_channels": 64}, "cin-eq-cout-axis-0": {"out_channels": 64, "weight_axis": 0},
        "depthwise": {"out_channels": 64, "groups": 64, "weight_axis": 0},
    }


# ---- the scanner's matcher ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("name, expected", [
    ("as-reported", "as-reported"), ("weight-axis-0", "weight-axis-0"), ("qdq-before-bn", "qdq-before-bn"),
    ("bn-folded", "bn-folded"), ("weight-per-tensor", "weight-per-tensor"), ("cin-eq-cout-axis-1", "as-reported"),
])
def test_find_names_the_form(user_graph, name, expected):
    (match,) = P2.find(user_graph(P2, variant(name), rename=True))
    assert match.case == P2.id and match.variant == expected and match.nodes[0].startswith("user_node_")


def test_find_lists_the_deconv_and_its_bn(user_graph):
    (match,) = P2.find(user_graph(P2, variant("as-reported")))
    assert match.nodes == (DECONV, "/backbone/ida_up/bn_1/BatchNormalization")
    assert "axis 1" in match.note


def test_find_nothing_without_weight_qdq(user_graph, fp32_conv_relu_graph):
    assert P2.find(fp32_conv_relu_graph) == []
    graph = user_graph(P2, variant("as-reported"))
    deconv = next(n for n in graph.nodes if n.op == "ConvTranspose")
    weight_q = deconv.inputs[1].inputs[0].inputs[0].inputs[0]
    deconv.inputs[1] = weight_q.inputs[0]  # the float weight, no Q/DQ
    assert P2.find(graph.cleanup()) == []
