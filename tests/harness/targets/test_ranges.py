"""A scope covers the matrix targets its source speaks about and no other; the evidence that decides for a target is an
observation, then a claim for that target, then the narrowest (then newest) range claim."""
from __future__ import annotations

import dataclasses

import pytest

from harness.matrix import load_matrix
from harness.targets.ranges import OBSERVATION, RANGE_CLAIM, TARGET_CLAIM, Scope, covering, deciding

MATRIX = load_matrix()


def covered(scope, gpu_arch=None):
    return {t.id for t in MATRIX.values() if scope.covers(t, gpu_arch)}


@dataclasses.dataclass(frozen=True)
class Said:
    """A stand-in claim: what deciding() reads of one (a scope) and a name to tell them apart."""

    name: str
    scope: Scope


def test_an_open_scope_covers_every_tensorrt_target_that_exists_and_nothing_else():
    found = covered(Scope(since="8.0"))
    assert "trt11-x86" in found and "trt85-orin" in found and "trt114-thor" in found
    assert not found & {"ort-cpu", "trt-local", "trt92-orin", "trt102-orin", "trt1016-orin-dla", "trt114-thor-dla"}


def test_versions_run_from_since_to_before_without_the_exceptions():
    found = covered(Scope(since="10.0", before="11.0", except_versions=("10.2",), platforms=("x86_64",)))
    assert found == {"trt100-x86", "trt103-x86", "trt107-x86", "trt1013-x86", "trt1016-x86"}
    assert covered(Scope(before="10.0")) == {"trt86-x86", "trt92-x86", "trt86-orin", "trt85-orin"}


def test_a_bare_major_version_is_its_first_release():
    assert "trt11-x86" in covered(Scope(since="11.0")) and "trt11-x86" not in covered(Scope(before="11.0"))


def test_an_architecture_bound_scope_covers_jetsons_by_their_gpu_and_x86_only_with_the_column_gpu():
    blackwell = Scope(architectures=("10.0+",))
    assert covered(blackwell) == {"trt1013-thor", "trt1016-thor", "trt114-thor"}
    assert blackwell.covers(MATRIX["trt1016-x86"], gpu_arch="sm_120")
    assert not blackwell.covers(MATRIX["trt1016-x86"], gpu_arch="sm_89")
    assert covered(Scope(architectures=("8.7",))) == {t.id for t in MATRIX.values()
                                                      if t.platform == "orin" and t.available}


@pytest.mark.parametrize(("fields", "message"), [
    (dict(since="10"), "MAJOR.MINOR"), (dict(since="11.0", before="10.0"), "empty"),
    (dict(platforms=("any",)), "not among"), (dict(architectures=("sm_87",)), "compute capabilities"),
    (dict(except_versions=("10.2.0",)), "MAJOR.MINOR"),
])
def test_a_scope_that_cannot_be_says_why(fields, message):
    with pytest.raises(ValueError, match=message):
        Scope(**fields)


def test_a_scope_survives_index_json_and_an_unknown_field_is_named():
    scope = Scope(since="10.0", before="11.0", except_versions=("10.2",), platforms=("x86_64",),
                  architectures=("10.0+",))
    assert Scope.from_dict(scope.to_dict()) == scope
    with pytest.raises(ValueError, match="cases\\[0\\].*unknown scope field.*'versions'"):
        Scope.from_dict({"versions": "8+"}, "cases[0]")


def test_describe_reads_as_a_label():
    assert Scope(since="8.0").describe() == "TensorRT 8.0 and later, every platform"
    assert Scope(before="11.0", platforms=("orin",)).describe() == "TensorRT before 11.0, orin"


def test_an_observation_then_a_claim_for_the_target_then_the_narrowest_newest_range_claim_decides():
    wide, narrow = Said("wide", Scope(since="8.0")), Said("narrow", Scope(since="10.0", before="11.0"))
    newer = Said("newer", Scope(since="10.7"))
    target = MATRIX["trt107-x86"]
    assert deciding(target, ["seen"], ["said-for-it"], [wide, narrow]).basis == OBSERVATION
    decision = deciding(target, [], ["said-for-it"], [wide, narrow])
    assert (decision.basis, decision.evidence) == (TARGET_CLAIM, "said-for-it")
    assert decision.overridden == (narrow, wide)
    decision = deciding(target, [], [], [wide, narrow])
    assert (decision.basis, decision.evidence, decision.overridden) == (RANGE_CLAIM, narrow, (wide,))
    assert deciding(target, [], [], [wide, newer]).evidence == newer  # both open-ended: the newer start decides
    assert deciding(MATRIX["trt86-x86"], [], [], [narrow]) is None
    assert covering([wide, narrow], MATRIX["ort-cpu"]) == []
