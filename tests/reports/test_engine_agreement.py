"""The report's predicted-against-observed table: per target, how many node precisions TensorRT's engine ran the
prediction named, on records whose precision comes from TensorRT's own engine inspector JSON."""
import json

import onnx

from harness.tensorrt.layers import OnnxNames, layers_from_inspector_json, node_precisions
from reports.engine_agreement import engine_agreement
from reports.html import render_report
from tests.models import resnet18_trex
from tests.reports.conftest import ROWS, TARGETS, make_record


def qat_record(target: str, changed: dict[str, str] | None = None) -> dict:
    """A record of the QAT ResNet-18 whose node precisions are those TensorRT's engine of it ran (reference JSON),
    built with FP16 enabled as that engine was."""
    model = resnet18_trex.build("qat")
    layers = layers_from_inspector_json(json.loads(resnet18_trex.engine_json("qat").read_text()),
                                        OnnxNames.from_model(model))
    record = make_record("resnet18", "qat", target, precision={**node_precisions(layers), **(changed or {})})
    record["knobs"] = {"fp16": True}
    return record


def cases_dir(tmp_path):
    (tmp_path / "resnet18").mkdir()
    onnx.save(resnet18_trex.build("qat"), tmp_path / "resnet18" / "qat.onnx")
    return tmp_path


def test_a_record_of_tensorrts_own_engine_agrees_with_the_prediction_node_by_node(tmp_path):
    (entry,) = engine_agreement([qat_record("trt86-orin")], TARGETS, cases_dir(tmp_path))
    assert (entry.target, entry.ruleset, entry.records) == ("trt86-orin", "trt-8.6", 1)
    assert entry.nodes > 60 and entry.rate == 1.0 and entry.disagreements == []


def test_a_node_that_ran_otherwise_is_counted_and_named_with_its_rule(tmp_path):
    (entry,) = engine_agreement([qat_record("trt86-orin", {"Conv_34": "fp32"})], TARGETS, cases_dir(tmp_path))
    assert entry.disagree == 1 and entry.rate < 1.0
    assert entry.disagreements == [{"cell": "resnet18/qat", "node": "Conv_34", "ran": "fp32",
                                    "predicted_precision": "int8", "rule": "weighted-float-output"}]
    html = render_report([qat_record("trt86-orin")], TARGETS, ROWS, tmp_path / "r.html",
                         engine_agreement=[entry]).read_text()
    assert 'id="engine-agreement"' in html and "Conv_34" in html and "trt-8.6" in html


def test_records_without_a_model_or_of_onnx_runtime_are_not_counted(tmp_path):
    ort = make_record("resnet18", "qat", "ort-cpu", precision={"Conv_34": "int8"})
    assert engine_agreement([ort, qat_record("trt86-orin")], TARGETS, tmp_path) == []

