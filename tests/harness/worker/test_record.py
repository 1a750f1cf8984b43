"""How a cell can end: the vocabulary is the schema's, and every builder gives a record the store accepts, judged
once against the upstream claim for its target."""
from __future__ import annotations

import json

import pytest

from cases.model import BUILD_MODES
from harness.store.results_file import SCHEMA_PATH, validate_record
from harness.worker import record as rec

SCHEMA = json.loads(SCHEMA_PATH.read_text())
PROPERTIES = SCHEMA["properties"]
ISSUE = "https://github.com/NVIDIA/TensorRT/issues/3640"
TARGET = {"id": "trt86-orin", "backend": "tensorrt"}
ENVIRONMENT = {"python": "3.10.12", "machine": "aarch64", "cpu": "ARMv8"}
TOLERANCE = {"min_cosine": 0.99, "max_abs_error": 0.25, "reason": "test"}


def cell(*claims):
    return {"case": "s1-conv-silu", "variant": "as-reported", "mode": "implicit-int8", "knobs": {},
            "expected_int8": ["/conv/Conv", "/act/Mul"], "claims": list(claims)}


def claim(target="trt86-orin", outcome="fail", category=None):
    return {"target": target, "outcome": outcome, "source": ISSUE, "strength": "issue-thread", "category": category,
            "note": ""}


def metrics(within=True):
    return {"cosine": 0.9999, "max_abs_error": 0.01, "sqnr_db": 40.0, "within_tolerance": within,
            "tolerance": TOLERANCE}


def timing():
    return dict(started_at=rec.now_iso(), duration_s=1.0, backend_time_s=0.5)


@pytest.mark.parametrize("vocabulary, enum", [
    (rec.OUTCOMES, PROPERTIES["outcome"]["enum"]),
    (rec.STAGES, PROPERTIES["stage"]["enum"]),
    (rec.FAILURE_CATEGORIES, PROPERTIES["failure"]["oneOf"][1]["properties"]["category"]["enum"]),
    (rec.PRECISIONS, PROPERTIES["precision"]["additionalProperties"]["enum"]),
    (rec.MODES, PROPERTIES["mode"]["enum"]),
], ids=["outcomes", "stages", "failure categories", "precisions", "modes"])
def test_the_schema_enums_are_the_vocabulary_of_record_py(vocabulary, enum):
    assert list(vocabulary) == enum


def test_the_schema_id_and_the_build_modes_of_the_case_library_are_the_same_words():
    assert PROPERTIES["schema"]["const"] == rec.SCHEMA_ID
    assert tuple(BUILD_MODES) == rec.MODES


def test_the_worker_s_outcome_groups_are_made_of_outcomes():
    assert all(set(group) <= set(rec.OUTCOMES) for group in (rec.OBSERVED_OUTCOMES, rec.LOST_CELL_OUTCOMES))
    assert set(rec.INFRA_CATEGORIES) <= set(rec.FAILURE_CATEGORIES)


@pytest.mark.parametrize("precision, within, outcome, fallback, unverified", [
    ({"/conv/Conv": "int8", "/act/Mul": "int8"}, True, "pass", [], []),
    ({"/conv/Conv": "int8", "/act/Mul": "fp32"}, True, "fallback", ["/act/Mul"], []),
    ({"/conv/Conv": "fp32"}, True, "fallback", ["/conv/Conv"], ["/act/Mul"]),  # one seen in float is enough
    ({"/conv/Conv": "fp16", "/act/Mul": "int8"}, False, "mismatch", ["/conv/Conv"], []),
    ({"/conv/Conv": "int8", "/act/Mul": "unknown"}, False, "mismatch", [], ["/act/Mul"]),
])
def test_a_cell_that_ran_ends_by_its_output_and_its_precisions(precision, within, outcome, fallback, unverified):
    record = rec.ran(cell(), TARGET, ENVIRONMENT, metrics=metrics(within), precision=precision, **timing())
    validate_record(record)
    assert (record["outcome"], record["stage"]) == (outcome, "compare")
    assert record["fallback_nodes"] == fallback and record["details"]["unverified_nodes"] == unverified
    assert record["requested_precision"] == {"/conv/Conv": "int8", "/act/Mul": "int8"}  # a cell without
    # expected_precision (a cases directory written before it existed) asks its expected_int8 nodes for INT8


@pytest.mark.parametrize("precision", [{"/conv/Conv": "int8"}, {"/conv/Conv": "int8", "/act/Mul": "unknown"}])
def test_a_cell_whose_expected_node_is_unverified_never_passes_and_is_no_infra_error(precision):
    record = rec.ran(cell(), TARGET, ENVIRONMENT, metrics=metrics(True), precision=precision, **timing())
    validate_record(record)
    assert (record["outcome"], record["failure"]) == ("unverified", None)
    assert record["details"]["unverified_nodes"] == ["/act/Mul"]
    assert record["fallback_nodes"] == [] and record["precision"] == precision and record["metrics"]["within_tolerance"]


def asking(**asked):
    """A cell asking its two nodes for the given precisions (conv=..., mul=...)."""
    return {**cell(), "expected_int8": [n for n, p in (("/conv/Conv", asked["conv"]), ("/act/Mul", asked["mul"]))
                                        if p == "int8"],
            "expected_precision": {"/conv/Conv": asked["conv"], "/act/Mul": asked["mul"]}}


@pytest.mark.parametrize("asked, got, outcome, pairs", [
    # an FP8 request built FP32 without a word (P15) and an FP8 GEMM run as FP16 (P18): silent losses are fallbacks
    ({"conv": "fp8", "mul": "fp8"}, {"/conv/Conv": "fp32", "/act/Mul": "fp8"}, "fallback",
     {"/conv/Conv": {"asked": "fp8", "got": "fp32"}}),
    ({"conv": "fp8", "mul": "fp8"}, {"/conv/Conv": "fp16", "/act/Mul": "fp16"}, "fallback",
     {"/conv/Conv": {"asked": "fp8", "got": "fp16"}, "/act/Mul": {"asked": "fp8", "got": "fp16"}}),
    # TensorRT 11's form of P15: FP16 asked, the FP32 graph built FP32
    ({"conv": "fp16", "mul": "fp16"}, {"/conv/Conv": "fp32", "/act/Mul": "fp16"}, "fallback",
     {"/conv/Conv": {"asked": "fp16", "got": "fp32"}}),
    # same width, another format: not what was asked
    ({"conv": "fp8", "mul": "int8"}, {"/conv/Conv": "int8", "/act/Mul": "int8"}, "fallback",
     {"/conv/Conv": {"asked": "fp8", "got": "int8"}}),
    ({"conv": "int8", "mul": "fp16"}, {"/conv/Conv": "fp8", "/act/Mul": "bf16"}, "fallback",
     {"/conv/Conv": {"asked": "int8", "got": "fp8"}, "/act/Mul": {"asked": "fp16", "got": "bf16"}}),
    ({"conv": "fp4", "mul": "fp8"}, {"/conv/Conv": "fp8", "/act/Mul": "fp8"}, "fallback",
     {"/conv/Conv": {"asked": "fp4", "got": "fp8"}}),
    # every node in its precision, or narrower (the tolerance judges that): a pass
    ({"conv": "fp8", "mul": "fp16"}, {"/conv/Conv": "fp8", "/act/Mul": "fp16"}, "pass", {}),
    ({"conv": "fp8", "mul": "fp16"}, {"/conv/Conv": "fp4", "/act/Mul": "int8"}, "pass", {}),
    ({"conv": "fp8", "mul": "fp16"}, {"/conv/Conv": "fp8", "/act/Mul": "unknown"}, "unverified", {}),
])
def test_a_record_compares_asked_and_got_for_every_precision(asked, got, outcome, pairs):
    record = rec.ran(asking(**asked), TARGET, ENVIRONMENT, metrics=metrics(True), precision=got, **timing())
    validate_record(record)
    assert record["outcome"] == outcome
    assert record["requested_precision"] == {"/conv/Conv": asked["conv"], "/act/Mul": asked["mul"]}
    assert record["fallback_nodes"] == list(pairs) and record["details"]["fallback_precision"] == pairs


@pytest.mark.parametrize("claimed, category, outcome, agrees", [
    ("fail", None, "timeout", True),  # a timeout is a failure (judgement), with no category of its own
    ("fail", "no-implementation", "timeout", True),
    ("fail", None, "crash", True),
    ("fail", None, "pass", False),
    ("unsupported", None, "timeout", False),
    ("mismatch", None, "mismatch", True),
    ("fail", None, "unverified", None),  # no verdict: nothing to judge a claim against
])
def test_a_claimed_failure_agrees_with_every_observed_failure(claimed, category, outcome, agrees):
    assert rec.agreement(claim(outcome=claimed, category=category), outcome, None) is agrees


def test_every_builder_gives_a_record_the_store_accepts():
    records = [
        rec.failed(cell(), TARGET, ENVIRONMENT, stage="build", category="no-implementation", message="no impl",
                   node="/conv/Conv", **timing()),
        rec.unavailable(cell(), TARGET, ENVIRONMENT, "TensorRT 9.x was never released for Jetson."),
        rec.infra_error(cell(), TARGET, ENVIRONMENT, "environment", "no GPU", details={"container": {"id": "x"}},
                        env_mismatch="nominal 8.6.2, observed 8.6.1"),
        rec.ended_without_result(cell(), TARGET, ENVIRONMENT, "crash", "was killed by signal 11 (SIGSEGV)",
                                 stage="infer", duration_s=2.0, log="Segmentation fault"),
        rec.ended_without_result(cell(), TARGET, ENVIRONMENT, "timeout", "was killed after 300 s", stage="build",
                                 duration_s=300.0, log=None),
    ]
    for record in records:
        validate_record(record)
    assert [(r["outcome"], r["failure"]["category"]) for r in records] == [
        ("fail", "no-implementation"), ("unavailable", "unavailable"), ("infra-error", "environment"),
        ("crash", "crash"), ("timeout", "timeout")]
    assert records[1]["failure"]["message"] == "TensorRT 9.x was never released for Jetson."
    assert records[2]["env_mismatch"] == "nominal 8.6.2, observed 8.6.1"
    assert records[3]["failure"]["message"] == "The cell's process was killed by signal 11 (SIGSEGV)."


@pytest.mark.parametrize("build, message", [
    (lambda: rec.infra_error(cell(), TARGET, ENVIRONMENT, "no-implementation", "x"), "infra-error category"),
    (lambda: rec.ended_without_result(cell(), TARGET, ENVIRONMENT, "fail", "x", stage="build", duration_s=1, log=None),
     "ends in one of"),
    (lambda: rec.build(cell(), TARGET, outcome="passed", stage="build", environment=ENVIRONMENT, duration_s=0),
     "outcome 'passed'"),
    (lambda: rec.build(cell(), TARGET, outcome="pass", stage="", environment=ENVIRONMENT, duration_s=0), "stage ''"),
])
def test_a_builder_refuses_words_outside_the_vocabulary(build, message):
    with pytest.raises(rec.RecordInvariantError, match=message) as raised:
        build()
    assert not isinstance(raised.value, ValueError)  # the command line reports it as a bug, never as usage


def test_the_claim_for_the_target_is_looked_up_and_judged_once_when_the_record_is_built():
    claims = (claim("trt100-orin", "pass"), claim("trt86-orin", "fail", "no-implementation"))
    agreeing = rec.failed(cell(*claims), TARGET, ENVIRONMENT, stage="build", category="no-implementation",
                          message="no impl", node=None, **timing())
    other_category = rec.failed(cell(*claims), TARGET, ENVIRONMENT, stage="build", category="parser", message="x",
                                node=None, **timing())
    not_observed = rec.infra_error(cell(*claims), TARGET, ENVIRONMENT, "harness", "bug")
    no_claim = rec.failed(cell(claim("trt100-orin", "pass")), TARGET, ENVIRONMENT, stage="build",
                          category="parser", message="x", node=None, **timing())
    assert agreeing["expectation"] == claims[1] and agreeing["agrees"] is True
    assert other_category["agrees"] is False
    assert not_observed["expectation"] == claims[1] and not_observed["agrees"] is None
    assert no_claim["expectation"] is None and no_claim["agrees"] is None


def test_a_record_judged_again_takes_the_new_claim_and_leaves_the_original_untouched():
    original = rec.ran(cell(claim(outcome="fail")), TARGET, ENVIRONMENT, metrics=metrics(),
                       precision={"/conv/Conv": "int8", "/act/Mul": "int8"}, **timing())
    again = rec.judged_again(original, [claim(outcome="pass")])
    assert (original["expectation"]["outcome"], original["agrees"]) == ("fail", False)
    assert (again["expectation"]["outcome"], again["agrees"]) == ("pass", True)
    assert rec.judged_again(original, [])["expectation"] is None
