"""The parse stage on the contract stand-in: per-layer precisions set on the layer named after each ONNX node, for
every precision type, where the version has that data type; the NATIVE_INSTANCENORM default on both sides of 10.0;
a version without the parser flag."""
import pytest

from harness.worker.backends.base import BackendFailure
from harness.worker.backends.tensorrt.network import LAYER_PRECISION_TYPES, NATIVE_INSTANCENORM_DEFAULT_ON_FROM
from tests.trt_contract.backend_run import (
    answers_that_let_the_path_continue,
    network_has_the_conv,
    run,
    with_knobs,
)
from tests.trt_contract.standin import ContractStandIn, installed_as_tensorrt


@pytest.mark.parametrize("precision", sorted(LAYER_PRECISION_TYPES))
def test_each_layer_precision_sets_its_data_type_where_the_version_has_it(weakly_typed_standin, cells, tmp_path,
                                                                         precision):
    standin = weakly_typed_standin
    conv, _ = network_has_the_conv(standin)
    data_type = LAYER_PRECISION_TYPES[precision]
    cell = with_knobs(cells["explicit-qdq"], layer_precisions={"/conv/Conv": precision})
    if not standin.has(data_type):  # 8.6.1 has no DataType.BF16
        with pytest.raises(BackendFailure) as failure:
            run(cell, tmp_path)
        assert failure.value.category == "unsupported-api"
        assert f"{data_type} is not in TensorRT {standin.version}" in failure.value.message
        assert f"layer_precisions /conv/Conv={precision}" in failure.value.message
        assert not standin.calls_to("ILayer.precision", "set")
        return
    execution = run(cell, tmp_path)
    (call,) = standin.calls_to("ILayer.precision", "set")
    assert call.obj is conv and call.args[0] == standin.enum(data_type)
    assert execution.details["tensorrt_calls"]["network"]["layer_precisions"] == {"/conv/Conv": data_type}


def test_an_unknown_layer_precision_names_the_known_ones(weakly_typed_standin, cells, tmp_path):
    network_has_the_conv(weakly_typed_standin)
    with pytest.raises(ValueError, match=r"precisions \{'/conv/Conv': 'int4'\} are not among \['bf16', 'fp16'"):
        run(with_knobs(cells["explicit-qdq"], layer_precisions={"/conv/Conv": "int4"}), tmp_path)
    assert not weakly_typed_standin.calls_to("ILayer.precision", "set")


def test_an_extra_output_the_network_lacks_names_the_closest_tensors(standin, cells, tmp_path):
    network_has_the_conv(standin)
    with pytest.raises(ValueError, match=r"\['/conv/Conv_output_1'\].*'/conv/Conv_output_0'"):
        run(with_knobs(cells["explicit-qdq"], extra_outputs=["/conv/Conv_output_1"]), tmp_path)
    assert not standin.calls_to("INetworkDefinition.mark_output")


def test_an_extra_output_that_already_is_a_network_output_is_not_marked_again(standin, cells, tmp_path):
    output = standin.make("ITensor", name="/conv/Conv_output_0", is_network_output=True)
    conv = standin.make("ILayer", name="/conv/Conv", num_outputs=1)
    standin.on("INetworkDefinition.num_layers", 1)
    standin.on("INetworkDefinition.get_layer", lambda network, index: conv)
    standin.on("ILayer.get_output", lambda layer, index: output)
    standin.on("INetworkDefinition.num_outputs", 1)
    standin.on("INetworkDefinition.get_output", lambda network, index: output)
    execution = run(with_knobs(cells["explicit-qdq"], extra_outputs=["/conv/Conv_output_0"]), tmp_path)
    assert not standin.calls_to("INetworkDefinition.mark_output")
    assert execution.details["tensorrt_calls"]["network"]["network_outputs"] == ["/conv/Conv_output_0"]


@pytest.mark.parametrize("version, default_on", [("8.6.1", False), ("10.0.1", True)])
def test_the_native_instancenorm_default_flips_at_10_0(cells, tmp_path, version, default_on):
    """Both sides of the edge: the last recorded version before 10.0 and the first from it."""
    assert (int(version.split(".")[0]) >= NATIVE_INSTANCENORM_DEFAULT_ON_FROM) is default_on
    standin = ContractStandIn.for_version(version)
    answers_that_let_the_path_continue(standin)
    with installed_as_tensorrt(standin):
        execution = run(with_knobs(cells["explicit-qdq"], native_instancenorm=None), tmp_path)
    recorded = execution.details["tensorrt_calls"]["network"]["native_instancenorm"]
    assert recorded == {"knob": None, "set": default_on, "observed": default_on,
                        "why": "knob unset: this version's default, set explicitly (off before 10.0, on from it)"}


@pytest.mark.parametrize("knob", [None, False, True])
def test_a_version_without_the_parser_flag_uses_the_plugin_and_refuses_the_native_knob(cells, tmp_path, knob):
    """DERIVED surface: 8.6.1 without OnnxParserFlag.NATIVE_INSTANCENORM (every recorded version has the flag; TensorRT
    releases before 8.6 had none), so the parser's only InstanceNormalization path is the plugin."""
    standin = ContractStandIn.without("8.6.1", "OnnxParserFlag.NATIVE_INSTANCENORM")
    answers_that_let_the_path_continue(standin)
    cell = with_knobs(cells["explicit-qdq"], native_instancenorm=knob)
    with installed_as_tensorrt(standin):
        if knob:
            with pytest.raises(BackendFailure) as failure:
                run(cell, tmp_path)
            assert failure.value.category == "unsupported-api" and failure.value.stage == "parse"
            assert failure.value.message.startswith("OnnxParserFlag.NATIVE_INSTANCENORM is not in TensorRT 8.6.1: "
                                                    "it is needed for the knob native_instancenorm=True. ")
            return
        execution = run(cell, tmp_path)
    network = execution.details["tensorrt_calls"]["network"]
    assert network["native_instancenorm"] == {
        "knob": knob, "set": None,
        "why": "no OnnxParserFlag in this version: the InstanceNormalization plugin is the only path"}
    assert "parser_flags_mask" not in network
    assert not standin.calls_to("OnnxParser.get_flag") and not standin.calls_to("OnnxParser.clear_flag")


SIX_CONVS = ("/stage1/conv1/Conv", "/stage1/conv2/Conv", "/stage1/conv3/Conv", "/stage2/conv1/Conv",
             "/stage2/conv2/Conv", "/stage2/conv3/Conv")


def test_extra_outputs_missing_from_the_network_are_refused_with_up_to_five_close_names():
    from harness.worker.backends.tensorrt.network import mark_extra_outputs

    standin = ContractStandIn.for_version("10.3.0")
    layers = [standin.make("ILayer", name=name, num_outputs=1) for name in SIX_CONVS + ("/head/Gemm",)]
    standin.on("INetworkDefinition.num_layers", len(layers))
    standin.on("INetworkDefinition.get_layer", lambda network, index: layers[index])
    standin.on("ILayer.get_output", lambda layer, index: standin.make("ITensor", name=f"{layer.name}_output_0",
                                                                      is_network_output=False))
    network = standin.make("INetworkDefinition")
    with pytest.raises(ValueError) as err:
        mark_extra_outputs(network, ["/stage1/conv9/Conv_output_0", "/head/Gemm_output_0", "/hd/Gm_out"])
    closest = {"/stage1/conv9/Conv_output_0": ["/stage1/conv3/Conv_output_0", "/stage1/conv2/Conv_output_0",
                                               "/stage1/conv1/Conv_output_0", "/stage2/conv3/Conv_output_0",
                                               "/stage2/conv2/Conv_output_0"],
               "/hd/Gm_out": ["/head/Gemm_output_0", "/stage2/conv3/Conv_output_0", "/stage2/conv2/Conv_output_0",
                              "/stage2/conv1/Conv_output_0", "/stage1/conv3/Conv_output_0"]}  # similarity >= 0.3
    assert str(err.value) == (
        "knobs.extra_outputs names tensor(s) ['/stage1/conv9/Conv_output_0', '/hd/Gm_out'] that no layer of the "
        f"parsed TensorRT network produces. Closest tensor names: {closest}. Extra outputs must be ONNX tensor names "
        "that the parser keeps (outputs of nodes, not initializers).")
    assert not standin.calls_to("INetworkDefinition.mark_output")


def test_marking_extra_outputs_returns_every_output_of_the_network_after_it():
    from harness.worker.backends.tensorrt.network import mark_extra_outputs

    standin = ContractStandIn.for_version("10.3.0")
    layers = [standin.make("ILayer", name=name, num_outputs=1) for name in SIX_CONVS[:3]]
    tensors = {layer.name: standin.make("ITensor", name=f"{layer.name}_output_0", is_network_output=False)
               for layer in layers}
    outputs = [standin.make("ITensor", name="logits", is_network_output=True)]
    standin.on("INetworkDefinition.num_layers", len(layers))
    standin.on("INetworkDefinition.get_layer", lambda network, index: layers[index])
    standin.on("ILayer.get_output", lambda layer, index: tensors[layer.name])
    standin.on("INetworkDefinition.mark_output", lambda network, tensor: outputs.append(tensor))
    standin.on("INetworkDefinition.get_output", lambda network, index: outputs[index])
    standin.on("INetworkDefinition.num_outputs", 3)  # what the fake's outputs hold once both are marked
    network = standin.make("INetworkDefinition")
    assert mark_extra_outputs(network, ["/stage1/conv3/Conv_output_0", "/stage1/conv1/Conv_output_0"]) == [
        "logits", "/stage1/conv3/Conv_output_0", "/stage1/conv1/Conv_output_0"]


def test_layer_precisions_name_what_needs_the_missing_api_and_the_known_precisions():
    """DERIVED surface: 10.3.0 without ILayer.precision (every recorded version has it)."""
    from harness.worker.backends.tensorrt.network import set_layer_precisions

    standin = ContractStandIn.without("10.3.0", "ILayer.precision")
    with pytest.raises(BackendFailure) as failure:
        set_layer_precisions(standin.module, None, {"/conv/Conv": "fp16"})
    assert failure.value.message.startswith("ILayer.precision is not in TensorRT 10.3.0: it is needed for the knob "
                                            "layer_precisions. ")
    full = ContractStandIn.for_version("10.3.0")
    with pytest.raises(ValueError) as err:
        set_layer_precisions(full.module, None, {"/conv/Conv": "int4", "/fc/Gemm": "fp16", "/x": "half"})
    assert str(err.value) == ("knobs.layer_precisions: precisions {'/conv/Conv': 'int4', '/x': 'half'} are not among "
                              "['bf16', 'fp16', 'fp32', 'fp8', 'int8']")


@pytest.mark.parametrize("knob", [False, True])
def test_a_native_instancenorm_knob_is_set_as_asked_and_the_parsers_flags_recorded(cells, tmp_path, knob):
    """The parser reports the flags Polygraphy set through it (the stand-in keeps what was written to
    OnnxParser.flags), and the record keeps its whole flag mask."""
    standin = ContractStandIn.for_version("10.3.0")
    answers_that_let_the_path_continue(standin)
    with installed_as_tensorrt(standin):
        execution = run(with_knobs(cells["explicit-qdq"], native_instancenorm=knob), tmp_path)
    network = execution.details["tensorrt_calls"]["network"]
    assert network["native_instancenorm"] == {"knob": knob, "set": knob, "observed": knob, "why": "knob"}
    flag = 1 << int(standin.enum("OnnxParserFlag.NATIVE_INSTANCENORM"))
    assert network["parser_flags_mask"] == (flag if knob else 0)  # what the parser holds after Polygraphy set it
    (parsed,) = standin.calls_to("OnnxParser.parse_from_file")
    assert parsed.args == (cells["explicit-qdq"]["model"],)


def test_a_parser_that_ignores_the_flag_polygraphy_set_stops_the_cell(cells, tmp_path):
    """A fake parser that reports NATIVE_INSTANCENORM off whatever was set: the cell would not test what it says."""
    standin = ContractStandIn.for_version("10.3.0")
    answers_that_let_the_path_continue(standin)
    standin.on("OnnxParser.get_flag", False)
    with installed_as_tensorrt(standin), pytest.raises(RuntimeError) as error:
        run(with_knobs(cells["explicit-qdq"], native_instancenorm=True), tmp_path)
    assert str(error.value) == (
        "The ONNX parser reports NATIVE_INSTANCENORM=False after Polygraphy was asked to set it to True: this "
        "Polygraphy/TensorRT pair does not apply parser flags as expected, so the cell would not test what it says.")


@pytest.mark.parametrize(("version", "knob", "recorded"), [
    ("10.3.0", False, {"knob": False, "set": False, "why": "knob"}),
    ("10.3.0", True, {"knob": True, "set": True, "why": "knob"}),
    ("11.4.0.106", False, {"knob": False, "set": True, "why": "this version has only strongly typed networks"}),
])
def test_the_record_says_whether_the_network_is_strongly_typed_and_why(version, knob, recorded):
    from harness.worker.backends.tensorrt.network import network_settings

    trt = ContractStandIn.for_version(version).module
    settings = network_settings(trt, {"case": "c", "variant": "v", "mode": "explicit-qdq",
                                      "knobs": {"strongly_typed": knob}})
    assert settings.record["strongly_typed"] == recorded
    assert settings.loader_arguments.get("strongly_typed", False) is recorded["set"]


@pytest.mark.parametrize(("version", "knob", "purpose"), [
    ("10.3.0", True, "for the knob strongly_typed=True"),
    ("11.4.0.106", False, "because this version has only strongly typed networks (no BuilderFlag.INT8)"),
])
def test_a_strongly_typed_network_on_a_version_without_the_flag_is_unsupported_api_saying_why(version, knob, purpose):
    """DERIVED surfaces: 10.3.0 and 11.4.0.106 without NetworkDefinitionCreationFlag.STRONGLY_TYPED (both have it)."""
    from harness.worker.backends.tensorrt.network import network_settings

    trt = ContractStandIn.without(version, "NetworkDefinitionCreationFlag.STRONGLY_TYPED").module
    with pytest.raises(BackendFailure) as failure:
        network_settings(trt, {"case": "c", "variant": "v", "mode": "explicit-qdq", "knobs": {"strongly_typed": knob}})
    assert failure.value.message.startswith(
        f"NetworkDefinitionCreationFlag.STRONGLY_TYPED is not in TensorRT {version}: it is needed {purpose}. ")
