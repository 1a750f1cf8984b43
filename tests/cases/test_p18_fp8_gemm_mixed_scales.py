"""P18: an FP8 GEMM whose activation and weight scales are laid out per token / per channel, and the matcher."""
from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from cases.p18_fp8_gemm_mixed_scales import MATMUL, TOKENS
from cases.p18_fp8_gemm_mixed_scales import Fp8GemmMixedScales as P18

variant = P18.variant
FP8 = np.dtype(ml_dtypes.float8_e4m3fn)


def test_declaration_and_claims():
    assert (P18.pattern, P18.mode, P18.opset) == ("P18", "explicit-qdq", 19)
    assert all(v.knobs.strongly_typed for v in P18.variants)
    claims = {v.name: [(c.target, c.outcome, c.architecture) for c in v.claims] for v in P18.variants if v.claims}
    # FP8 Q/DQ builds only on GPUs with FP8 (SM 8.9+): an Ampere host of trt11-x86 is not what the PR speaks of.
    assert claims == {"as-reported": [("trt11-x86", "fallback", "8.9+")],
                      "per-tensor-both": [("trt11-x86", "pass", "8.9+")]}


@pytest.mark.parametrize("v", P18.variants, ids=lambda v: v.name)
def test_the_matmul_reads_fp8_qdq_activation_and_fp8_weight_with_the_variants_scale_layout(v):
    built = P18.build(v)
    assert [n.op for n in built.graph.nodes] == ["QuantizeLinear", "DequantizeLinear", "DequantizeLinear", "MatMul"]
    matmul = next(n for n in built.graph.nodes if n.name == MATMUL)
    x_dq, w_dq = (t.inputs[0] for t in matmul.inputs)
    assert x_dq.inputs[0].inputs[0].inputs[0] is built.graph.inputs[0]
    assert w_dq.inputs[0].values.dtype == FP8 and w_dq.inputs[0].values.shape == (64, 96)
    assert x_dq.inputs[2].values.dtype == w_dq.inputs[2].values.dtype == FP8
    per_token, per_channel = v.params["activation"] == "per-token", v.params["weight"] == "per-channel"
    assert x_dq.inputs[1].values.shape == ((TOKENS,) if per_token else ())
    assert x_dq.attrs == ({"axis": 1} if per_token else {})
    assert w_dq.inputs[1].values.shape == ((96,) if per_channel else ())
    assert w_dq.attrs == ({"axis": 1} if per_channel else {})
    assert built.requested == {MATMUL: "fp8"} and built.expected_int8 == ()


def test_per_token_scales_differ_per_token():
    matmul = next(n for n in P18.build(variant("as-reported")).graph.nodes if n.name == MATMUL)
    scales = matmul.inputs[0].inputs[0].inputs[1].values
    assert len(set(scales.tolist())) == TOKENS


@pytest.mark.parametrize("name", ["as-reported", "per-channel-weight-only", "per-token-activation-only"])
def test_find_names_the_scale_layout(user_graph, name):
    (match,) = P18.find(user_graph(P18, variant(name), rename=True))
    assert match.variant == name and len(match.nodes) == 3


def test_find_nothing_with_one_scale_per_side_or_without_fp8(user_graph, fp32_conv_relu_graph):
    assert P18.find(user_graph(P18, variant("per-tensor-both"))) == []
    assert P18.find(fp32_conv_relu_graph) == []
