"""Which cell changes are regressions, progressions, other changes, or not compared at all."""
import pytest

from harness.store.compare import BAND, classify, compare_records
from harness.judgement import COMPARED_OUTCOMES
from tests.reports.conftest import make_record


def record(outcome, host="h", variant="stem", *, category=None, fallback=None, gpu_arch=None):
    fail = (category, "message", "/conv") if category else None
    made = make_record("s1-conv-silu", variant, "trt86-orin", outcome, fail=fail, fallback_nodes=fallback)
    made["provenance"] = {"run": "r", "host": host}
    if gpu_arch:
        made["environment"] = {**made["environment"], "gpu_arch": gpu_arch}
    return made


@pytest.mark.parametrize("old, new", [
    ("pass", "fallback"), ("pass", "mismatch"), ("pass", "fail"), ("pass", "crash"),
    ("fallback", "mismatch"), ("fallback", "fail"), ("fallback", "crash"),
])
def test_a_move_to_a_worse_outcome_is_a_regression(old, new):
    assert classify(record(old, category="no-implementation" if old == "fail" else None),
                    record(new, category="no-implementation" if new == "fail" else None)) == "regression"


@pytest.mark.parametrize("old, new", [
    ("fail", "pass"), ("crash", "pass"), ("mismatch", "pass"), ("fallback", "pass"),
    ("fail", "fallback"), ("mismatch", "fallback"),
])
def test_a_move_to_a_better_outcome_is_a_progression(old, new):
    assert classify(record(old), record(new)) == "progression"


@pytest.mark.parametrize("old, new", [
    ("pass", "infra-error"), ("pass", "timeout"), ("pass", "unavailable"),
    ("infra-error", "fail"), ("timeout", "pass"), ("unavailable", "fallback"),
])
def test_infra_errors_timeouts_and_unavailable_are_never_a_regression_or_progression(old, new):
    assert classify(record(old), record(new)) == "not-compared"


def test_the_same_outcome_with_other_evidence_is_a_change_and_identical_evidence_is_not():
    assert classify(record("fail", category="no-implementation"), record("fail", category="internal-assert")) == \
        "changed"
    assert classify(record("fail"), record("crash")) == "changed"
    assert classify(record("fallback", fallback=["/a"]), record("fallback", fallback=["/a", "/b"])) == "changed"
    assert classify(record("fallback", fallback=["/a"]), record("fallback", fallback=["/a"])) == "unchanged"
    assert classify(None, record("pass")) == "new" and classify(record("pass"), None) == "gone"


def test_cells_pair_by_host_and_a_target_on_one_host_each_side_pairs_across_hosts():
    across = compare_records([record("pass", host="runner-1")], [record("fail", host="runner-7")])
    assert [(c.kind, c.host) for c in across.changes] == [("regression", "runner-7")]
    assert "(host runner-1 -> runner-7)" in across.changes[0].why

    two_hosts = compare_records([record("pass", host="a100"), record("pass", host="orin")],
                                [record("pass", host="a100"), record("fail", host="orin"), record("pass", host="l4")])
    assert sorted((c.host, c.kind) for c in two_hosts.changes) == [
        ("a100", "unchanged"), ("l4", "new"), ("orin", "regression")]


def test_every_compared_outcome_has_a_band_and_no_other_outcome_does():
    assert sorted(BAND) == sorted(COMPARED_OUTCOMES)


def test_records_of_two_gpu_architectures_are_not_compared_and_the_architectures_are_said():
    pool = compare_records([record("pass", host="runner-1", gpu_arch="sm_80")],
                           [record("fail", host="runner-7", gpu_arch="sm_89")])
    [change] = pool.changes
    assert change.kind == "not-compared" and "(GPU sm_80 -> sm_89: another GPU, not compared)" in change.why
    assert classify(record("pass", gpu_arch="sm_87"), record("fail", gpu_arch="sm_110")) == "not-compared"
    assert classify(record("pass", gpu_arch="sm_87"), record("fail", gpu_arch="sm_87")) == "regression"
    assert classify(record("pass"), record("fail", gpu_arch="sm_87")) == "regression"  # one side unknown: compared
