"""corpus/thirdparty: the loader, the models being what their makers write (ultralytics, timm, transformers exports;
ModelOpt and ONNX Runtime quantization in the settings their JSON names), and the hand-written expectations being
well-formed. The verdicts themselves are scored by benchmarks/thirdparty_scorecard.py."""
import re

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, numpy_helper

import corpus
from corpus import thirdparty
from harness.matrix import load_matrix


def test_names_split_by_kind_and_quantizer():
    every, fp32, quantized = thirdparty.names(), thirdparty.names(kind="fp32"), thirdparty.names(kind="quantized")
    assert sorted(fp32 + quantized) == every and not set(fp32) & set(quantized)
    assert len(fp32) >= 20 and len(quantized) >= 50
    assert {q: len(thirdparty.names(quantizer=q)) for q in thirdparty.QUANTIZERS} == {
        q: sum(thirdparty.info(n)["quantizer"] == q for n in every) for q in thirdparty.QUANTIZERS}
    assert all(thirdparty.names(quantizer=q) for q in thirdparty.QUANTIZERS)
    with pytest.raises(corpus.CorpusError, match="fp32, quantized"):
        thirdparty.names(kind="qat")
    with pytest.raises(corpus.CorpusError, match=r"corpus.thirdparty.names\(\)"):
        thirdparty.load("yolo99n-detect-ul-fp32")


def test_the_exporters_and_architectures_users_bring_are_there():
    infos = [thirdparty.info(n) for n in thirdparty.names(kind="fp32")]
    yolo = {(i["architecture"], i["task"]) for i in infos if i["exporter"] == "ultralytics"}
    assert yolo == {(f, t) for f in ("yolov8n", "yolo11n", "yolo26n") for t in ("detect", "seg", "pose")}
    timm = {i["architecture"] for i in infos if i["call"].startswith("timm.create_model")}
    assert len(timm) >= 12 and {"resnet50", "efficientnet_b0", "convnext_tiny", "vit_tiny_patch16_224"} <= timm
    assert {i["architecture"] for i in infos if i["call"].startswith("transformers.")} == {"segformer_b0", "swin_tiny"}
    versions = thirdparty.info("yolo11n-detect-ul-mo-int8")["versions"]
    assert versions["torch"].startswith("2.11") and versions["ultralytics"] and versions["modelopt"]


@pytest.mark.parametrize("name", ["yolo11n-detect-ul-mo-int8", "timm_convnext_tiny-ts-ort-u8s8-op17",
                                  "hf_segformer_b0-ts-mo-fp8-op17"])
def test_load_redraws_the_emptied_weights_the_same_way_every_time(name):
    emptied = {e["name"] for e in thirdparty.info(name)["redrawn"]}
    first, second = thirdparty.load(name), thirdparty.load(name)
    assert emptied and first == second
    onnx.checker.check_model(first, full_check=True)
    filled = {t.name for t in first.graph.initializer if t.raw_data or t.float_data or t.int32_data}
    assert emptied <= filled


def test_every_model_loads_and_holds_the_operators_its_record_lists():
    for name in thirdparty.names():
        model = thirdparty.load(name)
        ops: dict[str, int] = {}
        for node in model.graph.node:
            ops[node.op_type] = ops.get(node.op_type, 0) + 1
        assert ops == thirdparty.info(name)["ops"], name


def test_a_loaded_modelopt_yolo_runs_on_onnx_runtime(tmp_path):
    model = thirdparty.load("yolov8n-detect-ul-mo-int8")
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    (out,) = session.run(None, {"images": np.random.default_rng(0).random((1, 3, 640, 640), np.float32)})
    assert out.shape == (1, 84, 8400) and np.isfinite(out).all()
    assert thirdparty.save("yolov8n-detect-ul-mo-int8", tmp_path) == tmp_path / "yolov8n-detect-ul-mo-int8.onnx"


# ------------------------------------------------------------------------------ what each quantizer wrote
def _qdq(model):
    """(zero points as arrays, {DequantizeLinear input type names}, {initializer type names})"""
    init = {t.name: t for t in model.graph.initializer}
    zero_points, dq_types = [], set()
    for node in model.graph.node:
        if node.op_type not in ("QuantizeLinear", "DequantizeLinear"):
            continue
        if len(node.input) > 2 and node.input[2] in init:
            zero_points.append(numpy_helper.to_array(init[node.input[2]]))
        if node.op_type == "DequantizeLinear":
            typed = init.get(node.input[0]) or (init.get(node.input[2]) if len(node.input) > 2 else None)
            if typed is not None:
                dq_types.add(TensorProto.DataType.Name(typed.data_type))
    return zero_points, dq_types, {TensorProto.DataType.Name(t.data_type) for t in model.graph.initializer}


def _nonzero(zero_points) -> bool:
    return any(z.dtype.kind in "iu" and np.any(z != 0) for z in zero_points)


@pytest.mark.parametrize("quantizer", ["ort-u8s8", "ort-s8-asym-pc", "ul-ort-int8"])
def test_asymmetric_onnx_runtime_settings_write_non_zero_zero_points(quantizer):
    for name in thirdparty.names(quantizer=quantizer):
        zero_points, dq_types, _ = _qdq(thirdparty.load(name))
        assert _nonzero(zero_points), name
        assert ("UINT8" in dq_types) == (quantizer == "ort-u8s8"), name


@pytest.mark.parametrize("quantizer", ["ort-s8-sym-pc", "ort-s8-sym-pt"])
def test_symmetric_onnx_runtime_settings_write_zero_zero_points_and_still_an_int32_bias(quantizer):
    for name in thirdparty.names(quantizer=quantizer):
        zero_points, dq_types, _ = _qdq(thirdparty.load(name))
        assert not _nonzero(zero_points) and "INT32" in dq_types and "UINT8" not in dq_types, name


@pytest.mark.parametrize("quantizer", ["mo-int8", "mo-int8-fp32", "ul-mo-int8", "mo-fp8"])
def test_modelopt_writes_symmetric_qdq_of_its_type_and_opset_19(quantizer):
    for name in thirdparty.names(quantizer=quantizer):
        model = thirdparty.load(name)
        zero_points, dq_types, init_types = _qdq(model)
        assert not _nonzero(zero_points), name
        assert dq_types == ({"FLOAT8E4M3FN"} if quantizer == "mo-fp8" else {"INT8"}), name
        assert ("FLOAT16" in init_types) == (quantizer != "mo-int8-fp32"), name  # high_precision_dtype fp16 default
        assert model.opset_import[0].version == 19, name


def test_ultralytics_modelopt_step_leaves_the_head_output_convs_and_dfl_in_float():
    for name in thirdparty.names(quantizer="ul-mo-int8"):
        model = thirdparty.load(name)
        producers = {o: n for n in model.graph.node for o in n.output}
        excluded = [n for n in model.graph.node if n.op_type == "Conv"
                    and (re.match(r".*\.2/Conv$", n.name) or "/dfl/" in n.name)]
        assert excluded, name
        for conv in excluded:
            assert producers[conv.input[0]].op_type != "DequantizeLinear", (name, conv.name)
        assert len(thirdparty.load(name.replace("-ul-mo-", "-mo-")).graph.node) > len(model.graph.node)


def test_ultralytics_onnx_int8_step_quantizes_the_weighted_operators_and_fewer_places_than_the_defaults():
    for name in thirdparty.names(quantizer="ul-ort-int8"):
        model = thirdparty.load(name)
        producers = {o: n for n in model.graph.node for o in n.output}
        convs = [n for n in model.graph.node if n.op_type == "Conv"]
        assert convs and all(producers[c.input[1]].op_type == "DequantizeLinear" for c in convs), name
        default = name.replace("-ul-ort-int8", "-ort-u8s8")
        if default in thirdparty.names():
            count = [sum(n.op_type == "DequantizeLinear" for n in m.graph.node)
                     for m in (model, thirdparty.load(default))]
            assert count[0] < count[1], (name, count)


# -------------------------------------------------------------------------------------- the expectations
def test_every_model_has_expectations_whose_rules_and_targets_exist():
    data, targets = thirdparty.expectations(), load_matrix()
    assert set(data["models"]) == set(thirdparty.names())
    for group, ids in data["groups"].items():
        assert ids and all(i in targets and targets[i].available and targets[i].backend == "tensorrt" for i in ids)
    for rule_id, rule in data["rules"].items():
        assert rule["why"] and rule["source"] and set(rule["groups"]) <= set(data["groups"]), rule_id
        assert set(rule["verdict"].split("|")) <= {"blocked", "fallback", "likely", "clear", "unverified"}
    used = {r for rules in data["models"].values() for r in rules}
    assert used == set(data["rules"])
    assert set(data["engine"]) <= set(data["models"])
    assert all(thirdparty.info(n)["quantizer"] in ("mo-int8", "ul-mo-int8", "mo-fp8")
               for n, want in data["engine"].items() if want.get("float_precision") == "fp16")


def test_the_first_rule_naming_a_target_decides_it():
    expected = thirdparty.expected("yolo11n-detect-ul-ort-u8s8")
    assert expected["trt1016-x86"]["rule"] == "zero-point-not-zero" and expected["trt1016-x86"]["verdict"] == "blocked"
    assert thirdparty.expected("hf_segformer_b0-ts-mo-int8-op17")["trt85-orin"]["rule"] == "layernormalization-8.5"
    modelopt = thirdparty.expected("yolo11n-detect-ul-mo-int8")
    assert modelopt["trt100-x86"]["verdict"] == "likely|fallback|clear" and "trt103-orin-dla" not in modelopt
