"""Per-layer precision and ONNX node mapping on engine information written by TensorRT.

Fixtures in reference/:
* engine-layers/*.graph.json: engine inspector JSON (A100, ResNet-50 fp32 / fp16 / QAT variants) with their build
  metadata, from NVIDIA/TensorRT's TREx examples (https://github.com/NVIDIA/TensorRT/tree/main/tools/experimental/
  trt-engine-explorer, Apache-2.0).
* trt-logs/F36.log, F41.log, F42.log: verbose "Engine Layer Information", a cut-short --exportLayerInfo excerpt and
  names-only layer info; their source links are in trt-logs/labels.json (NVIDIA/TensorRT issues #2527, #3737, #4048).
"""
import json
import locale
import re

import onnx
import pytest
from onnx import TensorProto, helper

from cases import library_signatures
from harness.tensorrt import classify
from harness.tensorrt.layers import (
    EngineLayer,
    FallbackReport,
    OnnxNames,
    as_onnx_names,
    fallback_nodes,
    foreign_node_regions,
    layers_from_file,
    layers_from_inspector_json,
    layers_from_log,
    node_precisions,
    onnx_nodes_from_layer_name,
    onnx_nodes_from_metadata,
    read_layers_file,
    read_log_layers,
)


def classify_log(text):
    return classify.classify_log(text, library_signatures())


CONVOLUTION_LAYER_TYPES = ("CaskConvolution", "ConvActPool")


def build_precision(engine_graph) -> str:
    """The precision flags the engine was built with, from its build metadata ("FP32", "FP32+FP16", ...)."""
    metadata = engine_graph.with_name(engine_graph.name.replace(".graph.json", ".build.metadata.json"))
    return json.loads(metadata.read_text())["build_options"]["Precision"]


def test_every_engine_is_read_with_a_precision_per_layer(engine_graph):
    layers = layers_from_file(engine_graph)
    assert len(layers) == len(json.loads(engine_graph.read_text())["Layers"])
    assert all(layer.precision != "unknown" for layer in layers)
    assert any(layer.layer_type in CONVOLUTION_LAYER_TYPES for layer in layers)


def test_engine_precision_matches_its_build_flags(engine_graph):
    """fp32 and fp16 engines have no INT8 layer (fp16 ones compute in FP16); QAT ones run every conv in INT8."""
    flags = build_precision(engine_graph)
    layers = layers_from_file(engine_graph)
    convolutions = [layer for layer in layers if layer.layer_type in CONVOLUTION_LAYER_TYPES]
    conv_nodes = {node: p for node, p in node_precisions(layers).items() if re.fullmatch(r"(Conv|Gemm)_\d+", node)}
    assert len(convolutions) >= 20
    assert len(conv_nodes) >= len(convolutions)
    if "INT8" in flags:
        assert {layer.precision for layer in convolutions} == {"int8"}
        assert set(conv_nodes.values()) == {"int8"}
    else:
        expected = "fp16" if "FP16" in flags else "fp32"
        assert [layer.name for layer in layers if layer.precision == "int8"] == []
        assert {layer.precision for layer in convolutions} == {expected}
        assert set(node_precisions(layers).values()) == {expected}


def test_reformat_layers_are_boundaries_not_compute(engine_graph):
    entries = json.loads(engine_graph.read_text())["Layers"]
    layers = layers_from_file(engine_graph)
    for entry, layer in zip(entries, layers):
        assert layer.origin == entry.get("Origin")
        if entry["LayerType"] == "Reformat":
            assert layer.is_boundary, layer.name
        if entry["LayerType"] in CONVOLUTION_LAYER_TYPES:
            assert not layer.is_boundary, layer.name


def test_qdq_reformats_report_their_quantized_side(reference_dir):
    layers = layers_from_file(reference_dir / "engine-layers" / "a100-resnet-qat.graph.json")
    qdq = [layer for layer in layers if layer.origin == "QDQ"]
    assert len(qdq) == 10
    assert all(layer.is_boundary and layer.precision == "int8" for layer in qdq)
    assert qdq[0] == EngineLayer("QuantizeLinear_2", "Reformat", "int8", True, ("QuantizeLinear_2",), "QDQ")


def test_weights_decide_a_residual_conv_that_adds_a_float_tensor(reference_dir):
    layers = layers_from_file(reference_dir / "engine-layers" / "a100-resnet-qat.graph.json")
    residual = next(layer for layer in layers if layer.name.startswith("layer1.0.conv2.weight"))
    assert residual.precision == "int8"  # inputs: Int8 and FP16; Weights.Type: Int8
    assert residual.onnx_nodes == ("layer1.0.conv2.weight", "QuantizeLinear_32", "Conv_34", "Add_36", "Relu_37")


def test_compute_layer_wins_over_the_boundary_that_reformats_its_output(reference_dir):
    layers = layers_from_file(reference_dir / "engine-layers" / "a100-resnet-qat.graph.json")
    covering = [(layer.precision, layer.is_boundary) for layer in layers if "MaxPool_12" in layer.onnx_nodes]
    assert covering == [("fp32", False), ("fp16", True)]
    assert node_precisions(layers)["MaxPool_12"] == "fp32"


@pytest.mark.parametrize(
    ("engine", "pool", "expected"),
    [
        # Without Q/DQ after it the global average pool runs in FP32; with it ("qgap") in INT8.
        ("a100-resnet-qat-residual", "GlobalAveragePool_294", FallbackReport(("GlobalAveragePool_294",), (), ())),
        ("a100-resnet-qat-residual-qgap", "GlobalAveragePool_300", FallbackReport((), (), ())),
    ],
)
def test_fallback_nodes_on_real_engines(reference_dir, engine, pool, expected):
    layers = layers_from_file(reference_dir / "engine-layers" / f"{engine}.graph.json")
    assert fallback_nodes(node_precisions(layers), ["Conv_9", pool]) == expected


def test_f36_verbose_layer_information(reference_dir):
    layers = layers_from_file(reference_dir / "trt-logs" / "F36.log")
    assert [(l.layer_type, l.precision, l.is_boundary) for l in layers] == [
        ("Reformat", "int8", True),
        ("CaskConvolution", "int8", False),
        ("CaskConvolution", "int8", False),
        ("CaskConvolution", "int8", False),
    ]
    assert layers[1].onnx_nodes == ("Pad_6", "0.blocks.0.1.our_module.weight", "QuantizeLinear_9", "Conv_13", "Clip_14")
    assert layers[3].onnx_nodes == (
        "0.deblocks.0.0.our_module.weight",
        "QuantizeLinear_51",
        "Conv_55",
        "Clip_56",
        "DequantizeLinear_62",
        "QuantizeLinear_378",
    )


def as_8_0_to_8_4_spelling(line: str) -> str:
    """F36's lines re-spelled as TRT 8.0-8.4 print them: 'name[Int8(1,96,...)]' and a decimal tactic."""
    line = re.sub(r" \((\w+)\[([^\]]*)\]\)", r"[\1(\2)]", line)
    return re.sub(r"Tactic: (0x[0-9a-f]+)", lambda m: f"Tactic: {int(m.group(1), 16)}", line)


def test_both_tensor_spellings_of_layer_information_read_the_same(reference_dir):
    # Re-spelling the verbatim F36 block in the older bracket style is a constructed fixture, not TensorRT output.
    text = (reference_dir / "trt-logs" / "F36.log").read_text(encoding="utf-8")
    older = "\n".join(as_8_0_to_8_4_spelling(line) for line in text.splitlines())
    assert "581[Int8(1,96:32,800,912)]" in older and "Tactic: 1002," in older
    assert layers_from_log(older) == layers_from_log(text)


def test_last_layer_information_block_wins_and_mixed_precision_reads_lowest_input(reference_dir):
    # Constructed: a second block, as a log of two builds would hold, whose conv reads an FP16 and an Int8 tensor.
    text = (reference_dir / "trt-logs" / "F36.log").read_text(encoding="utf-8")
    second = (
        "[V] [TRT] Engine Layer Information:\n"
        "Layer(CaskConvolution): Conv_13, Tactic: 0x1, a (Half[1,64,8,8]), b (Int8[1,64,8,8]) -> c (Half[1,64,8,8])\n"
        "Layer(Shuffle): Reshape_2, Tactic: 0x0, c (Half[1,64,8,8]), shape (Int32[2]) -> d (Half[64,64])\n"
        "[12/06/2022-19:26:22] [I] [TRT] [MemUsageChange] done\n"
    )
    layers = layers_from_log(text + "\n" + second)
    assert [(l.name, l.precision) for l in layers] == [("Conv_13", "int8"), ("Reshape_2", "fp16")]


def test_f41_cut_short_export_layer_info(reference_dir):
    layers = layers_from_file(reference_dir / "trt-logs" / "F41.log")
    assert len(layers) == 1
    assert (layers[0].layer_type, layers[0].precision, layers[0].is_boundary) == ("CaskConvolution", "int8", False)
    assert layers[0].onnx_nodes == (
        "/model.22/cv2.1/cv2.1.0/conv/Conv",
        "/model.22/cv2.1/cv2.1.0/act/Relu",
        "/model.22/cv3.1/cv3.1.0/conv/Conv",
        "/model.22/cv3.1/cv3.1.0/act/Relu",
    )


def test_f42_names_only_is_unknown_never_fp32(reference_dir):
    layers = layers_from_file(reference_dir / "trt-logs" / "F42.log")
    assert len(layers) == 5
    assert {layer.precision for layer in layers} == {"unknown"}
    assert [layer.is_boundary for layer in layers] == [True, False, False, False, False]
    precisions = node_precisions(layers)
    assert set(precisions.values()) == {"unknown"}
    conv = "/model/backbone/conv1/conv1_1/conv/Conv"
    assert fallback_nodes(precisions, [conv, "/model/head/Conv"]) == FallbackReport((), (conv,), ("/model/head/Conv",))


def test_names_only_and_single_layer_json_shapes():
    names_only = layers_from_inspector_json({"Layers": ["Conv_0 + Relu_1"]})
    assert layers_from_inspector_json(["Conv_0 + Relu_1"]) == names_only
    assert layers_from_inspector_json("Conv_0 + Relu_1")[0].onnx_nodes == ("Conv_0", "Relu_1")


@pytest.mark.parametrize(
    ("name", "nodes"),
    [
        ("Conv_0 + Relu_1", ("Conv_0", "Relu_1")),
        ("a + b || c + d", ("a", "b", "c", "d")),
        # the node of seed pattern S1 (NVIDIA/TensorRT#3640): Conv fused with a nested PWN of Sigmoid and Mul
        (
            "/model.0/conv/Conv + PWN(PWN(/model.0/act/Sigmoid), /model.0/act/Mul)",
            ("/model.0/conv/Conv", "/model.0/act/Sigmoid", "/model.0/act/Mul"),
        ),
        ("PWN(PWN(a, PWN(b)), c + d)", ("a", "b", "c", "d")),
        ("Reformatting CopyNode for Input Tensor 1 to Conv_5 + Add_6 + Relu_7", ("Conv_5", "Add_6", "Relu_7")),
        ("Reformatting CopyNode for Output Tensor 0 to MaxPool_2", ("MaxPool_2",)),
        (
            "DequantizeLinear_62 + QuantizeLinear_378_clone_0 + QuantizeLinear_378_clone_1",
            ("DequantizeLinear_62", "QuantizeLinear_378"),
        ),
        ("fc.weight + (Unnamed Layer* 306) [Shuffle] + (Unnamed Layer* 306) [Shuffle]_output", ("fc.weight",)),
        ("{ForeignNode[/a/MatMul + /a/Add.../a/Softmax]}", ("/a/MatMul", "/a/Add", "/a/Softmax")),
        ("{ForeignNode[/a/Softmax]}", ("/a/Softmax",)),
    ],
)
def test_layer_name_to_onnx_nodes(name, nodes):
    assert onnx_nodes_from_layer_name(name) == nodes


def test_no_implementation_nodes_of_the_excerpts_map_to_onnx_nodes(reference_dir):
    node = classify_log((reference_dir / "trt-logs" / "F29.log").read_text()).node
    assert onnx_nodes_from_layer_name(node) == ("Reshape_11153", "Transpose_11154")
    node = classify_log((reference_dir / "trt-logs" / "F01.log").read_text()).node
    expected = ("w", "node_of_dqconv.dwconv", "node_of_swish.sigmoid", "node_of_swish.mul")
    assert onnx_nodes_from_layer_name(node) == expected


def qat_conv_model() -> onnx.ModelProto:
    """A QAT conv as pytorch-quantization exports it, with the node and initializer names of the QAT engine."""
    weight = helper.make_tensor("conv1.weight", TensorProto.FLOAT, [4, 3, 3, 3], [0.1] * 108)
    scale = helper.make_tensor("scale", TensorProto.FLOAT, [], [0.02])
    zero = helper.make_tensor("zero", TensorProto.INT8, [], [0])
    nodes = [
        helper.make_node("QuantizeLinear", ["x", "scale", "zero"], ["xq"], name="QuantizeLinear_2"),
        helper.make_node("DequantizeLinear", ["xq", "scale", "zero"], ["xd"], name="DequantizeLinear_5"),
        helper.make_node("QuantizeLinear", ["conv1.weight", "scale", "zero"], ["wq"], name="QuantizeLinear_7"),
        helper.make_node("DequantizeLinear", ["wq", "scale", "zero"], ["wd"], name="DequantizeLinear_8"),
        helper.make_node("Conv", ["xd", "wd"], ["y"], name="Conv_9", pads=[1, 1, 1, 1]),
    ]
    graph = helper.make_graph(
        nodes,
        "qat_conv",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 8, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4, 8, 8])],
        [weight, scale, zero],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    onnx.checker.check_model(model)
    return model


def test_onnx_model_keeps_real_nodes_and_maps_initializers_to_their_consumers(reference_dir):
    names = OnnxNames.from_model(qat_conv_model())
    assert names.initializer_consumers["conv1.weight"] == ("QuantizeLinear_7",)
    fused = "conv1.weight + QuantizeLinear_7 + Conv_9"
    assert onnx_nodes_from_layer_name(fused, names) == ("QuantizeLinear_7", "Conv_9")
    layers = layers_from_file(reference_dir / "engine-layers" / "a100-resnet-qat.graph.json", qat_conv_model())
    precisions = node_precisions(layers)
    assert precisions == {"QuantizeLinear_2": "int8", "QuantizeLinear_7": "int8", "Conv_9": "int8"}
    report = fallback_nodes(precisions, ["Conv_9", "DequantizeLinear_5"])
    assert report == FallbackReport((), (), ("DequantizeLinear_5",))


def test_initializer_name_alone_maps_to_the_node_consuming_it():
    names = OnnxNames(frozenset({"Conv_0"}), {"conv1.weight": ("Conv_0",)})
    assert onnx_nodes_from_layer_name("conv1.weight", names) == ("Conv_0",)
    assert onnx_nodes_from_layer_name("conv1.weight + reshape_after_Conv_0", names) == ("Conv_0",)


def test_clone_is_kept_when_the_graph_really_has_a_node_of_that_name():
    assert onnx_nodes_from_layer_name("a_clone_0 + b_clone_1", as_onnx_names({"a_clone_0", "b"})) == ("a_clone_0", "b")


def test_node_names_can_filter_the_report():
    layers = layers_from_inspector_json(["Conv_0 + Relu_1"])
    assert node_precisions(layers, ["Relu_1"]) == {"Relu_1": "unknown"}


def test_a_single_name_string_is_refused_as_onnx_names():
    with pytest.raises(TypeError, match="wrap one name in a set"):
        as_onnx_names("Conv_0")


@pytest.mark.parametrize(
    ("metadata", "nodes"),
    [
        ("[ONNX Layer: /conv1/Conv]\x1e[ONNX Layer: /relu/Relu]", ("/conv1/Conv", "/relu/Relu")),
        ("[ONNX Layer: /conv1/Conv]\x1f[ONNX Layer: /relu/Relu]", ("/conv1/Conv", "/relu/Relu")),
        (["[ONNX Layer: a]", "[ONNX Layer: b]\x1e[ONNX Layer: a]"], ("a", "b")),
        ("[ONNX Layer: x[0]]", ("x[0]",)),
        ("", ()),
        (None, ()),
    ],
)
def test_metadata_records(metadata, nodes):
    assert onnx_nodes_from_metadata(metadata) == nodes


def detailed_layer(**fields) -> dict:
    """A DETAILED inspector layer dict, as TensorRT 10 writes it (constructed)."""
    return {"Name": "__myl_fused_0", "LayerType": "CaskConvolution", "Inputs": [], "Outputs": [], **fields}


def test_metadata_is_preferred_over_the_layer_name():
    metadata = "[ONNX Layer: /conv1/Conv]\x1e[ONNX Layer: /relu/Relu]"
    layer = layers_from_inspector_json(detailed_layer(Metadata=metadata))[0]
    assert layer.onnx_nodes == ("/conv1/Conv", "/relu/Relu")
    filtered = layers_from_inspector_json(detailed_layer(Metadata="[ONNX Layer: /conv1/Conv]"), {"/relu/Relu"})[0]
    assert filtered.onnx_nodes == ()


@pytest.mark.parametrize(
    ("fields", "precision"),
    [
        ({"Weights": {"Type": "Half", "Count": 9}, "Inputs": [{"Format/Datatype": "Row major linear FP32"}]}, "fp16"),
        (
            {
                "Inputs": [{"Format/Datatype": "Row major linear Int32"}],
                "Outputs": [{"Format/Datatype": "Row major linear FP16 format"}],
            },
            "fp16",
        ),
        ({"TacticName": "sm80_xmma_fprop_implicit_gemm_interleaved_i8f16_i8i32_f32_nchw_vect_c_32kcrs"}, "int8"),
        ({"TacticName": "trt_turing_cutlass_image_network_first_layer_hmma_fprop_f16f16f32_nhwc_nhwc"}, "fp16"),
        ({"TacticName": "ampere_scudnn_128x64_relu_xregs_large_nn_v1"}, "fp32"),
        ({}, "unknown"),
        # FP8, FP4 and BF16 as the inspector names them (NVIDIA's engine explorer, trex/activations.py)
        ({"Inputs": [{"Format/Datatype": "Row major linear FP8 format"}]}, "fp8"),
        ({"Inputs": [{"Format/Datatype": "FP8"}, {"Format/Datatype": "Half"}]}, "fp8"),
        ({"Inputs": [{"Format/Datatype": "Row major linear FP4 format"}]}, "fp4"),
        ({"Inputs": [{"Datatype": "FP4E2M1"}]}, "fp4"),
        ({"Inputs": [{"Format/Datatype": "Row major linear BFloat16 format"}]}, "bf16"),
        ({"Inputs": [{"Format/Datatype": "Half"}]}, "fp16"),
        ({"Weights": {"Type": "FP8", "Count": 9}, "Inputs": [{"Format/Datatype": "Half"}]}, "fp8"),
    ],
)
def test_precision_rule_order(fields, precision):
    assert layers_from_inspector_json(detailed_layer(**fields))[0].precision == precision


def compute(name: str, precision: str, boundary: bool = False) -> EngineLayer:
    return EngineLayer(name, None, precision, boundary, tuple(name.split(" + ")), None)


def test_node_in_several_compute_layers_is_int8_only_if_all_are():
    layers = [compute("Conv_1 + Q_9", "int8"), compute("Conv_2 + Q_9", "fp32"), compute("Conv_3 + Q_8", "int8")]
    expected = {"Conv_1": "int8", "Q_9": "fp32", "Conv_2": "fp32", "Conv_3": "int8", "Q_8": "int8"}
    assert node_precisions(layers) == expected


def test_unknown_layers_do_not_outvote_known_ones_and_boundaries_count_only_alone():
    layers = [compute("Q_1", "unknown"), compute("Q_1 + Conv_1", "int8"), compute("Q_2", "fp16", boundary=True)]
    assert node_precisions(layers) == {"Q_1": "int8", "Conv_1": "int8", "Q_2": "fp16"}


def test_fallback_report_keeps_expected_order_and_drops_duplicates():
    precisions = {"a": "fp32", "b": "int8", "c": "unknown", "d": "fp16"}
    assert fallback_nodes(precisions, ["d", "a", "b", "c", "e", "a"]) == FallbackReport(("d", "a"), ("c",), ("e",))


def test_log_without_layer_information_says_how_to_get_it(reference_dir):
    with pytest.raises(ValueError, match=r"F01\.log.*no 'Engine Layer Information' block.*profilingVerbosity=detailed"):
        layers_from_file(reference_dir / "trt-logs" / "F01.log")


def test_profile_json_is_refused_with_a_hint(tmp_path):
    profile = tmp_path / "profile.json"
    profile.write_text('[{"count": 10}, {"name": "Conv_0", "timeMs": 1.5}]')
    with pytest.raises(ValueError, match="exportProfile"):
        layers_from_file(profile)


def test_damaged_json_is_refused(tmp_path):
    damaged = tmp_path / "layers.json"
    damaged.write_text('{"Layers": ["Conv_0" "Relu_1"]}')
    with pytest.raises(ValueError, match=r"layers\.json: starts like engine inspector JSON but is not readable"):
        layers_from_file(damaged)


def test_json_cut_inside_a_string_keeps_the_complete_layers(tmp_path):
    cut = tmp_path / "layers.json"
    cut.write_text('{"Layers": ["Conv_0 + Relu_1"\n,"MaxPo')
    assert [layer.name for layer in layers_from_file(cut)] == ["Conv_0 + Relu_1"]


def test_unreadable_layer_line_is_refused():
    with pytest.raises(ValueError, match="engine layer line not understood"):
        layers_from_log("Engine Layer Information:\nLayer(CaskConvolution): Conv_0 without a tactic\n")


def f36_layer_lines(reference_dir) -> list[str]:
    """F36's layer lines without the block header and without their logger prefix, as a forum excerpt has them."""
    text = (reference_dir / "trt-logs" / "F36.log").read_text(encoding="utf-8")
    return [line[line.index("Layer("):] for line in text.splitlines() if "Layer(" in line]


@pytest.mark.parametrize(
    "prefix",
    ["", "[V] ", "[12/06/2022-19:26:21] [V] [TRT] ", "[TRT] [V] ", "INFO: [TRT]: ", "[2022-11-08 06:01:58 VERBOSE] "],
    ids=["bare", "trtexec", "trtexec-timestamp", "python-logger", "deepstream", "custom-logger"],
)
def test_pasted_layer_lines_are_read_wherever_they_stand_with_any_logger_prefix(reference_dir, prefix):
    # Constructed around F36's verbatim layer lines: no block header, prose and an elision between them.
    lines = [prefix + line for line in f36_layer_lines(reference_dir)]
    text = "\n".join(["Here is what my build printed:", *lines[:2], "...", *lines[2:], "Any idea?"])
    read = read_log_layers(text)
    assert read.layers == layers_from_file(reference_dir / "trt-logs" / "F36.log")
    assert (len(read.layers), read.lines_skipped, read.not_understood) == (4, 3, ())
    assert read.summary() == "4 layer line(s) read, 3 other line(s) skipped"


def test_a_layer_line_cut_short_in_a_paste_is_skipped_and_counted(reference_dir):
    lines = f36_layer_lines(reference_dir)
    cut = lines[3][:60]
    read = read_log_layers("\n".join([*lines[:3], cut]))
    assert [layer.name for layer in read.layers] == [layer.name for layer in layers_from_log("\n".join(lines))][:3]
    assert read.not_understood == (cut,)
    assert "1 layer line(s) not understood and skipped" in read.summary()


@pytest.mark.parametrize(
    ("content", "problem"),
    [
        ("", "the file is empty"),
        ("[1, 2, 3]", "JSON, but not engine inspector JSON: engine layer #0 is neither a layer name"),
        ('{"foo": 1}', "JSON, but not engine inspector JSON: engine inspector JSON must be"),
        ('{"Layers": [{"Name": 5}]}', "engine layer #0: field 'Name' must be str, found int"),
        ('{"Layers": [{"Name": "c", "TacticName": 7}]}', "engine layer #0: field 'TacticName' must be str or null"),
        ('{"Layers": [{"Name": "c", "Metadata": [1]}]}', "engine layer #0: field 'Metadata' must be"),
        ('{"Layers": [{"Name": "c", "Inputs": {"x": 1}}]}', "engine layer #0: field 'Inputs' must be list"),
        ("plain words, no layer here", "no 'Engine Layer Information' block and no 'Layer(TYPE)"),
    ],
    ids=["empty", "list-of-numbers", "other-object", "number-name", "number-tactic", "bad-metadata", "dict-inputs",
         "prose"],
)
def test_a_file_that_is_not_layer_information_is_refused_naming_the_file(tmp_path, content, problem):
    path = tmp_path / "engine.json"
    path.write_text(content)
    with pytest.raises(ValueError) as err:
        read_layers_file(path)
    assert str(err.value).startswith(f"{path}: ") and problem in str(err.value)


# TensorRT 11.x inspector JSON, built from the field names of NVIDIA's migration page
# https://docs.nvidia.com/deeplearning/tensorrt/11.0.0/api/migration/tensorrt-10x-to-11x-IEngineInspector.html
# ("Bindings" replaced by "I/O Tensors" objects with Name, IOMode, DataType, Dimensions, Location, IsShapeInferenceIO,
# ProfileInfo; the layer tensors' "Format/Datatype" split in two) and of NVIDIA's own 11.x reader of layer tensors
# (NVIDIA/trt-samples-for-hackathon-cn, cookbook/tensorrt_cookbook/utils_engine.py: "Datatype" and "Format").
# Constructed in that shape from the real 10.x engines, not TensorRT 11 output.
_DATA_TYPE_WORDS = {"FP32": "Float", "FP16": "Half", "Int8": "Int8"}


def as_tensorrt_11(engine_info: dict, data_type_key: str = "Datatype") -> dict:
    """10.x engine inspector JSON rewritten in the 11.x shape (data type and format apart, I/O Tensors)."""
    def split(tensor):
        tensor = dict(tensor)
        text = tensor.pop("Format/Datatype")
        (word,) = [w for w in _DATA_TYPE_WORDS if re.search(rf"\b{w}\b", text)]
        tensor[data_type_key] = _DATA_TYPE_WORDS[word]
        tensor["Format"] = text  # the documented 11.x format texts still name a type: "Row major linear FP32 format"
        return tensor

    layers = [{**layer, "Inputs": [split(t) for t in layer["Inputs"]], "Outputs": [split(t) for t in layer["Outputs"]]}
              for layer in engine_info["Layers"]]
    io_tensors = [{"Name": name, "IOMode": "Input" if i == 0 else "Output", "DataType": "Float",
                   "Dimensions": [32, 3, 224, 224], "Location": "Device", "IsShapeInferenceIO": False,
                   "ProfileInfo": []} for i, name in enumerate(engine_info["Bindings"])]
    return {"Layers": layers, "I/O Tensors": io_tensors}


@pytest.mark.parametrize("data_type_key", ["Datatype", "DataType"])
def test_tensorrt_11_inspector_json_reads_as_the_same_engine_in_10x_form(engine_graph, tmp_path, data_type_key):
    """Every layer of every real engine, rewritten in the 11.x shape, has the precision and ONNX nodes it has in
    the 10.x form, whichever spelling of the data type field TensorRT 11 writes."""
    info = json.loads(engine_graph.read_text())
    eleven = tmp_path / "engine-11.json"
    eleven.write_text(json.dumps(as_tensorrt_11(info, data_type_key), indent=2))
    assert layers_from_file(eleven) == layers_from_inspector_json(info)


def test_tensorrt_11_layer_without_a_data_type_stays_unverified(reference_dir):
    """Only a data type field says what a tensor holds: with the 11.x split, a format text alone (even one naming a
    type, as the documented "Row major linear FP32 format (kLINEAR)" does) leaves a weightless layer unknown, and
    the node it implements unverified, never fp32."""
    info = as_tensorrt_11(json.loads((reference_dir / "engine-layers" / "a100-resnet-qat.graph.json").read_text()))
    for layer in info["Layers"]:
        for tensor in layer["Inputs"] + layer["Outputs"]:
            del tensor["Datatype"]
    layers = layers_from_inspector_json(info)
    pool = next(layer for layer in layers if "GlobalAveragePool_246" in layer.onnx_nodes and not layer.is_boundary)
    assert pool.precision == "unknown"
    assert fallback_nodes(node_precisions(layers), ["GlobalAveragePool_246"]).unverified == ("GlobalAveragePool_246",)
    conv = next(layer for layer in layers if "Conv_9" in layer.onnx_nodes and not layer.is_boundary)
    assert conv.precision == "int8"  # its weights still say so


@pytest.mark.parametrize("compact", [False, True], ids=["as-written", "compact"])
def test_inspector_json_cut_at_any_point_keeps_every_layer_complete_before_the_cut(reference_dir, tmp_path, compact):
    """--exportLayerInfo cut short anywhere in its first layers (a full disk, a paste): every layer entry complete
    before the cut is read exactly as from the whole file, at most the one cut through follows (with its name), and
    nothing after it."""
    text = (reference_dir / "engine-layers" / "a100-resnet-qat.graph.json").read_text()
    if compact:
        text = json.dumps(json.loads(text), separators=(",", ":"))
    whole = layers_from_inspector_json(json.loads(text))
    entry_ends = [match.end() for match in re.finditer(r"\n?\}(?=,\s*\{|\]\s*,\s*\"Bindings\")", text)][:4]
    cut_file = tmp_path / "layers.json"
    for cut in range(text.index('"QuantizeLinear_2"') + len('"QuantizeLinear_2"'), entry_ends[-1] + 3):
        cut_file.write_text(text[:cut])
        read = layers_from_file(cut_file)
        complete = sum(end <= cut for end in entry_ends)
        assert complete <= len(read) <= complete + 1, (cut, text[cut - 30:cut])
        assert read[:complete] == whole[:complete], (cut, text[cut - 30:cut])
        if len(read) > complete:
            assert read[-1].name == whole[len(read) - 1].name, (cut, text[cut - 30:cut])


def test_inspector_json_cut_after_names_with_escaped_quotes_and_numbers(tmp_path):
    """Quotes and backslashes inside a name do not end it, a number is a value only once it is whole."""
    cut = tmp_path / "layers.json"
    cut.write_text('{"Layers": ["Conv \\"a\\\\\\" + Relu_1", "Max')
    assert [layer.name for layer in layers_from_file(cut)] == ['Conv "a\\" + Relu_1']
    cut.write_text('{"Layers": [{"Name": "Conv_0", "LayerType": "CaskConvolution", "Count": 1.5e+3, "Inputs": [[2')
    assert [(layer.name, layer.layer_type) for layer in layers_from_file(cut)] == [("Conv_0", "CaskConvolution")]


NO_LAYER_INFORMATION = (
    "this log has no 'Engine Layer Information' block and no 'Layer(TYPE): NAME, Tactic: ...' line (nor a '[GpuLayer] "
    "TYPE: NAME' / '[DlaLayer] NAME' placement list): TensorRT prints them at the end of a successful build when the log is verbose (trtexec --verbose, or trt.Logger.VERBOSE) and the "
    "engine was built with detailed profiling (--profilingVerbosity=detailed / ProfilingVerbosity.DETAILED). A failed "
    "or non-verbose build has none; read the engine inspector JSON instead (trtexec --exportLayerInfo)."
)


def test_a_log_without_layer_information_says_exactly_how_to_get_it():
    with pytest.raises(ValueError) as err:
        read_log_layers("[I] [TRT] Loaded engine size: 12 MiB\n[E] [TRT] 4: build failed\n")
    assert str(err.value) == NO_LAYER_INFORMATION


@pytest.mark.parametrize(("after_last_header", "first_line"), [
    ("\n\n[I] [TRT] Total Host Persistent Memory: 12\n", "'[I] [TRT] Total Host Persistent Memory: 12'"),
    ("", "'(end of log)'"),
], ids=["other-line", "end-of-log"])
def test_an_empty_last_layer_information_block_names_its_line_and_what_follows(after_last_header, first_line):
    """The last of three blocks is the one read: the message points at its header line (line 7 counting from 1)."""
    block = "[V] [TRT] Engine Layer Information:\n[V] [TRT] Layer(Reformat): r, Tactic: 0x0, a (Float[1]) -> b (Float[1])\n"
    text = block + "[I] [TRT] rebuilt\n" + block + "[I] [TRT] rebuilt\n" + "[V] [TRT] Engine Layer Information:" \
        + after_last_header
    with pytest.raises(ValueError) as err:
        read_log_layers(text)
    assert str(err.value) == ("the 'Engine Layer Information' block at line 7 of this log has no 'Layer(TYPE): NAME, "
                              f"Tactic: ...' lines after it; first line after the header: {first_line}")


def test_an_unreadable_layer_line_quotes_the_line_and_the_expected_shape():
    line = "[V] [TRT] Layer(CaskConvolution): Conv_0 without a tactic"
    with pytest.raises(ValueError) as err:
        read_log_layers(line)
    assert str(err.value) == ("engine layer line not understood (expected 'Layer(TYPE): NAME, Tactic: VALUE, INPUTS -> "
                              f"OUTPUTS'): {line!r}")
    no_arrow = "Layer(CaskConvolution): Conv_0, Tactic: 0x1, x (Int8[1,8,4,4]), y (Int8[1,8,4,4])"
    with pytest.raises(ValueError) as err:
        read_log_layers(no_arrow)
    assert str(err.value) == ("engine layer line has no 'INPUTS -> OUTPUTS' part with data types in either known "
                              "spelling, 'name (Int8[1,64,56,56])' (8.5+) or 'name[Int8(1,64,56,56)]' (8.0-8.4): "
                              f"{no_arrow!r}")


def test_a_layer_line_without_inputs_reads_its_outputs():
    """A layer with no input tensor (a constant) prints ' -> outputs' right after the tactic."""
    (layer,) = layers_from_log("Layer(Constant): weights, Tactic: 0x0,  -> w (Int8[8,8]), w2 (Half[8])")
    assert (layer.name, layer.layer_type, layer.precision, layer.is_boundary) == ("weights", "Constant", "int8", False)
    (layer,) = layers_from_log("Layer(Constant): weights, Tactic: 0x0, -> w (Half[8])")
    assert layer.precision == "fp16"


def test_the_arrow_splits_inputs_from_outputs_at_the_tensor_before_it():
    (layer,) = layers_from_log("Layer(Reformat): q, Tactic: 0x0, x (Float[1,8]) -> y (Int8[1,8])")
    assert (layer.precision, layer.is_boundary) == ("int8", True)
    (layer,) = layers_from_log("Layer(CaskConvolution): c, Tactic: 0x0, x (Int8[1,8]) -> y (Float[1,8])")
    assert layer.precision == "int8"


def model_with_initializer_consumer():
    """A graph where weight 'w' feeds node 'Conv_3': TensorRT may name a layer after the weight only."""
    graph = helper.make_graph(
        [helper.make_node("Conv", ["x", "w"], ["y"], name="Conv_3")], "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1, 3, 3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 1, 3, 3])],
        [helper.make_tensor("w", TensorProto.FLOAT, [1, 1, 1, 1], [1.0])])
    return helper.make_model(graph)


def test_onnx_names_reach_every_reader(tmp_path):
    """Given the ONNX model, a layer named after a weight maps to the node consuming it, whichever reader is used."""
    model = model_with_initializer_consumer()
    line = "Layer(CaskConvolution): w + Relu_9, Tactic: 0x1, x (Int8[1,1,3,3]) -> y (Int8[1,1,3,3])"
    assert layers_from_log(line, model)[0].onnx_nodes == ("Conv_3",)
    assert layers_from_log(line)[0].onnx_nodes == ("w", "Relu_9")
    log = tmp_path / "build.log"
    log.write_text(line + "\n")
    assert read_layers_file(log, model).layers[0].onnx_nodes == ("Conv_3",)
    names_only = tmp_path / "names.json"
    names_only.write_text('{"Layers": ["w + Relu_9"]}')
    assert read_layers_file(names_only, model).layers[0].onnx_nodes == ("Conv_3",)
    cut = tmp_path / "cut.json"
    cut.write_text('{"Layers": ["w + Relu_9", "Max')
    read = read_layers_file(cut, model)
    assert read.layers[0].onnx_nodes == ("Conv_3",)
    assert read.summary() == "1 layer(s) read from engine inspector JSON"


def test_a_log_with_bytes_that_are_not_utf8_is_still_read(tmp_path):
    log = tmp_path / "build.log"
    log.write_bytes(b"[I] caf\xe9 \xff\xfe\n"
                    b"Layer(CaskConvolution): Conv_0, Tactic: 0x1, x (Int8[1,8,4,4]) -> y (Int8[1,8,4,4])\n")
    read = read_layers_file(log)
    assert [(layer.name, layer.precision) for layer in read.layers] == [("Conv_0", "int8")]
    assert read.summary() == "1 layer line(s) read, 1 other line(s) skipped"


def test_the_summary_quotes_the_first_line_not_understood_up_to_200_characters():
    good = "Layer(CaskConvolution): Conv_0, Tactic: 0x1, x (Int8[1,8,4,4]) -> y (Int8[1,8,4,4])"
    bad = "Layer(CaskConvolution): " + "n" * 300
    read = read_log_layers("\n".join([good, bad, "Layer(Reformat): other bad line"]))
    assert read.summary() == ("1 layer line(s) read, 0 other line(s) skipped, 2 layer line(s) not understood and "
                              f"skipped (first: {bad!r:.200})")


@pytest.mark.parametrize(("content", "message"), [
    ('[{"count": 10}]', "engine layer #0 is neither a layer name nor a layer dict with a 'Name' key: \"{'count': 10}\". "
                        "Is this a profile (trtexec --exportProfile) instead of layer information (--exportLayerInfo)?"),
    ('{"Layers": ["a", {"Name": "c", "LayerType": 7}]}', "engine layer #1: field 'LayerType' must be str or null, "
                                                         "found int '7'"),
    ('{"Layers": [{"Name": "c", "Origin": ["QDQ"]}]}', "engine layer #0: field 'Origin' must be str or null, "
                                                       "found list \"['QDQ']\""),
    ('{"Layers": [{"Name": "c", "Outputs": "y"}]}', "engine layer #0: field 'Outputs' must be list, found str 'y'"),
    ('{"Layers": [{"Name": "c", "Metadata": 3}]}', "engine layer #0: field 'Metadata' must be str or list or null, "
                                                   "found int '3'"),
], ids=["profile", "number-type", "list-origin", "str-outputs", "number-metadata"])
def test_a_wrong_layer_entry_is_refused_with_the_exact_field_and_value(tmp_path, content, message):
    path = tmp_path / "engine.json"
    path.write_text(content)
    with pytest.raises(ValueError) as err:
        read_layers_file(path)
    assert str(err.value) == f"{path}: JSON, but not engine inspector JSON: {message}"


def test_a_long_wrong_value_is_quoted_up_to_80_characters_and_a_long_entry_up_to_200():
    with pytest.raises(ValueError) as err:
        layers_from_inspector_json({"Layers": [{"Name": "c", "TacticName": list(range(100))}]})
    assert str(err.value).endswith(f"found list {str(list(range(100)))[:80]!r}")
    with pytest.raises(ValueError) as err:
        layers_from_inspector_json([{"timeMs": list(range(100))}])
    assert f"{str({'timeMs': list(range(100))})[:200]!r}. Is this a profile" in str(err.value)


def test_json_cut_in_a_long_tail_of_numbers_or_objects_is_closed_at_its_last_complete_value(tmp_path):
    """The repair tries the last 64 complete values only: each of them must be a real end of a value."""
    cut = tmp_path / "layers.json"
    numbers = ", ".join(str(n) for n in range(1000, 1100))
    cut.write_text('{"Layers": ["Conv_0 + Relu_1"], "Bindings": [' + numbers)
    assert [layer.name for layer in layers_from_file(cut)] == ["Conv_0 + Relu_1"]
    cut.write_text('{"Layers": ["Conv_0 + Relu_1"], "Bindings": [' + ", ".join(["[{}]"] * 100) + ", [{")
    assert [layer.name for layer in layers_from_file(cut)] == ["Conv_0 + Relu_1"]
    cut.write_text('{"Layers": ["Conv_0 + Relu_1"], "Bindings": [' + ", ".join(["[[true]]"] * 100) + ", [[")
    assert [layer.name for layer in layers_from_file(cut)] == ["Conv_0 + Relu_1"]


def test_json_cut_after_many_names_with_escaped_quotes_keeps_them_all(tmp_path):
    names = [f'Conv_{n} \\\\ 5\\" + Relu_{n}' for n in range(99)]  # an odd number of quotes: a lost escape shows
    cut = tmp_path / "layers.json"
    cut.write_text('{"Layers": [' + ", ".join(f'"{name}"' for name in names) + ', "Max')
    read = [layer.name for layer in layers_from_file(cut)]
    assert read == [json.loads(f'"{name}"') for name in names]


def test_json_that_is_damaged_or_cut_beyond_repair_says_which(tmp_path):
    damaged = tmp_path / "layers.json"
    damaged.write_text('{"Layers": ["Conv_0" "Relu_1"]}')
    with pytest.raises(ValueError) as err:
        layers_from_file(damaged)
    assert str(err.value) == (f"{damaged}: starts like engine inspector JSON but is not readable JSON: Expecting ',' "
                              "delimiter: line 1 column 22 (char 21) (the error is before the end of the text, so it is "
                              "damaged, not cut short)")
    damaged.write_text('{"Layers": ["Conv_0"], "Meta": ' + '{"a": ' * 70 + '"x')  # 70 keys without a value
    with pytest.raises(ValueError) as err:
        layers_from_file(damaged)
    assert str(err.value) == (f"{damaged}: starts like engine inspector JSON but is not readable JSON: Unterminated "
                              f"string starting at: line 1 column {len(damaged.read_text()) - 1} (char "
                              f"{len(damaged.read_text()) - 2}); closing it after one of its last 64 complete values "
                              "did not help either (the text is damaged, not just cut short)")


def test_a_layer_line_whose_tensor_types_are_unknown_has_precision_unknown():
    (layer,) = layers_from_log("Layer(PluginV2): custom, Tactic: 0x0, x (Custom[1,8]) -> y (Custom[1,8])")
    assert (layer.precision, layer.is_boundary) == ("unknown", False)


def test_only_weights_decide_a_precision_not_a_bias_or_other_typed_field():
    (layer,) = layers_from_inspector_json({"Layers": [{
        "Name": "conv", "LayerType": "CaskConvolution", "Bias": {"Type": "Float", "Count": 64},
        "Inputs": [{"Name": "x", "Format/Datatype": "Int8"}], "Outputs": [{"Name": "y", "Format/Datatype": "Int8"}]}]})
    assert layer.precision == "int8"


def test_a_utf8_file_is_read_as_utf8_whatever_the_locale(tmp_path):
    """TensorRT writes UTF-8; ONNX node names may hold any character. A process whose locale is not UTF-8 (here the C
    locale: ASCII) must still read them, not turn each byte into a replacement character."""
    name = "/backbone/卷积1/Conv + /backbone/café/Relu"
    log = tmp_path / "build.log"
    log.write_text(f"Layer(CaskConvolution): {name}, Tactic: 0x1, x (Int8[1,8,4,4]) -> y (Int8[1,8,4,4])\n",
                   encoding="utf-8")
    before = locale.setlocale(locale.LC_CTYPE)
    locale.setlocale(locale.LC_CTYPE, "C")
    try:
        (layer,) = layers_from_file(log)
    finally:
        locale.setlocale(locale.LC_CTYPE, before)
    assert (layer.name, layer.onnx_nodes) == (name, tuple(name.split(" + ")))


def test_a_layer_without_inputs_splits_at_its_leading_arrow_whatever_the_tensor_names_hold():
    """Tensor names are ONNX's, free text: an output named 'a->b' is still an output."""
    (layer,) = layers_from_log("Layer(Constant): w, Tactic: 0x0,  -> w (Half[8]), w->int8 (Int8[8])")
    assert layer.precision == "int8"  # no input: the lowest output precision


@pytest.mark.parametrize("name, nodes", [
    # A GELU fused by TensorRT: nested PWN arguments are split at their own level only, whatever letters the names hold.
    ("/ResNeXt/fc1/MatMul + PWN(PWN(PWN(/ResNeXt/act/Div, /ResNeXt/act/Erf), /ResNeXt/act/Add), /ResNeXt/act/Mul)",
     ("/ResNeXt/fc1/MatMul", "/ResNeXt/act/Div", "/ResNeXt/act/Erf", "/ResNeXt/act/Add", "/ResNeXt/act/Mul")),
    ("PWN(PWN(/X/Div, /X/Erf), /X/Mul)", ("/X/Div", "/X/Erf", "/X/Mul")),
    # A bracket with no partner in a node name: the name is split at every separator, none is lost.
    ("/head/Slice[0 + /head/Relu + /head/Add", ("/head/Slice[0", "/head/Relu", "/head/Add")),
    ("/head/Mul) || /head/Sub", ("/head/Mul)", "/head/Sub")),
    ("PWN(/a/Div), /a/Mul)", ("/a/Div)", "/a/Mul")),  # PWN(...) unwrapped, then its unbalanced arguments split
])
def test_separators_inside_brackets_belong_to_the_inner_name(name, nodes):
    assert onnx_nodes_from_layer_name(name) == nodes


def nested_json(value_text: str) -> str:
    """A layer list, then 70 nested objects (70 keys, each a point where the text cannot be closed), then one value:
    only that value can close the text within the 64 complete values the repair tries."""
    return '{"Layers": ["Conv_0 + Relu_1"], "Meta": ' + '{"a": ' * 70 + value_text


@pytest.mark.parametrize("value_text", ["true, ", "null, ", "false, \"b", "12e-3, ", "5e+3, ", "[], ", "{}, \"b"],
                         ids=["true", "null", "false-then-cut-key", "negative-exponent", "positive-exponent",
                              "empty-list", "empty-object"])
def test_json_cut_after_a_literal_a_number_or_an_empty_container_is_closed_right_after_it(tmp_path, value_text):
    cut = tmp_path / "layers.json"
    cut.write_text(nested_json(value_text))
    assert [layer.name for layer in layers_from_file(cut)] == ["Conv_0 + Relu_1"]


def test_json_cut_after_keys_only_says_it_could_not_be_closed(tmp_path):
    cut = tmp_path / "layers.json"
    cut.write_text(nested_json('"b'))
    with pytest.raises(ValueError, match="closing it after one of its last 64 complete values did not help"):
        layers_from_file(cut)


@pytest.mark.parametrize("text, names", [
    ('["", "Conv_0 + Relu_1", "MaxPo', ["", "Conv_0 + Relu_1"]),
    ('["\\\\", "Conv_0 + Relu_1", "MaxPo', ["\\", "Conv_0 + Relu_1"]),
    ('["\\"", "Conv_0 + Relu_1", "MaxPo', ['"', "Conv_0 + Relu_1"]),
], ids=["empty", "backslash", "quote"])
def test_json_cut_short_whose_first_string_is_empty_or_escaped_keeps_every_complete_name(tmp_path, text, names):
    """Strings are followed from the text's first character: its first string ending at once, or with an escape, does
    not put the reader out of step for the rest."""
    cut = tmp_path / "layers.json"
    cut.write_text(text)
    assert [layer.name for layer in layers_from_file(cut)] == names


# ---- Myelin regions ({ForeignNode[FIRST...LAST]}) ------------------------------------------------------------------

def attention_model() -> onnx.ModelProto:
    """The as-reported graph of case P8 (LayerNorm, q/k/v MatMuls, Softmax, MatMul, projection, residual Add)."""
    from cases.generate import export_model
    from cases.p8_attention_myelin import AttentionMyelin

    model, _ = export_model(AttentionMyelin, AttentionMyelin.variants[0])
    return model


def myelin_layer(name: str, datatype: str) -> dict:
    """An engine inspector entry shaped like TensorRT's for a Myelin layer (constructed, not TensorRT output)."""
    return {
        "Name": name, "LayerType": "Myelin",
        "Inputs": [{"Name": "x", "Location": "Device", "Dimensions": [1, 16, 32], "Format/Datatype": datatype}],
        "Outputs": [{"Name": "/Add_output_0", "Location": "Device", "Dimensions": [1, 16, 32],
                     "Format/Datatype": datatype}],
        "TacticName": "", "StreamId": 0,
    }


def test_a_foreign_node_is_every_onnx_node_between_its_ends_and_none_of_them_int8():
    model = attention_model()
    region = "{ForeignNode[/norm1/LayerNormalization.../Add]}"
    (layer,) = layers_from_inspector_json({"Layers": [myelin_layer(region, "Row major linear FP32")]}, model)
    assert layer.onnx_nodes == tuple(node.name for node in model.graph.node)  # the whole block, in graph order
    precision = node_precisions([layer])
    assert set(precision.values()) == {"fp32"}
    matmuls = [node.name for node in model.graph.node if node.op_type == "MatMul"]
    assert fallback_nodes(precision, matmuls) == FallbackReport(tuple(matmuls), (), ())


def test_a_foreign_node_region_stops_at_its_ends():
    model = attention_model()
    (layer,) = layers_from_inspector_json([myelin_layer("{ForeignNode[/attn/MatMul.../attn/MatMul_1]}",
                                                        "Row major linear FP16 format")], model)
    # q k^T, its scaling, the softmax and the product with v: not the projections before or after.
    assert layer.onnx_nodes == ("/attn/MatMul", "/attn/Mul", "/attn/Softmax", "/attn/MatMul_1")
    assert layer.precision == "fp16"
    assert foreign_node_regions([layer]) == {layer.name: layer.onnx_nodes}


def test_a_foreign_node_with_only_int8_boundaries_is_unknown_never_int8():
    (layer,) = layers_from_inspector_json([myelin_layer("{ForeignNode[/attn/MatMul.../attn/MatMul_1]}",
                                                        "Row major Int8 format")], attention_model())
    assert layer.precision == "unknown"


def test_a_foreign_node_in_verbose_layer_information_text():
    text = ("[V] [TRT] Engine Layer Information:\n"
            "Layer(Myelin): {ForeignNode[/norm1/LayerNormalization.../attn/proj/Add]}, Tactic: 0x0000000000000000, "
            "x (Half[1,16,32]) -> /attn/proj/Add_output_0 (Half[1,16,32])\n"
            "Layer(ElementWise): /Add, Tactic: 0x0000000000000001, x (Float[1,16,32]), /attn/proj/Add_output_0 "
            "(Half[1,16,32]) -> /Add_output_0 (Float[1,16,32])\n")
    region, add = layers_from_log(text, attention_model())
    assert region.layer_type == "Myelin" and region.precision == "fp16"
    assert region.onnx_nodes[0] == "/norm1/LayerNormalization" and region.onnx_nodes[-1] == "/attn/proj/Add"
    assert "/Add" not in region.onnx_nodes and len(region.onnx_nodes) == 14
    assert add.onnx_nodes == ("/Add",)


def test_a_region_end_named_by_a_tensor_is_the_node_writing_it():
    """F08 (NVIDIA/TensorRT#3972) names its first end by a constant tensor, ``..._output_0[Constant]``."""
    nodes = [
        helper.make_node("Slice", ["t", "s", "e"], ["/transformer/attention_4/Slice_4_output_0"],
                         name="/transformer/attention_4/Slice_4"),
        helper.make_node("MatMul", ["x", "/transformer/attention_4/Slice_4_output_0"], ["m"], name="/transformer/MatMul"),
        helper.make_node("Reshape", ["m", "shape"], ["y"], name="/transformer/Reshape_6"),
        helper.make_node("Relu", ["y"], ["z"], name="/after/Relu"),
    ]
    graph = helper.make_graph(nodes, "g", [], [])
    name = classify_log("[E] Error[10]: Error Code: 10: Could not find any implementation for node "
                        "{ForeignNode[/transformer/attention_4/Slice_4_output_0[Constant].../transformer/Reshape_6]}."
                        ).node
    assert onnx_nodes_from_layer_name(name, OnnxNames.from_model(graph)) == (
        "/transformer/attention_4/Slice_4", "/transformer/MatMul", "/transformer/Reshape_6")


def test_a_region_end_tensorrt_named_itself_bounds_nothing(reference_dir):
    """F29 (NVIDIA/TensorRT#2606): ``(Unnamed Layer* 1590) [Shuffle]...Reshape_11153 + Transpose_11154``."""
    nodes = [helper.make_node("Shape", ["x"], ["s"], name="Shape_11150"),
             helper.make_node("Reshape", ["x", "s"], ["r"], name="Reshape_11153"),
             helper.make_node("Transpose", ["r"], ["y"], name="Transpose_11154")]
    names = OnnxNames.from_model(helper.make_graph(nodes, "g", [], []))
    node = classify_log((reference_dir / "trt-logs" / "F29.log").read_text()).node
    assert onnx_nodes_from_layer_name(node, names) == ("Reshape_11153", "Transpose_11154")


def test_onnx_names_read_the_graph_edges():
    names = OnnxNames.from_model(attention_model())
    assert names.producers["/attn/Softmax_output_0"] == "/attn/Softmax"
    assert names.successors["/attn/Softmax"] == ("/attn/MatMul_1",)
    assert set(names.successors["/norm1/LayerNormalization"]) == {"/attn/q/MatMul", "/attn/k/MatMul", "/attn/v/MatMul"}
    assert names.order[0] == "/norm1/LayerNormalization" and names.order[-1] == "/Add"


@pytest.mark.parametrize("inputs, outputs, precision", [
    ("Row major linear FP8 format", "Row major linear FP16 format", "fp8"),
    ("Row major linear FP16 format", "Row major linear BF16 format", "fp16"),
    ("Row major linear BF16 format", "Row major linear FP32 format", "bf16"),
])
def test_a_foreign_node_is_the_lowest_float_precision_at_its_boundary(inputs, outputs, precision):
    """Lowest in precision (fp8 < fp16 < bf16 < fp32), not in spelling."""
    entry = myelin_layer("{ForeignNode[/attn/MatMul.../attn/MatMul_1]}", inputs)
    entry["Outputs"][0]["Format/Datatype"] = outputs
    (layer,) = layers_from_inspector_json([entry])
    assert layer.precision == precision


def in_graph_order(model: onnx.ModelProto, nodes: set[str]) -> tuple[str, ...]:
    return tuple(node.name for node in model.graph.node if node.name in nodes)


ATTENTION_SCORES = {"/attn/MatMul", "/attn/Mul", "/attn/Softmax", "/attn/MatMul_1"}


@pytest.mark.parametrize("region, nodes", [
    # One end only, fused: every node between the nodes it names.
    ("/attn/MatMul + /attn/MatMul_1", ATTENTION_SCORES),
    # The last end named by a tensor: the node that writes it.
    ("/attn/MatMul.../attn/Softmax_output_0", {"/attn/MatMul", "/attn/Mul", "/attn/Softmax"}),
    # The first end a constant TensorRT made of an initializer (as F08 names one): the node reading it.
    ("/attn/Constant_output_0[Constant].../attn/MatMul_1", {"/attn/Mul", "/attn/Softmax", "/attn/MatMul_1"}),
    ("attn.proj.weight[Constant].../Add", {"/attn/proj/MatMul", "/attn/proj/Add", "/Add"}),
    # Ends on parallel branches (no path from one to the other): both ends still are in the region.
    ("/attn/q/MatMul.../attn/v/MatMul", {"/attn/q/MatMul", "/attn/v/MatMul"}),
    # An end TensorRT named itself: the other end's nodes, in graph order like every region.
    ("(Unnamed Layer* 7) [Shuffle].../attn/Softmax + /attn/Mul", {"/attn/Mul", "/attn/Softmax"}),
    ("/attn/Softmax + /attn/Mul...(Unnamed Layer* 7) [Shuffle]", {"/attn/Mul", "/attn/Softmax"}),
    # A name that is no node, tensor or initializer of the graph bounds nothing either.
    ("/attn/Gone_output_0[Constant].../attn/MatMul_1", {"/attn/MatMul_1"}),
    ("(Unnamed Layer* 7) [Shuffle]...(Unnamed Layer* 9) [Shuffle]", set()),
])
def test_the_nodes_of_a_foreign_node_region(region, nodes):
    model = attention_model()
    names = OnnxNames.from_model(model)
    assert onnx_nodes_from_layer_name(f"{{ForeignNode[{region}]}}", names) == in_graph_order(model, nodes)


def test_a_region_end_that_names_a_node_is_that_node_even_when_a_tensor_has_the_same_name():
    """ONNX keeps node names and tensor names apart: 'mid' below is a node and also the tensor another node writes."""
    nodes = [helper.make_node("Relu", ["x"], ["mid"], name="pre"),
             helper.make_node("Relu", ["mid"], ["out"], name="mid"),
             helper.make_node("Relu", ["out"], ["y"], name="post")]
    names = OnnxNames.from_model(helper.make_graph(nodes, "g", [], []))
    assert onnx_nodes_from_layer_name("{ForeignNode[mid...post]}", names) == ("mid", "post")
    assert onnx_nodes_from_layer_name("{ForeignNode[mid[Constant]...post]}", names) == ("pre", "mid", "post")


def test_a_region_is_expanded_with_onnx_names_built_by_hand_without_a_node_order():
    names = OnnxNames(frozenset({"a", "b", "c", "d"}), successors={"a": ("b",), "b": ("c",), "c": ("d",)})
    assert set(onnx_nodes_from_layer_name("{ForeignNode[b...d]}", names)) == {"b", "c", "d"}


def test_a_region_name_is_split_at_its_first_ellipsis_with_or_without_the_graph():
    """ONNX node names are free text and may hold '...' themselves: the region's first '...' ends its first end, the
    last end is the rest, the same way whether the graph is known or not."""
    nodes = [helper.make_node("Relu", ["x"], ["a"], name="/a/Relu"),
             helper.make_node("Relu", ["a"], ["b"], name="/b/Relu"),
             helper.make_node("Relu", ["b"], ["c"], name="/c/Slice[1...3]")]
    region = "{ForeignNode[/a/Relu.../c/Slice[1...3]]}"
    assert onnx_nodes_from_layer_name(region) == ("/a/Relu", "/c/Slice[1...3]")
    names = OnnxNames.from_model(helper.make_graph(nodes, "g", [], []))
    assert onnx_nodes_from_layer_name(region, names) == ("/a/Relu", "/b/Relu", "/c/Slice[1...3]")


def model_with_branches() -> onnx.ModelProto:
    """An If whose branches compute with their own weights and an op holding a list of graphs (as a plugin's may)."""
    def branch(prefix: str) -> onnx.GraphProto:
        weight = helper.make_tensor(f"{prefix}.weight", TensorProto.FLOAT, [4, 4], [0.5] * 16)
        nodes = [helper.make_node("MatMul", ["x", f"{prefix}.weight"], [f"{prefix}/MatMul_output_0"],
                                  name=f"/{prefix}/MatMul"),
                 helper.make_node("Sigmoid", [f"{prefix}/MatMul_output_0"], [f"{prefix}/Sigmoid_output_0"],
                                  name=f"/{prefix}/Sigmoid"),
                 helper.make_node("Relu", [f"{prefix}/Sigmoid_output_0"], [f"{prefix}_out"], name=f"/{prefix}/Relu")]
        return helper.make_graph(nodes, prefix, [], [helper.make_tensor_value_info(f"{prefix}_out", TensorProto.FLOAT,
                                                                                   [1, 4])], [weight])
    nodes = [helper.make_node("If", ["cond"], ["y"], name="/If", then_branch=branch("then"), else_branch=branch("else")),
             helper.make_node("Bodies", ["y"], ["z"], name="/plugin", domain="custom",
                              bodies=[branch("first"), branch("second")])]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("cond", TensorProto.BOOL, [])],
                              [helper.make_tensor_value_info("z", TensorProto.FLOAT, [1, 4])])
    return helper.make_model(graph)


@pytest.mark.parametrize("prefix", ["then", "else", "first", "second"])
def test_the_nodes_inside_subgraphs_are_onnx_nodes_too(prefix):
    """Names, initializer consumers and edges are read in a node's subgraphs (one graph or a list of graphs)."""
    model = model_with_branches()
    fused = f"{prefix}.weight + /{prefix}/Relu"
    assert layers_from_inspector_json(fused, model)[0].onnx_nodes == (f"/{prefix}/MatMul", f"/{prefix}/Relu")
    region = f"{{ForeignNode[/{prefix}/MatMul.../{prefix}/Relu]}}"
    assert layers_from_inspector_json([region], model)[0].onnx_nodes == (
        f"/{prefix}/MatMul", f"/{prefix}/Sigmoid", f"/{prefix}/Relu")
    tensor_end = f"{{ForeignNode[{prefix}/MatMul_output_0.../{prefix}/Relu]}}"
    assert layers_from_inspector_json([tensor_end], model)[0].onnx_nodes == (
        f"/{prefix}/MatMul", f"/{prefix}/Sigmoid", f"/{prefix}/Relu")


LAYER_NAMED_AFTER_A_WEIGHT = "Layer(CaskConvolution): w + Relu_9, Tactic: 0x1, x (Int8[1,1,3,3]) -> y (Int8[1,1,3,3])"


def test_a_graph_is_accepted_as_onnx_names_like_its_model():
    model = model_with_initializer_consumer()
    assert layers_from_log(LAYER_NAMED_AFTER_A_WEIGHT, model.graph) == layers_from_log(LAYER_NAMED_AFTER_A_WEIGHT, model)
    assert layers_from_log(LAYER_NAMED_AFTER_A_WEIGHT, model.graph)[0].onnx_nodes == ("Conv_3",)


def test_layers_that_are_not_a_list_are_refused_quoting_up_to_200_characters():
    layers = {f"Conv_{n}": {"LayerType": "CaskConvolution"} for n in range(20)}
    with pytest.raises(ValueError) as err:
        layers_from_inspector_json({"Layers": layers})
    assert str(err.value) == ("engine inspector JSON must be {'Layers': [...]}, a list of layers, one layer dict with a "
                              f"'Name', or one layer name; got dict: {str(layers)[:200]!r}")


def test_one_line_inspector_records_are_read_as_layer_dicts_wrapped_or_not():
    """``LayerInformationFormat.ONELINE`` text as users paste it (https://github.com/NVIDIA/TensorRT/issues/3583):
    fields split at ", Key: " outside brackets, tensors and weights read as in the JSON, a wrapped record joined."""
    records = (
        "Name: PWN(a, b), LayerType: PointWiseV2, Inputs: [ { Name: x, Location: Device, Dimensions: [1,8], "
        "Format/Datatype: Row major linear Int8 format }], Outputs: [ { Name: y, Location: Device, Dimensions: "
        "[1,8], Format/Datatype: Row major linear Int8 format }], TacticValue: 0x1, StreamId: 0\n"
        "Name: conv, LayerType: CaskConvolution, Inputs: [ { Name: y, Location: Device, Dimensions: [1,8], Format/"
        "\nDatatype: Row major linear Int8 format }], Outputs: [], Weights: {\"Type\": \"Half\", \"Count\": 4}, "
        "Metadata: [ONNX Layer: conv]\n...\n"
    )
    read = read_log_layers(records)
    assert [(layer.name, layer.precision, layer.onnx_nodes) for layer in read.layers] == [
        ("PWN(a, b)", "int8", ("a", "b")), ("conv", "fp16", ("conv",))]
    assert (read.source, read.lines_skipped) == ("engine inspector one-line text", 1)  # the elision line


def test_a_dla_builds_placement_list_gives_each_layer_its_device():
    # The placement list TensorRT 8.4+ prints at info severity after a DLA build (the form of TensorRT's
    # sampleCudla README and of Orin trtexec logs): DLA subgraphs as ForeignNodes, GPU layers with their type.
    text = "\n".join([
        "[03/31/2025-14:34:54] [I] [TRT] ---------- Layers Running on DLA ----------",
        "[03/31/2025-14:34:54] [I] [TRT] [DlaLayer] {ForeignNode[/model.0/conv/Conv.../model.9/cv2/act/Mul]}",
        "[03/31/2025-14:34:54] [I] [TRT] [DlaLayer] {ForeignNode[(Unnamed Layer* 0) [ElementWise]]},",
        "[03/31/2025-14:34:54] [I] [TRT] ---------- Layers Running on GPU ----------",
        "[03/31/2025-14:34:54] [I] [TRT] [GpuLayer] SHUFFLE: shuffle_between_pool5_and_fc6",
        "[03/31/2025-14:34:54] [I] [TRT] [GpuLayer] CONCATENATION: /model.23/Concat_4",
    ])
    read = read_log_layers(text)
    assert [(layer.name, layer.layer_type, layer.device, layer.precision) for layer in read.layers] == [
        ("{ForeignNode[/model.0/conv/Conv.../model.9/cv2/act/Mul]}", None, "DLA", "unknown"),
        ("{ForeignNode[(Unnamed Layer* 0) [ElementWise]]}", None, "DLA", "unknown"),
        ("shuffle_between_pool5_and_fc6", "SHUFFLE", "GPU", "unknown"),
        ("/model.23/Concat_4", "CONCATENATION", "GPU", "unknown"),
    ]
    assert read.layers[3].onnx_nodes == ("/model.23/Concat_4",)
    assert read.lines_skipped == 2  # the two headers


def test_layer_information_lines_say_no_device():
    text = ("[I] [TRT] Layer(CaskConvolution): conv1 + relu1, Tactic: 0x1, input[Int8(1,3,224,224)] -> "
            "output[Int8(1,64,112,112)]\n")
    assert [layer.device for layer in read_log_layers(text).layers] == [None]
