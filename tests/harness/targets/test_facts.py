"""The facts of each matrix target, as a user planning a move would read them: TensorRT 11 refuses a calibrator build
with the migration as remedy, every 10.x still builds one, FP8 needs SM 8.9 and FP4 a Blackwell GPU, DLA exists on
Orin up to 10.7 and from 11.4.1; and every API fact agrees with the recorded binding surface it was read from."""
from __future__ import annotations


import pytest

from harness.matrix import load_matrix
from harness.targets import facts as f
from harness.tensorrt import quantization_lifecycle, release_facts

MATRIX = load_matrix()
TENSORRT = [t for t in MATRIX.values() if t.backend == "tensorrt" and t.version]


def target(version, platform="x86_64", gpu_arch="any", target_id="probe"):
    return MATRIX["trt100-x86"]._replace(id=target_id, version=version, platform=platform,
                                             gpu_arch=gpu_arch)


def test_the_recorded_surfaces_are_there_to_read():
    assert f.TRT_API_DIR.is_dir(), f"{f.TRT_API_DIR}: the facts read the recorded TensorRT API surfaces from here"
    assert {"8.6.1", "10.3.0", "11.4.0.106"} <= set(f.recorded_releases())


@pytest.mark.parametrize("target_id", [t.id for t in TENSORRT if t.version.startswith("11")])
def test_tensorrt_11_refuses_a_calibrator_build_and_says_to_go_explicit(target_id):
    fact = f.blocks({f.IMPLICIT_INT8}, MATRIX[target_id])
    assert fact is not None and fact.value == f.ABSENT and fact.effect == f.REFUSES_BUILD
    assert quantization_lifecycle.REMOVAL_SOURCES[0] in fact.sources
    assert "--to-explicit" in fact.remedy and "11.0 removed" in fact.statement


@pytest.mark.parametrize("target_id", [t.id for t in TENSORRT if t.version.startswith("10.")])
def test_every_tensorrt_10_target_still_builds_with_a_calibrator(target_id):
    facts = f.target_facts(MATRIX[target_id])
    assert facts.blocking({f.IMPLICIT_INT8}) is None
    fact = facts.get(f.IMPLICIT_INT8)
    assert fact.value == (f.PRESENT if MATRIX[target_id].version.startswith("10.0") else f.DEPRECATED)
    assert (fact.remedy != "") == (fact.value == f.DEPRECATED), "a deprecation comes with the migration to plan"


def test_tensorrt_8_and_9_calibrate_without_a_word():
    for target_id in ("trt86-x86", "trt92-x86", "trt85-orin", "trt86-orin"):
        assert f.target_facts(MATRIX[target_id]).get(f.IMPLICIT_INT8).value == f.PRESENT


@pytest.mark.parametrize("release", ["8.6.1", "10.0.1", "10.3.0", "10.16.1.11", "11.4.0.106"])
def test_api_facts_are_what_the_recorded_surface_of_the_release_lists(release):
    api = f.recorded_api(release)
    facts = f.target_facts(target(release))
    for feature in f._API_FEATURES:
        fact = facts.get(feature.what)
        assert fact.certainty == f.RECORDED and fact.sources == (f"reference/trt-api/tensorrt-{release}.json",)
        listed = all(f.surface_has(api, name) for name in feature.names)
        assert fact.value == (f.PRESENT if listed else f.ABSENT), (release, feature.what)


def test_a_release_between_two_recorded_ones_that_agree_is_bracketed_and_a_documented_edge_decides_where_they_differ():
    facts = f.target_facts(MATRIX["trt107-x86"])  # 10.7: recorded 10.3.0 and 10.16.1.11 around it
    assert facts.get(f.FP8_BUILDER_FLAG).certainty == f.BRACKETED
    assert facts.get(f.FP8_BUILDER_FLAG).value == f.PRESENT
    fp4 = facts.get(f.FP4_BUILDER_FLAG)  # absent from 10.3, present in 10.16: the 10.8 release notes decide
    assert (fp4.value, fp4.certainty, fp4.sources) == (f.ABSENT, f.DOCUMENTED, (f.RELEASE_NOTES_10_8,))
    assert f.target_facts(MATRIX["trt1013-x86"]).get(f.FP4_BUILDER_FLAG).value == f.PRESENT
    assert f.target_facts(MATRIX["trt92-x86"]).get(f.STRONG_TYPING).value == f.PRESENT  # platforms.md: 9.2 has it


def test_a_release_older_than_every_surface_is_absent_only_where_the_oldest_lacks_it():
    facts = f.target_facts(MATRIX["trt85-orin"])
    assert facts.get(f.STRONG_TYPING).value == f.ABSENT and facts.get(f.STRONG_TYPING).certainty == f.INFERRED
    assert facts.get(f.FP8_BUILDER_FLAG).value == f.NOT_KNOWN  # 8.6.1 has it; whether 8.5 had it is not recorded
    assert not facts.get(f.FP8_BUILDER_FLAG).stops


def test_int64_stays_int64_from_10_0_and_its_absence_stops_nothing():
    assert f.target_facts(MATRIX["trt100-x86"]).get(f.INT64_TYPE).value == f.PRESENT
    before = f.target_facts(MATRIX["trt86-orin"]).get(f.INT64_TYPE)
    assert before.value == f.ABSENT and not before.stops and "cast down to INT32" in before.statement
    unplaced = f.target_facts(MATRIX["trt92-x86"]).get(f.INT64_TYPE)  # 8.6.1 and 10.0.1 differ, no edge known
    assert (unplaced.value, unplaced.certainty) == (f.NOT_KNOWN, f.UNPLACED)


def test_tensorrt_11_has_no_precision_builder_flags_and_only_strong_typing():
    facts = f.target_facts(MATRIX["trt11-x86"])
    for need in (f.FP8_BUILDER_FLAG, f.FP4_BUILDER_FLAG, f.PRECISION_CONSTRAINTS, f.CALIBRATION_PROFILE):
        assert facts.get(need).stops and facts.get(need).effect == f.CANNOT_EXPRESS, need  # a knob, not the model
    assert facts.blocking_model({f.FP8_BUILDER_FLAG, f.PRECISION_CONSTRAINTS}) is None
    assert facts.blocking({f.STRONG_TYPING}) is None
    assert facts.get("network-typing").value == "strong only"
    assert facts.get("network-typing").sources == (release_facts.MIGRATION_11,)


def test_fp8_needs_sm_89_and_fp4_a_blackwell_gpu():
    assert f.blocks({f.FP8_QDQ}, MATRIX["trt103-orin"]).effect == f.REFUSES_BUILD  # Orin: SM 8.7
    assert "SM 8.7" in f.blocks({f.FP8_QDQ}, MATRIX["trt1016-orin"]).statement
    assert f.blocks({f.FP8_QDQ, f.FP4_QDQ}, MATRIX["trt1016-thor"]) is None  # Thor: SM 11.0
    x86 = MATRIX["trt1016-x86"]
    assert f.target_facts(x86).get(f.FP8_QDQ).value == f.NOT_KNOWN  # whatever GPU the host has
    assert f.blocks({f.FP8_QDQ}, x86) is None
    assert f.blocks({f.FP8_QDQ}, x86, gpu_arch="sm_86").value == f.ABSENT
    assert f.blocks({f.FP8_QDQ}, x86, gpu_arch="sm_89") is None
    assert f.blocks({f.FP4_QDQ}, x86, gpu_arch="sm_90").sources == (f.RELEASE_NOTES_10_8,)
    assert f.blocks({f.FP4_QDQ}, x86, gpu_arch="sm_120") is None
    assert "10.8" in f.blocks({f.FP4_QDQ}, MATRIX["trt107-x86"], gpu_arch="sm_120").remedy  # the release lacks FP4


@pytest.mark.parametrize(("target_id", "has_dla"), [
    ("trt85-orin", True), ("trt103-orin", True), ("trt107-orin", True), ("trt1016-orin", False),
    ("trt114-orin", True), ("trt1016-thor", False), ("trt114-thor", False), ("trt1016-x86", False)])
def test_dla_exists_on_orin_up_to_10_7_and_from_11_4_1_only(target_id, has_dla):
    fact = f.target_facts(MATRIX[target_id]).get(f.DLA)
    assert fact.value == (f.PRESENT if has_dla else f.ABSENT)
    assert fact.sources and all(s.startswith("https://docs.nvidia.com/") for s in fact.sources)
    assert (f.blocks({f.DLA}, MATRIX[target_id]) is None) == has_dla
    if not has_dla:
        assert f.blocks({f.DLA}, MATRIX[target_id]).effect == f.NO_DEVICE


def test_the_device_is_named_before_the_api_when_both_stop_a_form():
    fact = f.blocks({f.IMPLICIT_INT8, f.DLA}, MATRIX["trt114-thor"])
    assert fact.what == f.DLA


def test_an_onnx_runtime_target_has_no_tensorrt_facts():
    assert f.target_facts(MATRIX["ort-cpu"]).facts == {}
    assert f.blocks({f.IMPLICIT_INT8, f.DLA}, MATRIX["ort-cpu"]) is None


def test_an_unknown_need_is_an_error_that_lists_the_known_ones():
    with pytest.raises(ValueError, match="unknown need.*'int4'.*implicit-int8"):
        f.blocks({"int4"}, MATRIX["trt11-x86"])


def test_every_fact_names_where_it_comes_from():
    for t in TENSORRT:
        for fact in f.target_facts(t).facts.values():
            if fact.value != f.NOT_KNOWN:
                assert fact.sources, (t.id, fact.what)
            if fact.stops:
                assert fact.remedy, (t.id, fact.what)


def test_the_names_kept_of_each_recorded_surface_answer_as_the_whole_surface_does(tmp_path, monkeypatch):
    """A scan reads each recorded surface's names (kept in the user's cache), not the whole file: every API feature
    is present or absent on every recorded version as the whole surface says, read back from the cache too."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    features = (*f._API_FEATURES, f._IMPLICIT_API, f._API_FP4_TYPE)
    for _ in range(2):  # derived, then read back
        f.recorded_names.cache_clear()
        for release in f.recorded_releases():
            api, names = f.recorded_api(release), f.recorded_names(release)
            for name in {n for feature in features for n in feature.names} | {"Builder", "Builder.no_such_member"}:
                assert f.names_have(names, name) == f.surface_has(api, name), (release, name)
    assert len(list((tmp_path / "trt-matrix").glob("trt-api-names-*.json"))) == len(f.recorded_releases())
    f.recorded_names.cache_clear()


def test_a_missing_or_broken_recorded_surface_is_named_whichever_reader_asks(tmp_path, monkeypatch):
    monkeypatch.setattr(f, "TRT_API_DIR", tmp_path)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    (tmp_path / "tensorrt-9.9.json").write_text("{not json")
    for reader in (f.recorded_api, f.recorded_names):
        for version in ("9.8", "9.9"):  # missing, then broken
            with pytest.raises(ValueError, match=rf"tensorrt-{version}\.json: not a recorded TensorRT API surface"):
                reader(version)
    f.recorded_names.cache_clear()
    f.recorded_api.cache_clear()
