"""The parser's facts as evidence (harness/evidence/producers/parser.py) and as the model's verdict on a target
(harness.scan.prediction.model_verdict): hand-built graphs in the forms quantizers write
(tests/harness/tensorrt/test_parser_check.py's), judged on the matrix's targets."""
from __future__ import annotations

from onnx import TensorProto

import cases  # noqa: F401  (registers the library)
from harness import judgement as j
from harness.evidence import Form, Sources, evidence_for
from harness.matrix import load_matrix
from harness.scan.proto_graph import GraphIndex, ProtoGraph
from harness.scan.prediction import model_evidence, model_verdict, predict
from tests.harness.scan.test_prediction import NO_RESULTS, finding
from tests.harness.tensorrt.test_parser_check import qdq_conv

TARGETS = load_matrix()


def sources_of(model) -> Sources:
    index = GraphIndex(model.graph)
    return Sources(graph=index, opset=ProtoGraph(model, index).opset)


def test_an_asymmetric_model_gives_one_refusal_per_rule_with_its_nodes_document_and_remedy():
    pieces = evidence_for(Form("model", ""), TARGETS["trt1016-x86"], sources_of(qdq_conv(zero=3)))
    assert [(e.kind, e.outcome, e.category) for e in pieces] == [(j.PARSER, j.FAIL, "qdq-zero-point")]
    refusal = pieces[0]
    assert set(refusal.nodes) == {"input_q", "input_dq"}  # the Q and the DQ of one rule: one piece
    assert refusal.verdict == j.BLOCKED and "operators.md" in refusal.source
    assert "ActivationSymmetric" in refusal.note and refusal.note in refusal.describe()


def test_nothing_is_said_without_the_model_or_on_a_target_without_a_tensorrt_parser():
    asymmetric = sources_of(qdq_conv(zero=3))
    assert evidence_for(Form("model", ""), TARGETS["ort-cpu"], asymmetric) == []
    assert evidence_for(Form("model", ""), TARGETS["trt-local"], asymmetric) == []  # no version: no documents
    assert evidence_for(Form("model", ""), TARGETS["trt1016-x86"], Sources()) == []


def test_a_symmetric_int8_model_is_refused_by_no_version():
    for target in ("trt85-orin", "trt86-x86", "trt100-x86", "trt1016-x86", "trt11-x86", "trt114-thor"):
        pieces = evidence_for(Form("model", ""), TARGETS[target], sources_of(qdq_conv()))
        assert not [e for e in pieces if e.decisive], target


def test_a_parser_refusal_is_the_model_s_verdict_whatever_its_patterns_say():
    target = TARGETS["trt1016-x86"]
    likely = predict(finding(variant="conv-output-marked"), target, NO_RESULTS)
    model = qdq_conv(zero=3)
    index = GraphIndex(model.graph)
    verdict = model_verdict(target, [("s1", likely)], model_evidence(target, index, ProtoGraph(model, index).opset))
    assert (verdict.verdict, verdict.basis) == (j.BLOCKED, j.PARSER)
    assert verdict.reason.startswith("the ONNX parser refuses the model: qdq-zero-point")
    assert verdict.findings == [("s1", likely.verdict)]  # the pattern is still listed
    assert verdict.to_dict()["model_evidence"][0]["category"] == "qdq-zero-point"


def test_an_opset_beyond_the_documents_makes_a_good_verdict_unverified_never_a_failing_one():
    target = TARGETS["trt86-orin"]
    model = qdq_conv(opset=19)
    index = GraphIndex(model.graph)
    evidence = model_evidence(target, index, 19)
    assert [(e.category, e.decisive) for e in evidence] == [("opset-range", False)]
    assert model_verdict(target, [], evidence).verdict == j.UNVERIFIED  # clear without the documents' silence
    assert "opset-range" in model_verdict(target, [], evidence).reason
    blocked = predict(finding(), target, NO_RESULTS)  # S1 as reported: claimed to fail on 8.6 Orin
    assert model_verdict(target, [("s1", blocked)], evidence).verdict == j.BLOCKED
    assert model_verdict(TARGETS["trt1016-orin"], [], model_evidence(TARGETS["trt1016-orin"], index, 19)).verdict \
        == j.CLEAR  # 10.x's documents reach opset 24


def test_fp8_qdq_is_refused_by_the_8_6_parser_and_by_orin_s_gpu():
    model = qdq_conv(zero_type=TensorProto.FLOAT8E4M3FN, opset=19)
    index = GraphIndex(model.graph)
    quantized = frozenset({"FP8"})
    on_86 = model_verdict(TARGETS["trt86-x86"], [], model_evidence(TARGETS["trt86-x86"], index, 19, quantized))
    assert (on_86.verdict, on_86.basis) == (j.BLOCKED, j.PARSER) and "FP8" in on_86.reason
    orin = model_verdict(TARGETS["trt1016-orin"], [], model_evidence(TARGETS["trt1016-orin"], index, 19, quantized))
    assert (orin.verdict, orin.basis) == (j.BLOCKED, j.FACT) and "SM 8.7" in orin.reason
    x86 = model_verdict(TARGETS["trt1016-x86"], [], model_evidence(TARGETS["trt1016-x86"], index, 19, quantized))
    assert x86.verdict == j.CLEAR  # the host's GPU is not known: nothing stops it
