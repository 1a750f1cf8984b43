"""The patterns of the 2025-2026 reports (P14-P20) found by ``scan`` inside larger user models, and not in the FP32
models of the corpus."""
from __future__ import annotations

import onnx
import pytest

import cases
from harness.scan.loading import load_model
from harness.scan.matching import find_patterns
from tests.models import embedded
from tests.models.fixtures import CORPUS

NEW_PATTERNS = ("P14", "P15", "P16", "P17", "P18", "P19", "P20")
NEW_CASES = [case for case in cases.all_cases() if case.pattern in NEW_PATTERNS]
# Every failing form a matcher can tell from the graph; the flag forms of P15 are not in a graph.
FORMS = [(case, variant) for case in NEW_CASES for variant in case.variants
         if variant.role == "failing" and variant.name not in getattr(case, "unmatchable_forms", ())]
# The form's node each case's finding is anchored on (the first node a match names).
ANCHORS = {
    "p14-dequantize-after-data-movement": "/stem/Slice_output_0_DequantizeLinear",
    "p16-mixed-int8-fp8-weakly-typed": "/backbone/conv2/Conv",
    "p17-fp8-qdq-after-maxpool": "/maxpool/MaxPool_output_0_QuantizeLinear",
    "p18-fp8-gemm-mixed-scales": "/model/layers.0/mlp/up_proj/MatMul",
    "p19-best-precision-accuracy": "/conv1/Conv",
    "p20-orin-dla-fallback": "/head/upsample/Resize",
}


def test_every_new_pattern_has_a_case_and_a_findable_form():
    assert sorted({case.pattern for case in NEW_CASES}) == list(NEW_PATTERNS)
    assert {case.id for case, _ in FORMS} == set(ANCHORS)


@pytest.mark.parametrize("case, variant", FORMS, ids=lambda x: getattr(x, "id", getattr(x, "name", "")))
def test_scan_finds_the_form_inside_a_larger_user_model(case, variant, tmp_path):
    path = tmp_path / "user.onnx"
    onnx.save(embedded.build(case, variant), path)
    found = find_patterns(load_model(path).graph)
    assert found.problems == []
    ours = [f for f in found.findings if f.case is case]
    anchors = {o.anchor for f in ours for o in f.occurrences}
    assert embedded.renamed(case, variant, ANCHORS[case.id]) in anchors
    assert variant.name in {f.variant.name for f in ours if f.variant is not None}
    assert all(o.anchor.startswith("/model/") for f in ours for o in f.occurrences)


def test_the_p15_form_a_graph_shows_is_found_inside_a_larger_model(tmp_path):
    """P15's flag forms are not in the graph; its partly-quantized form is: the stem conv the test model adds (no
    Q/DQ, in an FP8 network) is one more layer an FP8 flag does not reach."""
    from cases.p15_precision_flag_without_qdq import PrecisionFlagWithoutQdq as P15

    variant = P15.variant("partly-fp8")
    path = tmp_path / "user.onnx"
    onnx.save(embedded.build(P15, variant), path)
    ours = [f for f in find_patterns(load_model(path).graph).findings if f.case is P15]
    anchors = sorted(o.anchor for f in ours for o in f.occurrences)
    assert anchors == sorted([embedded.renamed(P15, variant, "/features/conv2/Conv"), "/model/stem.0/Conv"])


@pytest.mark.parametrize("name", [name for name in CORPUS if not name.endswith("-qdq")])
def test_nothing_of_the_new_patterns_in_the_fp32_corpus_models(name, model_files):
    found = find_patterns(load_model(model_files[name]).graph)
    assert [f.case.id for f in found.findings if f.case.pattern in NEW_PATTERNS] == []


@pytest.mark.parametrize("name", [name for name in CORPUS if name.endswith("-qdq")])
def test_nothing_of_the_fp8_patterns_in_the_int8_qdq_corpus_models(name, model_files):
    """The INT8 Q/DQ models of the corpus have no FP8, no FP16-scaled DQ after moved data, no DLA-less Resize."""
    found = find_patterns(load_model(model_files[name]).graph)
    assert [f.case.id for f in found.findings if f.case.pattern in NEW_PATTERNS] == []
