"""Every narrowed claim of the library, and the targets it covers before and after its conditions: where it is
evidence at all (a claim for one target) and where it may stop ``scan --fail-on blocked``. docs/claims.md has the
same table with the reasons."""
from __future__ import annotations

import dataclasses

import pytest

from cases.p14_dequantize_after_data_movement import DequantizeAfterDataMovement
from cases.p15_precision_flag_without_qdq import PrecisionFlagWithoutQdq
from cases.p19_best_precision_accuracy import BestPrecisionAccuracy
from cases.p1_dwconv_swish_last_node import DwConvSwishLastNode
from cases.p6_matmul_int8 import MatMulInt8
from cases.p9_topk_head import TopkHead
from cases.s1_conv_silu import ConvSilu
from cases.s2_instancenorm import InstanceNorm
from cases.s3_depthwise_qdq import DepthwiseQdq
from cases.s4_bn_mish import BnMish
from cases.s5_qdq_resnet_block import QdqResnetBlock
from harness import judgement as j
from harness.evidence import Sources, evidence_for
from harness.matrix import load_matrix
from harness.scan.prediction import library_form

TARGETS = [t for t in load_matrix().values() if t.available]


def coverage(case, variant, claim_target, without_conditions=False):
    """(targets the variant's claim for ``claim_target`` is evidence on, those of them it gates), over the matrix."""
    form = library_form(case, variant)
    if without_conditions:
        form = dataclasses.replace(form, claims=tuple({k: v for k, v in c.items() if k != "conditions"}
                                                      for c in form.claims))
    covered, gating = set(), set()
    for target in TARGETS:
        for piece in evidence_for(form, target, Sources()):
            if piece.kind == j.CLAIMED and piece.target == claim_target:
                covered.add(target.id)
                if piece.gates:
                    gating.add(target.id)
    return covered, gating


# case, variant, the claim's target: covered before (= gating before), covered after, gating after
NARROWED = [
    (QdqResnetBlock, "identity-shortcut-residual-quantizer", "trt100-x86", set(), set()),
    (DepthwiseQdq, "depthwise-c32-float-qdq-per-channel", "trt86-x86", {"trt86-x86"}, set()),
    (DepthwiseQdq, "depthwise-c32-float-qdq-per-channel", "trt102-x86", {"trt102-x86"}, set()),
    (DepthwiseQdq, "depthwise-c32-float", "trt86-x86", {"trt86-x86"}, set()),
    (ConvSilu, "as-reported", "trt86-orin", {"trt86-orin"}, set()),
    (InstanceNorm, "as-reported", "trt86-x86", {"trt86-x86"}, set()),
    (BnMish, "decomposed-mish", "trt100-x86", {"trt100-x86"}, set()),
    (BnMish, "native-mish", "trt100-x86", {"trt100-x86"}, set()),
    (DwConvSwishLastNode, "as-reported", "trt86-orin", {"trt86-orin"}, set()),
    (MatMulInt8, "act-x-act-as-reported", "trt86-orin", {"trt86-orin"}, set()),
    (PrecisionFlagWithoutQdq, "as-reported", "trt1013-thor", {"trt1013-thor"}, set()),
    (PrecisionFlagWithoutQdq, "fp4-flag", "trt1013-thor", {"trt1013-thor"}, set()),
    (DequantizeAfterDataMovement, "as-reported", "trt1016-orin", {"trt1016-orin"}, set()),
    # an x86 target of any GPU: a claim naming a GPU architecture covers it only with records of that GPU
    (BestPrecisionAccuracy, "as-reported", "trt1016-x86", set(), set()),
]
# Assessed and left gating: more than one report (or a maintainer) stands behind them and nothing of the form or
# environment is left unknown.
KEPT = [
    (DwConvSwishLastNode, "as-reported", "trt85-orin"),
    (TopkHead, "as-reported", "trt103-orin"),
    (TopkHead, "calibrator-entropy2", "trt103-orin"),
    (PrecisionFlagWithoutQdq, "fp16-flag-trt11", "trt11-x86"),
]


@pytest.mark.parametrize("case,variant,claim_target,covered_after,gating_after", NARROWED,
                         ids=[f"{c.id}/{v}@{t}" for c, v, t, *_ in NARROWED])
def test_a_narrowed_claim_covers_what_its_source_covers(case, variant, claim_target, covered_after, gating_after):
    before, before_gating = coverage(case, variant, claim_target, without_conditions=True)
    after, after_gating = coverage(case, variant, claim_target)
    if case is not BestPrecisionAccuracy:
        assert before == before_gating == {claim_target}  # before: evidence and a gate on its target
    assert (after, after_gating) == (covered_after, gating_after)


@pytest.mark.parametrize("case,variant,claim_target", KEPT, ids=[f"{c.id}/{v}@{t}" for c, v, t in KEPT])
def test_a_claim_more_than_one_report_stands_behind_still_gates_its_target(case, variant, claim_target):
    assert coverage(case, variant, claim_target) == ({claim_target}, {claim_target})


def test_the_allocator_failure_is_a_fact_of_driver_470_not_of_a_residual_block():
    """S5: on TensorRT 10.0 x86 (its image needs driver 545) the claim is no evidence: the verdict falls to what else
    is known, never blocked by a driver the target cannot have."""
    form = library_form(QdqResnetBlock, "identity-shortcut-residual-quantizer")
    target = load_matrix()["trt100-x86"]
    assert target.min_driver and target.min_driver > 470
    assert j.judge(evidence_for(form, target, Sources())).verdict != j.BLOCKED
    claim = form.claims[0]
    assert claim["conditions"]["environment"] and claim["conditions"]["driver"].startswith("470")


def test_a_single_report_inherited_by_a_look_alike_is_labelled_and_does_not_gate():
    """S3 on TensorRT 8.6 x86: the verdict is still blocked (shown), its reason says why it does not gate, and the
    gate reads unverified."""
    form = library_form(DepthwiseQdq, "depthwise-c32-float-qdq-per-channel")
    judged = j.judge(evidence_for(form, load_matrix()["trt86-x86"], Sources()))
    assert judged.verdict == j.BLOCKED and not judged.gates
    assert judged.gate_verdict == j.UNVERIFIED
    said = judged.deciding.describe()
    assert "one report, not reproduced" in said and "Quadro T2000" in said and "not a CI gate here" in said


def test_every_claim_that_can_fail_a_target_says_who_stands_behind_it():
    """A claim for one target whose outcome is a failure or a fallback declares its conditions (at least its
    support): a new one cannot gate every look-alike by leaving them out."""
    from cases import all_cases

    silent = [f"{case.id}/{variant.name}@{claim.target}" for case in all_cases() for variant in case.variants
              for claim in variant.claims if claim.outcome != j.PASS and claim.conditions is None]
    assert silent == []
