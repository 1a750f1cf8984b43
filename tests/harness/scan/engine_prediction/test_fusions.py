"""A convolution and the pointwise activation after it fuse into one layer, as TensorRT's own log names it
(reference/trt-logs/F04.log: ``/model.1/conv/Conv + PWN(PWN(/model.1/act/Sigmoid), /model.1/act/Mul)``), and the Q
after the activation gives that layer an INT8 output; under strong typing each float layer runs in its tensors' own
type (ModelOpt's ``images_cast_to_fp16``)."""
from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from harness.scan.engine_prediction.predict import predict_engine
from harness.scan.engine_prediction.rules import ruleset_for
from harness.scan.engine_prediction.targets import predict_targets
from harness.matrix import load_matrix

ROOT = "/model.1"


def silu(x: str) -> list:
    return [helper.make_node("Sigmoid", [x], ["sig"], f"{ROOT}/act/Sigmoid"),
            helper.make_node("Mul", [x, "sig"], ["act"], f"{ROOT}/act/Mul")]


def hardswish(x: str) -> list:
    return [helper.make_node("HardSwish", [x], ["act"], f"{ROOT}/act/HardSwish")]


def mish(x: str) -> list:
    return [helper.make_node("Softplus", [x], ["sp"], f"{ROOT}/act/Softplus"),
            helper.make_node("Tanh", ["sp"], ["th"], f"{ROOT}/act/Tanh"),
            helper.make_node("Mul", [x, "th"], ["act"], f"{ROOT}/act/Mul")]


def gelu_erf(x: str) -> list:
    return [helper.make_node("Div", [x, "sqrt2"], ["d"], f"{ROOT}/act/Div"),
            helper.make_node("Erf", ["d"], ["e"], f"{ROOT}/act/Erf"),
            helper.make_node("Add", ["e", "one"], ["a"], f"{ROOT}/act/Add"),
            helper.make_node("Mul", [x, "a"], ["m"], f"{ROOT}/act/Mul"),
            helper.make_node("Mul", ["m", "half"], ["act"], f"{ROOT}/act/Mul_1")]


def relu6(x: str) -> list:
    return [helper.make_node("Clip", [x, "zero", "six"], ["act"], f"{ROOT}/act/Clip")]


def leaky(x: str) -> list:
    return [helper.make_node("LeakyRelu", [x], ["act"], f"{ROOT}/act/LeakyRelu", alpha=0.1)]


ACTIVATIONS = {"silu": silu, "hardswish": hardswish, "mish": mish, "gelu-erf": gelu_erf, "relu6": relu6,
               "leaky-relu": leaky}


def block(activation, float_type: int = TensorProto.FLOAT, cast_input: bool = False,
          quantize_output: bool = True) -> onnx.ModelProto:
    """input [-> Cast images_cast_to_fp16] -> Q/DQ -> Conv (Q/DQ weights) -> activation [-> Q/DQ] -> Conv -> output,
    as ModelOpt writes a YOLO's first blocks; weights, scales and constants in ``float_type``."""
    real = helper.tensor_dtype_to_np_dtype(float_type)
    consts = {"s": np.array(0.05, real), "ws": np.full(8, 0.01, real), "w": np.ones((8, 8, 3, 3), real),
              "w2": np.ones((8, 8, 1, 1), real), "sqrt2": np.array(1.4142, real), "one": np.array(1, real),
              "half": np.array(0.5, real), "zero": np.array(0, real), "six": np.array(6, real)}
    inits = [numpy_helper.from_array(v, k) for k, v in consts.items()]
    inits += [helper.make_tensor("zp", TensorProto.INT8, [], [0]), helper.make_tensor("wzp", TensorProto.INT8, [8],
                                                                                      [0] * 8)]
    nodes, x = [], "images"
    if cast_input:
        nodes.append(helper.make_node("Cast", ["images"], ["images_cast_to_fp16"], "images_cast_to_fp16",
                                      to=float_type))
        x = "images_cast_to_fp16"
    nodes += [helper.make_node("QuantizeLinear", [x, "s", "zp"], ["xq"], f"{ROOT}/conv/input_quantizer/Q"),
              helper.make_node("DequantizeLinear", ["xq", "s", "zp"], ["xd"], f"{ROOT}/conv/input_quantizer/DQ"),
              helper.make_node("QuantizeLinear", ["w", "ws", "wzp"], ["wq"], f"{ROOT}/conv/weight_quantizer/Q",
                               axis=0),
              helper.make_node("DequantizeLinear", ["wq", "ws", "wzp"], ["wd"], f"{ROOT}/conv/weight_quantizer/DQ",
                               axis=0),
              helper.make_node("Conv", ["xd", "wd"], ["y"], f"{ROOT}/conv/Conv", pads=[1, 1, 1, 1])]
    nodes += activation("y")
    y = "act"
    if quantize_output:
        nodes += [helper.make_node("QuantizeLinear", ["act", "s", "zp"], ["aq"], "/model.2/conv/input_quantizer/Q"),
                  helper.make_node("DequantizeLinear", ["aq", "s", "zp"], ["ad"], "/model.2/conv/input_quantizer/DQ")]
        y = "ad"
    nodes += [helper.make_node("QuantizeLinear", ["w2", "s", "zp"], ["w2q"], "/model.2/conv/weight_quantizer/Q"),
              helper.make_node("DequantizeLinear", ["w2q", "s", "zp"], ["w2d"], "/model.2/conv/weight_quantizer/DQ"),
              helper.make_node("Conv", [y, "w2d"], ["out"], "/model.2/conv/Conv")]
    input_type = TensorProto.FLOAT if cast_input else float_type
    graph = helper.make_graph(nodes, "yolo", [helper.make_tensor_value_info("images", input_type, [1, 8, 16, 16])],
                              [helper.make_tensor_value_info("out", float_type, [1, 8, 16, 16])], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 19)])


def layer_of(prediction, node: str):
    return next(layer for layer in prediction.layers if node in layer.nodes)


@pytest.mark.parametrize("name", ACTIVATIONS)
@pytest.mark.parametrize("version", ["8.6", "10.16", "11.4"])
def test_the_activation_after_an_int8_conv_fuses_into_it_and_the_q_after_it_makes_its_output_int8(name, version):
    model = block(ACTIVATIONS[name])
    prediction = predict_engine(model.graph, ruleset_for(version).ruleset)
    conv = layer_of(prediction, f"{ROOT}/conv/Conv")
    activation_nodes = [n.name for n in model.graph.node if "/act/" in n.name]
    assert set(activation_nodes) <= set(conv.nodes)
    assert "/model.2/conv/input_quantizer/Q" in conv.nodes
    assert (conv.precision, conv.output_type, conv.rule) == ("int8", "int8", "weighted-int8-output")
    assert conv.name == " + ".join([f"{ROOT}/conv/input_quantizer/DQ", f"{ROOT}/conv/weight_quantizer/Q",
                                    f"{ROOT}/conv/weight_quantizer/DQ", f"{ROOT}/conv/Conv", *activation_nodes])
    assert not [layer for layer in prediction.layers if layer.kind == "compute" and "/act/" in layer.name
                and f"{ROOT}/conv/Conv" not in layer.nodes]  # no activation left as a layer of its own
    summary = prediction.summary()
    assert summary["reformats"] == 1  # only the network input's Q: nothing else unfused
    assert summary["quantized_layers"] == 2 == summary["compute_layers"]


def test_silu_read_outside_the_activation_is_not_fused():
    """A second reader of the conv's own output (here the graph output) keeps the region from fusing: TensorRT
    must write the conv's output for it."""
    model = block(silu)
    model.graph.output.append(helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 8, 16, 16]))
    prediction = predict_engine(model.graph, ruleset_for("10.16").ruleset)
    assert f"{ROOT}/act/Sigmoid" not in layer_of(prediction, f"{ROOT}/conv/Conv").nodes


def test_without_a_q_after_the_activation_the_fused_layer_writes_float():
    prediction = predict_engine(block(silu, quantize_output=False).graph, ruleset_for("10.16").ruleset)
    conv = layer_of(prediction, f"{ROOT}/conv/Conv")
    assert f"{ROOT}/act/Mul" in conv.nodes and (conv.precision, conv.output_type) == ("int8", "fp32")


def test_a_modelopt_fp16_network_runs_its_float_layers_fp16_under_strong_typing_and_fp32_weakly_typed():
    """ModelOpt's default output: an FP32 input cast to FP16 (images_cast_to_fp16), FP16 weights and scales."""
    model = block(silu, TensorProto.FLOAT16, cast_input=True, quantize_output=False)
    strong = predict_engine(model.graph, ruleset_for("11.4").ruleset)
    weak = predict_engine(model.graph, ruleset_for("10.16").ruleset)
    assert strong.float_precision == "fp16" and "FP16" in strong.float_text
    assert layer_of(strong, "/model.2/conv/Conv").precision == "fp16"
    assert layer_of(strong, "images_cast_to_fp16").output_type == "fp16"
    assert layer_of(strong, f"{ROOT}/conv/Conv").output_type == "fp16"
    assert layer_of(weak, "/model.2/conv/Conv").precision == "fp32" and weak.float_precision == "fp32"
    engines = predict_targets(model.graph, [t for t in load_matrix().values() if t.id in ("trt1016-x86",
                                                                                         "trt11-x86")])
    assert engines.for_target("trt11-x86").float_precision == "fp16"
    assert engines.for_target("trt1016-x86").float_precision == "fp32"


def test_uint8_qdq_as_onnx_runtime_writes_it_is_never_predicted_int8():
    """TensorRT's parser takes no UINT8 Q/DQ (harness/tensorrt/parser_facts.py): the conv is not predicted INT8."""
    model = block(relu6)
    for tensor in model.graph.initializer:
        if tensor.name in ("zp", "wzp"):
            tensor.data_type = TensorProto.UINT8
    prediction = predict_engine(model.graph, ruleset_for("10.16").ruleset)
    conv = layer_of(prediction, f"{ROOT}/conv/Conv")
    assert conv.precision == "unknown" and conv.rule == "quantized-type-unsupported"
    assert prediction.summary()["quantized_layers"] == 0


def test_int8_is_asked_only_of_ops_tensorrt_has_a_quantized_implementation_of():
    """A DQ read by a Concat (a copy in any precision), a LayerNormalization or a Softmax (float whatever reaches
    them) asks nothing of them; the conv and the Add it reads ask INT8."""
    from harness.scan.engine_prediction.predict import quantized_requests
    from harness.scan.proto_graph import GraphIndex

    model = block(silu)
    graph = model.graph
    graph.node.extend([helper.make_node("Concat", ["ad", "ad"], ["cat"], "/model.3/Concat", axis=1),
                       helper.make_node("Softmax", ["ad"], ["soft"], "/model.4/Softmax"),
                       helper.make_node("LayerNormalization", ["ad", "s"], ["norm"], "/model.5/norm"),
                       helper.make_node("Add", ["ad", "ad"], ["sum"], "/model.6/Add")])
    asked = quantized_requests(GraphIndex(graph))
    assert asked == {f"{ROOT}/conv/Conv", "/model.2/conv/Conv", "/model.6/Add"}


FUSED_IN_LOGS = [("trt-logs/F04.log", "/model.1/conv/Conv"),
                 ("pasted-fragments/ul19518-conv-silu-legacy-calibrator.txt", "/model.0/conv/Conv"),
                 ("pasted-fragments/ul21281-conv-silu-after-calibration.txt", "/model.23/proto/cv3/conv/Conv")]


@pytest.mark.parametrize("log, conv", FUSED_IN_LOGS)
def test_the_predicted_layer_holds_the_nodes_tensorrt_s_own_log_names_for_a_conv_and_its_silu(log, conv):
    """TensorRT's own layer names (``Conv + PWN(PWN(Sigmoid), Mul)``, as logged on a build) and the predicted layer
    holding the conv pair up with the same ONNX nodes, on a graph with those names."""
    import re

    from harness.scan.engine_prediction.comparison import compare
    from harness.tensorrt.layers import EngineLayer, onnx_nodes_from_layer_name
    from tests.conftest import REFERENCE

    text = (REFERENCE / log).read_text()
    name = re.search(r"implementation for node (.+? \+ PWN\(.*?\)+)\.", text).group(1)
    nodes = onnx_nodes_from_layer_name(name)
    assert nodes[0] == conv and len(nodes) == 3
    _, sigmoid, mul = nodes
    inits = [numpy_helper.from_array(np.ones((8, 3, 3, 3), np.float32), "w"),
             numpy_helper.from_array(np.ones((8, 8, 1, 1), np.float32), "w2")]
    graph = helper.make_graph(
        [helper.make_node("Conv", ["images", "w"], ["y"], conv, pads=[1, 1, 1, 1]),
         helper.make_node("Sigmoid", ["y"], ["sig"], sigmoid), helper.make_node("Mul", ["y", "sig"], ["act"], mul),
         helper.make_node("Conv", ["act", "w2"], ["out"], "/next/conv/Conv")], "g",
        [helper.make_tensor_value_info("images", TensorProto.FLOAT, [1, 3, 16, 16])],
        [helper.make_tensor_value_info("out", TensorProto.FLOAT, [1, 8, 16, 16])], inits)
    prediction = predict_engine(graph, ruleset_for("8.6").ruleset)
    observed = [EngineLayer(name, "CaskConvolution", "unknown", False, nodes, None)]
    comparison = compare(prediction, observed)
    assert comparison.not_predicted == [] and len(comparison.pairs) == 1
    assert set(comparison.pairs[0].predicted.nodes) == set(nodes)
    assert comparison.pairs[0].predicted.name == " + ".join(nodes)


def test_a_q_after_a_concat_of_two_conv_silu_branches_moves_back_into_both_convs():
    """YOLO's C2f: two conv + SiLU branches concatenated, then quantized. The Q commutes back through the Concat
    (every reader of each branch is that Concat), so both fused conv layers write INT8 and the Concat moves INT8."""
    s = numpy_helper.from_array(np.array(0.05, np.float32), "s")
    inits = [s, helper.make_tensor("zp", TensorProto.INT8, [], [0]),
             numpy_helper.from_array(np.ones((8, 8, 3, 3), np.float32), "w")]
    nodes = [helper.make_node("QuantizeLinear", ["images", "s", "zp"], ["xq"], "/model.2/cv1/input_quantizer/Q"),
             helper.make_node("DequantizeLinear", ["xq", "s", "zp"], ["xd"], "/model.2/cv1/input_quantizer/DQ")]
    for branch in ("cv1", "cv2"):
        root = f"/model.2/{branch}"
        nodes += [helper.make_node("QuantizeLinear", ["w", "s", "zp"], [f"{branch}_wq"], f"{root}/weight/Q"),
                  helper.make_node("DequantizeLinear", [f"{branch}_wq", "s", "zp"], [f"{branch}_wd"],
                                   f"{root}/weight/DQ"),
                  helper.make_node("Conv", ["xd", f"{branch}_wd"], [f"{branch}_y"], f"{root}/conv/Conv",
                                   pads=[1, 1, 1, 1]),
                  helper.make_node("Sigmoid", [f"{branch}_y"], [f"{branch}_sig"], f"{root}/act/Sigmoid"),
                  helper.make_node("Mul", [f"{branch}_y", f"{branch}_sig"], [f"{branch}_act"], f"{root}/act/Mul")]
    nodes += [helper.make_node("Concat", ["cv1_act", "cv2_act"], ["cat"], "/model.2/Concat", axis=1),
              helper.make_node("QuantizeLinear", ["cat", "s", "zp"], ["cq"], "/model.3/input_quantizer/Q"),
              helper.make_node("DequantizeLinear", ["cq", "s", "zp"], ["out"], "/model.3/input_quantizer/DQ")]
    graph = helper.make_graph(nodes, "c2f", [helper.make_tensor_value_info("images", TensorProto.FLOAT,
                                                                           [1, 8, 16, 16])],
                              [helper.make_tensor_value_info("out", TensorProto.FLOAT, None)], inits)
    prediction = predict_engine(graph, ruleset_for("11.4").ruleset)
    for branch in ("cv1", "cv2"):
        layer = layer_of(prediction, f"/model.2/{branch}/conv/Conv")
        assert {f"/model.2/{branch}/act/Sigmoid", f"/model.2/{branch}/act/Mul"} <= set(layer.nodes)
        assert (layer.precision, layer.output_type) == ("int8", "int8")
    concat = layer_of(prediction, "/model.2/Concat")
    assert (concat.kind, concat.precision, concat.rule) == ("data-movement", "int8", "q-backward")
    assert "/model.3/input_quantizer/Q" in concat.nodes


def test_a_linear_s_bias_written_first_and_its_gelu_fuse_into_the_int8_matmul():
    """torch.onnx writes a Linear as MatMul then ``Add(bias, MatMul output)``, and GELU in its Erf form after it (timm's
    MLP): bias and GELU fuse into the MatMul, whose output the next quantizer makes INT8."""
    inits = [numpy_helper.from_array(np.array(0.05, np.float32), "s"),
             helper.make_tensor("zp", TensorProto.INT8, [], [0]),
             numpy_helper.from_array(np.ones((8, 8), np.float32), "w"),
             numpy_helper.from_array(np.ones(8, np.float32), "bias"),
             *[numpy_helper.from_array(np.array(v, np.float32), k) for k, v in
               (("sqrt2", 1.4142), ("one", 1.0), ("half", 0.5))]]
    nodes = [helper.make_node("QuantizeLinear", ["x", "s", "zp"], ["xq"], "/mlp/fc1/input_quantizer/Q"),
             helper.make_node("DequantizeLinear", ["xq", "s", "zp"], ["xd"], "/mlp/fc1/input_quantizer/DQ"),
             helper.make_node("QuantizeLinear", ["w", "s", "zp"], ["wq"], "/mlp/fc1/weight_quantizer/Q"),
             helper.make_node("DequantizeLinear", ["wq", "s", "zp"], ["wd"], "/mlp/fc1/weight_quantizer/DQ"),
             helper.make_node("MatMul", ["xd", "wd"], ["mm"], "/mlp/fc1/MatMul"),
             helper.make_node("Add", ["bias", "mm"], ["y"], "/mlp/fc1/Add"),
             *gelu_erf("y"),
             helper.make_node("QuantizeLinear", ["act", "s", "zp"], ["aq"], "/mlp/fc2/input_quantizer/Q"),
             helper.make_node("DequantizeLinear", ["aq", "s", "zp"], ["out"], "/mlp/fc2/input_quantizer/DQ")]
    graph = helper.make_graph(nodes, "mlp", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4, 8])],
                              [helper.make_tensor_value_info("out", TensorProto.FLOAT, None)], inits)
    layer = layer_of(predict_engine(graph, ruleset_for("10.16").ruleset), "/mlp/fc1/MatMul")
    assert {"/mlp/fc1/Add", f"{ROOT}/act/Erf", f"{ROOT}/act/Mul_1", "/mlp/fc2/input_quantizer/Q"} <= set(layer.nodes)
    assert (layer.precision, layer.output_type) == ("int8", "int8")
