"""benchmarks/thirdparty_scorecard.py, through its command, on saved verdicts written here: a wrong answer is
classed by its direction against corpus/thirdparty/expected.json, and --compare counts the answers that changed."""
import json
import re
import subprocess
import sys

from tests.conftest import REPO


def _target(verdict, available=True):
    return {"verdict": verdict, "basis": None, "reason": "", "available": available}


def _run(targets, float_precision="fp32", unfused=()):
    return {"targets": targets, "engine": {"float_precision": float_precision, "unfused_sigmoid": list(unfused),
                                           "layers": 1, "strong_float_precision": float_precision}}


def scorecard(*args):
    done = subprocess.run([sys.executable, "benchmarks/thirdparty_scorecard.py", *args], cwd=REPO,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_wrong_answers_are_classed_by_direction(tmp_path):
    saved = tmp_path / "saved.json"
    saved.write_text(json.dumps({"verdicts": {
        # asymmetric UINT8 from quantize_static: the parser refuses it everywhere
        "yolo11n-detect-ul-ort-u8s8": _run({"trt1016-x86": _target("likely"), "trt114-thor": _target("blocked"),
                                            "trt92-orin": _target("unavailable", available=False)}),
        # ModelOpt INT8 on 10.x x86: never blocked; its FP16 network is FP16 under strong typing
        "yolo11n-detect-ul-mo-int8": _run({"trt100-x86": _target("blocked"), "trt1016-x86": _target("fallback"),
                                           "trt103-orin-dla": _target("unverified")}, float_precision="fp16"),
    }}))
    out = scorecard("--from", str(saved))
    assert "2 models x targets that exist: 5 rows" in out
    assert "answered (not unverified): 4 = 80.0 %" in out
    assert re.search(r"right +2 = +50.0 %", out)
    assert re.search(r"false promise +1 = +25.0 %", out) and re.search(r"false alarm +1 = +25.0 %", out)
    assert "zero-point-not-zero" in out and "modelopt-int8-builds" in out
    assert "predicted engine against expectations: 0 wrong" in out


def test_compare_counts_the_answers_that_changed_direction(tmp_path):
    before, after = tmp_path / "before.json", tmp_path / "after.json"
    before.write_text(json.dumps({"verdicts": {
        "yolo11n-detect-ul-ort-u8s8": _run({"trt1016-x86": _target("likely"), "trt100-x86": _target("likely")})}}))
    after.write_text(json.dumps({"verdicts": {
        "yolo11n-detect-ul-ort-u8s8": _run({"trt1016-x86": _target("blocked"), "trt100-x86": _target("unverified")})}}))
    baseline = tmp_path / "baseline.json"
    scorecard("--from", str(before), "--save-baseline", str(baseline))
    assert json.loads(baseline.read_text())["verdicts"]["yolo11n-detect-ul-ort-u8s8"]["trt1016-x86"] == ["likely", None]
    out = scorecard("--from", str(after), "--compare", str(baseline))
    assert "2 answers changed; 1 became unverified, 0 were unverified" in out
    assert "changed direction builds -> blocked: 1" in out


def test_a_partial_fix_with_only_places_already_in_a_workaround_form_is_counted(tmp_path):
    saved = tmp_path / "saved.json"
    already = "at /model.6/m.0/Add: no workaround applies here: identity-qdq: the identity of it already comes through Q/DQ"
    saved.write_text(json.dumps({"verdicts": {
        "yolo11n-detect-ul-mo-int8": {**_run({}), "fix": {"exit": 4, "places": [["/model.6/m.0/Add", already]]}},
        "hf_swin_tiny-ts-mo-int8-op17": {**_run({}), "fix": {"exit": 4, "places": [
            ["/attention/MatMul", "no quantizer of the model reads it, so there is no scale to quantize it with"]]}},
        "timm_resnet50-ts-mo-int8-op17": {**_run({}), "fix": {"exit": 0, "places": []}},
    }}))
    out = scorecard("--from", str(saved))
    assert "--fix on 3 quantized models: exit codes {0: 1, 4: 2}; partial (4) 2, of them 1 with only places" in out
