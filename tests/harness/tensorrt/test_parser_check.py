"""What TensorRT's ONNX parser refuses, per version, from onnx-tensorrt's docs/operators.md of each release branch
(harness/tensorrt/parser_facts.py): hand-built graphs in the forms quantizers write, each checked on the versions
whose documents settle it, and on those where they are silent."""
from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import corpus
from harness.scan.proto_graph import GraphIndex, ProtoGraph
from harness.tensorrt import parser_facts
from harness.tensorrt.parser_check import check_parser

EVERY_VERSION = ("8.5", "8.6", "9.2", "10.0", "10.3", "10.16", "11.4")


def qdq_conv(zero_type: int = TensorProto.INT8, zero: int = 0, scale_type: int = TensorProto.FLOAT,
             opset: int = 13, bias_int32: bool = False, stored_weights: bool = False) -> onnx.ModelProto:
    """input -> Q/DQ -> Conv (weights Q/DQ, or with ``stored_weights`` stored quantized and dequantized, as ONNX
    Runtime writes them by default[, INT32 bias DQ as ONNX Runtime writes it]) -> output."""
    real = helper.tensor_dtype_to_np_dtype(scale_type) if scale_type != TensorProto.BFLOAT16 else None
    scale = (numpy_helper.from_array(np.array(0.1, real), "s") if real is not None else
             helper.make_tensor("s", TensorProto.BFLOAT16, [], [0.1]))
    inits = [scale, helper.make_tensor("zp", zero_type, [], [zero]),
             helper.make_tensor("wzp", zero_type, [], [0])]
    nodes = [helper.make_node("QuantizeLinear", ["input", "s", "zp"], ["xq"], "input_q"),
             helper.make_node("DequantizeLinear", ["xq", "s", "zp"], ["xd"], "input_dq"),
             helper.make_node("DequantizeLinear", ["wq", "s", "wzp"], ["wd"], "weight_dq")]
    if stored_weights:
        inits.append(helper.make_tensor("wq", zero_type, [4, 4, 1, 1], [1] * 16))
    else:
        inits.append(helper.make_tensor("w", scale_type, [4, 4, 1, 1], [0.1] * 16))
        nodes.insert(2, helper.make_node("QuantizeLinear", ["w", "s", "wzp"], ["wq"], "weight_q"))
    conv_inputs = ["xd", "wd"]
    if bias_int32:
        inits += [helper.make_tensor("bias_quantized", TensorProto.INT32, [4], [3, -2, 0, 7]),
                  numpy_helper.from_array(np.array(0.01, np.float32), "bias_scale")]
        nodes.append(helper.make_node("DequantizeLinear", ["bias_quantized", "bias_scale"], ["b"], "bias_dq"))
        conv_inputs.append("b")
    nodes.append(helper.make_node("Conv", conv_inputs, ["output"], "conv"))
    float_type = scale_type
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("input", float_type, [1, 4, 8, 8])],
                              [helper.make_tensor_value_info("output", float_type, [1, 4, 8, 8])], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def check(model: onnx.ModelProto, version: str, dla: bool = False):
    index = GraphIndex(model.graph)
    return check_parser(index, version, ProtoGraph(model, index).opset, dla=dla)


def rules(result) -> set[str]:
    return {finding.rule for finding in result.refusals}


@pytest.mark.parametrize("version", EVERY_VERSION)
def test_symmetric_int8_is_refused_nowhere(version):
    result = check(qdq_conv(), version)
    assert not result.refused and result.silent == () and result.to_dict()["refused"] is False


@pytest.mark.parametrize("version", EVERY_VERSION)
def test_asymmetric_uint8_as_onnx_runtime_writes_it_is_refused_on_every_version_with_the_symmetric_remedy(version):
    result = check(qdq_conv(TensorProto.UINT8, zero=128), version)
    assert result.refused and "qdq-zero-point" in rules(result)
    zero = next(f for f in result.refusals if f.rule == "qdq-zero-point" and f.op == "QuantizeLinear")
    assert zero.nodes == ("input_q",)
    assert "must be" in zero.source and "github.com/onnx/onnx-tensorrt/blob/" in zero.source
    assert "ActivationSymmetric" in zero.remedy and "WeightSymmetric" in zero.remedy
    assert "modelopt" in zero.remedy and "--to-explicit" in zero.remedy
    uint8 = next(f for f in (*result.refusals, *result.silent) if f.rule == "qdq-quantized-type")
    assert "UINT8" in uint8.detail and "QInt8" in uint8.remedy
    # 8.x and 9.2's importers refuse UINT8; from 10.0 it reads a UINT8 zero point as INT8, with a warning
    assert uint8.state == ("refused" if version in ("8.5", "8.6", "9.2") else "silent")


def test_asymmetric_int8_is_refused_for_its_zero_point_alone():
    result = check(qdq_conv(TensorProto.INT8, zero=5), "10.16")
    assert rules(result) == {"qdq-zero-point"}
    assert {f.op for f in result.refusals} == {"QuantizeLinear", "DequantizeLinear"}


@pytest.mark.parametrize("version, refused", [("8.5", True), ("8.6", True), ("9.2", False), ("10.0", False),
                                              ("10.16", False), ("11.4", False)])
def test_fp8_is_refused_on_8_6_whose_parser_has_no_fp8_and_taken_from_9_2(version, refused):
    result = check(qdq_conv(TensorProto.FLOAT8E4M3FN, opset=17 if version.startswith("8") else 19), version)
    assert ("qdq-quantized-type" in rules(result)) is refused
    if refused:
        finding = next(f for f in result.refusals if f.rule == "qdq-quantized-type")
        assert "FP8" in finding.detail and f"branch {version}-GA" in finding.source


def test_fp8_on_a_dla_build_is_named_as_leaving_the_dla():
    result = check(qdq_conv(TensorProto.FLOAT8E4M3FN, opset=19), "10.3", dla=True)
    assert not result.refused and [f.rule for f in result.dla] == ["dla-precision"]
    assert "dla-layer-restrictions" in result.dla[0].source and len(result.dla[0].nodes) == 4
    assert check(qdq_conv(), "10.3", dla=True).dla == ()


@pytest.mark.parametrize("version, opset, beyond", [("8.6", 17, False), ("8.6", 18, True), ("9.2", 19, False),
                                                    ("9.2", 20, True), ("10.1", 20, False), ("10.1", 21, True),
                                                    ("10.3", 21, True), ("10.15", 24, False), ("10.15", 25, True)])
def test_an_opset_beyond_the_documented_range_is_silent_since_the_parser_checks_none(version, opset, beyond):
    """The documents state the opsets they support; onnx-tensorrt's ModelImporter refuses no opset (it only warns
    below 7): beyond the range nothing is settled, which is never taken as accepted."""
    result = check(qdq_conv(opset=opset), version)
    assert not [f for f in result.refusals if f.rule == "opset-range"]
    found = [f for f in result.silent if f.rule == "opset-range"]
    assert bool(found) is beyond
    if found:
        assert f"opset {opset}" in found[0].detail and "opset_version" in found[0].remedy
        assert "ModelImporter.cpp" in found[0].source


@pytest.mark.parametrize("version", EVERY_VERSION)
def test_an_int32_bias_dequantize_as_onnx_runtime_writes_it_is_refused_with_quantize_bias_off(version):
    result = check(qdq_conv(bias_int32=True), version)
    (finding,) = [f for f in result.refusals if f.rule == "dq-int32-input"]
    assert finding.nodes == ("bias_dq",) and "QuantizeBias" in finding.remedy
    assert rules(result) == {"dq-int32-input"}


def test_bf16_scales_are_refused_where_the_quantize_row_lists_no_bf16():
    assert "qdq-scale-type" in rules(check(qdq_conv(scale_type=TensorProto.BFLOAT16), "8.6"))
    assert "qdq-scale-type" not in rules(check(qdq_conv(scale_type=TensorProto.BFLOAT16, opset=19), "10.0"))
    assert not check(qdq_conv(scale_type=TensorProto.FLOAT16), "8.6").refused


def layer_norm_model(opset: int = 17) -> onnx.ModelProto:
    inits = [numpy_helper.from_array(np.ones(8, np.float32), "gamma")]
    graph = helper.make_graph([helper.make_node("LayerNormalization", ["x", "gamma"], ["y"], "/blocks.0/norm1")],
                              "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4, 8])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4, 8])], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def test_layer_normalization_is_refused_on_8_5_and_taken_from_8_6():
    (finding,) = check(layer_norm_model(), "8.5").refusals
    assert (finding.rule, finding.op, finding.nodes) == ("operator-unsupported", "LayerNormalization",
                                                        ("/blocks.0/norm1",))
    assert "release/8.5-GA/docs/operators.md" in finding.source
    for version in ("8.6", "10.3", "11.4"):
        assert not check(layer_norm_model(), version).refused


def test_an_operator_a_version_s_documents_do_not_settle_is_silent_never_accepted():
    """Attention is in 10.15's table, not in 10.1's: on 10.3 the documents around it disagree."""
    graph = helper.make_graph([helper.make_node("Attention", ["q", "k", "v"], ["y"], "attn")], "g",
                              [helper.make_tensor_value_info(n, TensorProto.FLOAT, [1, 2, 4, 8]) for n in "qkv"],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 2, 4, 8])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 23)])
    result = check(model, "10.3")
    assert [(f.rule, f.state, f.op) for f in result.silent if f.op] == [("operator-undocumented", "silent",
                                                                       "Attention")]
    assert not [f for f in check(model, "10.15").silent if f.op == "Attention"]


def test_each_document_read_is_cited_with_its_branch_and_every_table_has_the_qdq_rows():
    for document in parser_facts.DOCUMENTS:
        assert document.source.startswith("https://github.com/onnx/onnx-tensorrt/blob/")
        assert document.table["QuantizeLinear"] and "INT8" in document.table["DequantizeLinear"]
        assert "UINT8" not in document.table["DequantizeLinear"]
    assert parser_facts.documents_for("10.1")[0] == (parser_facts.DOCUMENTS[4],)
    assert len(parser_facts.documents_for("10.8")[0]) == 2


def test_on_the_corpus_the_onnx_runtime_model_is_refused_and_pytorch_quantization_s_is_not():
    for name, refused in (("resnet18-qat-ort-static-op13", True), ("resnet18-qat-pq-ts-op13", False)):
        model = corpus.load(name)
        for version in ("8.6", "10.16", "11.4"):
            assert check(model, version).refused is refused, (name, version)


@pytest.mark.parametrize("version, state", [("8.5", "refused"), ("8.6", "refused"), ("9.2", "silent"),
                                            ("10.16", "silent"), ("11.4", "silent")])
def test_weights_stored_int8_behind_a_lone_dequantize_are_refused_on_8_x_as_its_parser_said(version, state):
    """ONNX Runtime's default QDQ output stores weights INT8 with a DQ and no Q: TensorRT 8.x's parser answered
    "only activation types allowed as input to this layer" (onnxruntime#14229); later versions: no document says."""
    result = check(qdq_conv(stored_weights=True), version)
    found = [f for f in (*result.refusals, *result.silent) if f.rule == "dq-stored-weights"]
    assert [f.state for f in found] == [state] and found[0].nodes == ("weight_dq",)
    assert "AddQDQPairToWeight" in found[0].remedy and "onnxruntime/issues/14229" in found[0].source
    assert "--to-explicit" in found[0].remedy  # which writes weights float with a Q/DQ pair


def test_uint8_with_a_zero_zero_point_is_refused_up_to_9_2_and_silent_from_10_0():
    assert "qdq-quantized-type" in rules(check(qdq_conv(TensorProto.UINT8), "8.6"))
    result = check(qdq_conv(TensorProto.UINT8), "10.16")
    assert not result.refused and {f.rule for f in result.silent} == {"qdq-quantized-type"}
    assert "reads a UINT8 zero point as INT8" in result.silent[0].source
