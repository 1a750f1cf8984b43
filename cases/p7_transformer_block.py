"""P7: a transformer block (LayerNormalization -> MatMul -> Softmax -> MatMul) under implicit PTQ and explicit Q/DQ.

Upstream: maintainers answer again and again that TensorRT's implicit (calibration) INT8 does not cover transformer
networks, which then run FP16/FP32: https://github.com/NVIDIA/TensorRT/issues/2485 (8.4.1, A10, Swin backbone: "we
don't support PTQ for transformer-based networks"), https://github.com/NVIDIA/TensorRT/issues/4058 (10.1 in the
tensorrt:24.06 image, A100, BERT-like: "do not support calibration", use ModelOpt to insert Q/DQ), and
https://github.com/NVIDIA/TensorRT/issues/3784 (listed in failure-patterns.md; not read by us, no claim). None of
those versions is in our matrix. Claims come from:

* https://github.com/NVIDIA/TensorRT/issues/3230 (TensorRT 8.6.1.6, the x86 build): a maintainer states that the
  LayerNorm fusion path does not support INT8 implicit quantization.
* onnx-tensorrt's 8.5 operator table (``LayerNormalization: N``) and https://github.com/lyuwenyu/RT-DETR/issues/200
  (TensorRT 8.5.2.2 in an L4T r35.2.1 container: LayerNormalization at opset 17 "Plugin not found"; opset 16, where
  torch.onnx decomposes the norm, built).

Graph: one single-head self-attention block as torch.onnx writes it, kept minimal: tokens (1, 64, 32) ->
LayerNormalization(axis -1) -> q/k/v MatMuls (32 -> 32, the 1/sqrt(32) score scale folded into the q weight) ->
MatMul(q, Transpose(k)) -> Softmax -> MatMul(., v). Names are ours, torch.onnx style for a ViT block
(``/blocks.0/norm1``, ``/blocks.0/attn/...``). Below opset 17 torch.onnx writes the norm as ReduceMean, Sub, Pow,
ReduceMean, Add, Sqrt, Div, Mul, Add: the ``implicit-decomposed-ln`` variant (opset 13). The explicit variant places
Q/DQ on every MatMul input (ModelOpt's placement for attention), weights INT8 per output channel (axis 1).
"""
from __future__ import annotations

import re
import numpy as np

from cases import _graphs as g
from cases import matching as m
from cases._graphs import gs
from cases.model import Built, Case, Claim, Knobs, Match, Scope, Tolerance, Variant
from harness.tensorrt.signatures import KnownForm
from harness.judgement.claims import Conditions

PTQ_NOT_SUPPORTED = "https://github.com/NVIDIA/TensorRT/issues/2485"
BERT_NO_CALIBRATION = "https://github.com/NVIDIA/TensorRT/issues/4058"
LISTED = "https://github.com/NVIDIA/TensorRT/issues/3784"
LAYERNORM_NO_IMPLICIT_INT8 = "https://github.com/NVIDIA/TensorRT/issues/3230"
OPERATORS_85 = "https://github.com/onnx/onnx-tensorrt/blob/release/8.5-GA/docs/operators.md"
RTDETR_OPSET_16 = "https://github.com/lyuwenyu/RT-DETR/issues/200"

TOKENS, DIM = 64, 32
BLOCK = "/blocks.0"
ATTN = f"{BLOCK}/attn"
MATMULS = (f"{ATTN}/q/MatMul", f"{ATTN}/k/MatMul", f"{ATTN}/v/MatMul", f"{ATTN}/MatMul", f"{ATTN}/MatMul_1")
EPSILON = 1e-5
# Per-tensor activation scales for the explicit variant: +-4 standard deviations of each tensor; softmax output in [0, 1].
Q_SCALE = g.UNIT_ACTIVATION_SCALE / np.sqrt(DIM)
SOFTMAX_SCALE = 1.0 / g.INT8_MAX

IMPLICIT_CLAIMS = (
    Claim(
        target="trt86-x86",
        outcome="fallback",
        source=LAYERNORM_NO_IMPLICIT_INT8,
        strength="issue-thread",
        note="TensorRT 8.6.1.6: a maintainer states the LayerNorm fusion path (opset 17 LayerNormalization) does not "
        "support INT8 implicit quantization; the thread is about a LayerNorm not being fused, and does not list which "
        "MatMuls ran in which precision.",
        conditions=Conditions(support="maintainer"),
    ),
    Claim(
        target="trt85-orin",
        outcome="unsupported",
        category="unsupported-op",
        source=OPERATORS_85,
        strength="documentation",
        note="onnx-tensorrt 8.5 lists LayerNormalization as not supported; RT-DETR#200 reports 'Plugin not found' for "
        "it at opset 17 with TensorRT 8.5.2.2 in an L4T r35.2.1 (JetPack 5) container, device not named.",
        conditions=Conditions(support="documented"),
    ),
)


class TransformerBlock(Case):
    id = "p7-transformer-block"
    title = "Transformer block (LayerNormalization, MatMul, Softmax, MatMul): implicit PTQ vs explicit Q/DQ"
    pattern = "P7"
    log_signatures = (  # what the pattern looks like in a TensorRT log
        KnownForm(
            id="layernorm-missing-scale", kind="missing-scale",
            form=r"(?:Missing scale and zero-point|Missing dynamic range) for tensor \S*LayerNorm", flags=re.IGNORECASE,
            source="https://github.com/NVIDIA/TensorRT/issues/4058",
            note="LayerNorm tensors without INT8 scales: a transformer block under implicit INT8 stays in float (P7)",
            example=("[TRT] [W] Missing scale and zero-point for tensor encoder.layer.2.attention.output.LayerNorm.bias_output, "
                     "expect fall back to non-int8 implementation for any layer consuming or producing given tensor")),
    )
    links = (PTQ_NOT_SUPPORTED, BERT_NO_CALIBRATION, LISTED, LAYERNORM_NO_IMPLICIT_INT8, OPERATORS_85,
             RTDETR_OPSET_16)
    mode = "implicit-int8"
    opset = 17
    tolerance = Tolerance(
        min_cosine=0.99,
        max_abs_error=0.35,
        reason=(
            "Implicit variants against the FP32 reference: the block output is a softmax-weighted mean of v (about "
            "+-0.9, std 0.24); calibrated ranges quantize q, k, v and the scores. ONNX Runtime measured at most 0.09 "
            "off (cosine > 0.996) with the native LayerNormalization and 0.22 (cosine 0.995) with the decomposed one, "
            "whose Add/Mul its quantizer also quantizes. The explicit variants match their Q/DQ reference within 1e-6. "
            "A broken block is far outside: a softmax over the wrong axis measured 0.54 off, cosine 0.95."
        ),
    )
    backend_notes = {
        "onnxruntime": (
            "ONNX Runtime's quantize_static, which this harness uses for the implicit variants, quantizes every MatMul "
            "of the block (LayerNormalization and Softmax stay float), so the ONNX Runtime cells show its own PTQ "
            "running them INT8 - the opposite of what is reported for TensorRT's implicit PTQ of transformer blocks. "
            "An ONNX Runtime pass here says nothing about TensorRT."
        ),
    }
    variants = (
        Variant(
            name="implicit-ln17",
            range_claims=(Claim(
                outcome="fallback", source=LAYERNORM_NO_IMPLICIT_INT8, strength="issue-thread",
                scope=Scope(since="8.6", before="11.0"),
                basis="maintainers: the LayerNorm fusion path takes no implicit INT8 (8.6.1.6 in #3230; on 10.1 in "
                "#4058 calibration is not supported for such blocks)",
                note="Under a calibrator the LayerNorm-fused region stays FP16/FP32."),),
            role="failing",
            description="The float block at opset 17 (native LayerNormalization), implicit INT8 with an entropy "
            "calibrator.",
            params={"norm": "native", "qdq": False, "batch": 1},
            claims=IMPLICIT_CLAIMS,
        ),
        Variant(
            name="explicit-qdq",
            role="workaround",
            varies="implicit-ln17", inherits=False,
            description=f"Q/DQ on every MatMul input and INT8 weights (per output channel), the placement a "
            f"maintainer points to in {BERT_NO_CALIBRATION} (ModelOpt).",
            params={"norm": "native", "qdq": True, "batch": 1},
            mode="explicit-qdq",
        ),
        Variant(
            name="explicit-qdq-strongly-typed",
            role="sweep",
            # The explicit-qdq workaround built strongly typed: Q/DQ everywhere, another mode
            varies="implicit-ln17", inherits=False,
            description="explicit-qdq built as a strongly typed network (TensorRT 10's recommended way to build Q/DQ "
            "networks; no such flag before 9.x).",
            params={"norm": "native", "qdq": True, "batch": 1},
            knobs=Knobs(strongly_typed=True),
            mode="explicit-qdq",
        ),
        Variant(
            name="implicit-decomposed-ln",
            role="workaround",
            varies="implicit-ln17", inherits=False,
            description=f"implicit-ln17 exported below opset 17 (opset 13): LayerNorm as ReduceMean/Sub/Pow/ReduceMean/"
            f"Add/Sqrt/Div/Mul/Add, what built on 8.5.2.2 in {RTDETR_OPSET_16}.",
            params={"norm": "decomposed", "qdq": False, "batch": 1},
            opset=13,
        ),
        Variant(
            name="implicit-ln17-fp16",
            role="sweep",
            # FP16 allowed beside INT8 is a build setting that may be the way out
            varies="implicit-ln17", inherits=False,
            description="implicit-ln17 with FP16 allowed too (trtexec --best, as the threads build).",
            params={"norm": "native", "qdq": False, "batch": 1},
            knobs=Knobs(fp16=True),
        ),
        Variant(
            name="implicit-ln17-minmax",
            role="sweep",
            varies="implicit-ln17", inherits=True,  # Another calibrator, same graph
            description="implicit-ln17 calibrated with MinMax instead of entropy.",
            params={"norm": "native", "qdq": False, "batch": 1},
            knobs=Knobs(calibrator="minmax"),
        ),
        Variant(
            name="implicit-ln17-batch-4",
            role="sweep",
            varies="implicit-ln17", inherits=True,
            description="implicit-ln17 on a batch of 4 sequences.",
            params={"norm": "native", "qdq": False, "batch": 4},
        ),
    )

    @staticmethod
    def build(variant: Variant) -> Built:
        p = variant.params
        qdq = p["qdq"]
        graph = gs.Graph(name=TransformerBlock.id, opset=TransformerBlock.opset_of(variant))
        shape = (p["batch"], TOKENS, DIM)
        x = g.graph_input("tokens", shape)
        graph.inputs.append(x)
        ln = _layer_norm(graph, x, p["norm"])
        if qdq:
            ln = g.torch_fake_quantize(graph, ln, f"{ATTN}/qkv/input_quantizer", g.UNIT_ACTIVATION_SCALE)
        q = _projection(graph, ln, "q", qdq, scale=1.0 / np.sqrt(DIM))
        k = _projection(graph, ln, "k", qdq)
        v = _projection(graph, ln, "v", qdq)
        k_t = g.torch_node(graph, "Transpose", ATTN, [k], {"perm": [0, 2, 1]})
        if qdq:
            q = g.torch_fake_quantize(graph, q, f"{ATTN}/q_bmm_quantizer", Q_SCALE)
            k_t = g.torch_fake_quantize(graph, k_t, f"{ATTN}/k_bmm_quantizer", g.UNIT_ACTIVATION_SCALE)
        scores = g.torch_node(graph, "MatMul", ATTN, [q, k_t])
        attn = g.torch_node(graph, "Softmax", ATTN, [scores], {"axis": -1})
        if qdq:
            attn = g.torch_fake_quantize(graph, attn, f"{ATTN}/softmax_bmm_quantizer", SOFTMAX_SCALE)
            v = g.torch_fake_quantize(graph, v, f"{ATTN}/v_bmm_quantizer", g.UNIT_ACTIVATION_SCALE)
        out = g.node(graph, "MatMul", f"{ATTN}/MatMul_1", [attn, v], f"{ATTN}/MatMul_1_output_0")
        g.mark_output(graph, out, shape)
        # The five MatMuls are the compute of the block; LayerNormalization and Softmax run in FP16/FP32 anyway.
        return Built(graph, expected_int8=MATMULS)

    @classmethod
    def rewrite_problem(cls, workaround: Variant, form: Variant | None = None) -> str | None:
        return ("the workarounds re-quantize the model (explicit Q/DQ: use --to-explicit) or re-export it below opset"
                " 17; neither is a rewrite of one place")

    @classmethod
    def find(cls, graph) -> list[Match]:
        """Every Softmax between two MatMuls of activations (the attention core); the variant says whether its
        MatMuls come through Q/DQ, or, in a network without any Q/DQ (implicit PTQ), how the LayerNorm feeding the
        score MatMul is written: the nearest norm upstream, however far (a ViT's in-projection, bias Add, reshapes and
        q/k/v Gathers put it 40 nodes away), a LayerNormalization or its decomposition below opset 17. No norm
        upstream: neither form, no variant."""
        explicit = any(True for _ in m.nodes_of(graph, "DequantizeLinear"))
        found = []
        for softmax in m.nodes_of(graph, "Softmax"):
            scores = m.producer(softmax.inputs[0])
            context = m.only_consumer(softmax.outputs[0])
            qdq_after = m.qdq_after(softmax.outputs[0])
            if qdq_after:
                context = m.only_consumer(qdq_after[-1].outputs[0])
            if not (_activation_matmul(scores) and _activation_matmul(context)):
                continue
            norm = m.nearest_upstream(scores.inputs, _is_layer_norm)
            if all(m.dequantized(t) for t in (*scores.inputs, *context.inputs)):
                variant = "explicit-qdq"
            elif explicit or norm is None:
                variant = None
            else:
                variant = "implicit-ln17" if norm.op == "LayerNormalization" else "implicit-decomposed-ln"
            how = "through Q/DQ" if variant == "explicit-qdq" else (
                "in a network without Q/DQ (implicit PTQ)" if not explicit else "partly without Q/DQ")
            found.append(Match(
                case=cls.id, nodes=(softmax.name, scores.name, context.name, *((norm.name,) if norm else ())),
                variant=variant,
                note=f"Attention Softmax {softmax.name} between MatMuls {scores.name} and {context.name}, {how}: "
                     "TensorRT's implicit PTQ leaves transformer blocks in FP16/FP32; explicit Q/DQ is needed for "
                     "INT8.",
            ))
        return found


def _activation_matmul(node) -> bool:
    """A MatMul of two activations: neither operand computed from constants alone."""
    return node is not None and node.op == "MatMul" and not any(m.is_weight(t) for t in node.inputs)


def _is_layer_norm(node) -> bool:
    """A LayerNormalization, or the ReduceMean that starts its decomposition (torch.onnx below opset 17):
    ``Sub(x, ReduceMean(x))``."""
    if node.op == "LayerNormalization":
        return True
    if node.op != "ReduceMean":
        return False
    source = node.inputs[0]
    return any(reader.op == "Sub" and reader.inputs[0] is source and reader.inputs[1] is node.outputs[0]
               for reader in m.consumers(node.outputs[0]))


def _projection(graph: gs.Graph, x, name: str, qdq: bool, scale: float = 1.0) -> gs.Variable:
    """``x @ W`` (32 -> 32), W drawn N(0, 1/32) times ``scale``; INT8 through a DQ (per output channel) when ``qdq``."""
    scope = f"{ATTN}/{name}"
    weight = g.dense_weight(f"blocks.0.attn.{name}.weight", (DIM, DIM), fan_in=DIM)
    weight = gs.Constant(weight.name, (weight.values * scale).astype(np.float32))
    if qdq:
        weight = g.dequantize_int8_weight(graph, weight, g.per_channel_scale(weight.values, 1), weight.name,
                                          f"{scope}/weight_quantizer/scale", f"{scope}/weight_quantizer/zero_point",
                                          f"{scope}/weight_quantizer/DequantizeLinear",
                                          f"{scope}/weight_quantizer/DequantizeLinear_output_0", axis=1)
    return g.torch_node(graph, "MatMul", scope, [x, weight])


def _layer_norm(graph: gs.Graph, x, norm: str) -> gs.Variable:
    scope = f"{BLOCK}/norm1"
    weight = gs.Constant("blocks.0.norm1.weight", g.rng_for("blocks.0.norm1.weight").uniform(0.8, 1.2, DIM)
                         .astype(np.float32))
    bias = gs.Constant("blocks.0.norm1.bias", g.rng_for("blocks.0.norm1.bias").uniform(-0.1, 0.1, DIM)
                       .astype(np.float32))
    if norm == "native":
        return g.torch_node(graph, "LayerNormalization", scope, [x, weight, bias], {"axis": -1, "epsilon": EPSILON})
    # torch.onnx below opset 17: (x - mean) / sqrt(var + eps) * weight + bias, numbered as torch numbers repeats.
    mean = g.node(graph, "ReduceMean", f"{scope}/ReduceMean", [x], f"{scope}/ReduceMean_output_0", {"axes": [-1]})
    centered = g.node(graph, "Sub", f"{scope}/Sub", [x, mean], f"{scope}/Sub_output_0")
    two = gs.Constant(f"{scope}/Constant_output_0", np.array(2.0, dtype=np.float32))
    square = g.node(graph, "Pow", f"{scope}/Pow", [centered, two], f"{scope}/Pow_output_0")
    var = g.node(graph, "ReduceMean", f"{scope}/ReduceMean_1", [square], f"{scope}/ReduceMean_1_output_0",
                 {"axes": [-1]})
    eps = gs.Constant(f"{scope}/Constant_1_output_0", np.array(EPSILON, dtype=np.float32))
    var = g.node(graph, "Add", f"{scope}/Add", [var, eps], f"{scope}/Add_output_0")
    std = g.node(graph, "Sqrt", f"{scope}/Sqrt", [var], f"{scope}/Sqrt_output_0")
    y = g.node(graph, "Div", f"{scope}/Div", [centered, std], f"{scope}/Div_output_0")
    y = g.node(graph, "Mul", f"{scope}/Mul", [y, weight], f"{scope}/Mul_output_0")
    return g.node(graph, "Add", f"{scope}/Add_1", [y, bias], f"{scope}/Add_1_output_0")
