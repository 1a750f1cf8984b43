"""P19: a ResNet whose residual stream has outlier channels, built with INT8 and FP16 allowed, and the matcher."""
from __future__ import annotations

import numpy as np
import pytest

from cases.p19_best_precision_accuracy import (BLOCKS, CONVS, FC, OUTLIER_CHANNELS,
                                               STEM)
from cases.p19_best_precision_accuracy import BestPrecisionAccuracy as P19

variant = P19.variant
BLOCK = ["Conv", "Relu", "Conv", "Relu", "Conv", "Add", "Relu"]


def test_declaration_tolerance_and_claims():
    assert (P19.pattern, P19.mode, P19.opset) == ("P19", "implicit-int8", 17)
    assert (P19.tolerance.min_cosine, P19.tolerance.max_abs_error) == (0.99, 0.15)
    assert "#4780" in P19.tolerance.reason and "v1-style" in P19.tolerance.reason
    claims = {v.name: [(c.target, c.outcome, c.architecture) for c in v.claims] for v in P19.variants if v.claims}
    assert claims == {"as-reported": [("trt1016-x86", "mismatch", "12.0")], "v1-style": [("trt1016-x86", "pass", "12.0")]}
    assert all(v.knobs.fp16 for v in P19.variants) and variant("minmax-calibrator").knobs.calibrator == "minmax"
    assert P19.mode_of(variant("fp16-only")) == "float"


@pytest.mark.parametrize("v", P19.variants, ids=lambda v: v.name)
def test_the_network_is_a_stem_three_bottlenecks_and_a_classifier(v):
    built = P19.build(v)
    assert [n.op for n in built.graph.nodes] == [
        "Conv", "Relu", *BLOCK * BLOCKS, "GlobalAveragePool", "Flatten", "Gemm"]
    adds = [n for n in built.graph.nodes if n.op == "Add"]
    for add in adds:  # the identity shortcut: the block's input (a Relu output) is added to its last conv's output
        assert {t.inputs[0].op for t in add.inputs} == {"Conv", "Relu"}
    asked = "fp16" if P19.mode_of(v) == "float" else "int8"
    assert built.requested == dict.fromkeys((*CONVS, FC), asked)


def test_outlier_channels_are_wide_in_the_stream_and_read_back_at_their_scale():
    def stem_norms(name):
        conv = next(n for n in P19.build(variant(name)).graph.nodes if n.name == STEM)
        return np.linalg.norm(conv.inputs[1].values.reshape(64, -1), axis=1)

    wide, plain = stem_norms("as-reported"), stem_norms("v1-style")
    np.testing.assert_allclose(wide[list(OUTLIER_CHANNELS)], 40 * plain[list(OUTLIER_CHANNELS)], rtol=1e-5)
    others = [c for c in range(64) if c not in OUTLIER_CHANNELS]
    np.testing.assert_array_equal(wide[others], plain[others])


def test_find_the_convs_with_outlier_channels_in_a_float_network_only(user_graph, fp32_conv_relu_graph):
    found = P19.find(user_graph(P19, variant("as-reported"), rename=True))
    assert len(found) == 1 + BLOCKS and {m.variant for m in found} == {"as-reported"}
    assert P19.find(user_graph(P19, variant("v1-style"))) == []
    assert P19.find(fp32_conv_relu_graph) == []


def test_on_ort_cpu_the_wide_range_build_is_a_mismatch_and_the_v1_style_one_passes(generated_cases, tmp_path):
    """The cell builds and runs INT8 in both; only the comparison with the FP32 reference tells them apart. A cell
    whose output is outside the tolerance is mismatch, never pass, whatever precision its nodes ran in."""
    from harness.worker.job import run_job

    records = {}
    target = {"id": "ort-cpu", "backend": "onnxruntime", "session_config": {"session.qdqisint8allowed": "1"}}
    run_job({"target": target, "cases_dir": str(generated_cases("p19", [P19])), "cells": None, "jobs": 1,
             "timeout_s": 120, "work_dir": str(tmp_path)}, lambda r: records.__setitem__(r["variant"], r))
    wide, v1 = records["as-reported"], records["v1-style"]
    assert wide["outcome"] == "mismatch" and not wide["metrics"]["within_tolerance"]
    assert wide["metrics"]["cosine"] < P19.tolerance.min_cosine
    assert wide["precision"][STEM] == "int8" and wide["fallback_nodes"] == []  # INT8 as asked: a precision "pass"
    assert v1["outcome"] == "pass" and v1["metrics"]["cosine"] > 0.999
    assert records["minmax-calibrator"]["outcome"] == "mismatch"
