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
