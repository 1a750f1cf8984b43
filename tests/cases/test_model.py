"""What cases/model.py checks in the knobs that cases P11 and P13 use, the remedy every case declares, and the links
from a variant to the failing form it varies."""
from __future__ import annotations

import pytest

from cases import all_cases
from cases.model import Case, Knobs, Variant

SHAPE = (1, 3, 8, 8)


def profile(low=1, opt=4, high=8, name="images"):
    return ((name, (low, 3, 8, 8), (opt, 3, 8, 8), (high, 3, 8, 8)),)


@pytest.mark.parametrize(("knobs", "message"), [
    (dict(profiles=(profile(low=4, opt=1),)), r"profiles\[0\] input 'images'.*min <= opt <= max"),
    (dict(profiles=((("images", (1, 3, 8, 8), (1, 3, 8), (1, 3, 8, 8)),),)), "one rank"),
    (dict(profiles=(profile(),), calibration_profile=1), "calibration_profile 1 names no profile"),
    (dict(calibration_profile=0), "calibration_profile 0 names no profile"),
    (dict(calibration_cache=("8.6", "EntropyCalibration2")), "MAJOR.MINOR.PATCH"),
    (dict(calibration_cache=("8.6.1", "EntropyCalibration")), "one of"),
    (dict(cache_only=True), "cache_only needs a calibration_cache"),
])
def test_knobs_refuse_profiles_and_caches_that_cannot_be(knobs, message):
    with pytest.raises(ValueError, match=message):
        Knobs(**knobs)


def test_profile_and_cache_knobs_in_the_index_form():
    knobs = Knobs(profiles=(profile(), profile(8, 8, 8)), calibration_profile=1,
                  calibration_cache=("running", "MinMaxCalibration"), cache_only=True).to_dict()
    assert knobs["profiles"] == [{"images": {"min": [1, 3, 8, 8], "opt": [4, 3, 8, 8], "max": [8, 3, 8, 8]}},
                                 {"images": {"min": [8, 3, 8, 8], "opt": [8, 3, 8, 8], "max": [8, 3, 8, 8]}}]
    assert knobs["calibration_cache"] == {"version": "running", "algorithm": "MinMaxCalibration"}
    assert (knobs["calibration_profile"], knobs["cache_only"]) == (1, True)
    assert Knobs().to_dict()["profiles"] == [] and Knobs().to_dict()["calibration_cache"] is None


def test_remedy_defaults_to_empty_and_cases_p8_to_p13_fill_it():
    assert Case.remedy == ""
    for case in all_cases():
        if case.pattern in ("P8", "P9", "P10", "P11", "P12", "P13"):
            assert case.remedy and len(case.remedy) < 400, case.id


def test_a_variant_is_found_by_name_and_a_wrong_name_lists_the_cases_variants():
    from cases.control import QdqConvRelu

    first = QdqConvRelu.variants[0]
    assert QdqConvRelu.variant(first.name) is first
    with pytest.raises(KeyError, match=f"Case {QdqConvRelu.id} has no variant 'nope'. Its variants: {first.name}"):
        QdqConvRelu.variant("nope")


@pytest.mark.parametrize(("fields", "message"), [
    (dict(role="sweep", inherits=True), r"Variant 'v': inherits=True needs varies"),
    (dict(role="failing", varies="as-reported"), r"Variant 'v': a failing variant .* its varies must be None"),
    (dict(role="workaround", varies="as-reported", inherits=True), r"Variant 'v': a workaround never inherits"),
    (dict(role="control", varies="as-reported", inherits=True), r"Variant 'v': a control never inherits"),
    (dict(role="sweep", varies=""), r"Variant 'v': varies '' must name a failing variant"),
    (dict(role="sweep", varies="as-reported", inherits="yes"), r"Variant 'v': inherits 'yes' must be True or False"),
])
def test_a_variant_refuses_links_that_cannot_be(fields, message):
    with pytest.raises(ValueError, match=message):
        Variant("v", description="d", **fields)


def test_a_link_is_optional_and_names_the_form_it_varies():
    assert (Variant("v", "sweep", "d").varies, Variant("v", "sweep", "d").inherits) == (None, False)
    linked = Variant("v", "sweep", "d", varies="as-reported", inherits=True)
    assert (linked.varies, linked.inherits) == ("as-reported", True)


@pytest.mark.parametrize(("varies", "found"), [("nope", "'nope'"), ("other-sweep", "'other-sweep'")])
def test_a_case_whose_variant_varies_no_failing_form_of_its_own_is_refused(varies, found):
    with pytest.raises(TypeError, match=rf"Case zz-links, variant sweep: field 'varies' names {found}, which is not a "
                                        r"failing variant of zz-links \(its failing variants: as-reported\)"):
        class _Links(Case):  # refused before it registers
            id, title, pattern, links, mode, opset = "zz-links", "t", "P0", ("https://x",), "explicit-qdq", 13
            tolerance = None
            variants = (Variant("as-reported", "failing", "d"), Variant("other-sweep", "sweep", "d"),
                        Variant("sweep", "sweep", "d", varies=varies))
    assert "zz-links" not in {case.id for case in all_cases()}


def test_built_asks_each_expected_node_for_one_precision():
    from cases.model import Built

    built = Built("graph", expected_int8=("conv1",), expected_precision={"conv2": "fp8", "fc": "fp16"})
    assert built.requested == {"conv1": "int8", "conv2": "fp8", "fc": "fp16"}
    assert Built("graph", expected_int8=("conv1",)).requested == {"conv1": "int8"}
    with pytest.raises(ValueError, match="in expected_int8 and asked for another precision"):
        Built("graph", expected_int8=("conv1",), expected_precision={"conv1": "fp8"})
    for wrong in ("int8", "fp64"):  # INT8 requests belong in expected_int8, which the records compare
        with pytest.raises(ValueError, match="must name precisions of"):
            Built("graph", expected_precision={"conv1": wrong})


@pytest.mark.parametrize("architecture, valid", [("8.7", True), ("11.0", True), ("10.0+", True), ("sm87", False),
                                                 ("Orin", False), ("8", False)])
def test_a_claims_architecture_is_a_compute_capability(architecture, valid):
    from cases.model import Claim

    make = lambda: Claim("t", "fail", "https://example.org/1", "issue-thread", architecture=architecture)  # noqa: E731
    if valid:
        assert make().architecture == architecture
    else:
        with pytest.raises(ValueError, match="is not a compute capability"):
            make()


def test_dla_knobs_name_a_core_of_orin_and_fallback_only_with_one():
    assert Knobs(dla_core=1, gpu_fallback=True).to_dict()["dla_core"] == 1
    with pytest.raises(ValueError, match="not 0 or 1"):
        Knobs(dla_core=2)
    with pytest.raises(ValueError, match="only means something for a DLA build"):
        Knobs(gpu_fallback=True)
    with pytest.raises(ValueError, match="ask for two devices"):
        Knobs(dla_core=0, gpu_only=True)
    assert Knobs(gpu_only=True).to_dict()["gpu_only"] is True
