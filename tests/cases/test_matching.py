"""The graph questions the matchers ask, on small hand-built graphs (each a shape a user's model can have)."""
from __future__ import annotations

import numpy as np
import onnx_graphsurgeon as gs

from cases import _graphs as g
from cases import matching as m


def conv_net(*, weight_qdq: bool = True, per_channel: bool = True, silu: bool = True, out_qdq: bool = True,
             identity: bool = False):
    """x -> Q/DQ -> Conv(W) -> BN -> [SiLU] -> [Q/DQ] -> [Identity] -> output, as a graphsurgeon graph."""
    graph = gs.Graph(opset=13)
    x = g.graph_input("x", (1, 8, 4, 4))
    graph.inputs.append(x)
    y = g.torch_fake_quantize(graph, x, "in_q", g.UNIT_ACTIVATION_SCALE)
    w = g.conv_weight("w", (8, 1, 3, 3))
    if weight_qdq:
        scale = g.per_channel_scale(w.values) if per_channel else g.per_tensor_scale(w.values)
        w = g.torch_fake_quantize(graph, w, "w_q", scale, axis=0 if per_channel else None)
    y = g.node(graph, "Conv", "conv", [y, w], "conv_out", g.conv_attrs(3, pad=1, group=8))
    y = g.node(graph, "BatchNormalization", "bn", [y, *g.batchnorm_params("bn", 8)], "bn_out")
    if silu:
        s = g.node(graph, "Sigmoid", "sigmoid", [y], "sigmoid_out")
        y = g.node(graph, "Mul", "mul", [y, s], "mul_out")
    if out_qdq:
        y = g.torch_fake_quantize(graph, y, "out_q", g.UNIT_ACTIVATION_SCALE)
    if identity:
        y = g.node(graph, "Identity", "identity", [y], "identity_out")
    g.mark_output(graph, y, (1, 8, 4, 4))
    return graph


def named(graph, name):
    return next(n for n in graph.nodes if n.name == name)


def test_ends_graph_only_for_an_output_nothing_reads():
    graph = conv_net(identity=True)
    assert m.ends_graph(graph, graph.outputs[0])
    dq_out = named(graph, "identity").inputs[0]
    assert not m.ends_graph(graph, dq_out)
    graph.outputs.append(dq_out)  # an output that is also read is not the end of the graph
    assert not m.ends_graph(graph, dq_out)


def test_follow_chain_takes_optional_ops_in_order_when_they_are_the_only_reader():
    graph = conv_net(silu=False, out_qdq=False)
    assert [n.name for n in m.follow_chain(named(graph, "conv"), ("BatchNormalization",))] == ["conv", "bn"]
    assert [n.name for n in m.follow_chain(named(graph, "conv"), ("Relu", "BatchNormalization"))] == ["conv", "bn"]
    graph = conv_net()  # BN is read by Sigmoid and Mul: no single reader to follow further
    assert [n.name for n in m.follow_chain(named(graph, "bn"), ("Sigmoid",))] == ["bn"]


def test_swish_after_and_follow_qdq():
    graph = conv_net()
    bn_out = named(graph, "bn").outputs[0]
    assert [n.name for n in m.swish_after(bn_out)] == ["sigmoid", "mul"]
    assert [n.op for n in m.follow_qdq(named(graph, "mul").outputs[0])] == ["QuantizeLinear", "DequantizeLinear"]
    assert m.follow_qdq(bn_out) == []
    assert m.swish_after(named(graph, "conv").outputs[0]) is None
    no_silu = conv_net(silu=False)
    assert m.swish_after(named(no_silu, "bn").outputs[0]) is None


def test_quantization_axis():
    per_channel = conv_net()
    assert m.quantization_axis(named(per_channel, "conv").inputs[1]) == 0
    assert m.quantization_axis(named(conv_net(per_channel=False), "conv").inputs[1]) is None
    assert m.quantization_axis(named(conv_net(weight_qdq=False), "conv").inputs[1]) is None  # not dequantized
    np.testing.assert_array_equal(m.dequantize_scale(named(per_channel, "conv").inputs[1]),
                                  g.per_channel_scale(g.conv_weight("w", (8, 1, 3, 3)).values))


def test_quantized_layer_behind_walks_back_through_qdq_bn_and_silu():
    graph = conv_net()
    assert m.quantized_layer_behind(graph.outputs[0]).name == "conv"
    assert m.quantized_layer_behind(named(graph, "bn").outputs[0]).name == "conv"
    assert m.quantized_layer_behind(graph.inputs[0]) is None
    float_weights = conv_net(weight_qdq=False)
    assert m.quantized_layer_behind(float_weights.outputs[0]) is None
    assert m.quantized_layer_behind(graph.outputs[0], ("ConvTranspose",)) is None


def test_ancestor_finds_the_nearest_node_of_a_type_upstream_within_its_budget():
    graph = conv_net()
    assert m.ancestor(graph.outputs[0], "BatchNormalization").name == "bn"
    assert m.ancestor(graph.outputs[0], "Conv").name == "conv"
    assert m.ancestor(graph.outputs[0], "LayerNormalization") is None
    assert m.ancestor(graph.outputs[0], "Conv", max_nodes=2) is None
