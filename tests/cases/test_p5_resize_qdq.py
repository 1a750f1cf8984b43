"""P5: a nearest x2 Resize between two quantized convs, with and without Q/DQ before it, and the matcher."""
from __future__ import annotations

import numpy as np
import onnx
import pytest

from cases.generate import export_model
from cases.p5_resize_qdq import LATERAL, REPORTED, RESIZE, SMOOTH
from cases.p5_resize_qdq import ResizeQdq as P5

Q, DQ = "QuantizeLinear", "DequantizeLinear"
QDQ = [Q, DQ]
CONV = [*QDQ, *QDQ, "Conv"]
OPS = {
    "as-reported": [*CONV, "Resize", *CONV],
    "qdq-before-resize": [*CONV, *QDQ, "Resize", *CONV],
    "implicit-best": ["Conv", "Resize", "Conv"],
    "bilinear": [*CONV, "Resize", *CONV],
    "channels-64": [*CONV, "Resize", *CONV],
    "channels-64-qdq-before-resize": [*CONV, *QDQ, "Resize", *CONV],
}


variant = P5.variant


def nodes(name):
    return {n.name: n for n in P5.build(variant(name)).graph.nodes}


def test_declaration():
    assert (P5.pattern, P5.mode, P5.opset) == ("P5", "explicit-qdq", 13)
    assert P5.links[0] == "https://github.com/NVIDIA/TensorRT/issues/2976"
    assert all(not v.claims for v in P5.variants)  # 8.4 only upstream
    assert P5.mode_of(variant("implicit-best")) == "implicit-int8" and variant("implicit-best").knobs.fp16


@pytest.mark.parametrize("v", P5.variants, ids=lambda v: v.name)
def test_each_variant_has_exactly_the_nodes_of_its_form(v):
    assert [n.op for n in P5.build(v).graph.nodes] == OPS[v.name]


@pytest.mark.parametrize("v", P5.variants, ids=lambda v: v.name)
def test_each_variant_passes_the_full_checker_with_strict_shape_inference(v):
    model, _ = export_model(P5, v)
    onnx.checker.check_model(model, full_check=True)
    onnx.shape_inference.infer_shapes(model, strict_mode=True)


@pytest.mark.parametrize("v", P5.variants, ids=lambda v: v.name)
def test_resize_reads_the_lateral_conv_directly_or_through_one_qdq_and_feeds_the_smooth_convs_qdq(v):
    by_name = nodes(v.name)
    resize = by_name[RESIZE]
    source = resize.inputs[0].inputs[0]
    if v.params["qdq_before_resize"]:
        assert source.op == DQ and source.inputs[0].inputs[0].op == Q
        assert source.inputs[0].inputs[0].inputs[0].inputs[0].name == LATERAL
    else:
        assert source.name == LATERAL
    reader = resize.outputs[0].outputs[0]
    explicit = P5.mode_of(v) == "explicit-qdq"
    assert reader.op == (Q if explicit else "Conv")
    assert P5.build(v).expected_int8 == (LATERAL, RESIZE, SMOOTH)


def test_resize_is_torch_nearest_upsample_x2():
    resize = nodes("as-reported")[RESIZE]
    roi, scales = resize.inputs[1], resize.inputs[2]
    assert roi.name == "" and np.array_equal(scales.values, [1, 1, 2, 2])
    assert resize.attrs["mode"] == "nearest" and resize.attrs["nearest_mode"] == "floor"
    assert resize.attrs["coordinate_transformation_mode"] == "asymmetric"
    graph = P5.build(variant("as-reported")).graph
    assert graph.inputs[0].shape == (1, 32, 16, 16) and graph.outputs[0].shape == (1, 32, 32, 32)
    assert nodes("bilinear")[RESIZE].attrs["mode"] == "linear"


def test_variants_differ_in_their_parameters_only():
    changed = {v.name: {k: x for k, x in v.params.items() if REPORTED[k] != x} for v in P5.variants}
    assert changed == {
        "as-reported": {}, "qdq-before-resize": {"qdq_before_resize": True}, "implicit-best": {},
        "bilinear": {"mode": "linear"}, "channels-64": {"channels": 64},
        "channels-64-qdq-before-resize": {"channels": 64, "qdq_before_resize": True},
    }


# ---- the scanner's matcher ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("name, expected", [
    ("as-reported", "as-reported"), ("qdq-before-resize", "qdq-before-resize"), ("bilinear", "bilinear"),
    ("channels-64", "as-reported"), ("channels-64-qdq-before-resize", "qdq-before-resize"),
])
def test_find_names_the_form(user_graph, name, expected):
    (match,) = P5.find(user_graph(P5, variant(name)))
    assert match.case == P5.id and match.variant == expected and match.nodes[:2] == (RESIZE, LATERAL)
    assert len(match.nodes) == (4 if variant(name).params["qdq_before_resize"] else 2)


def test_find_works_on_any_node_names(user_graph):
    (match,) = P5.find(user_graph(P5, variant("as-reported"), rename=True))
    assert all(n.startswith("user_node_") for n in match.nodes)


def test_find_nothing_without_quantization(user_graph, fp32_conv_relu_graph):
    assert P5.find(fp32_conv_relu_graph) == []
    assert P5.find(user_graph(P5, variant("implicit-best"))) == []
