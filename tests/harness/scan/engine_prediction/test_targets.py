"""The predicted engine per target of the matrix: one prediction per distinct behaviour, FP8 and INT4 by version,
strong typing on 11, and no prediction where TensorRT would choose by timing or where there is no GPU engine."""
import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from harness.matrix import load_matrix
from harness.scan.engine_prediction.predict import predict_engine
from harness.scan.engine_prediction.rules import ruleset_for
from harness.scan.engine_prediction.targets import NOT_EXPLICIT, predict_targets
from tests.models import resnet18_trex

MATRIX = load_matrix()


def conv_model(quantized: int | None, float_type: int = TensorProto.FLOAT) -> onnx.ModelProto:
    """input -> Q/DQ -> Conv (weights Q/DQ) -> Q/DQ -> Relu -> output, quantized to ``quantized`` (an ONNX type), or
    a plain Conv -> Relu with None."""
    real = helper.tensor_dtype_to_np_dtype(float_type)  # weights and scales in the model's own float type
    nodes, inits = [], [numpy_helper.from_array(np.zeros((8, 8, 3, 3), real), "w")]
    x, w = "input", "w"
    if quantized is not None:
        inits += [numpy_helper.from_array(np.array(0.1, real), "s"),
                  helper.make_tensor("zp", quantized, [], [0]),
                  numpy_helper.from_array(np.full(8, 0.1, real), "ws"),
                  helper.make_tensor("wzp", quantized, [8], [0] * 8)]
        nodes += [helper.make_node("QuantizeLinear", ["input", "s", "zp"], ["xq"], "q_in"),
                  helper.make_node("DequantizeLinear", ["xq", "s", "zp"], ["xd"], "dq_in"),
                  helper.make_node("QuantizeLinear", ["w", "ws", "wzp"], ["wq"], "q_w", axis=0),
                  helper.make_node("DequantizeLinear", ["wq", "ws", "wzp"], ["wd"], "dq_w", axis=0)]
        x, w = "xd", "wd"
    nodes.append(helper.make_node("Conv", [x, w], ["y"], "conv", pads=[1, 1, 1, 1]))
    y = "y"
    if quantized is not None:
        nodes += [helper.make_node("QuantizeLinear", ["y", "s", "zp"], ["yq"], "q_out"),
                  helper.make_node("DequantizeLinear", ["yq", "s", "zp"], ["yd"], "dq_out")]
        y = "yd"
    nodes.append(helper.make_node("Relu", [y], ["output"], "relu"))
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("input", float_type, [1, 8, 16, 16])],
                              [helper.make_tensor_value_info("output", float_type, [1, 8, 16, 16])], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)])


def test_an_int8_model_is_predicted_once_for_every_gpu_target_and_not_for_ort_or_dla():
    engines = predict_targets(resnet18_trex.build("qat").graph, list(MATRIX.values()))
    gpu = [t for t in MATRIX.values() if t.backend == "tensorrt" and t.dla_core is None]
    assert set(engines.targets) == {t.id for t in gpu}
    assert len(engines.predictions) == 1  # FP32 inputs: weak INT8-only typing and 11's strong typing agree
    assert engines.targets["trt92-x86"]["note"] and "9.2" in engines.targets["trt92-x86"]["note"]
    assert "onnxruntime" in engines.not_predicted["ort-cpu"] and "DLA" in engines.not_predicted["trt114-orin-dla"]
    data = engines.to_dict()
    assert data["is_predicted"] and data["layers"] and set(data["rules"]) >= {"weighted-int8-output", "unfused-quantize"}


def test_a_model_without_qdq_is_not_predicted_and_says_why():
    engines = predict_targets(resnet18_trex.build("fp32").graph, list(MATRIX.values()))
    data = engines.to_dict()
    assert not data["is_predicted"] and data["layers"] == [] and data["reason"] == NOT_EXPLICIT
    assert engines.not_predicted["trt1016-x86"] == NOT_EXPLICIT


def test_fp8_qdq_is_predicted_fp8_from_10_0_and_unsupported_before():
    model = conv_model(TensorProto.FLOAT8E4M3FN)
    old = predict_engine(model.graph, ruleset_for("8.6.1").ruleset)
    new = predict_engine(model.graph, ruleset_for("10.16").ruleset)
    conv_old = next(layer for layer in old.layers if "conv" in layer.nodes)
    conv_new = next(layer for layer in new.layers if "conv" in layer.nodes)
    assert conv_old.rule == "quantized-type-unsupported" and conv_old.precision == "unknown"
    assert (conv_new.precision, conv_new.output_type, conv_new.rule) == ("fp8", "fp8", "weighted-int8-output")
    engines = predict_targets(model.graph, [MATRIX["trt86-x86"], MATRIX["trt1016-x86"]])
    assert len(engines.predictions) == 2
    assert engines.to_dict()["other_predictions"][0]["differs"]


def test_strongly_typed_11_runs_float_layers_in_the_models_own_type():
    model = conv_model(TensorProto.INT8, float_type=TensorProto.FLOAT16)
    weak = predict_engine(model.graph, ruleset_for("10.16").ruleset)
    strong = predict_engine(model.graph, ruleset_for("11.4.1").ruleset)
    assert next(layer for layer in weak.layers if layer.op == "Relu").precision == "fp32"
    assert next(layer for layer in strong.layers if layer.op == "Relu").precision == "fp16"


def test_a_fused_int8_conv_with_a_quantized_output_writes_int8_and_the_relu_after_the_dq_is_float():
    prediction = predict_engine(conv_model(TensorProto.INT8).graph, ruleset_for("10.3.0").ruleset)
    by_node = prediction.node_precisions()
    assert by_node["conv"]["precision"] == "int8" and by_node["q_out"]["layer"] == by_node["conv"]["layer"]
    assert by_node["relu"]["precision"] == "fp32"
    assert [layer.rule for layer in prediction.layers] == ["unfused-quantize", "weighted-int8-output",
                                                          "unfused-dequantize", "float-layer"]


def test_int4_weights_into_a_matmul_are_weight_only_from_10_0():
    inits = [helper.make_tensor("w", TensorProto.INT4, [16, 16], [0] * 256),
             numpy_helper.from_array(np.array(0.1, np.float32), "s")]
    nodes = [helper.make_node("DequantizeLinear", ["w", "s"], ["wd"], "dq_w"),
             helper.make_node("MatMul", ["input", "wd"], ["output"], "matmul")]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("input", TensorProto.FLOAT, [4, 16])],
                              [helper.make_tensor_value_info("output", TensorProto.FLOAT, [4, 16])], inits)
    prediction = predict_engine(graph, ruleset_for("10.0.1").ruleset)
    (layer,) = prediction.layers
    assert (layer.precision, layer.weights, layer.rule, layer.nodes) == ("fp32", "int4", "int4-weight-only",
                                                                         ("dq_w", "matmul"))


def test_without_a_tensorrt_gpu_target_nothing_is_predicted():
    engines = predict_targets(resnet18_trex.build("qat").graph, [MATRIX["ort-cpu"], MATRIX["trt114-orin-dla"]])
    assert engines.predictions == [] and "no TensorRT target" in engines.to_dict()["reason"]


def test_each_target_has_its_nodes_predicted_precision_and_rule():
    engines = predict_targets(conv_model(TensorProto.FLOAT8E4M3FN).graph,
                              [MATRIX["trt86-x86"], MATRIX["trt1016-x86"], MATRIX["ort-cpu"]])
    assert engines.node_precisions("trt1016-x86")["conv"] == {"precision": "fp8", "rule": "weighted-int8-output",
                                                              "layer": "dq_in + q_w + dq_w + conv"}
    assert engines.node_precisions("trt86-x86")["conv"]["rule"] == "quantized-type-unsupported"
    assert engines.node_precisions("ort-cpu") == {}
