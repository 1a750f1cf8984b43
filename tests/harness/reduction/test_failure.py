"""The failure a reduction keeps, and when a candidate fails the same way."""
from __future__ import annotations

import pytest

from harness.reduction.failure import KeptFailure, NothingToReduce


def record(outcome, category=None, message="", node=None, target="ort1.15-cpu"):
    failure = {"category": category, "message": message, "node": node} if category else None
    return {"outcome": outcome, "failure": failure, "target": target}


INDEX_ERROR = record("fail", "runtime-error", "IndexError: tuple index out of range")


def test_outcome_category_and_error_kind_must_all_match():
    kept = KeptFailure.of_whole_model(INDEX_ERROR, "category")
    assert kept.reproduced_by(record("fail", "runtime-error", "IndexError: list index out of range"))
    assert not kept.reproduced_by(record("fail", "runtime-error", "KeyError: 'scale'"))  # another bug, same category
    assert not kept.reproduced_by(record("fail", "no-implementation", "IndexError: x"))
    assert not kept.reproduced_by(record("crash", "runtime-error", "IndexError: x"))
    assert not kept.reproduced_by(record("pass"))


def test_keep_node_also_needs_the_same_node():
    whole = record("fail", "no-implementation", "NotImplemented: no Erf(13) kernel", node="/act/Erf")
    kept = KeptFailure.of_whole_model(whole, "node")
    assert kept.reproduced_by(record("fail", "no-implementation", "NotImplemented: again", node="/act/Erf"))
    assert not kept.reproduced_by(record("fail", "no-implementation", "NotImplemented: again", node="/act_1/Erf"))
    assert KeptFailure.of_whole_model(whole, "category").reproduced_by(
        record("fail", "no-implementation", "NotImplemented: again", node="/act_1/Erf"))


def test_a_failure_without_a_node_cannot_be_kept_by_node():
    with pytest.raises(NothingToReduce, match="names no node; reduce with --keep category"):
        KeptFailure.of_whole_model(INDEX_ERROR, "node")


@pytest.mark.parametrize("outcome, says", [("pass", "passes on ort1.15-cpu: nothing to reduce"),
                                           ("infra-error", "says nothing about the model"),
                                           ("unavailable", "says nothing about the model")])
def test_there_is_nothing_to_reduce_when_the_model_passes_or_its_run_says_nothing(outcome, says):
    whole = record(outcome, None if outcome == "pass" else "environment", "the engine did not answer")
    with pytest.raises(NothingToReduce, match=says):
        KeptFailure.of_whole_model(whole, "category")


def test_it_travels_through_the_session_file_unchanged():
    kept = KeptFailure.of_whole_model(INDEX_ERROR, "category")
    assert KeptFailure.from_dict(kept.to_dict()) == kept
    assert kept.describe() == "fail / runtime-error / IndexError"
