"""S2: multi-input Conv -> InstanceNormalization -> Relu branches, summed, then an INT64-shaped Reshape."""
from __future__ import annotations

import numpy as np
import onnx_graphsurgeon as gs
import pytest

from cases import _graphs as g
from cases.s2_instancenorm import CHANNELS, REPORTED, SHAPE_INITIALIZER, InstanceNorm


variant = InstanceNorm.variant


def graph_of(name):
    return InstanceNorm.build(variant(name)).graph


def int64_initializers(graph):
    return [t for t in graph.tensors().values() if isinstance(t, gs.Constant) and t.values.dtype == np.int64]


def test_declaration():
    assert (InstanceNorm.pattern, InstanceNorm.mode) == ("S2", "implicit-int8")
    assert InstanceNorm.opset >= 13
    assert InstanceNorm.links == ("https://github.com/NVIDIA/TensorRT/issues/3659",)


def test_every_branch_is_conv_instancenorm_relu_with_per_channel_scale_and_bias():
    graph = graph_of("as-reported")
    assert len(graph.inputs) == 4
    for image in graph.inputs:
        (conv,) = image.outputs
        (norm,) = conv.outputs[0].outputs
        (relu,) = norm.outputs[0].outputs
        assert (conv.op, norm.op, relu.op) == ("Conv", "InstanceNormalization", "Relu")
        scale, bias = norm.inputs[1:]
        assert isinstance(scale, gs.Constant) and isinstance(bias, gs.Constant)
        assert scale.shape == bias.shape == (CHANNELS,)
        assert not np.allclose(scale.values, 1)  # a real per-channel scale, not the identity


def test_branches_are_summed_then_reshaped_by_an_int64_initializer():
    graph = graph_of("as-reported")
    relus = {n.outputs[0].name for n in graph.nodes if n.op == "Relu"}
    adds = [n for n in graph.nodes if n.op == "Add"]
    assert len(adds) == 3
    assert {t.name for add in adds for t in add.inputs} - {a.outputs[0].name for a in adds} == relus
    (reshape,) = [n for n in graph.nodes if n.op == "Reshape"]
    assert reshape.inputs[0] is adds[-1].outputs[0] and graph.outputs == reshape.outputs
    shape = reshape.inputs[1]
    assert shape.name == SHAPE_INITIALIZER and shape.values.dtype == np.int64
    assert int64_initializers(graph) == [shape]


def test_instancenorm_knob_is_explicit_in_every_variant():
    assert all(v.knobs.native_instancenorm in (True, False) for v in InstanceNorm.variants)
    assert variant("as-reported").knobs.native_instancenorm is True
    assert variant("plugin-instancenorm").knobs.native_instancenorm is False


def test_plugin_sweep_changes_only_the_knob():
    assert variant("plugin-instancenorm").params == REPORTED
    same = gs.export_onnx(graph_of("plugin-instancenorm")).SerializeToString()
    assert same == gs.export_onnx(graph_of("as-reported")).SerializeToString()


def test_no_int64_sweep_drops_the_reshape_and_every_int64_initializer():
    graph = graph_of("no-int64-reshape")
    assert variant("no-int64-reshape").params == {**REPORTED, "int64_reshape": False}
    assert "Reshape" not in {n.op for n in graph.nodes} and not int64_initializers(graph)
    assert len(graph.inputs) == 4


def test_input_sweeps_change_the_number_of_inputs_and_branches():
    for name, count in (("inputs-2", 2), ("inputs-1", 1)):
        graph = graph_of(name)
        assert len(graph.inputs) == count
        assert [n.op for n in graph.nodes].count("InstanceNormalization") == count
        assert [n.op for n in graph.nodes].count("Add") == count - 1
        assert InstanceNorm.build(variant(name)).expected_int8 == tuple(f"/branch_{i}/conv/Conv" for i in range(count))


def test_claim_is_a_write_up_only_fallback_on_trt86_x86():
    (claim,) = variant("as-reported").claims
    assert (claim.target, claim.outcome, claim.strength) == ("trt86-x86", "fallback", "write-up-only")
    assert all(not v.claims for v in InstanceNorm.variants if v.role == "sweep")


# ---- the scanner's matcher ----

def test_find_one_match_per_instancenorm_with_its_conv_and_activation():
    matches = InstanceNorm.find(graph_of("as-reported"))
    assert [m.nodes for m in matches] == [
        (f"/branch_{i}/norm/InstanceNormalization", f"/branch_{i}/conv/Conv", f"/branch_{i}/act/Relu")
        for i in range(4)
    ]
    assert {m.variant for m in matches} == {"as-reported"}


@pytest.mark.parametrize("name", ["as-reported", "no-int64-reshape", "inputs-2", "inputs-1"])
def test_find_names_the_variant_by_input_count_and_int64_reshape(name):
    assert {m.variant for m in InstanceNorm.find(graph_of(name))} == {name}


def test_find_cannot_tell_the_plugin_sweep_from_the_reported_form():
    """NATIVE_INSTANCENORM is a parser flag, not part of the ONNX file."""
    assert {m.variant for m in InstanceNorm.find(graph_of("plugin-instancenorm"))} == {"as-reported"}


def test_find_nothing_on_unrelated_graphs():
    from cases.control import ImplicitConvRelu
    from cases.s1_conv_silu import ConvSilu

    for case in (ImplicitConvRelu, ConvSilu):
        assert all(InstanceNorm.find(case.build(v).graph) == [] for v in case.variants)


def test_find_nothing_in_a_qdq_model():
    graph = graph_of("inputs-1")
    conv = next(n for n in graph.nodes if n.op == "Conv")
    conv.inputs[0] = g.torch_fake_quantize(graph, graph.inputs[0], "/q", g.UNIT_ACTIVATION_SCALE)
    assert InstanceNorm.find(graph) == []
