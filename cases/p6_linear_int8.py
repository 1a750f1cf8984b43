"""P6, weight form: a Linear (MatMul or Gemm with an INT8 weight) under explicit Q/DQ.

failure-patterns.md gives P6's minimal graph for a Linear as X -> Q/DQ -> MatMul(DQ(INT8 W), per-channel axis 1 or
per-tensor) -> Add, "not INT8 unless both inputs have Q/DQ; then slower than FP16".
https://github.com/NVIDIA/TensorRT/issues/4242 (TensorRT "8.6.10 on Orin", a DRIVE OS build): Q/DQ before the MatMuls
of a Linear/LayerNorm/ReLU stack built but ran slower than FP16; which layers ran INT8 is not stated, so it gives no
claim, and this harness does not time layers. https://github.com/NVIDIA/TensorRT/issues/3200, listed with the
pattern, we could not read: no claim from it.

This is a form of its own, not a sweep of the activation x activation MatMul of
https://github.com/NVIDIA/TensorRT/issues/4322 (case ``p6-matmul-int8``): one operand is a constant weight read through
a DequantizeLinear, so nothing reported for a MatMul of two activations says anything about it, and the scanner
reports a weight MatMul or Gemm (a classifier's ``/fc/Gemm``, a transformer's MLP) as this case.

Graph: X (1, 64, 32) -> Q/DQ -> MatMul(X, DQ(INT8 W (32, 48))) -> Add(bias); torch.onnx writes a Linear on a 3-D input
as MatMul + Add and on a 2-D input as Gemm(transB=1). Names are ours (``/mlp/fc1``), with ModelOpt-style
``input_quantizer``/``weight_quantizer``.
"""
from __future__ import annotations

from cases import _graphs as g
from cases import matching as m
from cases._graphs import gs
from cases.model import Built, Case, Match, Tolerance, Variant

LINEAR_SLOWER = "https://github.com/NVIDIA/TensorRT/issues/4242"
LISTED = "https://github.com/NVIDIA/TensorRT/issues/3200"

FC = "/mlp/fc1"
TOKENS, IN_FEATURES, OUT_FEATURES = 64, 32, 48
REPORTED = "linear-per-channel-axis-1"


class LinearInt8(Case):
    id = "p6-linear-int8"
    title = "Linear (MatMul/Gemm) with an INT8 weight under Q/DQ: per-channel axis 1, per-tensor, weight-only, Gemm"
    pattern = "P6"
    links = (LINEAR_SLOWER, LISTED)
    mode = "explicit-qdq"
    opset = 13
    tolerance = Tolerance(
        min_cosine=0.9999,
        max_abs_error=0.05,
        reason=(
            "Compared with the reference evaluation of the same Q/DQ graph, which has no Q after the MatMul: INT8 "
            "kernels multiply the same integers and rescale in another order, a few float ulps. ONNX Runtime measured "
            "at most 6e-6, except on linear-weight-only, where it swaps in MatMulNBits and measured 0.021. A "
            "per-channel scale applied along the wrong axis moves outputs (about +-4) by tens of percent, far above "
            "0.05."
        ),
    )
    backend_notes = {
        "onnxruntime": (
            "ONNX Runtime's CPU EP runs a MatMul INT8 when both of its inputs come through DequantizeLinear; a float "
            "input keeps it in float. It fuses a MatMul and its bias Add into a Gemm named '<MatMul>/MatMulAddFusion' "
            "(mapped back to the MatMul); with no QuantizeLinear after it that Gemm reads the DequantizeLinear outputs "
            "and runs in float, so the linear variants are fallbacks on ONNX Runtime. A weight-only DQ + MatMul "
            "becomes MatMulNBits, which reads float activations (8-bit weights): float as well. Whether INT8 is "
            "faster than FP16 (#4242) is a TensorRT timing question these cells do not answer."
        ),
    }
    variants = (
        Variant(
            name=REPORTED,
            role="failing",
            description="X -> Q/DQ -> MatMul(X, DQ(INT8 W (32, 48)), per-channel along axis 1: one scale per output "
            "feature) -> Add(bias): the pattern's minimal graph.",
            params={"family": "linear", "axis": 1, "input_qdq": True, "batch": 1},
        ),
        Variant(
            name="linear-per-tensor",
            role="sweep",
            varies=REPORTED, inherits=True,
            description="As linear-per-channel-axis-1 with one weight scale.",
            params={"family": "linear", "axis": None, "input_qdq": True, "batch": 1},
        ),
        Variant(
            name="linear-per-channel-axis-0",
            role="sweep",
            # Valid ONNX with the same nodes, but a scale TensorRT may not apply at all: its evidence is its own.
            varies=REPORTED, inherits=False,
            description="As linear-per-channel-axis-1 with scales along axis 0 (one per input feature): valid ONNX, "
            "but not a per-output-channel scheme an INT8 GEMM can apply after the product.",
            params={"family": "linear", "axis": 0, "input_qdq": True, "batch": 1},
        ),
        Variant(
            name="linear-weight-only",
            role="sweep",
            varies=REPORTED, inherits=False,  # No Q/DQ on X: another Q/DQ placement
            description="As linear-per-channel-axis-1 without the Q/DQ on X: only the weight is quantized.",
            params={"family": "linear", "axis": 1, "input_qdq": False, "batch": 1},
        ),
        Variant(
            name="linear-batch-4",
            role="sweep",
            varies=REPORTED, inherits=True,
            description="linear-per-channel-axis-1 on a batch of 4.",
            params={"family": "linear", "axis": 1, "input_qdq": True, "batch": 4},
        ),
        Variant(
            name="gemm-per-channel",
            role="sweep",
            varies=REPORTED, inherits=False,  # A Gemm in place of MatMul + Add: another op
            description="The same Linear on a 2-D input as torch.onnx writes it: Gemm(DQ(Q(X)), DQ(INT8 W (48, 32)), "
            "bias, transB=1), the weight per-channel along axis 0 (its output features).",
            params={"family": "gemm", "axis": 0, "input_qdq": True, "batch": 1},
        ),
    )

    @staticmethod
    def build(variant: Variant) -> Built:
        p = variant.params
        graph = gs.Graph(name=LinearInt8.id, opset=LinearInt8.opset)
        gemm = p["family"] == "gemm"
        shape = (TOKENS, IN_FEATURES) if gemm else (p["batch"], TOKENS, IN_FEATURES)
        x = g.graph_input("input", shape)
        graph.inputs.append(x)
        if p["input_qdq"]:
            x = g.torch_fake_quantize(graph, x, f"{FC}/input_quantizer", g.UNIT_ACTIVATION_SCALE)
        bias = g.bias("mlp.fc1.bias", OUT_FEATURES)
        out_shape = (*shape[:-1], OUT_FEATURES)
        if gemm:
            weight = g.modelopt_int8_weight(graph, "mlp.fc1.weight", (OUT_FEATURES, IN_FEATURES), IN_FEATURES,
                                            p["axis"], FC)
            y = g.torch_node(graph, "Gemm", FC, [x, weight, bias], {"alpha": 1.0, "beta": 1.0, "transB": 1})
            g.mark_output(graph, y, out_shape)
            return Built(graph, expected_int8=(f"{FC}/Gemm",))
        weight = g.modelopt_int8_weight(graph, "mlp.fc1.weight", (IN_FEATURES, OUT_FEATURES), IN_FEATURES, p["axis"],
                                        FC)
        y = g.torch_node(graph, "MatMul", FC, [x, weight])
        g.mark_output(graph, g.torch_node(graph, "Add", FC, [bias, y]), out_shape)
        # The MatMul; the bias Add fuses into it or runs in any precision.
        return Built(graph, expected_int8=(f"{FC}/MatMul",))

    @classmethod
    def find(cls, graph) -> list[Match]:
        """Every MatMul/Gemm whose second operand is a weight through Q/DQ (also behind a Transpose, as torch.onnx
        writes ``F.linear(x, fake_quant(W))``); the variant follows whether the activation comes through Q/DQ and the
        weight's axis in the frame the layer reads (a Gemm's weight is transposed: axis 0 per channel)."""
        found = []
        for node in m.nodes_of(graph, "MatMul", "Gemm"):
            a, weight = node.inputs[0], node.inputs[1]
            if not m.is_quantized_weight(weight):
                continue
            known, axis = m.weight_quantization_axis(weight)
            if not known:
                variant = None
            elif node.op == "Gemm":
                variant = "gemm-per-channel" if axis is not None and m.dequantized(a) else None
            elif not m.dequantized(a):
                variant = "linear-weight-only" if axis == 1 else None
            else:
                variant = {1: REPORTED, 0: "linear-per-channel-axis-0", None: "linear-per-tensor"}.get(axis)
            scheme = "axis unknown" if not known else "per tensor" if axis is None else f"axis {axis}"
            note = (f"{node.op} {node.name} with an INT8 weight ({scheme})"
                    f"{'' if m.dequantized(a) else ' and a float activation'}: TensorRT runs it INT8 only when both "
                    "inputs come through Q/DQ, and then, in the reports, slower than FP16.")
            found.append(Match(case=cls.id, nodes=(node.name,), variant=variant, note=note))
        return found
