"""P18: an FP8 GEMM with per-channel weight scales and per-token activation scales builds, computes right, and runs as
dequantize-to-FP16 + FP16 GEMM: the FP8 request is lost without a word, visible only in the inspector's operand types.

Upstream:

* https://github.com/NVIDIA/TensorRT-Model-Connect/pull/1386 (open, 2026-09): Qwen3.8-27B FP8 checkpoints. One with a
  per-channel weight scale and a dynamic per-token activation scale "builds and runs correctly (verified
  numerically)", but TensorRT's dense-FC fusion only recognizes scalar-both (or FP4 block-both) scale schemes, so this
  mix falls back to dequantize-to-FP16 + plain FP16 GEMM, confirmed from ``IEngineInspector`` operand ``Datatype``s.
  A 128x128 block-scale checkpoint has no matching kernel path at all. No TensorRT version is named for this in the
  description; failure-patterns.md lists 11.1.0.106 and 11.3.0.99 for the pair of pull requests.
* https://github.com/NVIDIA/TensorRT-Model-Connect/pull/1326 (merged): on TensorRT 11.1.0.106 and 11.3.0.99,
  ``add_quantize`` with a ``block_shape`` and FP4 output is rejected ("Blockwise quantization requires output type to
  be int8 or fp8e4m3", shape.cpp:3350); ``add_dynamic_quantize`` is the path with a fused FP4 kernel. That rejection is
  a network-API failure with no ONNX form this library builds (ONNX FP4 Q/DQ needs opset 23, which ONNX Runtime's CPU
  EP does not implement: QuantizeLinear(23) has no kernel there); the classifier knows its line.

Graph (ours, a Linear of a decoder MLP): X (1, 16 tokens, 64) -> FP8 Q/DQ per token (static scales along axis 1, one
per token; the checkpoint's are dynamic) -> MatMul with DQ(FP8 W (64, 96), per channel along axis 1) -> output, opset
19, strongly typed (the only kind on TensorRT 11). Names ``/model/layers.0/mlp/up_proj/...``. No INT8 sweep of the
same scale layout: ONNX Runtime's CPU EP cannot run an INT8 MatMul with per-token activation zero points
(MatMulIntegerToFloat: "Per-Channel is not supported yet", measured on 1.32.0), so such a cell would fail for want of an
ONNX Runtime kernel, not for the pattern; P6 holds the INT8 Linear forms.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from cases import _graphs as g
from cases import matching as m
from cases._graphs import gs
from cases.model import Built, Case, Claim, Knobs, Match, Tolerance, Variant
from harness.tensorrt.signatures import KnownFailure
from harness.judgement.claims import Conditions

FALLBACK = "https://github.com/NVIDIA/TensorRT-Model-Connect/pull/1386"
FP4_REJECTED = "https://github.com/NVIDIA/TensorRT-Model-Connect/pull/1326"

TOKENS, IN_FEATURES, OUT_FEATURES = 16, 64, 96
SCOPE = "/model/layers.0/mlp/up_proj"
MATMUL = f"{SCOPE}/MatMul"
REPORTED = {"precision": "fp8", "activation": "per-token", "weight": "per-channel"}

_DENSE_FC = ("the dense-FC fusion recognizes only scalar-both (or FP4 block-both) scale schemes; checked with "
             "IEngineInspector operand Datatypes")
# The pull request names no GPU; an FP8 Q/DQ network builds only on a GPU with FP8 (SM 8.9 and later: TensorRT refuses
# it elsewhere, https://github.com/NVIDIA/Model-Optimizer/issues/70), so its claims hold for such hosts of the x86
# target only.
FP8_GPUS = "8.9+"
FALLS_BACK = Claim(
    target="trt11-x86", outcome="fallback", source=FALLBACK, strength="issue-thread", architecture=FP8_GPUS,
    note=f"Per-channel weight + per-token activation FP8 GEMM: built and numerically right, but ran as dequantize-to-FP16 "
         f"+ FP16 GEMM; {_DENSE_FC}. TensorRT 11.x (version not named for this), GPU not named.",
    conditions=Conditions(support="maintainer"))
FUSED = Claim(
    target="trt11-x86", outcome="pass", source=FALLBACK, strength="issue-thread", architecture=FP8_GPUS,
    note=f"The pull request's account: {_DENSE_FC}, so one scale per tensor on both sides gets the fused FP8 GEMM. Not "
         "measured in the thread for this graph.")


class Fp8GemmMixedScales(Case):
    id = "p18-fp8-gemm-mixed-scales"
    title = "FP8 GEMM with per-token activation and per-channel weight scales runs as FP16 GEMM without a word"
    pattern = "P18"
    log_signatures = (  # what the pattern looks like in a TensorRT log
        KnownFailure(
            id="fp4-blockwise-quantize-rejected", category="unsupported-op",
            message=r"Blockwise quantization requires output type to be int8 or fp8e4m3",
            source="https://github.com/NVIDIA/TensorRT-Model-Connect/pull/1326",
            example="Blockwise quantization requires output type to be int8 or fp8e4m3"),
    )
    links = (FALLBACK, FP4_REJECTED)
    mode = "explicit-qdq"
    opset = 19
    tolerance = Tolerance(
        min_cosine=0.9999,
        max_abs_error=0.02,
        reason=(
            "Compared with the reference evaluation of the same Q/DQ graph, which has no Q after the MatMul: a "
            "backend multiplying the same FP8 values (exact in FP16 and FP32) differs only by accumulation order and "
            "by FP16 rounding of the 64-term sums (|output| < 3, an FP16 ulp at 2 is 0.002). A scale applied along "
            "the wrong axis (per token for per channel) moves outputs by tens of percent; the FP8-or-FP16 question is "
            "the precision record's, not the tolerance's."
        ),
    )
    not_applicable = {"onnxruntime": (
        "ONNX Runtime has no FP8 GEMM to fall back from: which scale schemes TensorRT fuses cannot concern it."
    )}
    backend_notes = {
        "onnxruntime": (
            "ONNX Runtime's CPU EP runs FP8 Q/DQ as quantize-dequantize around an FP32 MatMul whatever the scales' "
            "layout: it has no FP8 GEMM to fall back from. These cells show the graph is valid and computes; which "
            "scale schemes TensorRT fuses into an FP8 GEMM is the TensorRT targets' question (inspector operand "
            "types)."
        ),
    }
    remedy = (
        "Use one scale per tensor for both the activation and the weight of an FP8 GEMM (the scheme the fusion "
        "recognizes), or accept FP16; confirm with the engine inspector's operand types, not the tactic name. For FP4 "
        "use add_dynamic_quantize, not a blockwise add_quantize."
    )
    variants = (
        Variant(
            name="as-reported",
            needs=("fp8-qdq",),
            role="failing",
            description="X -> FP8 Q/DQ per token (axis 1) -> MatMul(X, DQ(FP8 W, per channel along axis 1)), strongly "
            "typed.",
            params=REPORTED,
            knobs=Knobs(strongly_typed=True),
            claims=(FALLS_BACK,),
        ),
        Variant(
            name="per-tensor-both",
            needs=("fp8-qdq",),
            role="workaround",
            description="One scale for the activation and one for the weight (the scheme the dense-FC fusion "
            "recognizes, per the pull request).",
            params={**REPORTED, "activation": "per-tensor", "weight": "per-tensor"},
            knobs=Knobs(strongly_typed=True),
            claims=(FUSED,),
            varies="as-reported",
        ),
        Variant(
            name="per-channel-weight-only",
            needs=("fp8-qdq",),
            role="sweep",
            description="A per-tensor activation scale with the per-channel weight scales.",
            params={**REPORTED, "activation": "per-tensor"},
            knobs=Knobs(strongly_typed=True),
            varies="as-reported",
        ),
        Variant(
            name="per-token-activation-only",
            needs=("fp8-qdq",),
            role="sweep",
            description="The per-token activation scales with one weight scale.",
            params={**REPORTED, "weight": "per-tensor"},
            knobs=Knobs(strongly_typed=True),
            varies="as-reported",
        ),
    )

    @staticmethod
    def build(variant: Variant) -> Built:
        p = variant.params
        precision = p["precision"]
        graph = gs.Graph(name=Fp8GemmMixedScales.id, opset=Fp8GemmMixedScales.opset)
        x = g.graph_input("hidden_states", (1, TOKENS, IN_FEATURES))
        graph.inputs.append(x)
        unit = g.UNIT_ACTIVATION_SCALE_FP8 if precision == "fp8" else g.UNIT_ACTIVATION_SCALE
        if p["activation"] == "per-token":
            # One scale per token: the reported scales are dynamic (each token's amax); static ones of a calibration
            # spread around the unit scale make the same layout.
            scale = (unit * g.rng_for(f"{SCOPE}/input_quantizer").uniform(0.75, 1.25, TOKENS)).astype(np.float32)
            x = g.torch_fake_quantize(graph, x, f"{SCOPE}/input_quantizer", scale, axis=1, precision=precision)
        else:
            x = g.torch_fake_quantize(graph, x, f"{SCOPE}/input_quantizer", unit, precision=precision)
        values = g.dense_weight("model.layers.0.mlp.up_proj.weight", (IN_FEATURES, OUT_FEATURES), IN_FEATURES)
        per_channel = p["weight"] == "per-channel"
        scale = (g.per_channel_scale(values.values, axis=1, precision=precision) if per_channel
                 else g.per_tensor_scale(values.values, precision=precision))
        w = g.dequantize_int8_weight(graph, values, scale, "model.layers.0.mlp.up_proj.weight",
                                     f"{SCOPE}/weight_quantizer/scale", f"{SCOPE}/weight_quantizer/zero_point",
                                     f"{SCOPE}/weight_quantizer/DequantizeLinear",
                                     f"{SCOPE}/weight_quantizer/DequantizeLinear_output_0",
                                     axis=1 if per_channel else None, precision=precision)
        y = g.torch_node(graph, "MatMul", SCOPE, [x, w])
        g.mark_output(graph, y, (1, TOKENS, OUT_FEATURES))
        return Built(graph, expected_precision={MATMUL: precision})

    @classmethod
    def find(cls, graph: Any) -> list[Match]:
        """A MatMul or Gemm with an FP8 Q/DQ activation and an FP8 DQ weight whose scales are not one per tensor on
        both sides: the variant names which side has more than one scale."""
        found = []
        for node in m.nodes_of(graph, "MatMul", "Gemm"):
            a, b = (m.dequantized(t) for t in node.inputs[:2])
            if a is None or b is None or m.weight_constant(node.inputs[1]) is None:
                continue
            if m.quantized_precision(a) != "fp8" or m.quantized_precision(b) != "fp8":
                continue
            per_token, per_channel = (m.quantization_axis(t) is not None for t in node.inputs[:2])
            if not (per_token or per_channel):
                continue
            variant = {(True, True): "as-reported", (False, True): "per-channel-weight-only",
                       (True, False): "per-token-activation-only"}[(per_token, per_channel)]
            found.append(Match(
                case=cls.id, nodes=(node.name, a.name, b.name), variant=variant,
                note=f"FP8 {node.op} {node.name} with {'per-token' if per_token else 'one'} activation scale(s) and "
                     f"{'per-channel' if per_channel else 'one'} weight scale(s): TensorRT 11 fuses an FP8 GEMM only "
                     "for one scale per tensor on both sides and otherwise runs it as FP16, without a warning.",
            ))
        return found
