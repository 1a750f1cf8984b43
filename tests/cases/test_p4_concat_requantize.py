"""P4: the Concat of Conv, Conv and ConvTranspose branches: where its Q/DQ sit, their scales, and the matcher."""
from __future__ import annotations

import numpy as np
import onnx
import pytest

from cases import _graphs as g
from cases.generate import export_model
from cases.p4_concat_requantize import FUSE_CONV, UNEQUAL
from cases.p4_concat_requantize import ConcatRequantize as P4

Q, DQ = "QuantizeLinear", "DequantizeLinear"
QDQ = [Q, DQ]
BRANCHES = [*QDQ, *QDQ, "Conv", *QDQ, *QDQ, "Conv", *QDQ, *QDQ, "ConvTranspose"]
FUSE = [*QDQ, "Conv"]
OPS = {
    "requantized-after": [*BRANCHES, "Concat", *QDQ, *FUSE],
    "inputs-qdq-equal-scales": [*BRANCHES, *QDQ * 3, "Concat", *QDQ, *FUSE],
    "inputs-qdq-unequal-scales": [*BRANCHES, *QDQ * 3, "Concat", *QDQ, *FUSE],
    "inputs-qdq-no-requant": [*BRANCHES, *QDQ * 3, "Concat", *FUSE],
    "conv-branches-only": [*QDQ, *QDQ, "Conv", *QDQ, *QDQ, "Conv", *QDQ, *QDQ, "Conv", "Concat", *QDQ, *FUSE],
    "implicit-baseline": ["Conv", "Conv", "ConvTranspose", "Concat", "Conv"],
}
LAYERS = ("/neck/branch_a/conv/Conv", "/neck/branch_b/conv/Conv", "/neck/branch_up/deconv/ConvTranspose")


variant = P4.variant


def concat_of(name):
    return next(n for n in P4.build(variant(name)).graph.nodes if n.op == "Concat")


def test_declaration():
    assert (P4.pattern, P4.mode, P4.opset) == ("P4", "explicit-qdq", 13)
    assert "https://github.com/NVIDIA/TensorRT/issues/4366" in P4.links
    assert all(not v.claims for v in P4.variants)  # no thread states a version
    assert P4.mode_of(variant("implicit-baseline")) == "implicit-int8"


@pytest.mark.parametrize("v", P4.variants, ids=lambda v: v.name)
def test_each_variant_has_exactly_the_nodes_of_its_form(v):
    assert [n.op for n in P4.build(v).graph.nodes] == OPS[v.name]


@pytest.mark.parametrize("v", P4.variants, ids=lambda v: v.name)
def test_each_variant_passes_the_full_checker_with_strict_shape_inference(v):
    model, _ = export_model(P4, v)
    onnx.checker.check_model(model, full_check=True)
    onnx.shape_inference.infer_shapes(model, strict_mode=True)


def test_failing_form_concats_float_branch_outputs_then_requantizes_once():
    concat = concat_of("requantized-after")
    assert [t.inputs[0].name for t in concat.inputs] == list(LAYERS)
    assert concat.attrs == {"axis": 1}
    q = concat.outputs[0].outputs[0]
    conv = q.outputs[0].outputs[0].outputs[0].outputs[0]
    assert (q.op, q.name) == (Q, "/neck/fuse/conv/_input_quantizer/QuantizeLinear") and conv.name == FUSE_CONV
    deconv = concat.inputs[2].inputs[0]
    assert deconv.attrs["strides"] == [2, 2] and deconv.inputs[0].inputs[0].op == DQ
    assert deconv.inputs[1].inputs[0].attrs == {}  # per-tensor weight: P2's axis question stays out
    assert P4.build(variant("requantized-after")).expected_int8 == (*LAYERS, FUSE_CONV)


@pytest.mark.parametrize("name, factors", [
    ("inputs-qdq-equal-scales", (1.0, 1.0, 1.0)), ("inputs-qdq-unequal-scales", UNEQUAL),
    ("inputs-qdq-no-requant", (1.0, 1.0, 1.0)),
])
def test_every_concat_input_goes_through_qdq_with_the_variants_scales(name, factors):
    concat = concat_of(name)
    scales = []
    for tensor, layer in zip(concat.inputs, LAYERS):
        dq = tensor.inputs[0]
        q = dq.inputs[0].inputs[0]
        assert (q.op, dq.op) == (Q, DQ) and q.inputs[0].inputs[0].name == layer
        scales.append(float(dq.inputs[1].values))
    np.testing.assert_allclose(scales, [f * g.UNIT_ACTIVATION_SCALE for f in factors], rtol=1e-6)
    requantized = concat.outputs[0].outputs[0].op == Q
    assert requantized == (name != "inputs-qdq-no-requant")


def test_conv_branches_only_swaps_the_deconvolution_for_a_conv_at_full_resolution():
    graph = P4.build(variant("conv-branches-only")).graph
    assert [i.shape for i in graph.inputs] == [(1, 16, 16, 16), (1, 16, 16, 16)]
    assert not any(n.op == "ConvTranspose" for n in graph.nodes)


def test_implicit_baseline_is_the_same_float_graph():
    explicit = [n.name for n in P4.build(variant("requantized-after")).graph.nodes if n.op not in (Q, DQ)]
    implicit = [n.name for n in P4.build(variant("implicit-baseline")).graph.nodes]
    assert implicit == explicit


# ---- the scanner's matcher ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("name, expected", [
    ("requantized-after", "requantized-after"), ("inputs-qdq-equal-scales", "inputs-qdq-equal-scales"),
    ("inputs-qdq-unequal-scales", "inputs-qdq-unequal-scales"), ("inputs-qdq-no-requant", "inputs-qdq-no-requant"),
    ("conv-branches-only", "requantized-after"),
])
def test_find_names_the_form(user_graph, name, expected):
    (match,) = P4.find(user_graph(P4, variant(name)))
    assert match.case == P4.id and match.variant == expected and match.nodes[0] == "/neck/Concat"
    assert len(match.nodes) == 4


def test_find_mentions_the_deconvolution_and_works_on_any_names(user_graph):
    (match,) = P4.find(user_graph(P4, variant("requantized-after"), rename=True))
    assert "ConvTranspose" in match.note and all(n.startswith("user_node_") for n in match.nodes)


def test_find_nothing_without_quantized_branches(user_graph, fp32_conv_relu_graph):
    assert P4.find(fp32_conv_relu_graph) == []
    assert P4.find(user_graph(P4, variant("implicit-baseline"))) == []
