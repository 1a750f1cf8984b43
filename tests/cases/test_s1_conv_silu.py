"""S1: the torch.onnx YOLO stem Conv -> Sigmoid -> Mul, its output-marking workarounds and its sweeps."""
from __future__ import annotations

import onnx_graphsurgeon as gs
import pytest

from cases import _graphs as g
from cases.s1_conv_silu import CONV, CONV_OUTPUT, MUL, REPORTED, SIGMOID, SIGMOID_OUTPUT, ConvSilu


variant = ConvSilu.variant


def graph_of(name):
    return ConvSilu.build(variant(name)).graph


def changed_params(name) -> set[str]:
    return {k for k, value in variant(name).params.items() if REPORTED[k] != value}


def test_declaration():
    assert (ConvSilu.pattern, ConvSilu.mode, ConvSilu.opset) == ("S1", "implicit-int8", 17)
    assert "https://github.com/NVIDIA/TensorRT/issues/3640" in ConvSilu.links


def test_as_reported_has_the_torch_onnx_names_and_edges_of_the_log():
    graph = graph_of("as-reported")
    conv, sigmoid, mul = graph.nodes
    assert [(n.op, n.name) for n in graph.nodes] == [("Conv", CONV), ("Sigmoid", SIGMOID), ("Mul", MUL)]
    assert [t.name for t in conv.inputs] == ["images", "model.0.conv.weight", "model.0.conv.bias"]
    assert conv.outputs[0].name == "/model.0/conv/Conv_output_0"
    assert conv.attrs["kernel_shape"] == [3, 3] and conv.attrs["strides"] == [2, 2] and conv.attrs["pads"] == [1] * 4
    assert sigmoid.inputs == conv.outputs and sigmoid.outputs[0].name == "/model.0/act/Sigmoid_output_0"
    # SiLU as torch.onnx writes it: Mul consumes both the conv output and the sigmoid output.
    assert mul.inputs == [conv.outputs[0], sigmoid.outputs[0]]
    assert [t.name for t in graph.outputs] == ["/model.0/act/Mul_output_0"]
    assert graph.inputs[0].shape == (1, 3, 32, 32) and conv.inputs[1].shape == (16, 3, 3, 3)
    assert ConvSilu.build(variant("as-reported")).expected_int8 == (CONV,)


@pytest.mark.parametrize(
    "name, tensor", [("conv-output-marked", CONV_OUTPUT), ("sigmoid-output-marked", SIGMOID_OUTPUT)]
)
def test_workaround_marks_one_tensor_as_an_extra_output_in_graph_and_knobs(name, tensor):
    reported, graph = graph_of("as-reported"), graph_of(name)
    assert variant(name).role == "workaround"
    assert [t.name for t in graph.outputs] == ["/model.0/act/Mul_output_0", tensor]
    assert variant(name).knobs.extra_outputs == (tensor,)
    assert [(n.op, n.name) for n in graph.nodes] == [(n.op, n.name) for n in reported.nodes]
    assert variant(name).claims[0].target == "trt86-orin" and variant(name).claims[0].outcome == "pass"


def test_channel_sweeps_change_only_the_output_channels():
    for name, channels in (("channels-32", 32), ("channels-64", 64)):
        assert changed_params(name) == {"out_channels"}
        conv = graph_of(name).nodes[0]
        assert conv.inputs[1].shape == (channels, 3, 3, 3) and conv.inputs[2].shape == (channels,)
        assert graph_of(name).outputs[0].shape == (1, channels, 16, 16)


def test_size_sweep_changes_only_the_input_size():
    assert changed_params("size-64") == {"size"}
    assert graph_of("size-64").inputs[0].shape == (1, 3, 64, 64)


def test_minmax_sweep_changes_only_the_calibrator():
    assert variant("calibrator-minmax").knobs.calibrator == "minmax"
    assert variant("as-reported").knobs.calibrator == "entropy2"
    same = gs.export_onnx(graph_of("calibrator-minmax")).SerializeToString()
    assert same == gs.export_onnx(graph_of("as-reported")).SerializeToString()


def test_claims_as_reported():
    claims = {c.target: c for c in variant("as-reported").claims}
    orin = claims["trt86-orin"]
    assert (orin.outcome, orin.category, orin.strength) == ("fail", "no-implementation", "issue-thread")
    assert (claims["trt92-x86"].outcome, claims["trt92-x86"].strength) == ("pass", "issue-thread")
    assert "platform" in claims["trt92-x86"].note
    for target in ("trt100-x86", "trt100-orin"):
        assert (claims[target].outcome, claims[target].strength) == ("pass", "write-up-only")
    assert all(not variant(name).claims for name in ("channels-32", "channels-64", "size-64", "calibrator-minmax"))


# ---- the scanner's matcher ----

def unrelated_graphs():
    from cases.control import ImplicitConvRelu, QdqConvRelu
    from cases.s4_bn_mish import BnMish

    return [case.build(v).graph for case in (ImplicitConvRelu, QdqConvRelu, BnMish) for v in case.variants]


@pytest.mark.parametrize("name", ["as-reported", "conv-output-marked", "sigmoid-output-marked", "channels-32",
                                  "channels-64", "size-64"])
def test_find_names_each_variant_by_its_form(name):
    (match,) = ConvSilu.find(graph_of(name))
    assert (match.case, match.variant) == ("s1-conv-silu", name)
    assert match.nodes == (CONV, SIGMOID, MUL)


def test_find_cannot_tell_a_knob_only_sweep_from_the_reported_form():
    """The MinMax sweep has the reported graph; only the calibrator differs, which no ONNX file carries."""
    (match,) = ConvSilu.find(graph_of("calibrator-minmax"))
    assert match.variant == "as-reported"


def test_find_says_why_a_workaround_form_is_one():
    (match,) = ConvSilu.find(graph_of("conv-output-marked"))
    assert "graph output" in match.note and "breaks" in match.note


def test_find_nothing_on_unrelated_graphs():
    assert all(ConvSilu.find(graph) == [] for graph in unrelated_graphs())


def test_find_nothing_when_the_model_has_qdq():
    """With any Q/DQ TensorRT quantizes explicitly and never calibrates: the implicit-INT8 pattern cannot arise."""
    graph = graph_of("as-reported")
    conv = graph.nodes[0]
    g.torch_fake_quantize(graph, graph.inputs[0], "/q", g.UNIT_ACTIVATION_SCALE)
    conv.inputs[0] = graph.nodes[-1].outputs[0]
    assert ConvSilu.find(graph) == []


def test_find_needs_the_sigmoid_of_the_same_tensor():
    """conv * sigmoid(other) is a gate, not SiLU."""
    graph = graph_of("as-reported")
    other = g.graph_input("other", (1, 16, 16, 16))
    graph.inputs.append(other)
    graph.nodes[1].inputs[0] = other
    assert ConvSilu.find(graph) == []


def test_find_names_the_nearest_variant_and_says_how_a_deeper_layer_differs():
    graph = gs.Graph(opset=17)
    x = g.graph_input("feat", (1, 48, 20, 20))
    graph.inputs.append(x)
    weight = g.conv_weight("w", (64, 48, 3, 3))
    conv = g.torch_node(graph, "Conv", "/model.4/cv1/conv", [x, weight], g.conv_attrs(3, pad=1))
    sigmoid = g.torch_node(graph, "Sigmoid", "/model.4/cv1/act", [conv])
    g.mark_output(graph, g.torch_node(graph, "Mul", "/model.4/cv1/act", [sigmoid, conv]), (1, 64, 20, 20))
    (match,) = ConvSilu.find(graph)
    assert match.variant == "channels-64"
    assert match.nodes == ("/model.4/cv1/conv/Conv", "/model.4/cv1/act/Sigmoid", "/model.4/cv1/act/Mul")
    assert "not a 3-channel stem conv (48 input channels)" in match.note and "size 20 (library: 32)" in match.note
