"""The planning view's verdicts: one per pattern and target, read from the failing form as reported, then its
workarounds; only records make a verdict observed, a claim alone never does."""
from __future__ import annotations

import dataclasses

import pytest

from reports.case_index import VariantRow
from reports.planning import build_plan, pattern_sort_key
from reports.tables import matrix_columns
from tests.reports.conftest import ISSUE, TARGETS, WRITEUP, claim, make_record

NOTE = "ONNX Runtime has no analogue of the Conv + PWN fusion."


def row(variant: str, role: str, *claims, case: str = "s1-conv-silu", pattern: str = "S1", **extra) -> VariantRow:
    return VariantRow(case=case, case_title="Conv + SiLU", case_links=(ISSUE,), pattern=pattern, variant=variant,
                      role=role, description="", mode="implicit-int8", claims=tuple(claims),
                      backend_notes={"onnxruntime": NOTE} if pattern == "S1" else {}, **extra)


S1 = [row("stem", "failing", claim("trt86-orin", "fail", category="no-implementation"),
          claim("trt100-orin", "pass", strength="write-up-only", source=WRITEUP)),
      row("split-output", "workaround", claim("trt86-orin", "pass")),
      row("channels-64", "sweep"), row("channels-32", "sweep")]
CONTROL = [row("conv-relu", "control", case="control-qdq", pattern="control")]
FAIL = ("no-implementation", "Could not find any implementation", "/model.0/conv/Conv")


def plan_of(records, rows=S1 + CONTROL):
    return build_plan(rows, matrix_columns(TARGETS, records), records)


def verdict_of(plan, pattern: str, target: str):
    [found] = [r for r in plan.rows if r.pattern.id == pattern]
    return found.verdicts[[t.id for t in plan.targets].index(target)]


def test_the_failing_form_passing_works_as_reported():
    plan = plan_of([make_record("s1-conv-silu", "stem", "trt86-orin"), make_record("control-qdq", "conv-relu",
                                                                                   "trt86-orin")])
    found = verdict_of(plan, "S1", "trt86-orin")
    assert (found.kind, found.text) == ("works", "works as reported")
    assert verdict_of(plan, "control", "trt86-orin").kind == "works"  # the control pattern reads its controls


def test_a_failing_form_that_fails_with_a_passing_workaround_works_with_that_workaround():
    plan = plan_of([make_record("s1-conv-silu", "stem", "trt86-orin", "fail", fail=FAIL),
                    make_record("s1-conv-silu", "split-output", "trt86-orin")])
    found = verdict_of(plan, "S1", "trt86-orin")
    assert (found.kind, found.workaround, found.detail) == ("workaround", "split-output", "split-output")
    assert found.text == "works with workaround split-output; as reported fail: no-implementation at /model.0/conv/Conv"
    assert [(e.variant, e.outcome) for e in found.evidence] == [("stem", "fail"), ("split-output", "pass")]
    assert found.evidence[0].anchors == ("s1-conv-silu/stem@trt86-orin",)


def test_a_failure_names_its_category_and_node_and_a_mismatch_its_cosine():
    plan = plan_of([make_record("s1-conv-silu", "stem", "trt86-orin", "fail", fail=FAIL),
                    make_record("s1-conv-silu", "split-output", "trt86-orin", "crash", fail=("crash", "SIGSEGV", None)),
                    make_record("s1-conv-silu", "stem", "trt100-orin", "mismatch", cosine=0.71)])
    assert verdict_of(plan, "S1", "trt86-orin").detail == "fail: no-implementation at /model.0/conv/Conv"
    assert verdict_of(plan, "S1", "trt86-orin").kind == "fails"
    assert verdict_of(plan, "S1", "trt100-orin").detail == "mismatch: cosine 0.7100"


def test_precision_fallback_names_the_first_node_and_how_many_more():
    three = ["/a/Conv", "/b/Conv", "/c/Conv"]
    plan = plan_of([make_record("s1-conv-silu", "stem", "ort-cpu", "fallback", fallback_nodes=three,
                                precision={n: "fp32" for n in three}),
                    make_record("s1-conv-silu", "stem", "trt86-orin", "fail", fail=FAIL),
                    make_record("s1-conv-silu", "split-output", "trt86-orin", "fallback", fallback_nodes=["/x"],
                                precision={"/x": "fp16"})])
    ort = verdict_of(plan, "S1", "ort-cpu")
    assert (ort.kind, ort.detail, ort.nodes) == ("fallback", "/a/Conv +2 more", tuple(three))
    trt = verdict_of(plan, "S1", "trt86-orin")  # fails as reported; its workaround runs, with fallback
    assert (trt.kind, trt.workaround, trt.detail) == ("fallback", "split-output", "with workaround split-output: /x")


def test_a_silent_fp8_loss_shows_asked_and_got_an_int8_fallback_does_not():
    fp8 = make_record("s1-conv-silu", "stem", "ort-cpu", "fallback", fallback_nodes=["/model.0/conv/Conv"],
                      precision={"/model.0/conv/Conv": "fp32"})
    fp8["details"]["fallback_precision"] = {"/model.0/conv/Conv": {"asked": "fp8", "got": "fp32"}}
    int8 = make_record("s1-conv-silu", "stem", "trt100-orin", "fallback", fallback_nodes=["/model.0/conv/Conv"],
                       precision={"/model.0/conv/Conv": "fp32"})
    int8["details"]["fallback_precision"] = {"/model.0/conv/Conv": {"asked": "int8", "got": "fp32"}}
    plan = plan_of([fp8, int8])
    assert verdict_of(plan, "S1", "ort-cpu").detail == "/model.0/conv/Conv (fp8 -> fp32)"
    assert verdict_of(plan, "S1", "trt100-orin").detail == "/model.0/conv/Conv"


def test_a_cell_that_ran_without_showing_a_precision_is_unverified_never_works_nor_not_run():
    unverified = make_record("s1-conv-silu", "stem", "ort-cpu", "unverified",
                             precision={"/model.0/conv/Conv": "unknown"})
    verdict = verdict_of(plan_of([unverified]), "S1", "ort-cpu")
    assert (verdict.kind, verdict.label, verdict.observed) == ("unverified", "precision unverified", False)
    assert verdict.detail == "/model.0/conv/Conv" and "not shown by onnxruntime" in verdict.text
    # an upstream claim on the target still speaks first, as it does in the scan (the record decides nothing)
    claimed = make_record("s1-conv-silu", "stem", "trt86-orin", "unverified",
                          precision={"/model.0/conv/Conv": "unknown"})
    assert verdict_of(plan_of([claimed]), "S1", "trt86-orin").kind == "claimed"


def test_a_claim_alone_is_claimed_upstream_only_never_an_observed_verdict():
    plan = plan_of([make_record("control-qdq", "conv-relu", "ort-cpu")])
    trt86 = verdict_of(plan, "S1", "trt86-orin")
    assert (trt86.kind, trt86.observed) == ("claimed", False)
    assert trt86.detail == "fail (no-implementation), issue thread; 1 workaround claimed to pass"
    trt100 = verdict_of(plan, "S1", "trt100-orin")
    assert (trt100.kind, trt100.claimed_pass, trt100.detail) == ("claimed", True, "pass, write-up only")


def test_not_run_cannot_exist_and_infra_errors():
    plan = plan_of([make_record("s1-conv-silu", "stem", "ort-cpu", "infra-error", fail=("harness", "gone", None)),
                    make_record("control-qdq", "conv-relu", "trt86-orin", "unavailable",
                                fail=("unavailable", "implicit INT8 is gone in TensorRT 11", None))])
    assert (verdict_of(plan, "control", "trt100-orin").kind, verdict_of(plan, "control", "trt100-orin").text) == (
        "not-run", "not run")
    infra = verdict_of(plan, "S1", "ort-cpu")
    assert (infra.kind, infra.detail) == ("not-run", "infra-error")
    gone = verdict_of(plan, "control", "trt86-orin")
    assert (gone.kind, gone.detail) == ("cannot-exist", "implicit INT8 is gone in TensorRT 11")
    target = verdict_of(plan, "S1", "trt92-orin")
    assert target.kind == "cannot-exist" and target.text == f"cannot exist: {TARGETS['trt92-orin'].reason}"


def test_hosts_that_disagree_give_the_worst_outcome_and_say_so():
    hosts = [make_record("s1-conv-silu", "stem", "trt86-orin", "pass",
                         provenance={"run": "r", "host": "orin-01", "carried_over_from": None}),
             make_record("s1-conv-silu", "stem", "trt86-orin", "fail", fail=FAIL,
                         provenance={"run": "r", "host": "orin-02", "carried_over_from": None})]
    found = verdict_of(plan_of(hosts), "S1", "trt86-orin")
    assert (found.kind, found.conflict) == ("fails", True)
    assert found.evidence[0].anchors == ("s1-conv-silu/stem@trt86-orin@orin-01", "s1-conv-silu/stem@trt86-orin@orin-02")


def test_sweep_points_worse_than_the_verdict_are_said():
    plan = plan_of([make_record("s1-conv-silu", "stem", "trt86-orin"),
                    make_record("s1-conv-silu", "channels-64", "trt86-orin", "fail", fail=FAIL),
                    make_record("s1-conv-silu", "channels-32", "trt86-orin")])
    found = verdict_of(plan, "S1", "trt86-orin")
    assert found.kind == "works" and found.sweeps == "1 of 2 sweep points worse (fail)"
    assert found.sweep_counts == "sweep points: 1 fail, 1 pass"


def test_a_backend_note_goes_with_that_backend_only():
    plan = plan_of([make_record("s1-conv-silu", "stem", "ort-cpu"), make_record("s1-conv-silu", "stem", "trt86-orin")])
    assert verdict_of(plan, "S1", "ort-cpu").notes == (NOTE,)
    assert verdict_of(plan, "S1", "trt86-orin").notes == ()


def test_the_recommended_target_is_the_newest_that_works_best_per_platform():
    plan = plan_of([make_record("s1-conv-silu", "stem", "trt86-orin", "fail", fail=FAIL),
                    make_record("s1-conv-silu", "split-output", "trt86-orin"),
                    make_record("s1-conv-silu", "stem", "trt100-orin"),
                    make_record("s1-conv-silu", "stem", "ort-cpu", "fallback", fallback_nodes=["/a"],
                                precision={"/a": "fp32"})])
    [s1] = [r for r in plan.rows if r.pattern.id == "S1"]
    by_group = {rec.group: rec for rec in s1.recommendations}
    assert by_group["TensorRT · Jetson AGX Orin"].targets == ("trt100-orin",)  # works as reported beats a workaround
    assert by_group["ONNX Runtime"].verdict.kind == "fallback"


def test_a_dla_build_whose_layers_ran_on_the_gpu_says_so_and_is_recommended_after_one_whose_layers_did_not():
    """Both targets work as reported; trt100-orin's record is of a DLA build whose SiLU ran on the GPU."""
    moved = make_record("s1-conv-silu", "stem", "trt100-orin")
    moved["details"]["dla_fallback_nodes"] = ["/model.0/act/Sigmoid", "/model.0/act/Mul"]
    plan = plan_of([make_record("s1-conv-silu", "stem", "trt86-orin"), moved])
    found = verdict_of(plan, "S1", "trt100-orin")
    assert (found.kind, found.gpu_fallback) == ("works", ("/model.0/act/Sigmoid", "/model.0/act/Mul"))
    assert found.text == ("works as reported; on the GPU, not the DLA: /model.0/act/Sigmoid +1 more (a device "
                          "fallback, not a precision one)")
    assert verdict_of(plan, "S1", "trt86-orin").gpu_fallback == ()
    [s1] = [r for r in plan.rows if r.pattern.id == "S1"]
    assert {rec.group: rec.targets for rec in s1.recommendations}["TensorRT · Jetson AGX Orin"] == \
        ("trt86-orin", "trt100-orin")  # all on its device beats newer


def test_nothing_observed_working_names_upstream_pass_claims_apart():
    plan = plan_of([make_record("s1-conv-silu", "stem", "trt86-orin", "fail", fail=FAIL)])
    [s1] = [r for r in plan.rows if r.pattern.id == "S1"]
    [orin] = s1.recommendations
    assert (orin.verdict, orin.targets, orin.claimed, orin.observed) == (None, (), ("trt100-orin",), True)


def test_each_target_lists_the_patterns_that_block_it():
    plan = plan_of([make_record("s1-conv-silu", "stem", "trt86-orin", "fail", fail=FAIL),
                    make_record("control-qdq", "conv-relu", "trt86-orin")])
    blocking = plan.blocking([t.id for t in plan.targets].index("trt86-orin"))
    assert blocking == {"fails": ["S1"], "works": ["control"]}


def test_targets_with_neither_record_nor_claim_are_left_out_but_one_that_cannot_exist_stays():
    plan = plan_of([make_record("control-qdq", "conv-relu", "ort-cpu")], rows=CONTROL)
    assert [t.id for t in plan.targets] == ["trt92-orin", "ort-cpu"]
    assert plan.left_out == ("trt86-orin", "trt100-orin")
    assert plan.groups() == [("TensorRT · Jetson AGX Orin", 1), ("ONNX Runtime", 1)]


@pytest.mark.parametrize("patterns, ordered", [
    (["control", "P10", "S2", "P2", "S1", "X"], ["S1", "S2", "P2", "P10", "X", "control"]),
])
def test_patterns_sort_s_then_p_by_number_the_control_last(patterns, ordered):
    assert sorted(patterns, key=pattern_sort_key) == ordered


def test_a_remedy_from_the_index_is_the_patterns():
    rows = [dataclasses.replace(r, remedy="Mark the conv output as a network output.") for r in S1]
    [s1] = build_plan(rows, matrix_columns(TARGETS, []), []).rows
    assert s1.pattern.remedies == ("Mark the conv output as a network output.",)


RANGE = {"outcome": "fallback", "source": ISSUE, "strength": "issue-thread", "basis": "a maintainer, no version named",
         "scope": {"since": "8.0", "before": None, "except_versions": [], "platforms": [], "architectures": [],
                   "backend": "tensorrt"}, "category": None, "note": ""}


def test_a_cell_with_no_record_shows_the_range_claim_the_fact_or_the_case_s_word_that_decides_it():
    """Issue 29 item 4: 'not run' only where nothing is known; each other basis is its own cell, never observed."""
    from harness import judgement as j
    from harness.matrix import load_matrix

    targets = {**TARGETS, "trt114-orin": load_matrix()["trt114-orin"]}
    rows = [row("stem", "failing", declared={"needs": ["implicit-int8"], "range_claims": [RANGE]},
                not_applicable={"onnxruntime": "ONNX Runtime has no calibrator lifecycle."})]
    records = [make_record("s1-conv-silu", "stem", "ort-cpu", "pass")]
    plan = build_plan(rows, matrix_columns(targets, records), records)
    ranged = verdict_of(plan, "S1", "trt100-orin")
    assert ranged.kind == j.RANGE_CLAIMED and not ranged.observed
    assert "claimed for TensorRT 8.0 and later" in ranged.text and "a maintainer, no version named" in ranged.text
    fact = verdict_of(plan, "S1", "trt114-orin")  # the fact stops the form before the range claim
    assert fact.kind == j.FACT and "no implicit quantization" in fact.detail and "--to-explicit" in fact.text
    na = verdict_of(plan, "S1", "ort-cpu")  # a record there, but the case says the backend has no analogue
    assert na.kind == j.NOT_APPLICABLE and "no calibrator lifecycle" in na.text
    assert "trt100-orin" in [t.id for t in plan.targets] and plan.left_out == ()


@pytest.fixture(scope="module")
def predicted_rows():
    """The index rows of the library's S5 and P6 (act x act MatMul) cases, with the engine prediction ``generate``
    writes beside each Q/DQ variant."""
    from cases.generate import declared_index, export_built
    from cases.model import get_case
    from harness.scan.predicted import predicted_entry
    from reports.case_index import rows_from_index

    library = [get_case("s5-qdq-resnet-block"), get_case("p6-matmul-int8")]
    index = declared_index(library)
    for case, entry in zip(library, index["cases"]):
        for variant, variant_entry in zip(case.variants, entry["variants"]):
            model, built = export_built(case, variant)
            variant_entry.update(predicted_entry(variant, model, built.requested))
    return rows_from_index(index, "index.json")


def predicted_plan(rows, records=()):
    from harness.matrix import load_matrix

    matrix = load_matrix()
    targets = {t: matrix[t] for t in ("trt1016-x86", "trt100-x86", "trt107-orin-dla", "trt92-x86", "ort-cpu")}
    return build_plan(rows, matrix_columns(targets, list(records)), list(records))


def test_an_explicit_form_with_nothing_else_known_is_predicted_by_its_target_s_ruleset_never_observed(predicted_rows):
    """Issue 30 item 4 in the planning view: a TensorRT 10.x cell of S5's Q/DQ block with no record, fact or claim
    is the engine the documented rules predict, said to be predicted and not observed, with its rules and ruleset."""
    from harness import judgement as j

    plan = predicted_plan(predicted_rows)
    found = verdict_of(plan, "S5", "trt1016-x86")
    assert found.kind == j.PREDICTED and found.label == "predicted" and not found.observed
    assert found.text.startswith("predicted from TensorRT's documented rules, not observed: ")
    assert "ruleset trt-10.12" in found.detail and "weighted-int8-output" in found.detail
    assert "all 2 quantized node(s) the form expects predicted in the precision asked" in found.text
    [failing] = [e for e in found.evidence if e.role == j.FAILING_ROLE]
    assert failing.outcome is None and failing.text.startswith("predicted from TensorRT's documented rules, not observed")
    # S5's claim for 10.0 x86 is an allocator failure on driver 470, which that target's image (driver 545 and
    # newer) cannot have: no evidence there, so the prediction decides as on 10.16.
    assert verdict_of(plan, "S5", "trt100-x86").kind == j.PREDICTED
    undocumented = verdict_of(plan, "S5", "trt92-x86").text  # 9.2 is predicted with 8.6's rules, and says so
    assert "ruleset trt-8.6" in undocumented and "9.2.0 has no explicit-quantization guide of its own" in undocumented
    # Nothing is predicted off TensorRT's GPU: ONNX Runtime has no engine, a DLA build follows DLA's rules.
    assert {"trt107-orin-dla", "ort-cpu"} <= set(plan.left_out)
    # A predicted pass is no upstream claim: no recommendation names it as one.
    assert all(not rec.claimed for row in plan.rows for rec in row.recommendations)


def test_a_quantized_node_predicted_float_is_a_predicted_fallback_naming_the_node_and_rule(predicted_rows):
    from harness import judgement as j

    found = verdict_of(predicted_plan(predicted_rows), "P6", "trt1016-x86")
    assert found.kind == j.PREDICTED and found.detail.startswith("fallback (float-layer), ruleset trt-10.12")
    assert "predicted float (/ocr/object_context_block/MatMul)" in found.text


@pytest.mark.parametrize("outcome, kind", [("pass", "works"), ("fallback", "fallback"), ("fail", "fails")])
def test_an_observed_record_is_never_overridden_by_a_prediction(predicted_rows, outcome, kind):
    failing = next(r for r in predicted_rows if r.pattern == "S5" and r.role == "failing")
    record = make_record(failing.case, failing.variant, "trt1016-x86", outcome,
                         fail=FAIL if outcome == "fail" else None,
                         fallback_nodes=["/backbone_2d/stage_4/stage_4.1/conv2/Conv"] if outcome == "fallback" else None)
    found = verdict_of(predicted_plan(predicted_rows, [record]), "S5", "trt1016-x86")
    assert (found.kind, found.observed) == (kind, True) and "predicted" not in found.text


def test_an_index_whose_prediction_is_malformed_is_named():
    from reports.case_index import CaseIndexError, rows_from_index

    index = {"format": "trt-matrix/cases/1", "cases": [{"id": "s5", "title": "t", "pattern": "S5", "variants": [
        {"name": "v", "role": "failing", "mode": "explicit-int8", "predicted_engine": {"trt-10.12": ["/conv"]}}]}]}
    with pytest.raises(CaseIndexError, match=r"cases\[0\] \(s5\)\.variants\[0\]: field 'predicted_engine'"):
        rows_from_index(index, "index.json")


@pytest.mark.parametrize("worst_first", [True, False], ids=["worst-first", "worst-last"])
@pytest.mark.parametrize("observers", [("orin-01", None, "orin-02", None), ("orin-jp6.0", "orin-a", "orin-jp6.0", "orin-b")],
                         ids=["two-hosts", "two-machines-of-one-kind"])
def test_the_worst_observed_outcome_across_hosts_and_machines_speaks_whatever_the_order(worst_first, observers):
    """Hosts (or machines of one pool) disagree on a cell: the planning view answers with the worse observation,
    never the first or the last record it read."""
    host_a, machine_a, host_b, machine_b = observers

    def provenance(host, machine):
        return {"run": "r", "host": host, "carried_over_from": None, **({"machine": machine} if machine else {})}

    passing = make_record("s1-conv-silu", "stem", "trt86-orin", "pass", provenance=provenance(host_a, machine_a))
    failing = make_record("s1-conv-silu", "stem", "trt86-orin", "fail", fail=FAIL, provenance=provenance(host_b,
                                                                                                        machine_b))
    found = verdict_of(plan_of([failing, passing] if worst_first else [passing, failing]), "S1", "trt86-orin")
    assert (found.kind, found.conflict) == ("fails", True)
    assert found.text == "fails as reported: fail: no-implementation at /model.0/conv/Conv"
