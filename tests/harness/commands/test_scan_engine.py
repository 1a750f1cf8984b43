"""The predicted engine through the real commands: `scan` writes it to scan.json and the page and says it in one
line, or says why there is none; `diagnose --model` sets it beside TensorRT's engine layer by layer."""
import json

import pytest

from tests.harness.commands.test_main import harness
from tests.models import resnet18_trex


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    directory = tmp_path_factory.mktemp("models")
    return {form: resnet18_trex.write(form, directory) for form in ("qat", "fp32")}


def test_scan_writes_the_predicted_engine_and_the_page_marks_its_float_layers(models, tmp_path):
    result = harness("scan", str(models["qat"]), "--out", str(tmp_path))
    assert "predicted engine (TensorRT's documented rules, not a build): 21 of 23 compute layers INT8" in result.stdout
    engine = json.loads((tmp_path / "scan.json").read_text())["engine"]
    assert engine["is_predicted"] and engine["float_precision"] == "fp32"
    add = next(layer for layer in engine["layers"] if "Add_36" in layer["nodes"])
    assert (add["precision"], add["output_type"], add["rule"]) == ("int8", "fp32", "weighted-float-output")
    assert engine["rules"]["weighted-float-output"]["link"].startswith("https://docs.nvidia.com/")
    assert engine["targets"]["trt85-orin"]["note"] and "ort-cpu" in engine["not_predicted"]
    page = (tmp_path / "scan.html").read_text()
    assert 'id="engine"' in page and page.count('class="float-layer"') == 2  # MaxPool_12, GlobalAveragePool_246
    assert "21 of 23 compute layers INT8" in page


def test_scan_of_a_model_without_qdq_predicts_no_engine_and_says_why(models, tmp_path):
    result = harness("scan", str(models["fp32"]), "--out", str(tmp_path), check=False)
    assert result.returncode == 1, result.stderr  # TensorRT 11 has no calibrator: blocked by that fact
    assert "predicted engine: none: no Q/DQ in the model" in result.stdout
    engine = json.loads((tmp_path / "scan.json").read_text())["engine"]
    assert not engine["is_predicted"] and engine["layers"] == [] and "timing" in engine["reason"]


def test_diagnose_sets_the_prediction_beside_tensorrts_engine(models, tmp_path):
    layers = resnet18_trex.engine_json("qat")
    result = harness("diagnose", "--model", str(models["qat"]), str(layers), "--out", str(tmp_path), check=False)
    assert "33 of 33 engine layers agree in precision and output type" in " ".join(result.stdout.split())
    data = json.loads((tmp_path / "scan.json").read_text())
    comparison = next(f["engine_comparison"] for f in data["diagnosis"]["files"] if f["engine_comparison"])
    assert comparison["ruleset"] == "trt-8.6" and comparison["build_precisions"] == "FP32+FP16+INT8"
    assert comparison["counts"]["tensorrt_own"] == 4 and comparison["disagreements"] == []
    assert 'class="engine-compare"' in (tmp_path / "scan.html").read_text()


def test_diagnose_counts_disagreements_when_the_engine_is_another_forms(models, tmp_path):
    other = resnet18_trex.engine_json("qat-residual")
    result = harness("diagnose", "--model", str(models["qat"]), str(other), "--out", str(tmp_path), "--json",
                     check=False)
    comparison = json.loads(result.stdout)["files"][0]["engine_comparison"]
    assert comparison["is_predicted"] and (comparison["disagreements"] or comparison["not_predicted"])


def test_diagnose_of_an_int8_build_of_a_model_without_qdq_compares_nothing(models, tmp_path):
    result = harness("diagnose", "--model", str(models["fp32"]), str(resnet18_trex.engine_json("qat")), "--json",
                     "--out", str(tmp_path), check=False)
    comparison = json.loads(result.stdout)["files"][0]["engine_comparison"]
    assert not comparison["is_predicted"] and "implicit quantization" in comparison["text"]
