"""What TensorRT's ONNX parser refuses, decided before any pattern, on models of the third-party corpus
(corpus/thirdparty) as the scan answers for them: the real scan on every target of the matrix, its scan.json, its
text answer and its SARIF. The expectations are the corpus's own, written by hand from the parser's documents
(corpus/thirdparty/expected.json); the whole corpus is scored by benchmarks/thirdparty_scorecard.py."""
from __future__ import annotations

import json
import re

import pytest

import cases  # noqa: F401  (registers the library)
from corpus import thirdparty
from harness import judgement as j
from harness.commands.scan import scan_data
from harness.matrix import load_matrix
from harness.scan.answer import answer_lines
from harness.scan.formats import render
from harness.scan.scanner import ScanOptions, scan

TARGETS = list(load_matrix().values())
PARSED = [t.id for t in TARGETS if t.backend == "tensorrt" and t.version and t.available]  # the parser's facts apply
_SCANS: dict[str, dict] = {}


def scanned(name: str, tmp_path_factory) -> dict:
    """scan.json of corpus model ``name`` on every matrix target (each model scanned once for this module)."""
    if name not in _SCANS:
        where = tmp_path_factory.mktemp(name)
        path = thirdparty.save(name, where)
        _SCANS[name] = json.loads(json.dumps(scan_data(scan(path, ScanOptions(targets=TARGETS, out_dir=where)))))
    return _SCANS[name]


def by_target(data: dict) -> dict[str, dict]:
    return {t["target"]: t for t in data["targets"]}


@pytest.mark.parametrize("name", ["timm_resnet50-ts-ort-s8-asym-pc-op17", "yolo11n-detect-ul-ort-u8s8"])
def test_an_asymmetric_onnx_runtime_model_is_blocked_by_the_parser_on_every_tensorrt_target(name, tmp_path_factory):
    data = scanned(name, tmp_path_factory)
    targets = by_target(data)
    for target in PARSED:
        verdict = targets[target]
        assert (verdict["verdict"], verdict["basis"]) == (j.BLOCKED, j.PARSER), (target, verdict["reason"])
        assert "qdq-zero-point" in verdict["reason"]
        refusal = next(e for e in verdict["model_evidence"] if e["category"] == "qdq-zero-point")
        assert refusal["nodes"] and "operators.md" in refusal["source"] and "ActivationSymmetric" in refusal["note"]
    text = "\n".join(answer_lines({**data, "exit_code": 1}))
    # the rule's remedy is stated once, however many groups of targets it blocks
    assert text.count("fix: qdq-zero-point: re-quantize symmetric") == 1
    assert "WeightSymmetric" in text and "--to-explicit" in text
    sarif = json.loads(render("sarif", {**data, "exit_code": 1}))["runs"][0]
    assert "parser/qdq-zero-point" in {rule["id"] for rule in sarif["tool"]["driver"]["rules"]}
    assert {r["properties"]["target"] for r in sarif["results"] if r["ruleId"] == "parser/qdq-zero-point"} \
        == set(PARSED)


def test_a_symmetric_onnx_runtime_model_is_blocked_by_its_int32_bias_dequantize(tmp_path_factory):
    targets = by_target(scanned("timm_resnet50-ts-ort-s8-sym-pc-op17", tmp_path_factory))
    for target in PARSED:
        assert targets[target]["basis"] == j.PARSER and "dq-int32-input" in targets[target]["reason"], target
        assert "qdq-zero-point" not in targets[target]["reason"]


def test_a_modelopt_int8_model_is_never_refused_by_the_parser_of_10_x_and_11_x(tmp_path_factory):
    targets = by_target(scanned("yolo11n-detect-ul-mo-int8", tmp_path_factory))
    newer = [t for t in TARGETS if t.id in PARSED and not t.version.startswith(("8.", "9."))]
    assert newer
    for target in newer:
        verdict = targets[target.id]
        assert verdict["basis"] != j.PARSER, target.id
        assert not [e for e in verdict["model_evidence"] if e["verdict"] == j.BLOCKED], target.id


def test_a_modelopt_model_at_opset_19_is_unverified_on_8_x_where_the_documents_stop_at_17(tmp_path_factory):
    targets = by_target(scanned("yolo11n-detect-ul-mo-int8", tmp_path_factory))
    for target in ("trt85-orin", "trt86-orin"):
        verdict = targets[target]
        assert verdict["verdict"] in (j.BLOCKED, j.UNVERIFIED), (target, verdict["verdict"])
        if verdict["verdict"] == j.UNVERIFIED:
            assert "opset-range" in verdict["reason"] and "opset 19" in verdict["reason"]


def test_fp8_is_refused_by_the_8_6_parser_and_by_orin_s_gpu(tmp_path_factory):
    targets = by_target(scanned("timm_resnet50-ts-mo-fp8-op17", tmp_path_factory))
    for target in ("trt86-x86", "trt86-orin", "trt85-orin"):
        assert (targets[target]["verdict"], targets[target]["basis"]) == (j.BLOCKED, j.PARSER), target
        assert "of type FP8" in targets[target]["reason"]
    orin = [t.id for t in TARGETS if t.platform == "orin" and t.available and t.id not in ("trt86-orin", "trt85-orin")]
    assert orin
    for target in orin:
        assert (targets[target]["verdict"], targets[target]["basis"]) == (j.BLOCKED, j.FACT), target
        assert "SM 8.7" in targets[target]["reason"] and "FP8" in targets[target]["reason"]


@pytest.mark.parametrize("name", ["timm_vit_tiny_patch16_224-ts", "hf_segformer_b0-ts"])
def test_a_quantized_transformer_is_no_better_than_its_fp32_export_where_the_parser_has_no_layernorm(
        name, tmp_path_factory):
    fp32 = by_target(scanned(f"{name}-fp32-op17", tmp_path_factory))["trt85-orin"]
    int8 = by_target(scanned(f"{name}-mo-int8-op17", tmp_path_factory))["trt85-orin"]
    for verdict in (fp32, int8):
        assert (verdict["verdict"], verdict["basis"]) == (j.BLOCKED, j.PARSER)
        assert re.search(r"operator-unsupported .*LayerNormalization", verdict["reason"])
