"""S3: depthwise/grouped Q/DQ conv with the onnx-tensorrt ``node_of_<tensor>`` names of the log, and its sweeps."""
from __future__ import annotations

import itertools

import numpy as np
import onnx_graphsurgeon as gs
import pytest

from cases import _graphs as g
from cases.s3_depthwise_qdq import (
    CHANNELS_PER_GROUP,
    CONV,
    DEPTHWISE_CHANNELS,
    GROUPS,
    REPORTED,
    SIZE,
    DepthwiseQdq,
)

LOG_LAYER = "weights + node_of_weights_quantized + node_of_output"


def variant_with(**params):
    return next(v for v in DepthwiseQdq.variants if v.params == {**REPORTED, **params})


def nodes_of(variant):
    return {n.name: n for n in DepthwiseQdq.build(variant).graph.nodes}


def fused_layer_name(nodes) -> str:
    """The name TensorRT gives the weight constant + weight Q + conv fusion (DQ names are dropped, see F25/S5)."""
    conv = nodes[CONV]
    weight_q = conv.inputs[1].inputs[0].inputs[0].inputs[0]
    return f"{weight_q.inputs[0].name} + {weight_q.name} + {conv.name}"


def test_declaration():
    assert (DepthwiseQdq.pattern, DepthwiseQdq.mode, DepthwiseQdq.opset) == ("S3", "explicit-qdq", 13)
    assert "https://github.com/NVIDIA/TensorRT/issues/4060" in DepthwiseQdq.links


def test_failing_form_reproduces_the_layer_name_of_the_log():
    failing = [v for v in DepthwiseQdq.variants if v.role == "failing"]
    assert [v.params for v in failing] == [REPORTED]
    nodes = nodes_of(failing[0])
    assert fused_layer_name(nodes) == LOG_LAYER
    assert list(nodes) == [
        "node_of_input_quantized", "node_of_input_dequantized",
        "node_of_weights_quantized", "node_of_weights_dequantized", CONV,
    ]


@pytest.mark.parametrize("variant", DepthwiseQdq.variants, ids=lambda v: v.name)
def test_every_node_is_named_as_onnx_tensorrt_names_an_unnamed_node(variant):
    for node in DepthwiseQdq.build(variant).graph.nodes:
        assert node.name == f"node_of_{node.outputs[0].name}"


@pytest.mark.parametrize("variant", DepthwiseQdq.variants, ids=lambda v: v.name)
def test_structure_input_qdq_then_grouped_conv_with_weight_form_and_granularity(variant):
    p = variant.params
    graph = DepthwiseQdq.build(variant).graph
    conv = {n.name: n for n in graph.nodes}[CONV]
    x_dq = conv.inputs[0].inputs[0]
    assert x_dq.op == "DequantizeLinear" and x_dq.inputs[0].inputs[0].op == "QuantizeLinear"
    assert x_dq.inputs[0].inputs[0].inputs[0] is graph.inputs[0]
    assert x_dq.inputs[1].values.shape == ()  # per-tensor input scale
    assert conv.attrs["group"] == p["groups"] and conv.attrs["kernel_shape"] == [3, 3] and conv.attrs["pads"] == [1] * 4
    assert graph.inputs[0].shape == (1, p["channels"], 16, 16)
    assert graph.outputs == conv.outputs and conv.outputs[0].name == "output"

    weight = conv.inputs[1]
    if p["weights"] == "float":
        assert isinstance(weight, gs.Constant) and weight.name == "weights"
        return
    w_dq = weight.inputs[0]
    assert w_dq.op == "DequantizeLinear" and weight.name == "weights_dequantized"
    if p["weights"] == "float-qdq":
        w_q = w_dq.inputs[0].inputs[0]
        stored = w_q.inputs[0]
        assert w_q.op == "QuantizeLinear" and w_q.attrs == w_dq.attrs
        assert (stored.name, stored.values.dtype) == ("weights", np.float32)
    else:
        stored = w_dq.inputs[0]
        assert isinstance(stored, gs.Constant)
        assert (stored.name, stored.values.dtype) == ("weights_quantized", np.int8)
    assert stored.shape == (p["channels"], p["channels"] // p["groups"], 3, 3)
    if p["per_channel"]:
        assert w_dq.attrs == {"axis": 0} and w_dq.inputs[1].shape == (p["channels"],)
    else:
        assert w_dq.attrs == {} and w_dq.inputs[1].shape == ()


def test_int8_weights_are_what_quantizelinear_makes_of_the_float_weights():
    for per_channel in (True, False):
        float_conv = nodes_of(variant_with(per_channel=per_channel))["node_of_weights_quantized"]
        int8_dq = nodes_of(variant_with(weights="int8-dq", per_channel=per_channel))["node_of_weights_dequantized"]
        weights, scale = float_conv.inputs[0].values, float_conv.inputs[1].values
        assert np.array_equal(int8_dq.inputs[1].values, scale)
        assert np.array_equal(int8_dq.inputs[0].values, g.quantize_values(weights, scale))


def test_sweeps_cover_the_declared_axes():
    params = [v.params for v in DepthwiseQdq.variants]
    depthwise = {
        (p["channels"], p["weights"], p["per_channel"])
        for p in params
        if p["groups"] == p["channels"] and p["weights"] != "float"
    }
    assert depthwise == set(itertools.product(DEPTHWISE_CHANNELS, ("float-qdq", "int8-dq"), (True, False)))
    grouped = {(p["channels"] // p["groups"], p["weights"]) for p in params if p["groups"] != p["channels"]}
    assert grouped == set(itertools.product(CHANNELS_PER_GROUP, ("float-qdq", "int8-dq")))
    assert all(p["groups"] == GROUPS for p in params if p["groups"] != p["channels"])


def test_float_weight_workaround_removes_only_the_weight_qdq():
    workaround = variant_with(weights="float", per_channel=False)
    assert workaround.role == "workaround"
    ops = [n.op for n in DepthwiseQdq.build(workaround).graph.nodes]
    assert ops == ["QuantizeLinear", "DequantizeLinear", "Conv"]
    (claim,) = workaround.claims
    assert (claim.target, claim.outcome, claim.strength) == ("trt86-x86", "fallback", "issue-thread")


def test_claims_on_the_failing_form():
    claims = {c.target: c for c in variant_with().claims}
    assert (claims["trt86-x86"].outcome, claims["trt86-x86"].category) == ("fail", "no-implementation")
    assert claims["trt86-x86"].strength == "issue-thread" and "T2000" in claims["trt86-x86"].note
    assert (claims["trt102-x86"].outcome, claims["trt102-x86"].strength) == ("fallback", "write-up-only")
    assert all(not v.claims for v in DepthwiseQdq.variants if v.role == "sweep")


def test_weights_stay_below_the_tolerance_premise():
    """The tolerance allows 2 input steps because every |w| < 2."""
    for variant in DepthwiseQdq.variants:
        weights = [t for t in DepthwiseQdq.build(variant).graph.tensors().values() if t.name == "weights"]
        assert all(np.abs(w.values).max() < 2 for w in weights)


# ---- the scanner's matcher ----

@pytest.mark.parametrize("variant", DepthwiseQdq.variants, ids=lambda v: v.name)
def test_find_names_every_variant_by_its_form(variant):
    (match,) = DepthwiseQdq.find(DepthwiseQdq.build(variant).graph)
    assert (match.case, match.variant) == ("s3-depthwise-qdq", variant.name)
    assert match.nodes[0] == CONV
    assert "node_of_input_dequantized" in match.nodes


def test_find_lists_the_weight_quantizer_nodes():
    (match,) = DepthwiseQdq.find(DepthwiseQdq.build(variant_with()).graph)
    assert set(match.nodes) == {CONV, "node_of_input_quantized", "node_of_input_dequantized",
                                "node_of_weights_quantized", "node_of_weights_dequantized"}


def test_find_names_the_nearest_channel_count_of_the_same_weight_form():
    graph = DepthwiseQdq.build(variant_with()).graph
    nodes = {n.name: n for n in graph.nodes}
    # 64 channels, depthwise: the library has 32 (the reported form) and 144; 32 is nearer.
    graph.inputs[0].shape = (1, 64, SIZE, SIZE)
    nodes["node_of_weights_quantized"].inputs[0] = g.conv_weight("weights", (64, 1, 3, 3))
    nodes[CONV].attrs["group"] = 64
    (match,) = DepthwiseQdq.find(graph)
    assert match.variant == "depthwise-c32-float-qdq-per-channel"
    assert "channels 64 (library: 32)" in match.note and "depthwise conv" in match.note


def test_find_nothing_for_ungrouped_or_unquantized_convs():
    from cases.control import ImplicitConvRelu, QdqConvRelu
    from cases.s4_bn_mish import BnMish

    for case in (ImplicitConvRelu, QdqConvRelu):
        assert all(DepthwiseQdq.find(case.build(v).graph) == [] for v in case.variants)
    # The implicit S4 forms have a depthwise conv, but no Q/DQ on its input.
    implicit = [v for v in BnMish.variants if BnMish.mode_of(v) == "implicit-int8"]
    assert all(DepthwiseQdq.find(BnMish.build(v).graph) == [] for v in implicit)


def test_find_the_depthwise_qdq_conv_of_another_case_too():
    """S4's Q/DQ workaround quantizes its depthwise conv: that conv has the S3 form, and is found as such."""
    from cases.s4_bn_mish import CONV as S4_CONV
    from cases.s4_bn_mish import BnMish

    v = BnMish.variant("qdq-conv-and-before-decomposed-mish")
    (match,) = DepthwiseQdq.find(BnMish.build(v).graph)
    assert match.nodes[0] == S4_CONV and match.variant == "depthwise-c32-float-qdq-per-channel"
