"""The control cases: plain Conv + ReLU in both build modes, and a stem control matching S1's geometry."""
from __future__ import annotations

from cases.control import ImplicitConvRelu, QdqConvRelu
from cases.s1_conv_silu import ConvSilu


def test_controls_are_controls_without_claims():
    for cls in (QdqConvRelu, ImplicitConvRelu):
        assert cls.pattern == "control"
        assert all(v.role == "control" and not v.claims for v in cls.variants)


def test_qdq_control_is_input_qdq_then_conv_with_per_channel_weight_qdq_then_qdq_relu():
    graph = QdqConvRelu.build(QdqConvRelu.variants[0]).graph
    qdq = ["QuantizeLinear", "DequantizeLinear"]
    assert [n.op for n in graph.nodes] == [*qdq, *qdq, "Conv", *qdq, "Relu"]
    x_q, x_dq, w_q, w_dq, conv, y_q, y_dq, relu = graph.nodes
    assert x_q.inputs[0] is graph.inputs[0] and x_dq.inputs[0] is x_q.outputs[0]
    assert x_q.inputs[1].values.shape == ()  # per-tensor activation scale
    assert w_q.inputs[0].name == "conv.weight" and w_dq.inputs[0] is w_q.outputs[0]
    assert w_q.attrs["axis"] == 0 and w_dq.attrs["axis"] == 0
    assert w_dq.inputs[1].values.shape == (w_q.inputs[0].values.shape[0],)  # one scale per output channel
    assert conv.inputs[0] is x_dq.outputs[0] and conv.inputs[1] is w_dq.outputs[0]
    # The conv output is quantized before the ReLU (what lets ONNX Runtime CPU run a QLinearConv).
    assert y_q.inputs[0] is conv.outputs[0] and y_dq.inputs[0] is y_q.outputs[0]
    assert relu.inputs == y_dq.outputs and graph.outputs == relu.outputs


def test_implicit_control_is_float_conv_then_relu():
    for variant in ImplicitConvRelu.variants:
        graph = ImplicitConvRelu.build(variant).graph
        conv, relu = graph.nodes
        assert (conv.op, relu.op) == ("Conv", "Relu")
        assert conv.inputs[0] is graph.inputs[0] and relu.inputs == conv.outputs and graph.outputs == relu.outputs


def test_stem_control_has_the_s1_stem_geometry_with_relu():
    stem = ImplicitConvRelu.build(ImplicitConvRelu.variant("stem-relu")).graph
    silu = ConvSilu.build(ConvSilu.variant("as-reported")).graph
    assert stem.nodes[0].attrs == silu.nodes[0].attrs
    assert stem.nodes[0].inputs[1].shape == silu.nodes[0].inputs[1].shape
    assert stem.inputs[0].shape == silu.inputs[0].shape
    assert stem.nodes[0].attrs["strides"] == [2, 2]
