"""The rescan check of a fixed model, each of its answers: a place in its workaround form passes, a place still in a
failing form, a finding the original lacked and a form changed for the worse each stop the fix, naming the place. The
fp32-function check's failure: its figures, and whether the original itself resolves the output."""
from __future__ import annotations

from types import SimpleNamespace

import pytest

import cases
from cases.model import FixResult, FixTolerance
from harness.scan.fix_checks import _rescan
from harness.scan.fix_places import FixFailed, PlaceFix
from harness.scan.matching import Finding, Occurrence

S1, P3 = cases.get_case("s1-conv-silu"), cases.get_case("p3-residual-add-qdq")
STEM, ADD = "/model.0/conv/Conv", "/layer1/layer1.0/Add"


def finding(case, variant: str, *anchors: str) -> Finding:
    return Finding(case, case.variant(variant), [Occurrence((anchor,), "") for anchor in anchors])


def scanned(*found: tuple[Finding, str]) -> SimpleNamespace:
    """A scan's findings and, per finding, its verdict on the one target ``t``."""
    return SimpleNamespace(findings=[f for f, _ in found],
                           verdicts=[{"t": SimpleNamespace(verdict=verdict)} for _, verdict in found])


def stem_fixed_with(workaround: str, original: Finding) -> PlaceFix:
    return PlaceFix(original, original.occurrences[0], S1.variant(workaround),
                    FixResult(outputs_added=[f"{STEM}_output_0"]))


def test_the_fixed_place_found_in_its_workaround_form_passes():
    before = finding(S1, "as-reported", STEM)
    check = _rescan(scanned((before, "fallback")), scanned((finding(S1, "conv-output-marked", STEM), "likely")),
                    [stem_fixed_with("conv-output-marked", before)])
    assert check["places"] == [{"place": STEM, "case": S1.id, "form": "conv-output-marked",
                                "state": "found in the workaround form conv-output-marked"}]
    assert check["passed"] and check["changed_forms"] == []


def test_a_place_still_in_its_failing_form_stops_the_fix():
    before = finding(S1, "as-reported", STEM)
    with pytest.raises(FixFailed) as failed:
        _rescan(scanned((before, "fallback")), scanned((before, "fallback")),
                [stem_fixed_with("conv-output-marked", before)])
    assert (failed.value.place, failed.value.check) == (STEM, "rescan")
    assert "still found here as s1-conv-silu/as-reported, not in the workaround form conv-output-marked" in \
        failed.value.message


def test_a_finding_the_original_lacked_stops_the_fix_and_names_its_place():
    before = finding(S1, "as-reported", STEM)
    fixed = scanned((finding(S1, "conv-output-marked", STEM), "likely"),
                    (finding(P3, "identity-float", ADD), "fallback"))
    with pytest.raises(FixFailed) as failed:
        _rescan(scanned((before, "fallback")), fixed, [stem_fixed_with("conv-output-marked", before)])
    assert (failed.value.place, failed.value.check) == (ADD, "rescan")
    assert failed.value.message == f"the fixed model has a finding the original lacked: p3-residual-add-qdq/" \
                                   f"identity-float at {ADD}"


def test_another_place_changing_form_passes_when_no_worse_and_stops_the_fix_when_worse():
    stem, add = finding(S1, "as-reported", STEM), finding(P3, "identity-qdq", ADD)
    place = stem_fixed_with("conv-output-marked", stem)
    fixed_stem = (finding(S1, "conv-output-marked", STEM), "likely")
    same = _rescan(scanned((stem, "fallback"), (add, "fallback")),
                   scanned(fixed_stem, (finding(P3, "qdq-after-add", ADD), "fallback")), [place])
    assert same["changed_forms"] == [{"place": ADD, "case": P3.id, "from": "p3-residual-add-qdq/identity-qdq",
                                      "to": "p3-residual-add-qdq/qdq-after-add",
                                      "state": "another form of a case found here before, no worse on these targets"}]
    with pytest.raises(FixFailed) as failed:
        _rescan(scanned((stem, "fallback"), (add, "likely")),
                scanned(fixed_stem, (finding(P3, "identity-float", ADD), "blocked")), [place])
    assert failed.value.place == ADD and "which is worse on t blocked (was likely)" in failed.value.message


def test_a_finding_another_rewrite_took_out_of_every_known_form_is_listed_as_gone():
    stem, add = finding(S1, "as-reported", STEM), finding(P3, "identity-float", ADD)
    check = _rescan(scanned((stem, "fallback"), (add, "blocked")),
                    scanned((finding(S1, "conv-output-marked", STEM), "likely")),
                    [stem_fixed_with("conv-output-marked", stem)])
    assert [(g["place"], g["was"]) for g in check["gone"]] == [(ADD, "p3-residual-add-qdq/identity-float")]
    assert "the evidence about its old form no longer applies" in check["gone"][0]["state"]


def quantized_copy(path, scale: float, sign: float = 1.0):
    """y = sign * DQ(Q(x)) with a per-tensor INT8 ``scale``, written to ``path``."""
    import numpy as np
    import onnx
    from onnx import helper, numpy_helper

    inits = [numpy_helper.from_array(np.array(scale, np.float32), "s"), numpy_helper.from_array(np.int8(0), "z"),
             numpy_helper.from_array(np.array(sign, np.float32), "sign")]
    nodes = [helper.make_node("QuantizeLinear", ["x", "s", "z"], ["q"]), helper.make_node("DequantizeLinear",
             ["q", "s", "z"], ["dq"]), helper.make_node("Mul", ["dq", "sign"], ["y"])]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [4])],
                              [helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, [4])], inits)
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), str(path))
    return path


def function_failure(tmp_path, x, fixed_sign: float, tolerance) -> FixFailed:
    """The fp32-function check of ``sign * DQ(Q(x))`` (scale 1) against the original (sign 1) on input ``x``."""
    import numpy as np

    from harness.scan.fix_checks import ComparisonInputs, Original, _function

    original = Original(quantized_copy(tmp_path / "original.onnx", 1.0), [], [("y", "float32", [4])],
                        {"x": np.asarray(x, np.float32)})
    with pytest.raises(FixFailed) as failed:
        _function(original, quantized_copy(tmp_path / "fixed.onnx", 1.0, fixed_sign), [], tolerance,
                  ComparisonInputs())
    return failed.value


QDQ_TOLERANCE = FixTolerance(0.999, 0.05, "a Q/DQ pair added")


def test_a_rewrite_that_breaks_an_output_the_original_resolves_is_named_with_its_figures(tmp_path):
    failure = function_failure(tmp_path, [3.0, -2.0, 5.0, 1.0], -1.0, QDQ_TOLERANCE)
    assert failure.check == "fp32-function" and failure.figures["y"]["cosine"] == -1.0
    assert failure.detail.startswith("output y: cosine -1.000000 (wanted >= 0.999), max abs error 10")
    assert failure.figures["y"]["original_nudged"]["within"] and "resolution" not in failure.detail


def test_an_output_the_original_moves_when_its_inputs_change_by_a_millionth_is_said_to_be_unresolved(tmp_path):
    """Inputs on the rounding boundary of the quantizer (half a step): a nudge of one part in a million rounds them
    the other way, so the original's own output moves beyond the tolerance."""
    failure = function_failure(tmp_path, [0.5, 1.0, 0.5, 1.0], -1.0, QDQ_TOLERANCE)
    nudged = failure.figures["y"]["original_nudged"]
    assert not nudged["within"] and nudged["cosine"] == pytest.approx(2 ** -0.5)
    assert "below the original model's own resolution: with its inputs scaled by 1 + 1e-06 the original itself " \
           "gives cosine 0.707107" in failure.detail


def test_a_bit_equal_check_that_fails_says_so_without_a_resolution(tmp_path):
    failure = function_failure(tmp_path, [0.5, 1.0, 0.5, 1.0], -1.0, None)
    assert failure.detail == "output y is not bit-equal: max abs error 2, cosine -1.000000"
    assert "original_nudged" not in failure.figures["y"]
