"""What the new bases answer on the corpus's real exports, with no results file (issue 29 items 3-5, issue 30 item 4):
an FP32 model is refused on every TensorRT 11 target by the fact that 11 has no calibrator, and its implicit
quantization is answered on every 10.x target; a prediction from TensorRT's rules is never shown as an observation; --fix applies the identity-branch
Q/DQ that P3's range claim ranks on a QAT ResNet-18 and a QAT EfficientNet-B0, and checks what it writes."""
import json

import onnx
import pytest

import corpus
from harness import judgement as j
from harness.matrix import load_matrix
from harness.scan.loading import load_model
from harness.scan.scanner import ScanOptions, scan
from tests.harness.commands.test_main import harness

MATRIX = load_matrix()
TRT = [t for t in MATRIX.values() if t.backend == "tensorrt" and t.available and t.version]
TRT11 = [t for t in TRT if t.version.split(".")[0] == "11"]
TRT10 = [t for t in TRT if t.version.split(".")[0] == "10"]


def scanned(name, targets, tmp_path):
    return scan(None, ScanOptions(targets=targets), loaded=load_model(corpus.save(name, tmp_path)))


@pytest.mark.parametrize("name", corpus.names(kind="fp32"))
def test_an_fp32_model_is_refused_on_tensorrt_11_by_the_fact_and_answered_on_every_10_x(name, tmp_path):
    result = scanned(name, TRT11 + TRT10, tmp_path)
    by_target = {v.target.id: v for v in result.model_verdicts}
    for target in TRT11:
        verdict = by_target[target.id]
        assert (verdict.verdict, verdict.basis) == (j.BLOCKED, j.FACT), (target.id, verdict.reason)
        assert "--to-explicit" in verdict.reason and "https://" in verdict.reason  # the remedy and the source
    # the model's implicit quantization (P10) is answered on every 10.x target (other findings may still be unknown)
    lifecycle = [v for f, v in zip(result.findings, result.verdicts) if f.case.pattern == "P10"]
    assert lifecycle, f"{name}: no P10 finding"
    for target in TRT10:
        assert all(v[target.id].verdict != j.UNVERIFIED for v in lifecycle), (target.id, lifecycle[0][target.id])


def test_a_prediction_is_never_shown_as_observed(tmp_path):
    result = scanned("resnet18-qat-pq-ts-op13", [MATRIX["trt-local"]], tmp_path)
    data = result.to_dict()
    predicted = [v for f in data["findings"] for v in f["verdicts"].values() if v["basis"] == j.PREDICTED]
    assert predicted, "a QAT ResNet-18 on a local TensorRT (no claim covers it) is answered by the prediction"
    for verdict in predicted:
        assert verdict["verdict"] in (j.LIKELY, j.FALLBACK)
        assert "not observed" in verdict["reason"] and not verdict["reason"].startswith(j.OBSERVED)
        assert all(e["kind"] != j.OBSERVED for e in verdict["evidence"])
    assert all(t["basis"] != j.OBSERVED for t in data["targets"])


@pytest.mark.parametrize("name", ["resnet18-qat-pq-ts-op13", "efficientnet_b0-qat-pq-ts-op13"])
def test_fix_writes_a_checked_model_with_q_dq_on_the_identity_branches(name, tmp_path):
    path = corpus.save(name, tmp_path)
    result = harness("scan", str(path), "--fix", "--targets", "trt1016-orin", "trt1016-x86", "--out",
                     str(tmp_path / "out"), check=False, timeout=600)
    assert result.returncode in (0, 4), result.stdout + result.stderr  # 4: a downsample identity has no quantizer
    fixed = tmp_path / "out" / "fixed.onnx"
    onnx.checker.check_model(str(fixed))
    assert "check rescan: passed" in result.stdout and "identity-qdq" in result.stdout

    def identities_through_qdq(model):
        made = {out: node.op_type for node in model.graph.node for out in node.output}
        return sum(any(made.get(i) == "DequantizeLinear" for i in node.input)
                   for node in model.graph.node if node.op_type == "Add")

    assert identities_through_qdq(onnx.load(str(fixed))) > identities_through_qdq(onnx.load(str(path)))
    report = json.loads((tmp_path / "out" / "scan.json").read_text())
    assert report["model"]["mode"] == "explicit-qdq"
