"""What cases/model.py checks in the knobs that cases P11 and P13 use, and the remedy every case declares."""
from __future__ import annotations

import pytest

from cases import all_cases
from cases.model import Case, Knobs

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
