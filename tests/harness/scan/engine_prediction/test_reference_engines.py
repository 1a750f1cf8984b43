"""The predicted engine of ResNet-18 in the five forms TensorRT built in reference/engine-layers (NVIDIA's TREx
examples, A100), each compared layer by layer with TensorRT's own engine inspector JSON."""
import json

import pytest

from harness.scan.engine_prediction.comparison import compare, output_types
from harness.scan.engine_prediction.predict import predict_engine
from harness.scan.engine_prediction.rules import ruleset_for
from harness.tensorrt.layers import OnnxNames, layers_from_inspector_json
from tests.models import resnet18_trex


def predicted_and_observed(model_form: str, engine_form: str):
    model = resnet18_trex.build(model_form)
    info = json.loads(resnet18_trex.engine_json(engine_form).read_text())
    metadata = json.loads(resnet18_trex.engine_json(engine_form).with_name(
        f"a100-resnet-{engine_form}.build.metadata.json").read_text())
    prediction = predict_engine(model.graph, ruleset_for("8.6").ruleset,
                                fp16="FP16" in metadata["build_options"]["Precision"])
    observed = layers_from_inspector_json(info, OnnxNames.from_model(model))
    return prediction, compare(prediction, observed, output_types(info))


@pytest.mark.parametrize("form", resnet18_trex.FORMS)
def test_every_engine_layer_agrees_in_precision_and_output_type(form):
    prediction, comparison = predicted_and_observed(form, form)
    counts = comparison.counts
    assert [p.to_dict() for p in comparison.disagreements()] == []
    assert comparison.not_predicted == [] and comparison.not_observed == []
    assert counts["paired"] == counts["precision_compared"] == counts["output_compared"] == counts["both_agree"]
    assert counts["paired"] + counts["tensorrt_own"] == len(json.loads(
        resnet18_trex.engine_json(form).read_text())["Layers"])
    assert comparison.agreement_rate == 1.0


def test_a_model_compared_with_another_forms_engine_disagrees():
    """The comparison can fail: the QAT model without residual quantizers against the engine of the one with them."""
    _, comparison = predicted_and_observed("qat", "qat-residual")
    assert comparison.disagreements() or comparison.not_observed or comparison.not_predicted


def layer_holding(prediction, node):
    return next(layer for layer in prediction.layers if node in layer.nodes)


def test_a_residual_add_without_qdq_on_its_identity_writes_float_and_with_it_int8():
    qat, _ = predicted_and_observed("qat", "qat")
    residual, _ = predicted_and_observed("qat-residual", "qat-residual")
    float_add = layer_holding(qat, "Add_36")
    assert "Conv_34" in float_add.nodes and float_add.fused_add
    assert (float_add.precision, float_add.output_type, float_add.rule) == ("int8", "fp16", "weighted-float-output")
    int8_add = layer_holding(residual, "Add_42")
    assert "Conv_34" in int8_add.nodes and "DequantizeLinear_41" in int8_add.nodes
    assert (int8_add.precision, int8_add.output_type, int8_add.rule) == ("int8", "int8", "weighted-int8-output")


def test_the_last_block_of_the_residual_form_leaves_its_identity_dq_as_a_reformat():
    """Nothing quantizes the pool's input, so the last conv + Add writes float, and reads its residual in float."""
    residual, _ = predicted_and_observed("qat-residual", "qat-residual")
    reformat = layer_holding(residual, "DequantizeLinear_291")
    assert (reformat.kind, reformat.rule, reformat.nodes) == ("reformat", "unfused-dequantize",
                                                              ("DequantizeLinear_291",))
    last = layer_holding(residual, "Add_292")
    assert (last.precision, last.output_type, last.rule) == ("int8", "fp16", "weighted-float-output")


def test_the_downsample_conv_takes_the_add_when_neither_branch_is_quantized():
    qat, _ = predicted_and_observed("qat", "qat")
    assert {"Conv_95", "Add_97"} <= set(layer_holding(qat, "Add_97").nodes)
    assert "Add_97" not in layer_holding(qat, "Conv_84").nodes


def test_two_quantizers_of_one_tensor_become_one_reformat():
    qat, _ = predicted_and_observed("qat", "qat")
    merged = layer_holding(qat, "QuantizeLinear_65")
    assert merged.nodes == ("QuantizeLinear_65", "QuantizeLinear_88") and merged.rule == "merged-quantize"


def test_the_summary_counts_int8_compute_layers_and_float_adds():
    qgap, _ = predicted_and_observed("qat-residual-qgap", "qat-residual-qgap")
    qat, _ = predicted_and_observed("qat", "qat")
    assert qgap.summary()["text"].startswith("22 of 22 compute layers INT8; 8 Add(s) fused, 0 of them")
    assert qat.summary()["fused_adds_float_output"] == 8 and qat.summary()["by_precision"] == {"fp16": 2, "int8": 21}


def test_the_pairing_of_our_graph_with_torchs_export_follows_the_network():
    names = resnet18_trex.pair_nodes(resnet18_trex.build("qat"), resnet18_trex.torch_export("qat"))
    assert names["Conv_34"] == "/layer1/layer1.0/conv2/Conv" and names["Add_97"] == "/layer2/layer2.0/Add"
    assert names["QuantizeLinear_88"] == "/layer2/layer2.0/downsample/downsample.0/input_quantizer/QuantizeLinear"


@pytest.mark.parametrize("form", resnet18_trex.FORMS)
def test_torchs_own_export_is_predicted_as_tensorrt_built_it(form):
    """torch 2.11's TorchScript export of the same network (its names, Identity nodes, its own Q/DQ order), against
    TensorRT's engine with each layer name translated to torch's node names."""
    ours, theirs = resnet18_trex.build(form), resnet18_trex.torch_export(form)
    names = resnet18_trex.pair_nodes(ours, theirs)
    assert {n.name for n in ours.graph.node if n.op_type not in ("Constant", "Identity")} <= set(names)
    info = resnet18_trex.renamed_engine(json.loads(resnet18_trex.engine_json(form).read_text()), names)
    fp16 = form != "fp32"
    prediction = predict_engine(theirs.graph, ruleset_for("8.6").ruleset, fp16=fp16)
    comparison = compare(prediction, layers_from_inspector_json(info, OnnxNames.from_model(theirs)),
                         output_types(info))
    assert comparison.disagreements() == [] and comparison.not_predicted == [] and comparison.not_observed == []
    assert comparison.counts["paired"] + comparison.counts["tensorrt_own"] == len(info["Layers"])
