"""S4: SandGlass depthwise Conv -> BatchNormalization -> Mish (decomposed or native), its Q/DQ workarounds, ReLU6."""
from __future__ import annotations

import onnx_graphsurgeon as gs
import pytest

from cases import _graphs as g
from cases.s4_bn_mish import CONV, OPERATORS_86, BnMish


variant = BnMish.variant


def graph_of(name):
    return BnMish.build(variant(name)).graph


def nodes_by_op(graph):
    return {n.op: n for n in graph.nodes}


def activation_input(graph):
    """The tensor the activation's first node (Mish, Softplus or Clip) reads."""
    first = next(n for n in graph.nodes if n.op in ("Mish", "Softplus", "Clip"))
    return first.inputs[0]


def test_declaration():
    assert (BnMish.pattern, BnMish.mode, BnMish.opset) == ("S4", "implicit-int8", 17)
    issues = {f"https://github.com/NVIDIA/TensorRT/issues/{n}" for n in (3869, 3870)}
    assert issues <= set(BnMish.links)


@pytest.mark.parametrize("variant", BnMish.variants, ids=lambda v: v.name)
def test_depthwise_sandglass_conv_then_batchnorm(variant):
    graph = BnMish.build(variant).graph
    conv, bn = nodes_by_op(graph)["Conv"], nodes_by_op(graph)["BatchNormalization"]
    assert conv.name == CONV and bn.inputs[0] is conv.outputs[0]
    weight = graph.tensors()["SandGlass1.0.weight"]
    assert weight.shape == (32, 1, 3, 3) and conv.attrs["group"] == 32 and conv.attrs["kernel_shape"] == [3, 3]
    assert [t.name for t in bn.inputs[1:]] == [
        "SandGlass1.1.weight", "SandGlass1.1.bias", "SandGlass1.1.running_mean", "SandGlass1.1.running_var"
    ]


def test_decomposed_mish_is_x_times_tanh_of_softplus_of_the_bn_output():
    graph = graph_of("decomposed-mish")
    ops = nodes_by_op(graph)
    bn_out = ops["BatchNormalization"].outputs[0]
    assert ops["Softplus"].inputs == [bn_out] and ops["Tanh"].inputs == ops["Softplus"].outputs
    assert ops["Mul"].inputs == [bn_out, ops["Tanh"].outputs[0]] and graph.outputs == ops["Mul"].outputs
    assert BnMish.opset_of(variant("decomposed-mish")) == 17 and "Mish" not in ops


def test_native_mish_is_one_op_at_opset_18():
    graph = graph_of("native-mish")
    ops = nodes_by_op(graph)
    assert ops["Mish"].inputs == ops["BatchNormalization"].outputs and graph.outputs == ops["Mish"].outputs
    assert variant("native-mish").opset == 18 and graph.opset == 18
    assert not {"Softplus", "Tanh"} & set(ops)


@pytest.mark.parametrize(
    "name", ["qdq-before-decomposed-mish", "qdq-before-native-mish", "qdq-conv-and-before-decomposed-mish"]
)
def test_workarounds_put_qdq_between_bn_and_the_activation_and_are_explicit(name):
    graph = graph_of(name)
    ops = nodes_by_op(graph)
    bn_out = ops["BatchNormalization"].outputs[0]
    (q,) = bn_out.outputs
    (dq,) = q.outputs[0].outputs
    assert (q.op, dq.op) == ("QuantizeLinear", "DequantizeLinear")
    assert activation_input(graph) is dq.outputs[0]
    if "Mul" in ops:
        assert ops["Mul"].inputs[0] is dq.outputs[0]
    assert BnMish.mode_of(variant(name)) == "explicit-qdq"


def test_literal_workaround_leaves_the_conv_without_qdq_and_the_full_one_quantizes_it():
    literal = nodes_by_op(graph_of("qdq-before-decomposed-mish"))["Conv"]
    assert literal.inputs[0].name == "input" and literal.inputs[1].name == "SandGlass1.0.weight"
    full = nodes_by_op(graph_of("qdq-conv-and-before-decomposed-mish"))["Conv"]
    x_dq, w_dq = (t.inputs[0] for t in full.inputs[:2])
    assert x_dq.op == w_dq.op == "DequantizeLinear"
    assert w_dq.attrs == {"axis": 0} and w_dq.inputs[0].inputs[0].inputs[0].name == "SandGlass1.0.weight"


def test_relu6_control_is_clip_0_6():
    variant_ = variant("relu6")
    clip = nodes_by_op(BnMish.build(variant_).graph)["Clip"]
    assert variant_.role == "control" and not variant_.claims
    assert [float(t.values) for t in clip.inputs[1:]] == [0.0, 6.0]


def test_claims():
    for name in ("decomposed-mish", "native-mish"):
        claims = {c.target: c for c in variant(name).claims}
        fail = claims["trt100-x86"]
        assert (fail.outcome, fail.category, fail.strength) == ("fail", "no-implementation", "issue-thread")
        assert (claims["trt102-x86"].outcome, claims["trt102-x86"].strength) == ("pass", "write-up-only")
    for v in BnMish.variants:
        trt86 = {c.target: c for c in v.claims if c.target.startswith("trt86-")}
        if v.params["activation"] == "native-mish":
            assert set(trt86) == {"trt86-x86", "trt86-orin"}
            for claim in trt86.values():
                assert (claim.outcome, claim.strength, claim.source) == ("unsupported", "documentation", OPERATORS_86)
        else:
            assert not trt86, v.name


# ---- the scanner's matcher ----

@pytest.mark.parametrize("name", ["decomposed-mish", "native-mish", "qdq-before-decomposed-mish",
                                  "qdq-before-native-mish", "qdq-conv-and-before-decomposed-mish"])
def test_find_names_each_mish_form(name):
    (match,) = BnMish.find(graph_of(name))
    assert (match.case, match.variant) == ("s4-bn-mish", name)
    assert match.nodes[:2] == (CONV, "/SandGlass1/SandGlass1.1/BatchNormalization")
    form = "the Mish op" if "native" in name else "x * tanh(softplus(x))"
    where = "in an implicit-INT8 model" if name.endswith("-mish") and "qdq" not in name else "with Q/DQ before it"
    assert match.note == f"Mish ({form}) after BatchNormalization, {where}"  # nothing differs from the library's


def test_find_lists_the_mish_nodes_of_either_form():
    (decomposed,) = BnMish.find(graph_of("decomposed-mish"))
    assert decomposed.nodes[2:] == tuple(f"/SandGlass1/SandGlass1.2/{op}" for op in ("Softplus", "Tanh", "Mul"))
    (native,) = BnMish.find(graph_of("native-mish"))
    assert native.nodes[2:] == ("/SandGlass1/SandGlass1.2/Mish",)


def test_find_nothing_for_relu6_or_other_graphs():
    from cases.control import ImplicitConvRelu
    from cases.s1_conv_silu import ConvSilu

    assert BnMish.find(graph_of("relu6")) == []
    for case in (ImplicitConvRelu, ConvSilu):
        assert all(BnMish.find(case.build(v).graph) == [] for v in case.variants)


def test_find_a_mish_right_after_a_plain_conv_and_says_it_is_not_depthwise():
    graph = gs.Graph(opset=18)
    x = g.graph_input("x", (1, 8, 8, 8))
    graph.inputs.append(x)
    y = g.torch_node(graph, "Conv", "/backbone/conv", [x, g.conv_weight("w", (16, 8, 3, 3))], g.conv_attrs(3, pad=1))
    g.mark_output(graph, g.torch_node(graph, "Mish", "/backbone/act", [y]), (1, 16, 8, 8))
    (match,) = BnMish.find(graph)
    assert match.nodes == ("/backbone/conv/Conv", "/backbone/act/Mish") and match.variant == "native-mish"
    assert "not" in match.note and "depthwise" in match.note


def test_find_a_mish_of_a_graph_input_is_no_match():
    """x * tanh(softplus(x)) on a tensor that no BN or Conv writes is not the pattern."""
    graph = gs.Graph(opset=17)
    x = g.graph_input("x", (1, 8, 8, 8))
    graph.inputs.append(x)
    t = g.torch_node(graph, "Tanh", "/act", [g.torch_node(graph, "Softplus", "/act", [x])])
    g.mark_output(graph, g.torch_node(graph, "Mul", "/act", [x, t]), (1, 8, 8, 8))
    assert BnMish.find(graph) == []
