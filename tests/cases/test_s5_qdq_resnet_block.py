"""S5: the pytorch-quantization Q/DQ BasicBlock named as in the #3980 log; down-sampling and residual quantizer."""
from __future__ import annotations

import itertools

import onnx_graphsurgeon as gs
import pytest

from cases import _graphs as g
from cases.s5_qdq_resnet_block import QdqResnetBlock

BLOCK = "/backbone_2d/stage_4/stage_4.1"
LOG_CONV_LAYER = (
    "backbone_2d.stage_4.1.conv2.weight + /backbone_2d/stage_4/stage_4.1/conv2/_weight_quantizer/QuantizeLinear"
    " + /backbone_2d/stage_4/stage_4.1/conv2/Conv"
)
LOG_ADD_LAYER = "/backbone_2d/stage_4/stage_4.1/Add + /backbone_2d/stage_4/stage_4.1/act_1/Relu"


def variant_with(downsample, residual_quantizer):
    return next(
        v for v in QdqResnetBlock.variants
        if v.params == {"downsample": downsample, "residual_quantizer": residual_quantizer}
    )


def nodes_of(variant):
    return {n.name: n for n in QdqResnetBlock.build(variant).graph.nodes}


def producer(tensor):
    return tensor.inputs[0]


def test_declaration():
    assert (QdqResnetBlock.pattern, QdqResnetBlock.mode, QdqResnetBlock.opset) == ("S5", "explicit-qdq", 13)
    assert QdqResnetBlock.links[0] == "https://github.com/NVIDIA/TensorRT/issues/3980"


def test_variants_cover_downsample_times_residual_quantizer():
    params = [(v.params["downsample"], v.params["residual_quantizer"]) for v in QdqResnetBlock.variants]
    assert sorted(params) == sorted(itertools.product((False, True), (False, True)))


def test_failing_block_carries_the_names_of_the_log():
    failing = next(v for v in QdqResnetBlock.variants if v.role == "failing")
    assert failing.params["downsample"] is False
    nodes = nodes_of(failing)
    conv2 = nodes[f"{BLOCK}/conv2/Conv"]
    weight_q = producer(producer(conv2.inputs[1]).inputs[0])
    assert f"{weight_q.inputs[0].name} + {weight_q.name} + {conv2.name}" == LOG_CONV_LAYER
    add, relu = nodes[f"{BLOCK}/Add"], nodes[f"{BLOCK}/act_1/Relu"]
    assert f"{add.name} + {relu.name}" == LOG_ADD_LAYER and relu.inputs == add.outputs
    assert producer(producer(conv2.inputs[0]).inputs[0]).name == f"{BLOCK}/conv2/_input_quantizer/QuantizeLinear"


@pytest.mark.parametrize("variant", QdqResnetBlock.variants, ids=lambda v: v.name)
def test_main_path_is_qdq_conv_bn_relu_qdq_conv_bn_add_relu(variant):
    block = "/backbone_2d/stage_4/stage_4.0" if variant.params["downsample"] else BLOCK
    prefix = block.replace("/backbone_2d/stage_4/", "backbone_2d.")
    graph = QdqResnetBlock.build(variant).graph
    nodes = {n.name: n for n in graph.nodes}
    relu = nodes[f"{block}/act_1/Relu"]
    add = producer(relu.inputs[0])
    bn2 = producer(add.inputs[0])
    conv2 = producer(bn2.inputs[0])
    x_dq2 = producer(conv2.inputs[0])
    act = producer(producer(x_dq2.inputs[0]).inputs[0])
    bn1 = producer(act.inputs[0])
    conv1 = producer(bn1.inputs[0])
    x_dq1 = producer(conv1.inputs[0])
    assert [n.op for n in (relu, add, bn2, conv2, x_dq2, act, bn1, conv1, x_dq1)] == [
        "Relu", "Add", "BatchNormalization", "Conv", "DequantizeLinear", "Relu", "BatchNormalization", "Conv",
        "DequantizeLinear",
    ]
    assert act.name == f"{block}/act/Relu"
    assert (bn1.name, bn2.name) == (f"{block}/bn1/BatchNormalization", f"{block}/bn2/BatchNormalization")
    assert producer(x_dq1.inputs[0]).inputs[0] is graph.inputs[0]
    for conv, name in ((conv1, "conv1"), (conv2, "conv2")):
        w_dq = producer(conv.inputs[1])
        w_q = producer(w_dq.inputs[0])
        assert w_q.name == f"{block}/{name}/_weight_quantizer/QuantizeLinear"
        assert w_q.inputs[0].name == f"{prefix}.{name}.weight" and w_dq.attrs == w_q.attrs == {"axis": 0}
        assert w_dq.inputs[1].shape == (32,)
        assert producer(conv.inputs[0]).inputs[1].shape == ()  # per-tensor input quantizer
    assert [t.name for t in bn2.inputs[1:]][0] == f"{prefix}.bn2.weight"
    assert graph.outputs == relu.outputs


@pytest.mark.parametrize("variant", QdqResnetBlock.variants, ids=lambda v: v.name)
def test_identity_branch_follows_downsample_and_residual_quantizer(variant):
    p = variant.params
    graph = QdqResnetBlock.build(variant).graph
    add = next(n for n in graph.nodes if n.op == "Add")
    identity = add.inputs[1]
    if p["residual_quantizer"]:
        dq = producer(identity)
        q = producer(dq.inputs[0])
        assert (q.op, dq.op) == ("QuantizeLinear", "DequantizeLinear")
        assert q.name.endswith("/residual_quantizer/QuantizeLinear")
        identity = q.inputs[0]
    else:
        assert not any("residual_quantizer" in n.name for n in graph.nodes)
    if p["downsample"]:
        bn = producer(identity)
        conv = producer(bn.inputs[0])
        assert (bn.op, conv.op) == ("BatchNormalization", "Conv")
        assert conv.name == "/backbone_2d/stage_4/stage_4.0/downsample/downsample.0/Conv"
        assert conv.attrs["kernel_shape"] == [1, 1] and conv.attrs["strides"] == [2, 2]
        assert producer(producer(conv.inputs[0]).inputs[0]).inputs[0] is graph.inputs[0]
        assert graph.inputs[0].shape == (1, 16, 16, 16) and graph.outputs[0].shape == (1, 32, 8, 8)
        assert conv.name in QdqResnetBlock.build(variant).expected_int8
    else:
        assert identity is graph.inputs[0]
        assert graph.inputs[0].shape == (1, 32, 16, 16) and graph.outputs[0].shape == (1, 32, 16, 16)


def test_claim_is_the_cuda_runtime_failure_with_the_driver_caveat():
    failing = next(v for v in QdqResnetBlock.variants if v.role == "failing")
    (claim,) = failing.claims
    assert (claim.target, claim.outcome, claim.category, claim.strength) == (
        "trt100-x86", "fail", "cuda-runtime", "issue-thread"
    )
    assert "470.129.06" in claim.note and "hypothesis" in claim.note
    assert all(not v.claims for v in QdqResnetBlock.variants if v.role != "failing")


# ---- the scanner's matcher ----

@pytest.mark.parametrize("variant", QdqResnetBlock.variants, ids=lambda v: v.name)
def test_find_names_each_variant_and_covers_the_whole_block(variant):
    graph = QdqResnetBlock.build(variant).graph
    (match,) = QdqResnetBlock.find(graph)
    assert (match.case, match.variant) == ("s5-qdq-resnet-block", variant.name)
    assert match.nodes[0].endswith("/Add")
    shortcut = "a down-sampling Q/DQ conv" if variant.params["downsample"] else "the block input"
    quantizer = "through" if variant.params["residual_quantizer"] else "without"
    assert match.note == f"residual Add of a Q/DQ conv and {shortcut} ({quantizer} a residual quantizer)"
    assert sorted(match.nodes) == sorted(n.name for n in graph.nodes)


def test_find_nothing_on_unrelated_graphs():
    from cases.control import ImplicitConvRelu, QdqConvRelu
    from cases.s3_depthwise_qdq import DepthwiseQdq
    from cases.s4_bn_mish import BnMish

    for case in (ImplicitConvRelu, QdqConvRelu, DepthwiseQdq, BnMish):
        assert all(QdqResnetBlock.find(case.build(v).graph) == [] for v in case.variants), case.id


def block_graph(quantized: bool, shortcut: str):
    """Conv -> Relu -> Conv -> Add(shortcut) with Q/DQ convs or float ones; shortcut 'identity' or 'other-input'."""
    graph = gs.Graph(opset=13)
    x = g.graph_input("x", (1, 8, 8, 8))
    other = g.graph_input("lateral", (1, 8, 8, 8))
    graph.inputs += [x, other]

    def conv(t, name):
        w = g.conv_weight(f"{name}.weight", (8, 8, 3, 3))
        if quantized:
            t = g.torch_fake_quantize(graph, t, f"/{name}/_input_quantizer", g.UNIT_ACTIVATION_SCALE)
            w = g.torch_fake_quantize(graph, w, f"/{name}/_weight_quantizer", g.per_channel_scale(w.values), axis=0)
        return g.torch_node(graph, "Conv", f"/{name}", [t, w], g.conv_attrs(3, pad=1))

    y = conv(g.torch_node(graph, "Relu", "/act0", [conv(x, "conv1")]), "conv2")
    y = g.torch_node(graph, "Add", "/add", [y, x if shortcut == "identity" else other])
    g.mark_output(graph, y, (1, 8, 8, 8))
    return graph


def test_find_a_block_without_bn_or_final_relu_and_says_so():
    (match,) = QdqResnetBlock.find(block_graph(quantized=True, shortcut="identity"))
    assert match.variant == "identity-shortcut" and "no ReLU after the Add" in match.note
    assert {"/conv1/Conv", "/act0/Relu", "/conv2/Conv"} <= set(match.nodes)


def test_find_no_block_without_qdq_or_when_the_add_joins_another_input():
    """A float block is not the Q/DQ pattern; an FPN-style lateral Add is no residual block."""
    assert QdqResnetBlock.find(block_graph(quantized=False, shortcut="identity")) == []
    assert QdqResnetBlock.find(block_graph(quantized=True, shortcut="other-input")) == []
