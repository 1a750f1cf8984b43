"""P8: an attention block (LayerNorm, MatMul, Softmax, MatMul) under --int8: a Myelin ``ForeignNode`` without INT8.

TensorRT hands attention-like subgraphs to Myelin, its compiler for fused regions; the engine then has one layer named
``{ForeignNode[FIRST...LAST]}`` for the whole region. Upstream facts:

* https://github.com/NVIDIA/TensorRT/issues/3972: TensorRT 10.1, A100, opset 17, ``trtexec --int8`` fails with
  "Could not find any implementation for node {ForeignNode[/transformer/attention_4/Slice_4_output_0[Constant]...
  /transformer/Reshape_6]}"; the same model builds with ``--fp16`` or ``--bf16``. Closed without an answer.
* https://github.com/NVIDIA/TensorRT/issues/2606: TensorRT 8.5.1.7, RTX 3090, ``--int8``: a ForeignNode without any
  implementation after Myelin ran out of memory while autotuning (log excerpt F29 of the reference logs).
* https://github.com/NVIDIA/TensorRT/issues/3230: a maintainer, on TensorRT 8.6.1.6: the code path that fuses
  LayerNorm into a ForeignNode "does not support INT8 implicit quantization".
* https://github.com/NVIDIA/TensorRT/issues/2323: a maintainer: Myelin optimizes specific patterns such as multi-head
  attention and supports quantized models only through Q/DQ, not PTQ (calibration).

failure-patterns.md also lists https://github.com/NVIDIA/TensorRT/issues/4072; its text was not found in the search
index used here, so no fact comes from it.

Graph: one pre-norm, single-head ViT-style block as torch.onnx exports it (``x + proj(softmax(q k^T / sqrt(d)) v)``
with ``q, k, v = Linear(LayerNorm(x))``): torch ``Linear`` becomes MatMul + Add, ``k.transpose(-2, -1)`` a Transpose,
the scaling a Mul. One head keeps the block free of the Reshape/Transpose pairs of multi-head attention; the fused
region is the same kind. Token count and width are not in the threads: 16 tokens of width 32 are our choice.
"""
from __future__ import annotations

import re
from typing import Any

import numpy as np

from cases import _graphs as g
from cases._graphs import gs
from cases.matching import nodes_of
from cases.model import Built, Case, Claim, Knobs, Match, Scope, Tolerance, Variant
from harness.tensorrt.signatures import KnownFailure
from harness.judgement.claims import Conditions

MYELIN_INT8_FAIL = "https://github.com/NVIDIA/TensorRT/issues/3972"
MYELIN_OOM = "https://github.com/NVIDIA/TensorRT/issues/2606"
LAYERNORM_FOREIGN_NODE = "https://github.com/NVIDIA/TensorRT/issues/3230"
MYELIN_QDQ_ONLY = "https://github.com/NVIDIA/TensorRT/issues/2323"

TOKENS = 16
WIDTH = 32
REPORTED = {"layernorm": "native", "qdq": False}
PROJECTIONS = ("q", "k", "v", "proj")
SCORES = "/attn/MatMul"  # q @ k^T
CONTEXT = "/attn/MatMul_1"  # softmax(...) @ v
MATMULS = ("/attn/q/MatMul", "/attn/k/MatMul", "/attn/v/MatMul", SCORES, CONTEXT, "/attn/proj/MatMul")
# Softmax of attention scores lies in [0, 1]: its Q/DQ scale maps 1.0 onto 127.
SOFTMAX_SCALE = 1.0 / g.INT8_MAX

FALLBACK_CLAIM = Claim(
    target="trt86-x86",
    outcome="fallback",
    source=LAYERNORM_FOREIGN_NODE,
    strength="issue-thread",
    note=(
        "A maintainer on TensorRT 8.6.1.6: the path that fuses LayerNorm into a ForeignNode does not support INT8 "
        "implicit quantization, so the block runs in FP16/FP32 under a calibrator. Said of the software version, not "
        "measured on a particular GPU; whether the build fails instead (as in #3972 on 10.1) is not stated for 8.6."
    ),
    conditions=Conditions(support="maintainer"),
)


def _linear_weight(name: str, shape: tuple[int, int]) -> gs.Constant:
    """A Linear weight as torch.onnx stores it for MatMul, (in, out), drawn N(0, 1/in)."""
    values = g.rng_for(name).normal(0.0, 1.0 / np.sqrt(shape[0]), size=shape)
    return gs.Constant(name, values.astype(np.float32))


def _fake_quantize(graph, x, scope: str, scale: float | np.ndarray) -> gs.Variable:
    """A per-tensor Q/DQ pair named as pytorch-quantization exports a quantizer (``<scope>/QuantizeLinear``)."""
    return g.torch_fake_quantize(graph, x, scope, np.asarray(scale, dtype=np.float32))


def _linear(graph, x, name: str, qdq: bool) -> gs.Variable:
    """torch.nn.Linear as torch.onnx exports it: MatMul with the (in, out) weight, then Add of the bias."""
    weight = _linear_weight(f"attn.{name}.weight", (WIDTH, WIDTH))
    if qdq:
        x = _fake_quantize(graph, x, f"/attn/{name}/_input_quantizer", g.UNIT_ACTIVATION_SCALE)
        weight = _fake_quantize(graph, weight, f"/attn/{name}/_weight_quantizer", g.per_tensor_scale(weight.values))
    y = g.torch_node(graph, "MatMul", f"/attn/{name}", [x, weight])
    return g.torch_node(graph, "Add", f"/attn/{name}", [y, g.bias(f"attn.{name}.bias", WIDTH)])


def _layernorm(graph, x, form: str) -> gs.Variable:
    """LayerNorm over the last axis: the opset-17 op, or the nine ops torch.onnx writes for opsets before 17."""
    scale = gs.Constant("norm1.weight", g.rng_for("norm1.weight").uniform(0.8, 1.2, WIDTH).astype(np.float32))
    shift = g.bias("norm1.bias", WIDTH)
    if form == "native":
        return g.torch_node(graph, "LayerNormalization", "/norm1", [x, scale, shift], {"axis": -1, "epsilon": 1e-5})
    mean = g.node(graph, "ReduceMean", "/norm1/ReduceMean", [x], "/norm1/ReduceMean_output_0", {"axes": [-1]})
    centred = g.node(graph, "Sub", "/norm1/Sub", [x, mean], "/norm1/Sub_output_0")
    two = gs.Constant("/norm1/Constant_output_0", np.array(2.0, dtype=np.float32))
    squared = g.node(graph, "Pow", "/norm1/Pow", [centred, two], "/norm1/Pow_output_0")
    variance = g.node(graph, "ReduceMean", "/norm1/ReduceMean_1", [squared], "/norm1/ReduceMean_1_output_0",
                      {"axes": [-1]})
    eps = gs.Constant("/norm1/Constant_1_output_0", np.array(1e-5, dtype=np.float32))
    shifted = g.node(graph, "Add", "/norm1/Add", [variance, eps], "/norm1/Add_output_0")
    std = g.node(graph, "Sqrt", "/norm1/Sqrt", [shifted], "/norm1/Sqrt_output_0")
    normed = g.node(graph, "Div", "/norm1/Div", [centred, std], "/norm1/Div_output_0")
    scaled = g.node(graph, "Mul", "/norm1/Mul", [normed, scale], "/norm1/Mul_output_0")
    return g.node(graph, "Add", "/norm1/Add_1", [scaled, shift], "/norm1/Add_1_output_0")


class AttentionMyelin(Case):
    id = "p8-attention-myelin"
    title = "Pre-norm attention block (LayerNorm, MatMul, Softmax, MatMul) under --int8: a Myelin ForeignNode"
    pattern = "P8"
    log_signatures = (  # what the pattern looks like in a TensorRT log
        KnownFailure(
            id="foreign-node-no-implementation", category="no-implementation",
            message=r"could not find any implementation for node \{ForeignNode\[", flags=re.IGNORECASE,
            source="https://github.com/NVIDIA/TensorRT/issues/3972",
            example=("Could not find any implementation for node {ForeignNode[/transformer/attention_4/Slice_4_output_0[Constant]"
                     ".../transformer/Reshape_6]}."),
            yields_to_skip_reason=True),
    )
    links = (MYELIN_INT8_FAIL, MYELIN_OOM, LAYERNORM_FOREIGN_NODE, MYELIN_QDQ_ONLY)
    mode = "implicit-int8"
    opset = 17
    tolerance = Tolerance(
        min_cosine=0.99,
        max_abs_error=1.0,
        reason=(
            "INT8 against the FP32 reference. The block adds attention to its N(0, 1) input, so outputs lie in about "
            "[-4, 4]. Quantizing both inputs of all six MatMuls (ONNX Runtime's quantize_static, the most INT8 this "
            "block gets) gave at most 0.34 off and cosine > 0.9995 over the variants (0.04 for the Q/DQ one against "
            "its own reference); 1.0 (an eighth of the range) leaves room for another backend's rounding and still "
            "flags a wrong result; the cosine flags drift."
        ),
    )
    variants = (
        Variant(
            name="as-reported",
            range_claims=(Claim(
                outcome="fallback", source=MYELIN_QDQ_ONLY, strength="issue-thread",
                scope=Scope(since="8.5", before="11.0"),
                basis="maintainers: Myelin takes quantized models only through Q/DQ, not calibration (#2323, no "
                "version named; #3230 on 8.6.1.6)",
                note=f"Under a calibrator the attention region runs FP16/FP32; on 10.1 an --int8 build of such a "
                f"block failed outright ({MYELIN_INT8_FAIL}), so read this as at best."),),
            role="failing",
            description="LayerNormalization (opset 17) -> q/k/v Linear -> q k^T * 1/sqrt(32) -> Softmax -> @ v -> "
            "proj Linear -> residual Add, 1x16x32 tokens, implicit INT8 with an entropy calibrator.",
            params=REPORTED,
            claims=(FALLBACK_CLAIM,),
        ),
        Variant(
            name="qdq-matmuls",
            role="workaround",
            varies="as-reported", inherits=False,
            description="As reported, quantized explicitly: per-tensor Q/DQ on both inputs of every MatMul (the only "
            f"INT8 Myelin takes, per {MYELIN_QDQ_ONLY}).",
            params={**REPORTED, "qdq": True},
            mode="explicit-qdq",
        ),
        Variant(
            name="layernorm-decomposed",
            role="sweep",
            varies="as-reported", inherits=False,  # LayerNorm as nine ops: other ops
            description="As reported, with LayerNorm as the nine ops torch.onnx exports before opset 17 (ReduceMean, "
            "Sub, Pow, ReduceMean, Add, Sqrt, Div, Mul, Add), opset 13: the form TensorRT must pattern-match.",
            params={**REPORTED, "layernorm": "decomposed"},
            opset=13,
        ),
        Variant(
            name="no-layernorm",
            role="sweep",
            varies="as-reported", inherits=False,  # The attention core without the LayerNorm: other ops
            description="As reported, without the LayerNorm: does the attention core alone become a ForeignNode?",
            params={**REPORTED, "layernorm": None},
        ),
        Variant(
            name="int8-fp16",
            role="sweep",
            varies="as-reported", inherits=False,  # FP16 allowed beside INT8 is a build setting that may be the way out
            description=f"As reported, with FP16 enabled next to INT8: {MYELIN_INT8_FAIL} built with --fp16 alone; "
            "does an FP16 implementation of the region let the INT8 build through?",
            params=REPORTED,
            knobs=Knobs(fp16=True),
        ),
    )
    backend_notes = {
        "onnxruntime": (
            "ONNX Runtime has no Myelin and no ForeignNode: quantize_static gives every MatMul of the block INT8 inputs "
            "and runs them as integer kernels, while LayerNormalization and Softmax stay float. In the explicit "
            "qdq-matmuls graph it fuses the output projection and its bias into a Gemm "
            "('/attn/proj/MatMul/MatMulAddFusion') that, with no QuantizeLinear after it, reads the DequantizeLinear "
            "outputs and runs in float. The cells show ONNX Runtime's own INT8 coverage of an attention block, not "
            "whether TensorRT fuses it into a region without INT8."
        ),
    }
    remedy = (
        "Quantize the attention block explicitly (Q/DQ on both inputs of every MatMul, e.g. with TensorRT Model "
        "Optimizer) instead of calibrating: Myelin regions take INT8 only from Q/DQ (#2323, #3230); under a calibrator "
        "they stay FP16/FP32 or, as on 10.1 (#3972), fail to build."
    )

    @staticmethod
    def build(variant: Variant) -> Built:
        p = variant.params
        graph = gs.Graph(name=AttentionMyelin.id, opset=AttentionMyelin.opset_of(variant))
        x = g.graph_input("x", (1, TOKENS, WIDTH))
        graph.inputs.append(x)
        h = _layernorm(graph, x, p["layernorm"]) if p["layernorm"] else x
        q, k, v = (_linear(graph, h, name, p["qdq"]) for name in ("q", "k", "v"))
        k_t = g.torch_node(graph, "Transpose", "/attn", [k], {"perm": [0, 2, 1]})
        if p["qdq"]:
            q = _fake_quantize(graph, q, "/attn/_q_quantizer", g.UNIT_ACTIVATION_SCALE)
            k_t = _fake_quantize(graph, k_t, "/attn/_k_quantizer", g.UNIT_ACTIVATION_SCALE)
        scores = g.torch_node(graph, "MatMul", "/attn", [q, k_t])
        scale = gs.Constant("/attn/Constant_output_0", np.array(1.0 / np.sqrt(WIDTH), dtype=np.float32))
        scores = g.torch_node(graph, "Mul", "/attn", [scores, scale])
        weights = g.torch_node(graph, "Softmax", "/attn", [scores], {"axis": -1})
        if p["qdq"]:
            weights = _fake_quantize(graph, weights, "/attn/_softmax_quantizer", SOFTMAX_SCALE)
            v = _fake_quantize(graph, v, "/attn/_v_quantizer", g.UNIT_ACTIVATION_SCALE)
        context = g.node(graph, "MatMul", CONTEXT, [weights, v], f"{CONTEXT}_output_0")
        out = _linear(graph, context, "proj", p["qdq"])
        g.mark_output(graph, g.node(graph, "Add", "/Add", [x, out], "/Add_output_0"), (1, TOKENS, WIDTH))
        # Every MatMul: the projections and both attention products are what --int8 is expected to quantize.
        return Built(graph, expected_int8=MATMULS)

    @classmethod
    def rewrite_problem(cls, workaround: Variant, form: Variant | None = None) -> str | None:
        return ("the workaround quantizes the model explicitly: use --to-explicit")

    @classmethod
    def find(cls, graph: Any) -> list[Match]:
        """Every MatMul -> Softmax -> MatMul chain with a LayerNorm (the op, or its decomposed form) upstream."""
        matches = []
        for softmax in nodes_of(graph, "Softmax"):
            first = _producer_through(softmax.inputs[0], ("Mul", "Div", "Add", "Where", "Cast"), "MatMul")
            second = next((c for c in _consumers_through(softmax.outputs[0], ("Cast",)) if c.op == "MatMul"), None)
            if first is None or second is None:
                continue
            norm = _layernorm_upstream(first)
            if norm is None:
                continue
            decomposed = norm.op != "LayerNormalization"
            matches.append(Match(
                case=cls.id,
                nodes=(softmax.name, first.name, second.name, norm.name),
                variant="layernorm-decomposed" if decomposed else "as-reported",
                note=("MatMul -> Softmax -> MatMul with a LayerNorm upstream: TensorRT fuses such a block into a Myelin "
                      "ForeignNode, which has no INT8 under a calibrator"
                      + (" (LayerNorm as decomposed ops)" if decomposed else "")),
            ))
        return matches


def _producer_through(tensor, passable: tuple[str, ...], wanted: str):
    """The ``wanted`` node that writes ``tensor``, looking through single-path ops in ``passable``; else None."""
    while tensor.inputs:
        node = tensor.inputs[0]
        if node.op == wanted:
            return node
        if node.op not in passable:
            return None
        tensor = node.inputs[0]
    return None


def _consumers_through(tensor, passable: tuple[str, ...]):
    for node in tensor.outputs:
        if node.op in passable:
            yield from _consumers_through(node.outputs[0], passable)
        else:
            yield node


def _layernorm_upstream(node):
    """The nearest LayerNormalization among ``node``'s ancestors, or the Div of a decomposed one (its Sqrt input
    reached from ReduceMean); None when there is neither."""
    seen, frontier = set(), [node]
    while frontier:
        current = frontier.pop(0)
        for tensor in current.inputs:
            producer = tensor.inputs[0] if tensor.inputs else None
            if producer is None or id(producer) in seen:
                continue
            seen.add(id(producer))
            if producer.op == "LayerNormalization" or (producer.op == "Div" and _is_decomposed_layernorm(producer)):
                return producer
            frontier.append(producer)
    return None


def _is_decomposed_layernorm(div) -> bool:
    """Div(x - mean, Sqrt(ReduceMean(...) + eps)): the core torch.onnx writes for LayerNorm before opset 17."""
    if len(div.inputs) < 2 or not div.inputs[1].inputs:
        return False
    sqrt = div.inputs[1].inputs[0]
    if sqrt.op != "Sqrt" or not sqrt.inputs[0].inputs:
        return False
    add = sqrt.inputs[0].inputs[0]
    return add.op == "Add" and any(t.inputs and t.inputs[0].op == "ReduceMean" for t in add.inputs)
