"""P1: the Q/DQ depthwise Conv + BN + Swish that ends the graph, named as in the #3385 log, its successors and sweeps."""
from __future__ import annotations

import numpy as np
import onnx
import pytest

from cases.generate import export_model
from cases.p1_dwconv_swish_last_node import CONV, REPORTED, SUCCESSOR_CONV, SWEEP_SIZE
from cases.p1_dwconv_swish_last_node import DwConvSwishLastNode as P1

LOG_LAYER = "w + node_of_dqconv.dwconv + PWN(node_of_swish.sigmoid, node_of_swish.mul)"
Q, DQ = "QuantizeLinear", "DequantizeLinear"
HEAD = [Q, DQ, DQ, "Conv", "BatchNormalization"]
SWISH = ["Sigmoid", "Mul"]
# Every variant's exact node list: a variant that grows a node the pattern does not need fails here.
OPS = {
    "as-reported": [*HEAD, *SWISH, Q, DQ],
    "identity-successor": [*HEAD, *SWISH, Q, DQ, "Identity"],
    "pointwise-conv-successor": [*HEAD, *SWISH, Q, DQ, DQ, "Conv"],
    "relu": [*HEAD, "Relu", Q, DQ],
    "regular-conv": [*HEAD, *SWISH, Q, DQ],
    "channels-32": [*HEAD, *SWISH, Q, DQ],
    "size-32": [*HEAD, *SWISH, Q, DQ],
    "batch-4": [*HEAD, *SWISH, Q, DQ],
}


variant = P1.variant


def nodes(name):
    return {n.name: n for n in P1.build(variant(name)).graph.nodes}


def producer(tensor):
    return tensor.inputs[0]


def test_declaration():
    assert (P1.pattern, P1.mode, P1.opset) == ("P1", "explicit-qdq", 13)
    assert P1.links == ("https://github.com/NVIDIA/TensorRT/issues/3385",)
    assert "no analogue" in P1.backend_notes["onnxruntime"]


@pytest.mark.parametrize("v", P1.variants, ids=lambda v: v.name)
def test_each_variant_has_exactly_the_nodes_of_its_form(v):
    assert [n.op for n in P1.build(v).graph.nodes] == OPS[v.name]


@pytest.mark.parametrize("v", P1.variants, ids=lambda v: v.name)
def test_each_variant_passes_the_full_checker_with_strict_shape_inference(v):
    model, _ = export_model(P1, v)
    onnx.checker.check_model(model, full_check=True)
    onnx.shape_inference.infer_shapes(model, strict_mode=True)


def test_as_reported_carries_the_names_and_shapes_of_the_log():
    graph = P1.build(variant("as-reported")).graph
    by_name = {n.name: n for n in graph.nodes}
    conv = by_name[CONV]
    w_dq = producer(conv.inputs[1])
    stored = w_dq.inputs[0]
    # TensorRT names the fused layer after the weight initializer, the conv and the PWN of Sigmoid and Mul.
    sigmoid, mul = by_name["node_of_swish.sigmoid"], by_name["node_of_swish.mul"]
    assert f"{stored.name} + {conv.name} + PWN({sigmoid.name}, {mul.name})" == LOG_LAYER
    assert (stored.values.dtype, stored.shape) == (np.int8, (144, 1, 3, 3))
    assert [t.name for t in w_dq.inputs[1:]] == ["w_scale", "w_zero_point"] and w_dq.inputs[1].shape == (144,)
    assert (w_dq.name, w_dq.outputs[0].name, w_dq.attrs) == ("node_of_dqconv.dq_weight", "dqconv.dq_weight", {"axis": 0})
    assert conv.inputs[0].name == "dqconv.dq_feature" and conv.outputs[0].name == "dqconv.dwconv"
    assert conv.attrs["group"] == 144 and conv.attrs["kernel_shape"] == [3, 3] and conv.attrs["pads"] == [1] * 4
    assert graph.inputs[0].name == "input" and graph.inputs[0].shape == (1, 144, 128, 128)
    for node in graph.nodes:  # onnx-tensorrt's name for an unnamed node, as in the log
        assert node.name == f"node_of_{node.outputs[0].name}"


def test_as_reported_ends_with_swish_then_qdq_and_nothing_after_it():
    graph = P1.build(variant("as-reported")).graph
    by_name = {n.name: n for n in graph.nodes}
    bn, sigmoid, mul = (by_name[n] for n in ("node_of_dqconv.bn", "node_of_swish.sigmoid", "node_of_swish.mul"))
    assert bn.inputs[0] is by_name[CONV].outputs[0] and sigmoid.inputs == bn.outputs
    assert mul.inputs == [bn.outputs[0], sigmoid.outputs[0]]  # Swish: x * sigmoid(x)
    q = by_name["node_of_swish.q"]
    dq = by_name["node_of_output"]
    assert q.inputs[0] is mul.outputs[0] and dq.inputs[0] is q.outputs[0] and dq.op == DQ
    assert graph.outputs == dq.outputs and not dq.outputs[0].outputs
    assert P1.build(variant("as-reported")).expected_int8 == (CONV,)


def test_identity_workaround_adds_only_an_identity_after_the_trailing_dq():
    reported, graph = P1.build(variant("as-reported")).graph, P1.build(variant("identity-successor")).graph
    identity = graph.nodes[-1]
    assert (identity.op, identity.name) == ("Identity", "node_of_output")
    assert producer(identity.inputs[0]).op == DQ and producer(identity.inputs[0]).name == "node_of_swish.dq"
    assert graph.outputs == identity.outputs and graph.inputs[0].shape == (1, 144, 128, 128)
    assert [n.name for n in graph.nodes[:-2]] == [n.name for n in reported.nodes[:-1]]


def test_pointwise_successor_is_a_qdq_1x1_conv_reading_the_trailing_dq():
    built = P1.build(variant("pointwise-conv-successor"))
    conv = {n.name: n for n in built.graph.nodes}[SUCCESSOR_CONV]
    assert conv.op == "Conv" and conv.attrs["kernel_shape"] == [1, 1] and conv.attrs["group"] == 1
    assert producer(conv.inputs[0]).name == "node_of_swish.dq"
    w_dq = producer(conv.inputs[1])
    assert w_dq.op == DQ and w_dq.inputs[0].values.dtype == np.int8 and w_dq.attrs == {"axis": 0}
    assert built.graph.outputs == conv.outputs and built.expected_int8 == (CONV, SUCCESSOR_CONV)


@pytest.mark.parametrize("name, changed", [
    ("size-32", {"size": SWEEP_SIZE}), ("pointwise-conv-successor", {"size": SWEEP_SIZE, "successor": "pointwise-conv"}),
    ("relu", {"size": SWEEP_SIZE, "activation": "relu"}), ("regular-conv", {"size": SWEEP_SIZE, "groups": "regular"}),
    ("channels-32", {"size": SWEEP_SIZE, "channels": 32}), ("batch-4", {"size": SWEEP_SIZE, "batch": 4}),
])
def test_only_the_reported_graph_and_its_workaround_run_at_128_the_rest_change_one_thing_from_size_32(name, changed):
    assert {k: v for k, v in variant(name).params.items() if REPORTED[k] != v} == changed
    graph = P1.build(variant(name)).graph
    p = variant(name).params
    assert graph.inputs[0].shape == (p["batch"], p["channels"], p["size"], p["size"])
    conv = {n.name: n for n in graph.nodes}[CONV]
    depthwise = p["groups"] == "depthwise"
    assert conv.attrs["group"] == (p["channels"] if depthwise else 1)
    assert producer(conv.inputs[1]).inputs[0].shape == (p["channels"], 1 if depthwise else p["channels"], 3, 3)


def test_claims():
    claims = {c.target: c for c in variant("as-reported").claims}
    assert (claims["trt85-orin"].outcome, claims["trt85-orin"].category, claims["trt85-orin"].strength) == (
        "fail", "no-implementation", "issue-thread")
    assert "8.5.2" in claims["trt85-orin"].note
    assert claims["trt86-orin"].outcome == "fail" and "similar" in claims["trt86-orin"].note
    for name in ("identity-successor", "pointwise-conv-successor", "relu", "regular-conv"):
        (claim,) = variant(name).claims
        assert (claim.target, claim.outcome) == ("trt85-orin", "pass")
    assert all(not variant(n).claims for n in ("channels-32", "size-32", "batch-4"))


# ---- the scanner's matcher ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("name, expected", [
    ("as-reported", "as-reported"), ("identity-successor", "identity-successor"), ("channels-32", "as-reported"),
    ("size-32", "as-reported"), ("batch-4", "as-reported"),
])
def test_find_names_the_form_of_each_graph_that_ends_in_the_pattern(user_graph, name, expected):
    (match,) = P1.find(user_graph(P1, variant(name)))
    assert match.case == P1.id and match.variant == expected
    assert match.nodes[:4] == (CONV, "node_of_dqconv.bn", "node_of_swish.sigmoid", "node_of_swish.mul")
    assert match.nodes[-1] == "node_of_output" and "Swish" in match.note


def test_find_reports_the_users_own_node_names(user_graph):
    graph = user_graph(P1, variant("as-reported"), rename=True)
    (match,) = P1.find(graph)
    conv = next(n for n in graph.nodes if n.op == "Conv")
    assert match.nodes[0] == conv.name and match.nodes[0].startswith("user_node_")
    assert len(match.nodes) == 6


@pytest.mark.parametrize("name", ["pointwise-conv-successor", "relu", "regular-conv"])
def test_find_ignores_a_successor_another_activation_or_a_regular_conv(user_graph, name):
    assert P1.find(user_graph(P1, variant(name))) == []


def test_find_nothing_in_a_plain_fp32_conv_relu(fp32_conv_relu_graph):
    assert P1.find(fp32_conv_relu_graph) == []


def test_find_without_the_trailing_qdq_reports_no_library_variant(user_graph):
    graph = user_graph(P1, variant("as-reported"))
    q = next(n for n in graph.nodes if n.name == "node_of_swish.q")
    mul = next(n for n in graph.nodes if n.name == "node_of_swish.mul")
    graph.outputs = [mul.outputs[0]]
    q.inputs.clear()
    graph.cleanup()
    (match,) = P1.find(graph)
    assert match.variant is None and "no trailing Q/DQ" in match.note
