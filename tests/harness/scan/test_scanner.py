"""One scan through the API: what the JSON holds, where the exit code comes from, and the caveat of a form built in
the other quantization mode."""
from __future__ import annotations

import json

import onnx
import pytest

import cases  # noqa: F401  (registers the library)
from cases.model import Match
from cases.s1_conv_silu import ConvSilu
from harness.commands.scan import exit_status
from reports.scan_results import scan_data
from harness.matrix import load_matrix
from harness.scan import loading, scanner
from harness.scan.loading import ModelInputError
from harness.scan.scanner import SCAN_FORMAT, ScanOptions, scan

TARGETS = load_matrix()


def test_the_json_holds_model_findings_verdicts_and_timings(model_files, library_results, tmp_path):
    result = scan(model_files["unet"], ScanOptions(targets=[TARGETS["ort-cpu"], TARGETS["trt86-x86"]],
                                                   results=[library_results], out_dir=tmp_path))
    data = json.loads(json.dumps(result.to_dict()))  # plain JSON all the way down
    assert data["format"] == SCAN_FORMAT and data["model"]["path"] == str(model_files["unet"])
    (finding,) = [f for f in data["findings"] if f["case"] == "s2-instancenorm"]
    assert finding["variant"] == "inputs-1" and len(finding["occurrences"]) == 6
    assert finding["occurrences"][0]["reproducer"] is None  # no --run
    assert finding["caveat"] is None
    assert set(finding["verdicts"]) == {"ort-cpu", "trt86-x86"}
    assert data["observations"] == {"sources": [str(library_results)], "records": len(result.observations)}
    assert set(data["timings_s"]) == {"read_results", "load", "match", "predict", "engine", "checks"}
    assert data["engine"]["is_predicted"] is False and "no Q/DQ" in data["engine"]["reason"]  # unet: implicit
    assert scan_data(result)["exit_code"] == exit_status(result) == (1 if data["failing_targets"] else 0)


def test_the_exit_code_follows_fail_on(model_files, tmp_path):
    for fail_on, failing in (("blocked", []), ("unverified", ["trt86-x86"])):
        result = scan(model_files["backbone-silu"], ScanOptions(targets=[TARGETS["trt86-x86"]], fail_on=fail_on,
                                                                out_dir=tmp_path))
        assert (result.failing_targets, exit_status(result)) == (failing, 1 if failing else 0)


def test_a_form_of_the_other_quantization_mode_carries_a_caveat(model_files, tmp_path, monkeypatch):
    """A matcher that finds an implicit-INT8 form in a Q/DQ model (S1's does not; another case's might)."""
    monkeypatch.setattr(ConvSilu, "find", classmethod(
        lambda cls, graph: [Match(cls.id, ("/features/conv0/Conv",), variant="as-reported")]))
    result = scan(model_files["plain-cnn-qdq"], ScanOptions(targets=[TARGETS["ort-cpu"]], out_dir=tmp_path))
    (finding,) = [f for f in result.to_dict()["findings"] if f["case"] == "s1-conv-silu"]
    assert "implicit-int8, your model is explicit-qdq" in finding["caveat"]


@pytest.mark.parametrize("checks", ["in-this-process", "in-their-process"])
def test_an_invalid_model_stops_the_scan_with_the_checkers_word_even_where_a_later_step_failed(
        checks, model_files, tmp_path, monkeypatch):
    """The checker's verdict is awaited last, after the verdicts: an invalid model still raises, and its own error
    comes before an error of a step that ran on it meanwhile."""
    if checks == "in-their-process":
        monkeypatch.setattr(loading, "CHECKS_APART_FROM_NODES", 1)
        monkeypatch.setattr(loading, "cores", lambda: 2)
    invalid = tmp_path / "invalid.onnx"
    model = onnx.load(model_files["plain-cnn-qdq"])
    model.graph.node[3].input[0] = "no_such_tensor"
    onnx.save(model, invalid)
    options = ScanOptions(targets=[TARGETS["ort-cpu"], TARGETS["trt86-x86"]], out_dir=tmp_path)
    with pytest.raises(ModelInputError, match="not a valid ONNX model") as caught:
        scan(invalid, options)
    assert caught.value.__context__ is None  # raised once, not again while handling itself

    def failing(*args, **kwargs):
        raise RuntimeError("a step that failed on the model")

    monkeypatch.setattr(scanner, "_verdicts", failing)
    with pytest.raises(ModelInputError, match="not a valid ONNX model"):
        scan(invalid, options)
    with pytest.raises(RuntimeError, match="a step that failed"):  # a valid model: the step's own error
        scan(model_files["plain-cnn-qdq"], options)
