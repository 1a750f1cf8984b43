"""The graph questions the matchers ask, on small hand-built graphs (each a shape a user's model can have)."""
from __future__ import annotations

import contextlib

import numpy as np
import onnx_graphsurgeon as gs
import pytest

from cases import _graphs as g
from cases import matching as m
from cases.model import Variant


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


def test_swish_after_and_qdq_after():
    graph = conv_net()
    bn_out = named(graph, "bn").outputs[0]
    assert [n.name for n in m.swish_after(bn_out)] == ["sigmoid", "mul"]
    assert [n.op for n in m.qdq_after(named(graph, "mul").outputs[0])] == ["QuantizeLinear", "DequantizeLinear"]
    assert m.qdq_after(bn_out) == []
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


def test_ancestors_and_descendants_are_breadth_first_nearest_first():
    graph = conv_net(silu=False)
    conv = named(graph, "conv")
    assert [n.name for n in m.ancestors(*conv.inputs)] == [
        "in_q/DequantizeLinear", "w_q/DequantizeLinear", "in_q/QuantizeLinear", "w_q/QuantizeLinear"]
    assert [n.name for n in m.descendants(*conv.outputs)] == ["bn", "out_q/QuantizeLinear", "out_q/DequantizeLinear"]
    assert [n.name for n in m.ancestors(graph.outputs[0], max_nodes=2)] == ["out_q/DequantizeLinear",
                                                                            "out_q/QuantizeLinear"]
    assert m.ancestors(graph.inputs[0]) == [] and m.descendants(graph.outputs[0]) == []


def qdq_conv_graph(weights: str = "float-qdq", group: int = 1, channels: int = 8, per_channel: bool = True):
    """x -> Q/DQ -> Conv(W) -> BN -> Relu -> output, W in one of the S3 weight forms; returns (graph, nodes by op)."""
    graph = gs.Graph(opset=13)
    x = g.graph_input("x", (1, channels, 8, 8))
    graph.inputs.append(x)
    x_dq = g.torch_fake_quantize(graph, x, "/in_q", g.UNIT_ACTIVATION_SCALE)
    weight = g.conv_weight("w", (channels, channels // group, 3, 3))
    scale = g.per_channel_scale(weight.values) if per_channel else g.per_tensor_scale(weight.values)
    axis = 0 if per_channel else None
    if weights == "float-qdq":
        w = g.torch_fake_quantize(graph, weight, "/w_q", scale, axis=axis)
    elif weights == "int8-dq":
        params = g.quantizer_params("w_scale", "w_zp", scale)
        w = g.dequantize_linear(graph, gs.Constant("w_int8", g.quantize_values(weight.values, scale)), *params,
                                "/w_dq", "w_dq_out", axis)
    else:
        w = weight
    y = g.torch_node(graph, "Conv", "/conv", [x_dq, w], g.conv_attrs(3, pad=1, group=group))
    y = g.torch_node(graph, "BatchNormalization", "/bn", [y, *g.batchnorm_params("bn", channels)])
    g.mark_output(graph, g.torch_node(graph, "Relu", "/act", [y]), (1, channels, 8, 8))
    return graph, {n.op: n for n in graph.nodes if n.op not in m.QDQ_OPS}


def float_graph():
    """x -> Conv -> Relu -> (output, Sigmoid -> output2): no Q/DQ, a tensor read twice."""
    graph = gs.Graph(opset=17)
    x = g.graph_input("x", (1, 4, 8, 8))
    graph.inputs.append(x)
    y = g.torch_node(graph, "Conv", "/conv", [x, g.conv_weight("w", (4, 4, 3, 3))], g.conv_attrs(3, pad=1))
    r = g.torch_node(graph, "Relu", "/act", [y])
    s = g.torch_node(graph, "Sigmoid", "/gate", [r])
    g.mark_output(graph, r, (1, 4, 8, 8))
    g.mark_output(graph, s, (1, 4, 8, 8))
    return graph


@pytest.mark.parametrize("indexed", [False, True], ids=["walk", "indexed"])
def test_nodes_of_keeps_graph_order_and_filters_by_op(indexed):
    graph, _ = qdq_conv_graph()
    with m.indexed(graph) if indexed else contextlib.nullcontext():
        assert [n.name for n in m.nodes_of(graph, "Relu", "Conv")] == ["/conv/Conv", "/act/Relu"]
        assert [n.op for n in m.nodes_of(graph, "DequantizeLinear", "QuantizeLinear")] == \
            [n.op for n in graph.nodes if n.op in m.QDQ_OPS]
        assert list(m.nodes_of(graph, "Mish")) == [] and m.has_qdq(graph)


def test_the_index_answers_only_for_its_own_graph_and_only_while_open():
    graph, other = qdq_conv_graph()[0], float_graph()
    with m.indexed(graph):
        graph.nodes.append(gs.Node("Mish", name="/late/Mish"))  # not in the index: matchers never change a graph
        assert list(m.nodes_of(graph, "Mish")) == []
        assert [n.op for n in m.nodes_of(other, "Conv")] == ["Conv"]  # another graph is walked
    assert [n.name for n in m.nodes_of(graph, "Mish")] == ["/late/Mish"]


def test_producer_and_consumers_follow_graphsurgeon_links():
    graph = float_graph()
    conv, relu, sigmoid = graph.nodes
    assert m.producer(relu.outputs[0]) is relu and m.producer(graph.inputs[0]) is None
    assert m.producer(conv.inputs[1]) is None  # an initializer has no producer
    assert m.consumers(relu.outputs[0]) == [sigmoid]
    assert m.only_consumer(conv.outputs[0]) is relu and m.only_consumer(sigmoid.outputs[0]) is None


def test_graph_output_and_read_elsewhere():
    graph = float_graph()
    conv, relu, sigmoid = graph.nodes
    assert m.is_graph_output(graph, relu.outputs[0]) and not m.is_graph_output(graph, conv.outputs[0])
    assert not m.read_elsewhere(graph, conv.outputs[0], relu)
    assert m.read_elsewhere(graph, conv.outputs[0])  # read by the relu, which is not named a reader
    assert m.read_elsewhere(graph, relu.outputs[0], sigmoid)  # a graph output is read by the user


def test_constants_are_initializers_or_constant_node_outputs():
    graph = gs.Graph(opset=17)
    const_out = gs.Variable("c")
    graph.nodes.append(gs.Node("Constant", attrs={"value": gs.Constant("v", np.ones(2, np.float32))},
                               outputs=[const_out]))
    assert m.is_constant(const_out)
    assert m.is_constant(gs.Constant("w", np.ones(2, np.float32)))
    assert not m.is_constant(gs.Variable("x"))


@pytest.mark.parametrize("weights", ["float-qdq", "int8-dq"])
def test_quantized_weight_forms_lead_back_to_their_constant(weights):
    _, ops = qdq_conv_graph(weights)
    conv = ops["Conv"]
    assert m.is_quantized_weight(conv.inputs[1]) and m.is_quantized_conv(conv)
    constant = m.weight_constant(conv.inputs[1])
    assert constant.name == ("w" if weights == "float-qdq" else "w_int8")
    assert [n.op for n in m.quantizer_before(conv.inputs[1])] == (
        ["QuantizeLinear", "DequantizeLinear"] if weights == "float-qdq" else ["DequantizeLinear"])
    assert bool(m.qdq_before(conv.inputs[1])) == (weights == "float-qdq")


def test_a_float_weight_is_its_own_constant_and_not_quantized():
    _, ops = qdq_conv_graph("float")
    conv = ops["Conv"]
    assert m.weight_constant(conv.inputs[1]) is conv.inputs[1]
    assert not m.is_quantized_weight(conv.inputs[1]) and not m.is_quantized_conv(conv)
    assert m.quantizer_before(conv.inputs[1]) == [] and m.qdq_before(conv.inputs[1]) == []
    assert m.dequantized(conv.inputs[0]).name == "/in_q/DequantizeLinear"


def test_dequantized_activation_is_not_a_weight():
    _, ops = qdq_conv_graph()
    activation = ops["Conv"].inputs[0]
    assert m.dequantized(activation) is not None and m.weight_constant(activation) is None
    assert not m.is_quantized_weight(activation)


def test_through_qdq_returns_the_tensor_before_the_pair():
    graph, ops = qdq_conv_graph()
    source, pair = m.through_qdq(ops["Conv"].inputs[0])
    assert source is graph.inputs[0] and [n.op for n in pair] == ["QuantizeLinear", "DequantizeLinear"]
    assert m.through_qdq(graph.inputs[0]) == (graph.inputs[0], [])


def test_the_qdq_walkers_share_one_order_producer_first():
    """A pair is [Q, DQ] whichever side it is walked from; the tensor reached comes first, the nodes after it."""
    graph, ops = qdq_conv_graph()
    q, dq = (n for n in graph.nodes if n.name.startswith("/in_q/"))
    x, conv_input = graph.inputs[0], ops["Conv"].inputs[0]
    assert m.qdq_after(x) == m.qdq_before(conv_input) == m.quantizer_before(conv_input) == [q, dq]
    assert m.through_qdq(conv_input) == (x, [q, dq])
    assert m.path_between(x, conv_input) == [q, dq]


def test_per_channel_and_per_tensor_scales():
    for per_channel in (True, False):
        _, ops = qdq_conv_graph(per_channel=per_channel)
        assert m.is_per_channel(ops["Conv"].inputs[1]) is per_channel
        assert (m.quantization_axis(ops["Conv"].inputs[1]) == 0) is per_channel
    assert not m.is_per_channel(ops["Conv"].inputs[0])  # the activation quantizer: one scale


@pytest.mark.parametrize("group, channels, depthwise", [(8, 8, True), (4, 8, False), (1, 8, False)])
def test_depthwise_means_one_input_channel_per_group(group, channels, depthwise):
    _, ops = qdq_conv_graph(group=group, channels=channels)
    assert m.is_depthwise(ops["Conv"]) is depthwise
    assert m.attr(ops["Conv"], "group") == group and m.attr(ops["Conv"], "missing", 7) == 7


def test_channels_of_reads_static_dimensions_only():
    assert m.channels_of(g.graph_input("x", (1, 3, 32, 32))) == 3
    assert m.channels_of(g.graph_input("x", (1, 3, 32, 32)), axis=2) == 32
    assert m.channels_of(gs.Variable("x", dtype=np.float32, shape=("N", "C", 8, 8))) is None
    assert m.channels_of(gs.Variable("x")) is None


def test_has_qdq():
    assert m.has_qdq(qdq_conv_graph()[0]) and not m.has_qdq(float_graph())


def test_producer_skipping_walks_through_the_named_ops():
    _, ops = qdq_conv_graph()
    node, skipped = m.producer_skipping(ops["Relu"].inputs[0], "BatchNormalization")
    assert node is ops["Conv"] and skipped == [ops["BatchNormalization"]]
    assert m.producer_skipping(ops["Relu"].inputs[0]) == (ops["BatchNormalization"], [])
    node, skipped = m.producer_skipping(ops["Relu"].outputs[0], "BatchNormalization", "Relu")
    assert node is ops["Conv"] and skipped == [ops["BatchNormalization"], ops["Relu"]]  # data-flow order


def test_path_between_lists_the_nodes_from_the_source_on():
    graph, _ = qdq_conv_graph()
    x, out = graph.inputs[0], graph.outputs[0]
    path = m.path_between(x, out)
    assert [n.op for n in path] == ["QuantizeLinear", "DequantizeLinear", "Conv", "BatchNormalization", "Relu"]
    assert m.path_between(out, out) == []
    assert m.path_between(out, x) is None  # the output is no ancestor of the input
    assert m.path_between(x, out, max_nodes=3) is None  # five nodes away


def test_nearest_variant_requires_some_params_and_measures_the_others():
    variants = [
        Variant("reported", "failing", "", {"form": "a", "channels": 32}),
        Variant("c4", "sweep", "", {"form": "a", "channels": 4}),
        Variant("c144", "sweep", "", {"form": "a", "channels": 144}),
        Variant("fixed", "workaround", "", {"form": "b", "channels": 32}),
        Variant("ctl", "control", "", {"form": "a", "channels": 64}),
    ]
    assert m.nearest_variant(variants, {"form": "a", "channels": 32}, required=("form",)) == (variants[0], [])
    variant, differences = m.nearest_variant(variants, {"form": "a", "channels": 64}, required=("form",))
    assert variant.name == "reported"  # 64 is one doubling from 32, 1.2 from 144; the control is never a candidate
    assert differences == ["channels 64 (library: 32)"]
    assert m.nearest_variant(variants, {"form": "a", "channels": 128}, required=("form",))[0].name == "c144"
    assert m.nearest_variant(variants, {"form": "b", "channels": 4}, required=("form",))[0].name == "fixed"
    assert m.nearest_variant(variants, {"form": "c", "channels": 4}, required=("form",)) is None
    # An unknown value counts for nothing: the tie goes to the variant declared first.
    assert m.nearest_variant(variants, {"form": "a", "channels": None}, required=("form",)) == (variants[0], [])
    # Without required params a categorical difference costs 1.
    assert m.nearest_variant(variants, {"form": "b", "channels": 4})[0].name == "c4"


def fake_quant_linear_graph(weight_steps: tuple[str, ...] = ("Transpose",), per_channel: bool = True):
    """``F.linear(x, fake_quant(W))`` as torch.onnx writes it on a 3-D input: MatMul(DQ(Q(x)), Transpose(DQ(Q(W)))) +
    Add(bias), W (6, 8) quantized per output channel (axis 0); ``weight_steps`` are the nodes between the weight's DQ
    and the MatMul ("Transpose", "Identity", "Reshape")."""
    graph = gs.Graph(opset=13)
    x = g.graph_input("x", (1, 4, 8))
    graph.inputs.append(x)
    x = g.torch_fake_quantize(graph, x, "/fc/input_quantizer", g.UNIT_ACTIVATION_SCALE)
    w = g.dense_weight("fc.weight", (6, 8), 8)
    scale = g.per_channel_scale(w.values) if per_channel else g.per_tensor_scale(w.values)
    w = g.torch_fake_quantize(graph, w, "/fc/weight_quantizer", scale, axis=0 if per_channel else None)
    for index, op in enumerate(weight_steps):
        inputs = [w, gs.Constant(f"shape_{index}", np.array([8, 6], np.int64))] if op == "Reshape" else [w]
        w = g.node(graph, op, f"/fc/{op}_{index}", inputs, f"/fc/{op}_{index}_output_0",
                   {"perm": [1, 0]} if op == "Transpose" else None)
    y = g.torch_node(graph, "MatMul", "/fc", [x, w])
    y = g.torch_node(graph, "Add", "/fc", [g.bias("fc.bias", 6), y])
    g.mark_output(graph, y, (1, 4, 6))
    return graph


def test_a_weight_is_anything_computed_from_constants_alone():
    graph = fake_quant_linear_graph(("Transpose", "Identity", "Reshape", "Identity"))
    matmul = named(graph, "/fc/MatMul")
    with m.indexed(graph):
        assert m.is_weight(matmul.inputs[1])  # four nodes and a Q/DQ pair away from the initializer
        assert not m.is_weight(matmul.inputs[0])  # DQ(Q(graph input))
    assert m.is_weight(matmul.inputs[1]) and not m.is_weight(matmul.inputs[0])  # the same without the index
    noise = gs.Variable("noise")
    graph.nodes.append(gs.Node("RandomNormal", "random", attrs={"shape": [2]}, outputs=[noise]))
    assert not m.is_weight(noise)  # no input, but no constant either


def test_a_weight_behind_a_transpose_is_a_quantized_weight_with_its_axis_moved():
    transposed = named(fake_quant_linear_graph(), "/fc/MatMul").inputs[1]
    assert m.is_quantized_weight(transposed) and m.dequantized(transposed) is None
    assert m.weight_quantization_axis(transposed) == (True, 1)  # axis 0 of (out, in) is axis 1 of (in, out)
    per_tensor = named(fake_quant_linear_graph(per_channel=False), "/fc/MatMul").inputs[1]
    assert m.weight_quantization_axis(per_tensor) == (True, None)
    reshaped = named(fake_quant_linear_graph(("Reshape",)), "/fc/MatMul").inputs[1]
    assert m.is_quantized_weight(reshaped) and m.weight_quantization_axis(reshaped) == (False, None)
    activation = named(fake_quant_linear_graph(), "/fc/MatMul").inputs[0]
    assert not m.is_quantized_weight(activation) and m.weight_quantization_axis(activation) == (False, None)


def test_nearest_upstream_has_no_horizon():
    graph = gs.Graph(opset=17)
    x = g.graph_input("x", (1, 4, 8))
    graph.inputs.append(x)
    y = g.node(graph, "LayerNormalization", "ln", [x, gs.Constant("s", np.ones(8, np.float32))], "ln_out")
    for index in range(60):
        y = g.node(graph, "Identity", f"id_{index}", [y], f"id_{index}_out")
    assert m.ancestor(y, "LayerNormalization") is None  # the 32-node window of `ancestor`
    assert m.nearest_upstream([y], lambda node: node.op == "LayerNormalization").name == "ln"
    assert m.nearest_upstream([y], lambda node: node.op == "Softmax") is None
