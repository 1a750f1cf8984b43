"""P16: INT8 and FP8 Q/DQ in one network, weakly or strongly typed, and the matcher."""
from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from cases.p16_mixed_int8_fp8_weakly_typed import CONVS
from cases.p16_mixed_int8_fp8_weakly_typed import MixedInt8Fp8WeaklyTyped as P16

variant = P16.variant
Q, DQ = "QuantizeLinear", "DequantizeLinear"
FP8 = np.dtype(ml_dtypes.float8_e4m3fn)
DTYPE = {"int8": np.dtype(np.int8), "fp8": FP8}


def test_declaration_and_claims():
    assert (P16.pattern, P16.mode, P16.opset) == ("P16", "explicit-qdq", 19)
    assert P16.links == ("https://github.com/justincdavis/trtutils/pull/163",
                         "https://github.com/NVIDIA/Model-Optimizer/issues/70")
    assert [v.name for v in P16.variants if v.knobs.strongly_typed] == ["strongly-typed"]
    (blackwell,) = variant("as-reported").claims
    assert (blackwell.target, blackwell.outcome, blackwell.architecture) == ("trt1016-x86", "fail", "10.0+")
    (strong,) = variant("strongly-typed").claims
    assert (strong.target, strong.outcome, strong.architecture) == ("trt1016-x86", "pass", "10.0+")
    ampere, orin = variant("fp8-only").claims
    assert (ampere.target, ampere.category, ampere.architecture) == ("trt103-x86", "unsupported-op", "8.6")
    assert (orin.target, orin.outcome, orin.category, orin.architecture) == ("trt103-orin", "fail", "unsupported-op",
                                                                             "8.7")
    assert all(not v.claims for v in P16.variants if v.name not in ("as-reported", "strongly-typed", "fp8-only"))


@pytest.mark.parametrize("v", P16.variants, ids=lambda v: v.name)
def test_each_conv_reads_qdq_of_its_precision_on_input_and_per_channel_weight(v):
    built = P16.build(v)
    assert [n.op for n in built.graph.nodes] == [Q, DQ, Q, DQ, "Conv", "Relu", Q, DQ, Q, DQ, "Conv"]
    by_name = {n.name: n for n in built.graph.nodes}
    for conv, precision in zip(CONVS, v.params["precisions"]):
        x_dq, w_dq = (t.inputs[0] for t in by_name[conv].inputs[:2])
        assert x_dq.op == w_dq.op == DQ and x_dq.inputs[0].inputs[0].op == w_dq.inputs[0].inputs[0].op == Q
        assert x_dq.inputs[2].values.dtype == w_dq.inputs[2].values.dtype == DTYPE[precision]
        assert w_dq.attrs == {"axis": 0} and w_dq.inputs[1].values.shape == (32,)
        assert built.requested[conv] == precision
    assert by_name["/backbone/relu/Relu"].inputs[0] is by_name[CONVS[0]].outputs[0]
    assert set(built.expected_int8) == {c for c, p in zip(CONVS, v.params["precisions"]) if p == "int8"}


def test_find_fp8_layers_of_a_mixed_network_only(user_graph, fp32_conv_relu_graph):
    (match,) = P16.find(user_graph(P16, variant("as-reported"), rename=True))
    assert match.variant == "as-reported" and len(match.nodes) == 2
    (first,) = P16.find(user_graph(P16, variant("fp8-first")))
    assert first.nodes[0] == CONVS[0]
    assert P16.find(user_graph(P16, variant("int8-only"))) == P16.find(user_graph(P16, variant("fp8-only"))) == []
    assert P16.find(fp32_conv_relu_graph) == []
