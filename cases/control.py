"""Controls: the plainest INT8 Conv + ReLU graphs, in both build modes, expected to pass on every target.

A control failing on a target says the target (image, driver, GPU, harness) is broken, not a pattern. No upstream
claims: these are the baseline every TensorRT INT8 path supports. ReLU is fused into the conv by TensorRT, so the conv
is the only node whose precision says anything (``expected_int8``).
"""
from __future__ import annotations

from cases import _graphs as g
from cases._graphs import gs
from cases.model import Built, Case, Tolerance, Variant

# The TensorRT developer guide documents both INT8 paths: calibration (implicit) and Q/DQ (explicit).
TRT_DEVELOPER_GUIDE = "https://docs.nvidia.com/deeplearning/tensorrt/developer-guide/index.html"


class QdqConvRelu(Case):
    """Explicit Q/DQ: x -> Q/DQ -> Conv (W -> Q/DQ per-channel, axis 0) -> Q/DQ -> Relu, per-tensor activations.

    The Q/DQ on the ReLU input gives the conv a quantized output: ONNX Runtime's CPU EP turns DQ -> Conv -> Q into an
    INT8 QLinearConv only then (it leaves the conv in float with a ReLU between Conv and Q), so the control is INT8 on
    ort-cpu as well; TensorRT fuses the conv with the output quantization.
    """

    id = "control-qdq-conv-relu"
    title = "Control: explicit Q/DQ Conv + ReLU"
    pattern = "control"
    links = (TRT_DEVELOPER_GUIDE,)
    mode = "explicit-qdq"
    opset = 13
    tolerance = Tolerance(
        min_cosine=0.999,
        max_abs_error=1.5 * g.UNIT_ACTIVATION_SCALE,
        reason=(
            "Compared with the reference evaluation of the same Q/DQ graph: the INT8 conv multiplies the same "
            "integers, so only accumulation order and rounding ties differ; a tie in the conv-output QuantizeLinear "
            "moves an output by one step, and a flipped input step by less (one step times |w|, |w| < 1 here): "
            "one step of the output scale, plus slack for float rounding."
        ),
    )
    variants = (
        Variant(
            name="conv-relu",
            role="control",
            description="16 -> 32 channels, 3x3, stride 1, 16x16 input, per-channel weight Q/DQ on axis 0, "
            "quantized conv output.",
            params={"in_channels": 16, "out_channels": 32, "size": 16},
        ),
    )

    @staticmethod
    def build(variant: Variant) -> Built:
        p = variant.params
        graph = gs.Graph(name=QdqConvRelu.id, opset=QdqConvRelu.opset)
        x = g.graph_input("input", (1, p["in_channels"], p["size"], p["size"]))
        graph.inputs.append(x)
        x_dq = g.torch_fake_quantize(graph, x, "/conv/_input_quantizer", g.UNIT_ACTIVATION_SCALE)
        weight = g.conv_weight("conv.weight", (p["out_channels"], p["in_channels"], 3, 3))
        w_scale = g.per_channel_scale(weight.values)
        w_dq = g.torch_fake_quantize(graph, weight, "/conv/_weight_quantizer", w_scale, axis=0)
        conv_bias = g.bias("conv.bias", p["out_channels"])
        y = g.torch_node(graph, "Conv", "/conv", [x_dq, w_dq, conv_bias], g.conv_attrs(3, pad=1))
        y = g.torch_fake_quantize(graph, y, "/act/_input_quantizer", g.UNIT_ACTIVATION_SCALE)
        g.mark_output(graph, g.torch_node(graph, "Relu", "/act", [y]), (1, p["out_channels"], p["size"], p["size"]))
        return Built(graph, expected_int8=("/conv/Conv",))


class ImplicitConvRelu(Case):
    """Implicit INT8 (FP32 ONNX + calibrator): Conv -> Relu."""

    id = "control-implicit-conv-relu"
    title = "Control: implicit INT8 Conv + ReLU with a calibrator"
    pattern = "control"
    links = (TRT_DEVELOPER_GUIDE,)
    mode = "implicit-int8"
    opset = 17
    tolerance = Tolerance(
        min_cosine=0.99,
        max_abs_error=1.0,
        reason=(
            "Implicit INT8 against the FP32 reference. For N(0, 1) inputs the output lies in about [0, 4]. The "
            "largest errors are tail values clipped by the calibrated range: fake-quantizing every activation with a "
            "99.9th-percentile range (an aggressive entropy clip) gave at most 0.82 off and cosine > 0.999 on both "
            "variants, so 1.0 (a quarter of the range) flags wrong results, not clipping; the cosine flags drift."
        ),
    )
    variants = (
        Variant(
            name="conv-relu",
            role="control",
            description="16 -> 32 channels, 3x3, stride 1, pad 1, 16x16 input.",
            params={"in_channels": 16, "out_channels": 32, "size": 16, "stride": 1},
        ),
        Variant(
            name="stem-relu",
            role="control",
            description=(
                "The S1 stem shape (3 input channels, 3x3, stride 2, pad 1, 32x32 input, 16 output channels) with "
                "ReLU in place of SiLU: tells a stem/first-layer problem apart from the Conv + SiLU fusion."
            ),
            params={"in_channels": 3, "out_channels": 16, "size": 32, "stride": 2},
        ),
    )

    @staticmethod
    def build(variant: Variant) -> Built:
        p = variant.params
        graph = gs.Graph(name=ImplicitConvRelu.id, opset=ImplicitConvRelu.opset)
        x = g.graph_input("input", (1, p["in_channels"], p["size"], p["size"]))
        graph.inputs.append(x)
        weight = g.conv_weight("conv.weight", (p["out_channels"], p["in_channels"], 3, 3))
        attrs = g.conv_attrs(3, stride=p["stride"], pad=1)
        y = g.torch_node(graph, "Conv", "/conv", [x, weight, g.bias("conv.bias", p["out_channels"])], attrs)
        out_size = p["size"] // p["stride"]
        g.mark_output(graph, g.torch_node(graph, "Relu", "/act", [y]), (1, p["out_channels"], out_size, out_size))
        return Built(graph, expected_int8=("/conv/Conv",))

