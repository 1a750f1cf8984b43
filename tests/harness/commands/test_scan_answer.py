"""`scan` answers first: a headline, targets grouped by what they share, where the verdict changes between versions.

The QAT ResNet-18 is the corpus's torch.onnx export quantized by pytorch-quantization (corpus/models,
resnet18-qat-pq-ts-op13: P3's reported form in 8 blocks); the YOLO-style model is tests/models/backbone.py in FP32
(SiLU convs of S1's shapes, implicit INT8 so P10, and TensorRT 11's refusal of calibrators)."""
from __future__ import annotations

import json
import re

import pytest

import corpus
from harness.scan.answer import answer, describe_targets
from tests.harness.commands.test_main import harness
from tests.models.fixtures import model_files  # noqa: F401

QAT_RESNET18 = "resnet18-qat-pq-ts-op13"


@pytest.fixture(scope="module")
def resnet18_scan(tmp_path_factory):
    directory = tmp_path_factory.mktemp("resnet18")
    model = corpus.save(QAT_RESNET18, directory)
    result = harness("scan", str(model), "--out", str(directory / "out"), check=False)
    return result, json.loads((directory / "out" / "scan.json").read_text())


def test_a_qat_resnet18_is_answered_in_at_most_20_lines_none_said_twice(resnet18_scan):
    result, data = resnet18_scan
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert len(lines) <= 20, result.stdout
    assert len(lines) == len(set(lines)), result.stdout
    # the headline: model, quantization, predicted engine
    assert lines[0].startswith(f"{QAT_RESNET18}.onnx: 283 nodes, opset 13, explicit INT8 (Q/DQ); predicted engine")
    # P3's claim is one sentence for the 22 TensorRT targets it covers, written compactly, its fix once
    assert "FALLBACK on TensorRT 8.5-11.4 on Orin, Orin DLA, Thor and x86, 22 targets, claimed over a range" in lines
    assert result.stdout.count("a maintainer explaining how TensorRT fuses a residual Add") == 1
    assert result.stdout.count("identity-qdq (likely") == 1
    assert result.stdout.count("no observation, upstream claim, fact or prediction") == 1
    unavailable = [t["target"] for t in data["targets"] if t["verdict"] == "unavailable"]
    assert f"cannot exist (not scanned, --verbose says why): {', '.join(unavailable)}" in lines
    assert not any(line.startswith("changes between versions") for line in lines)  # one verdict per platform


def test_verbose_keeps_a_line_per_target(resnet18_scan, tmp_path):
    _, data = resnet18_scan
    model = corpus.save(QAT_RESNET18, tmp_path)
    result = harness("scan", str(model), "--out", str(tmp_path / "out"), "--verbose", check=False)
    for target in data["targets"]:
        assert any(line.strip().startswith(target["target"] + " ") for line in result.stdout.splitlines()), target


def test_a_yolo_style_fp32_model_names_where_the_verdict_changes(tmp_path, model_files):
    result = harness("scan", str(model_files["backbone-silu"]), "--out", str(tmp_path), check=False)
    assert result.returncode == 1, result.stderr
    lines = result.stdout.splitlines()
    assert ("changes between versions on Orin: unverified on 8.5, blocked on 8.6 by S1, likely on 10.0, "
            "unverified on 10.3-10.16, blocked from 11.4 by P10") in lines
    assert ("changes between versions on x86: unverified on 8.6, likely on 9.2-10.0, unverified on 10.2-10.16, "
            "blocked from 11 by P10") in lines
    assert "BLOCKED on TensorRT 8.6 on Orin, 1 target, claimed upstream" in lines
    assert "BLOCKED on TensorRT 11.4 on Orin, Orin DLA and Thor, 3 targets, from the target's facts" in lines
    assert "predicted engine: none: no Q/DQ in the model" in lines[0]
    assert len(lines) == len(set(lines)), result.stdout
    for line in lines:  # no sentence twice within a line either (P10's fact states its migration: said once)
        for clause in re.split(r"[;:] |\. ", line):
            assert len(clause) < 60 or line.count(clause) == 1, (clause, line)
    p10 = [line for line in lines if "has no implicit quantization" in line]
    assert p10 and all(line.count("migrate to explicit quantization") == 1 for line in p10), p10
    assert all("what to do: migrate to explicit quantization" in line and "`trt-matrix scan --to-explicit` writes "
               "the Q/DQ model" in line for line in p10), p10


def _target(tid, platform, version, verdict="fallback", backend="tensorrt"):
    return {"target": tid, "title": tid, "backend": backend, "platform": platform, "version": version,
            "available": verdict != "unavailable", "verdict": verdict, "basis": None, "reason": "r", "findings": []}


def test_a_range_is_written_only_where_no_version_between_its_ends_is_missing():
    scanned = [_target("a", "orin", "8.6.2"), _target("b", "orin", "10.0.1"), _target("c", "orin", "10.3.0"),
               _target("d", "x86_64", "10.3.0"), _target("e", "orin", "10.2", "unavailable")]
    assert describe_targets(scanned[:3], scanned) == "TensorRT 8.6-10.3 on Orin, 3 targets"
    assert describe_targets([scanned[0], scanned[2]], scanned) == "TensorRT 8.6 and 10.3 on Orin, 2 targets"
    assert describe_targets(scanned[:4], scanned) == "TensorRT 8.6-10.3 on Orin and x86, 4 targets"
    assert describe_targets([scanned[1], scanned[3]], scanned) == "TensorRT 10.0 on Orin; TensorRT 10.3 on x86, " \
                                                                 "2 targets"


def test_the_answer_is_built_from_the_scan_data_alone():
    data = {"model": {"path": "m.onnx", "nodes": 3, "opset": 17, "mode": "explicit-qdq"}, "engine": None,
            "findings": [], "failing_targets": [], "fail_on": "blocked", "exit_code": 0,
            "targets": [{**_target("a", "orin", "8.6.2", "clear"), "reason": "no known pattern"},
                        {**_target("b", "orin", "9.2", "unavailable"), "reason": "never released"}]}
    a = answer(data)
    assert a["headline"] == "m.onnx: 3 nodes, opset 17, explicit INT8 (Q/DQ)"
    assert [(g["verdict"], g["covers"], g["reason"]) for g in a["groups"]] == [
        ("clear", "TensorRT 8.6 on Orin, 1 target", "no known pattern")]
    assert a["cannot_exist"] == ["b"] and a["changes"] == []
