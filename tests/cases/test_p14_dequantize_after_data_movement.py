"""P14: INT8 data moved by Reshape/Transpose/Slice before an FP16-scaled DequantizeLinear, and the matcher."""
from __future__ import annotations

import numpy as np
import pytest

from cases.p14_dequantize_after_data_movement import CONV, DQ
from cases.p14_dequantize_after_data_movement import DequantizeAfterDataMovement as P14

Q_, DQ_ = "QuantizeLinear", "DequantizeLinear"
variant = P14.variant
REPORTED_MOVES = ["Reshape", "Transpose", "Reshape", "Slice"]
MOVED = {"as-reported": REPORTED_MOVES, "scale-fp32": REPORTED_MOVES, "weakly-typed": REPORTED_MOVES,
         "reshape-only": ["Reshape"], "transpose-only": ["Transpose"], "slice-only": ["Slice"]}


def nodes(v):
    return {n.name: n for n in P14.build(v).graph.nodes}


def test_declaration_and_the_reported_architecture_pair():
    assert (P14.pattern, P14.mode, P14.opset) == ("P14", "explicit-qdq", 19)
    assert P14.links == ("https://github.com/NVIDIA/TensorRT/issues/4832",)
    assert all(not v.claims for v in P14.variants if v.name != "as-reported")
    orin, thor = variant("as-reported").claims
    assert (orin.target, orin.outcome, orin.architecture) == ("trt1016-orin", "fail", "8.7")
    assert (thor.target, thor.outcome, thor.architecture) == ("trt1016-thor", "pass", "11.0")
    assert "None posted upstream" in P14.remedy
    assert [v.name for v in P14.variants if v.role in ("workaround",)] == []  # none was posted
    assert variant("as-reported").knobs.strongly_typed and not variant("weakly-typed").knobs.strongly_typed


@pytest.mark.parametrize("v", P14.variants, ids=lambda v: v.name)
def test_the_data_movement_sits_between_q_and_the_fp16_dq_or_after_it(v):
    by_name = nodes(v)
    dq = by_name[DQ]
    chain, node = [], dq.inputs[0].inputs[0]
    while node.op != Q_:
        chain.append(node.op)
        node = node.inputs[0].inputs[0]
    if v.params["dq_first"]:
        assert chain == [] and by_name["/head/conv/Conv"].inputs[0].inputs[0].op == "Slice"
    else:
        assert list(reversed(chain)) == MOVED[v.name]
        assert by_name[CONV].inputs[0] is dq.outputs[0]
    assert node.inputs[0].name == "input" and node.inputs[2].values.dtype == np.int8
    half = v.params["scale_dtype"] == "float16"
    assert dq.inputs[1].values.dtype == (np.float16 if half else np.float32) and dq.inputs[1].values.shape == ()
    weight_dq = by_name[CONV].inputs[1].inputs[0]
    assert weight_dq.op == DQ_ and weight_dq.inputs[0].values.dtype == np.int8 and weight_dq.attrs["axis"] == 0
    assert weight_dq.inputs[1].values.dtype == (np.float16 if half else np.float32)
    ops = [n.op for n in P14.build(v).graph.nodes]
    assert ops[-1] == ("Cast" if half else "Conv") and ops.count("Conv") == 1
    assert P14.build(v).expected_int8 == (CONV,)


def test_the_reported_chain_keeps_the_layout_and_keeps_16_channels():
    graph = P14.build(variant("as-reported")).graph
    assert graph.inputs[0].shape == (1, 32, 32, 32) and graph.outputs[0].shape == (1, 16, 32, 32)
    by_name = nodes(variant("as-reported"))
    assert by_name["/stem/Transpose"].attrs["perm"] == [0, 2, 1]
    assert list(by_name["/stem/Slice"].inputs[2].values) == [16]
    assert P14.build(variant("reshape-only")).graph.outputs[0].shape == (1, 16, 16, 16)


@pytest.mark.parametrize("name, expected", [
    ("as-reported", "as-reported"), ("scale-fp32", "scale-fp32"), ("reshape-only", "reshape-only"),
    ("transpose-only", "transpose-only"), ("slice-only", "slice-only"), ("weakly-typed", "as-reported"),
])
def test_find_names_the_form_on_any_node_names(user_graph, name, expected):
    (match,) = P14.find(user_graph(P14, variant(name), rename=True))
    assert match.variant == expected and all(n.startswith("user_node_") for n in match.nodes)
    assert len(match.nodes) == len(MOVED[name]) + 2  # the DQ, the ops moved, the Q


def test_find_nothing_where_the_data_moves_in_float(user_graph, fp32_conv_relu_graph):
    assert P14.find(user_graph(P14, variant("dq-first"))) == []
    assert P14.find(fp32_conv_relu_graph) == []
