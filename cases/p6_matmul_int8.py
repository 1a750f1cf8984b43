"""P6: MatMul / Gemm under explicit Q/DQ: INT8 weights (per-channel axis 1, per-tensor) and activation x activation.

Upstream: https://github.com/NVIDIA/TensorRT/issues/4322 (TensorRT 8.6.2, open): in a QAT HRNet-OCR model the
MatMul of two activations (the object-context attention) was not quantized; with Q/DQ inserted on both of its inputs
it ran INT8, but slower than the FP16 engine. 8.6.2 is the JetPack 6 build (platforms.md: no 8.6.2 for x86), so the
claims name ``trt86-orin``; the thread does not name the Jetson. https://github.com/NVIDIA/TensorRT/issues/4242
(TensorRT "8.6.10 on Orin", a DRIVE OS build): Q/DQ before the MatMuls of a Linear/LayerNorm/ReLU stack built but
ran slower than FP16; which layers ran INT8 is not stated, so it gives no claim. failure-patterns.md also lists
https://github.com/NVIDIA/TensorRT/issues/3200, whose text we could not read: no claim from it.

Two graph families, both explicit Q/DQ:

* ``act-x-act-*``: the OCR attention score ``MatMul(query, key)`` of #4322, query (1, 64 pixels, 32) from a quantized
  projection (which keeps the network in explicit mode, as the QAT model is), key (1, 32, 16 object regions) a graph
  input. Names are ours under ``/ocr/object_context_block`` (the module path in HRNet-OCR).
* ``linear-*`` / ``gemm-*``: X (1, 64, 32) -> Q/DQ -> MatMul(X, DQ(INT8 W (32, 48))) -> Add(bias), the pattern's
  minimal graph; torch.onnx writes a Linear on a 3-D input as MatMul + Add and on a 2-D input as Gemm(transB=1).
  Names are ours (``/mlp/fc1``), with ModelOpt-style ``input_quantizer``/``weight_quantizer``.
"""
from __future__ import annotations

import onnx_graphsurgeon as gs

from cases import _graphs as g
from cases import matching as m
from cases import rewriting as rw
from cases.model import Built, Case, Claim, FixResult, Match, NoRewrite, Tolerance, Variant
from cases.rewriting import QDQ_ADDED

ISSUE = "https://github.com/NVIDIA/TensorRT/issues/4322"
LINEAR_SLOWER = "https://github.com/NVIDIA/TensorRT/issues/4242"
LISTED = "https://github.com/NVIDIA/TensorRT/issues/3200"

OCR = "/ocr/object_context_block"
PROJECTION = f"{OCR}/f_pixel/MatMul"
SCORE = f"{OCR}/MatMul"
FC = "/mlp/fc1"
PIXELS, KEY_CHANNELS, OBJECTS = 64, 32, 16
TOKENS, IN_FEATURES, OUT_FEATURES = 64, 32, 48

ORIN_862 = "TensorRT 8.6.2 (the JetPack 6 build), QAT HRNet-OCR"
AS_REPORTED_CLAIM = Claim(
    target="trt86-orin",
    outcome="fallback",
    source=ISSUE,
    strength="issue-thread",
    note=f"{ORIN_862}: the activation x activation MatMul, without Q/DQ on its inputs, was not quantized to INT8.",
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
    title = "MatMul/Gemm with INT8 weights (per-channel axis 1, per-tensor) and activation x activation"
    pattern = "P6"
    links = (ISSUE, LINEAR_SLOWER, LISTED)
    mode = "explicit-qdq"
    opset = 13
    tolerance = Tolerance(
        min_cosine=0.9999,
        max_abs_error=0.05,
        reason=(
            "Compared with the reference evaluation of the same Q/DQ graph, which has no Q after the MatMuls: INT8 "
            "kernels multiply the same integers and rescale in another order, a few float ulps; a re-quantized query "
            "moves one step of 1/32 when a rounding tie flips. ONNX Runtime measured at most 6e-6, except on "
            "linear-weight-only, where it swaps in MatMulNBits and measured 0.021. A per-channel scale applied along "
            "the wrong axis moves outputs (about +-4) by tens of percent, far above 0.05."
        ),
    )
    backend_notes = {
        "onnxruntime": (
            "ONNX Runtime's CPU EP runs a MatMul INT8 when both of its inputs come through DequantizeLinear; a float "
            "input keeps it in float. It fuses a MatMul and the bias Add into a float Gemm renamed "
            "'<MatMul>/MatMulAddFusion', which this harness cannot map back to the MatMul (listed as unverified), "
            "and replaces a weight-only DQ + MatMul with its own MatMulNBits kernel. Whether INT8 is faster than FP16 "
            "(#4322, #4242) is a TensorRT timing question these cells do not answer."
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
            description="As reported, with a Q/DQ on both inputs of the score MatMul (the reporter's fix in #4322).",
            params={"family": "act-x-act", "qdq": "both"},
            claims=(QDQ_BOTH_CLAIM,),
        ),
        Variant(
            name="act-x-act-qdq-query-only",
            role="sweep",
            description="As reported, with a Q/DQ on the query input only: one quantized input is not enough.",
            params={"family": "act-x-act", "qdq": "query"},
        ),
        Variant(
            name="linear-per-channel-axis-1",
            role="sweep",
            description="X -> Q/DQ -> MatMul(X, DQ(INT8 W (32, 48)), per-channel along axis 1: one scale per output "
            "feature) -> Add(bias).",
            params={"family": "linear", "axis": 1, "input_qdq": True, "batch": 1},
        ),
        Variant(
            name="linear-per-tensor",
            role="sweep",
            description="As linear-per-channel-axis-1 with one weight scale.",
            params={"family": "linear", "axis": None, "input_qdq": True, "batch": 1},
        ),
        Variant(
            name="linear-per-channel-axis-0",
            role="sweep",
            description="As linear-per-channel-axis-1 with scales along axis 0 (one per input feature): valid ONNX, "
            "but not a per-output-channel scheme an INT8 GEMM can apply after the product.",
            params={"family": "linear", "axis": 0, "input_qdq": True, "batch": 1},
        ),
        Variant(
            name="linear-weight-only",
            role="sweep",
            description="As linear-per-channel-axis-1 without the Q/DQ on X: only the weight is quantized.",
            params={"family": "linear", "axis": 1, "input_qdq": False, "batch": 1},
        ),
        Variant(
            name="linear-batch-4",
            role="sweep",
            description="linear-per-channel-axis-1 on a batch of 4.",
            params={"family": "linear", "axis": 1, "input_qdq": True, "batch": 4},
        ),
        Variant(
            name="gemm-per-channel",
            role="sweep",
            description="The same Linear on a 2-D input as torch.onnx writes it: Gemm(DQ(Q(X)), DQ(INT8 W (48, 32)), "
            "bias, transB=1), the weight per-channel along axis 0 (its output features).",
            params={"family": "gemm", "axis": 0, "input_qdq": True, "batch": 1},
        ),
    )

    @staticmethod
    def build(variant: Variant) -> Built:
        p = variant.params
        graph = gs.Graph(name=MatMulInt8.id, opset=MatMulInt8.opset)
        if p["family"] == "act-x-act":
            return _attention_score(graph, p["qdq"])
        return _linear(graph, p)

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
        """MatMul/Gemm with a Q/DQ weight, and MatMuls of two activations in a network that has Q/DQ at all; the
        variant follows which inputs come through Q/DQ and the weight's axis."""
        explicit = any(True for _ in m.nodes_of(graph, "DequantizeLinear"))
        found = []
        for node in m.nodes_of(graph, "MatMul", "Gemm"):
            a, b = node.inputs[0], node.inputs[1]
            weight = b if m.weight_constant(b) is not None else None
            if weight is not None:
                if not m.is_quantized_weight(weight):
                    continue
                axis = m.quantization_axis(weight)
                if node.op == "Gemm":
                    variant = "gemm-per-channel" if axis is not None and m.dequantized(a) else None
                elif not m.dequantized(a):
                    variant = "linear-weight-only" if axis == 1 else None
                else:
                    variant = {1: "linear-per-channel-axis-1", 0: "linear-per-channel-axis-0",
                               None: "linear-per-tensor"}[axis]
                note = (f"{node.op} {node.name} with an INT8 weight ({'per tensor' if axis is None else f'axis {axis}'})"
                        f"{'' if m.dequantized(a) else ' and a float activation'}: TensorRT runs it INT8 only when "
                        "both inputs come through Q/DQ.")
            else:
                if node.op != "MatMul" or not explicit or m.weight_constant(a) is not None:
                    continue
                quantized = [t for t in (a, b) if m.dequantized(t)]
                variant = {0: "act-x-act-as-reported", 1: "act-x-act-qdq-query-only", 2: "act-x-act-qdq-both"}[
                    len(quantized)]
                note = (f"MatMul {node.name} of two activations, {len(quantized)} of them through Q/DQ, in a Q/DQ "
                        "network: TensorRT 8.6.2 kept it out of INT8 without Q/DQ on both inputs, and with them it "
                        "ran INT8 but slower than FP16.")
            found.append(Match(case=cls.id, nodes=(node.name,), variant=variant, note=note))
        return found


def _int8_weight(graph, name: str, shape: tuple[int, int], fan_in: int, axis, scope: str) -> gs.Variable:
    """An INT8 weight read through a DequantizeLinear: per channel along ``axis``, or per tensor when None."""
    weights = g.dense_weight(name, shape, fan_in=fan_in)
    scale = g.per_tensor_scale(weights.values) if axis is None else g.per_channel_scale(weights.values, axis)
    return g.dequantize_int8_weight(graph, weights, scale, name, f"{scope}/weight_quantizer/scale",
                                    f"{scope}/weight_quantizer/zero_point", f"{scope}/weight_quantizer/DequantizeLinear",
                                    f"{scope}/weight_quantizer/DequantizeLinear_output_0", axis)


def _input_quantizer(graph, x, scope: str) -> gs.Variable:
    return g.torch_fake_quantize(graph, x, f"{scope}/input_quantizer", g.UNIT_ACTIVATION_SCALE)


def _attention_score(graph: gs.Graph, qdq: str) -> Built:
    pixels = g.graph_input("pixels", (1, PIXELS, KEY_CHANNELS))
    key = g.graph_input("proxy_key", (1, KEY_CHANNELS, OBJECTS))
    graph.inputs.extend([pixels, key])
    scope = f"{OCR}/f_pixel"
    pixels = _input_quantizer(graph, pixels, scope)
    weight = _int8_weight(graph, "ocr.object_context_block.f_pixel.weight", (KEY_CHANNELS, KEY_CHANNELS),
                          KEY_CHANNELS, 1, scope)
    query = g.torch_node(graph, "MatMul", scope, [pixels, weight])
    if qdq in ("query", "both"):
        query = g.torch_fake_quantize(graph, query, f"{OCR}/query_quantizer", g.UNIT_ACTIVATION_SCALE)
    if qdq == "both":
        key = g.torch_fake_quantize(graph, key, f"{OCR}/key_quantizer", g.UNIT_ACTIVATION_SCALE)
    score = g.torch_node(graph, "MatMul", OCR, [query, key])
    g.mark_output(graph, score, (1, PIXELS, OBJECTS))
    return Built(graph, expected_int8=(PROJECTION, SCORE))


def _linear(graph: gs.Graph, p: dict) -> Built:
    gemm = p["family"] == "gemm"
    shape = (TOKENS, IN_FEATURES) if gemm else (p["batch"], TOKENS, IN_FEATURES)
    x = g.graph_input("input", shape)
    graph.inputs.append(x)
    if p["input_qdq"]:
        x = _input_quantizer(graph, x, FC)
    bias = g.bias("mlp.fc1.bias", OUT_FEATURES)
    out_shape = (*shape[:-1], OUT_FEATURES)
    if gemm:
        weight = _int8_weight(graph, "mlp.fc1.weight", (OUT_FEATURES, IN_FEATURES), IN_FEATURES, p["axis"], FC)
        y = g.torch_node(graph, "Gemm", FC, [x, weight, bias], {"alpha": 1.0, "beta": 1.0, "transB": 1})
        g.mark_output(graph, y, out_shape)
        return Built(graph, expected_int8=(f"{FC}/Gemm",))
    weight = _int8_weight(graph, "mlp.fc1.weight", (IN_FEATURES, OUT_FEATURES), IN_FEATURES, p["axis"], FC)
    y = g.torch_node(graph, "MatMul", FC, [x, weight])
    g.mark_output(graph, g.torch_node(graph, "Add", FC, [bias, y]), out_shape)
    # The MatMul; the bias Add fuses into it or runs in any precision.
    return Built(graph, expected_int8=(f"{FC}/MatMul",))
