"""Each rule that makes an engine layer a boundary (data conversion between layers, not where a node computes), on its
own: the others absent, in inspector JSON and in log text; and what being a boundary changes for a node's precision."""
import pytest

from harness.tensorrt.layers import layers_from_inspector_json, layers_from_log, node_precisions

PLAIN = {"Name": "/conv/Conv", "LayerType": "CaskConvolution", "Origin": "CONVOLUTION",
         "Inputs": [{"Format/Datatype": "Int8"}], "Outputs": [{"Format/Datatype": "Float"}]}


@pytest.mark.parametrize("change, boundary", [
    ({}, False),
    ({"LayerType": "Reformat"}, True),  # rule 1: the layer type alone
    ({"Origin": "QDQ"}, True),  # rule 2: a Quantize/Dequantize run on its own
    ({"Origin": "REFORMAT"}, True),  # rule 3: a conversion TensorRT inserted
    ({"Name": "Reformatting CopyNode for Input Tensor 0 to /conv/Conv"}, True),  # rule 4: the CopyNode name
    ({"Name": "Reformatting CopyNode for Output Tensor 1 to /conv/Conv"}, True),
    ({"LayerType": "Reformatting"}, False),  # near misses are compute layers
    ({"Origin": "QDQ_FUSED"}, False),
    ({"Name": "Copy of /conv/Conv"}, False),
])
def test_each_boundary_rule_on_its_own_in_inspector_json(change, boundary):
    (layer,) = layers_from_inspector_json([{**PLAIN, **change}])
    assert layer.is_boundary is boundary
    # A compute layer reads its inputs (int8); a boundary reads inputs and outputs together (its quantized side).
    assert layer.precision == "int8"


def test_a_boundary_reads_outputs_with_inputs_a_compute_layer_only_without_inputs():
    float_in = {**PLAIN, "Inputs": [{"Format/Datatype": "Float"}], "Outputs": [{"Format/Datatype": "Int8"}]}
    (compute,) = layers_from_inspector_json([float_in])
    (boundary,) = layers_from_inspector_json([{**float_in, "Origin": "QDQ"}])
    assert (compute.precision, boundary.precision) == ("fp32", "int8")
    (no_inputs,) = layers_from_inspector_json([{**float_in, "Inputs": []}])
    assert no_inputs.precision == "int8"


@pytest.mark.parametrize("name, boundary", [("Reformatting CopyNode for Input Tensor 0 to /conv/Conv", True),
                                            ("/conv/Conv", False)])
def test_the_copynode_rule_holds_for_names_only_information(name, boundary):
    (layer,) = layers_from_inspector_json({"Layers": [name], "Bindings": []})
    assert (layer.is_boundary, layer.precision) == (boundary, "unknown")


@pytest.mark.parametrize("layer_type, name, boundary", [("Reformat", "/conv/Conv", True),
                                                        ("CaskConvolution", "Reformatting CopyNode for Input Tensor 0 "
                                                                            "to /conv/Conv", True),
                                                        ("CaskConvolution", "/conv/Conv", False)])
def test_each_boundary_rule_in_log_text(layer_type, name, boundary):
    log = ("Engine Layer Information:\n"
           f"Layer({layer_type}): {name}, Tactic: 0x0000000000000000, input (Float[1,16,16,16]) -> "
           "output (Int8[1,16,16,16])\n")
    (layer,) = layers_from_log(log)
    assert layer.is_boundary is boundary
    assert layer.precision == ("int8" if boundary else "fp32")


def test_compute_layers_decide_a_nodes_precision_and_boundaries_only_count_alone():
    compute = {**PLAIN, "Inputs": [{"Format/Datatype": "Float"}], "Metadata": "[ONNX Layer: /conv/Conv]"}
    boundary = {**PLAIN, "Name": "q", "Origin": "QDQ", "Metadata": "[ONNX Layer: /conv/Conv]"}
    assert node_precisions(layers_from_inspector_json([boundary, compute])) == {"/conv/Conv": "fp32"}
    assert node_precisions(layers_from_inspector_json([boundary])) == {"/conv/Conv": "int8"}


def test_a_reformat_of_a_compute_layers_output_does_not_widen_the_nodes_precision():
    """An INT8 conv whose output TensorRT reformats from FP16 to FP32 for the next layer: the node ran in INT8."""
    conv = {**PLAIN, "Name": "/conv/Conv", "Outputs": [{"Format/Datatype": "Half"}]}
    copy = {"Name": "Reformatting CopyNode for Output Tensor 0 to /conv/Conv", "LayerType": "Reformat",
            "Origin": "REFORMAT", "Inputs": [{"Format/Datatype": "Half"}], "Outputs": [{"Format/Datatype": "Float"}]}
    layers = layers_from_inspector_json([conv, copy])
    assert [(layer.precision, layer.is_boundary, layer.onnx_nodes) for layer in layers] == [
        ("int8", False, ("/conv/Conv",)), ("fp16", True, ("/conv/Conv",))]
    assert node_precisions(layers) == {"/conv/Conv": "int8"}
