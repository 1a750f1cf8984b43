"""P17: an FP8 Q/DQ after a MaxPool in a ModelOpt FP8 ResNet stem, its sweeps, the INT8 advice, and the matcher."""
from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from cases.p17_fp8_qdq_after_maxpool import CONVS, MAXPOOL
from cases.p17_fp8_qdq_after_maxpool import Fp8QdqAfterMaxPool as P17

variant = P17.variant
Q, DQ = "QuantizeLinear", "DequantizeLinear"
STEM = [Q, Q, Q, DQ, DQ, DQ, "Conv", "Relu"]
OPS = {
    "as-reported": [*STEM, "MaxPool", Q, DQ, "Conv"], "strongly-typed": [*STEM, "MaxPool", Q, DQ, "Conv"],
    "qdq-before-maxpool": [*STEM, Q, DQ, "MaxPool", "Conv"], "no-maxpool": [*STEM, Q, DQ, "Conv"],
    "int8": [*STEM, "MaxPool", Q, DQ, "Conv"],
}


def test_declaration_flags_and_claim():
    assert (P17.pattern, P17.mode, P17.opset) == ("P17", "explicit-qdq", 19)
    assert variant("as-reported").knobs.fp16 and variant("as-reported").knobs.fp8
    assert variant("strongly-typed").knobs.strongly_typed and not variant("int8").knobs.fp8
    # #118 names neither the GPU nor which layers ran FP8 on 10.7: no outcome can be claimed for it.
    assert all(not v.claims for v in P17.variants)


@pytest.mark.parametrize("v", P17.variants, ids=lambda v: v.name)
def test_each_variant_places_its_qdq_as_named_and_quantizes_in_its_precision(v):
    built = P17.build(v)
    assert sorted(n.op for n in built.graph.nodes) == sorted(OPS[v.name])
    by_name = {n.name: n for n in built.graph.nodes}
    dtype = np.dtype(ml_dtypes.float8_e4m3fn) if v.params["precision"] == "fp8" else np.dtype(np.int8)
    assert {n.inputs[2].values.dtype for n in built.graph.nodes if n.op in (Q, DQ)} == {dtype}
    second = by_name[CONVS[1]].inputs[0].inputs[0]
    if v.name == "qdq-before-maxpool":
        assert second.name == MAXPOOL and second.inputs[0].inputs[0].name == "/relu/Relu_output_0_DequantizeLinear"
    else:
        assert second.op == DQ and second.inputs[0].inputs[0].op == Q
        reads = second.inputs[0].inputs[0].inputs[0].inputs[0]
        assert reads.name == ("/relu/Relu" if v.name == "no-maxpool" else MAXPOOL)
    weights = [n for n in built.graph.nodes if n.op == Q and n.name.startswith("onnx::Conv")]
    assert [w.attrs["axis"] for w in weights] == [0, 0] and all(w.inputs[0].values.dtype == np.float32 for w in weights)
    assert built.requested == dict.fromkeys(CONVS, v.params["precision"])


def test_the_stem_is_resnets_and_the_quantize_is_named_as_modelopt_names_it():
    by_name = {n.name: n for n in P17.build(variant("as-reported")).graph.nodes}
    assert by_name[CONVS[0]].attrs["kernel_shape"] == [7, 7] and by_name[CONVS[0]].attrs["strides"] == [2, 2]
    assert by_name[MAXPOOL].outputs[0].outputs[0].name == "/maxpool/MaxPool_output_0_QuantizeLinear"
    assert P17.build(variant("as-reported")).graph.outputs[0].shape == (1, 64, 16, 16)


def test_find_the_fp8_quantize_after_or_before_a_maxpool_only(user_graph, fp32_conv_relu_graph):
    (after,) = P17.find(user_graph(P17, variant("as-reported"), rename=True))
    assert after.variant == "as-reported" and len(after.nodes) == 3
    (before,) = P17.find(user_graph(P17, variant("qdq-before-maxpool")))
    assert before.variant == "qdq-before-maxpool" and before.nodes[0] == MAXPOOL
    assert P17.find(user_graph(P17, variant("int8"))) == P17.find(user_graph(P17, variant("no-maxpool"))) == []
    assert P17.find(fp32_conv_relu_graph) == []
