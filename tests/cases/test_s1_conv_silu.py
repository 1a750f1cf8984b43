"""S1: the torch.onnx YOLO stem Conv -> Sigmoid -> Mul, its output-marking workarounds and its sweeps."""
from __future__ import annotations

import onnx_graphsurgeon as gs
import pytest

from cases.s1_conv_silu import CONV, CONV_OUTPUT, MUL, REPORTED, SIGMOID, SIGMOID_OUTPUT, ConvSilu


def variant(name):
    return next(v for v in ConvSilu.variants if v.name == name)


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
