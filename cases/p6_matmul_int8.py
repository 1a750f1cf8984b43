"""P6, activation form: a MatMul of two activations (an attention score) in a Q/DQ network.

Upstream: https://github.com/NVIDIA/TensorRT/issues/4322 (TensorRT 8.6.2, open): in a QAT HRNet-OCR model the
MatMul of two activations (the object-context attention) was not quantized; with Q/DQ inserted on both of its inputs
it ran INT8, but slower than the FP16 engine. 8.6.2 is the JetPack 6 build (platforms.md: no 8.6.2 for x86), so the
claims name ``trt86-orin``; the thread does not name the Jetson.

Graph: the OCR attention score ``MatMul(query, key)`` of #4322, query (1, 64 pixels, 32) from a quantized projection
(which keeps the network in explicit mode, as the QAT model is), key (1, 32, 16 object regions) a graph input. Names
are ours under ``/ocr/object_context_block`` (the module path in HRNet-OCR). A MatMul or Gemm with a constant weight
is another form with other evidence: case ``p6-linear-int8`` (the projection here is one, and the scanner reports it
as that case).
"""
from __future__ import annotations

from cases import _graphs as g
from cases import matching as m
from cases import rewriting as rw
from cases._graphs import gs
from cases.model import Built, Case, Claim, FixResult, Match, NoRewrite, Tolerance, Variant
from harness.judgement.claims import Conditions
from cases.rewriting import QDQ_ADDED

ISSUE = "https://github.com/NVIDIA/TensorRT/issues/4322"

OCR = "/ocr/object_context_block"
PROJECTION = f"{OCR}/f_pixel/MatMul"
SCORE = f"{OCR}/MatMul"
PIXELS, KEY_CHANNELS, OBJECTS = 64, 32, 16

ORIN_862 = "TensorRT 8.6.2 (the JetPack 6 build), QAT HRNet-OCR"
AS_REPORTED_CLAIM = Claim(
    target="trt86-orin",
    outcome="fallback",
    source=ISSUE,
    strength="issue-thread",
    note=f"{ORIN_862}: the activation x activation MatMul, without Q/DQ on its inputs, was not quantized to INT8.",
    conditions=Conditions(support="one-report"),
)
QDQ_BOTH_CLAIM = Claim(
    target="trt86-orin",
    outcome="pass",
    source=ISSUE,
    strength="issue-thread",
    note=f"{ORIN_862}: with Q/DQ inserted on both inputs the MatMul ran INT8, but took longer than in the FP16 "
    "engine (this harness does not time layers).",
)


class MatMulInt8(Case):
    id = "p6-matmul-int8"
    title = "MatMul of two activations (an attention score) in a Q/DQ network, with and without Q/DQ on its inputs"
    pattern = "P6"
    links = (ISSUE,)
    mode = "explicit-qdq"
    opset = 13
    tolerance = Tolerance(
        min_cosine=0.9999,
        max_abs_error=0.05,
        reason=(
            "Compared with the reference evaluation of the same Q/DQ graph, which has no Q after the MatMuls: INT8 "
            "kernels multiply the same integers and rescale in another order, a few float ulps; a re-quantized query "
            "moves one step of 1/32 when a rounding tie flips. ONNX Runtime measured at most 6e-6."
        ),
    )
    backend_notes = {
        "onnxruntime": (
            "ONNX Runtime's CPU EP runs a MatMul INT8 when both of its inputs come through DequantizeLinear; a float "
            "input keeps it in float. Whether INT8 is faster than FP16 (#4322) is a TensorRT timing question these "
            "cells do not answer."
        ),
    }
    variants = (
        Variant(
            name="act-x-act-as-reported",
            role="failing",
            description="query = MatMul(DQ(Q(pixels)), DQ(INT8 W)); score = MatMul(query, key) with no Q/DQ on either "
            "input of the score MatMul.",
            params={"family": "act-x-act", "qdq": "none"},
            claims=(AS_REPORTED_CLAIM,),
        ),
        Variant(
            name="act-x-act-qdq-both",
            role="workaround",
            varies="act-x-act-as-reported", inherits=False,
            description="As reported, with a Q/DQ on both inputs of the score MatMul (the reporter's fix in #4322).",
            params={"family": "act-x-act", "qdq": "both"},
            claims=(QDQ_BOTH_CLAIM,),
        ),
        Variant(
            name="act-x-act-qdq-query-only",
            role="sweep",
            # Another Q/DQ placement: one input of the score MatMul quantized
            varies="act-x-act-as-reported", inherits=False,
            description="As reported, with a Q/DQ on the query input only: one quantized input is not enough.",
            params={"family": "act-x-act", "qdq": "query"},
        ),
    )

    @staticmethod
    def build(variant: Variant) -> Built:
        graph = gs.Graph(name=MatMulInt8.id, opset=MatMulInt8.opset)
        return _attention_score(graph, variant.params["qdq"])

    @classmethod
    def rewrite_problem(cls, workaround: Variant, form: Variant | None = None) -> str | None:
        if form is not None and not form.name.startswith("act-x-act"):
            return f"{workaround.name} is for a MatMul of two activations; the form {form.name} has a weight"
        return None

    @classmethod
    def fix(cls, graph, match: Match, workaround: Variant) -> FixResult:
        """Q/DQ on each activation input of the MatMul that lacks one, with the scale of a quantizer that already
        reads that tensor."""
        problem = cls.rewrite_problem(workaround)
        if problem:
            raise NoRewrite(problem)
        matmul = rw.node_named(graph, match.nodes[0])
        plan = []
        for tensor in matmul.inputs[:2]:
            if m.dequantized(tensor) is not None:
                continue
            quantizer = rw.quantizer_of(tensor)
            if quantizer is None:
                raise NoRewrite(f"no quantizer of the model reads {tensor.name} (input of {matmul.name}), so there is "
                                "no scale to quantize it with; --fix never invents a scale")
            plan.append((tensor, quantizer))
        added = []
        for index, (tensor, quantizer) in enumerate(plan):
            added += rw.qdq_between(graph, tensor, [matmul], quantizer, f"{matmul.name}/input_quantizer_{index}")
        return FixResult(nodes_added=added, tolerance=QDQ_ADDED, note=f"Q/DQ on {len(plan)} input(s) of {matmul.name} "
                         "with the scales of quantizers that already read them")

    @classmethod
    def find(cls, graph) -> list[Match]:
        """MatMuls of two activations in a network that has Q/DQ at all; the variant follows how many of the two
        inputs come through Q/DQ. An operand computed from constants alone is a weight, however many nodes away
        (``F.linear(x, fake_quant(W))`` exports as ``MatMul(DQ(Q(x)), Transpose(DQ(Q(W))))``): a Gemm, or a MatMul
        with a weight, is ``p6-linear-int8``'s form, never this one."""
        if not m.has_qdq(graph):
            return []
        found = []
        for node in m.nodes_of(graph, "MatMul"):
            if any(m.is_weight(t) for t in node.inputs):
                continue
            quantized = [t for t in node.inputs if m.dequantized(t)]
            variant = {0: "act-x-act-as-reported", 1: "act-x-act-qdq-query-only", 2: "act-x-act-qdq-both"}[
                len(quantized)]
            note = (f"MatMul {node.name} of two activations, {len(quantized)} of them through Q/DQ, in a Q/DQ "
                    "network: TensorRT 8.6.2 kept it out of INT8 without Q/DQ on both inputs, and with them it "
                    "ran INT8 but slower than FP16.")
            found.append(Match(case=cls.id, nodes=(node.name,), variant=variant, note=note))
        return found


def _attention_score(graph: gs.Graph, qdq: str) -> Built:
    pixels = g.graph_input("pixels", (1, PIXELS, KEY_CHANNELS))
    key = g.graph_input("proxy_key", (1, KEY_CHANNELS, OBJECTS))
    graph.inputs.extend([pixels, key])
    scope = f"{OCR}/f_pixel"
    pixels = g.torch_fake_quantize(graph, pixels, f"{scope}/input_quantizer", g.UNIT_ACTIVATION_SCALE)
    weight = g.modelopt_int8_weight(graph, "ocr.object_context_block.f_pixel.weight", (KEY_CHANNELS, KEY_CHANNELS),
                                    KEY_CHANNELS, 1, scope)
    query = g.torch_node(graph, "MatMul", scope, [pixels, weight])
    if qdq in ("query", "both"):
        query = g.torch_fake_quantize(graph, query, f"{OCR}/query_quantizer", g.UNIT_ACTIVATION_SCALE)
    if qdq == "both":
        key = g.torch_fake_quantize(graph, key, f"{OCR}/key_quantizer", g.UNIT_ACTIVATION_SCALE)
    score = g.torch_node(graph, "MatMul", OCR, [query, key])
    g.mark_output(graph, score, (1, PIXELS, OBJECTS))
    return Built(graph, expected_int8=(PROJECTION, SCORE))
