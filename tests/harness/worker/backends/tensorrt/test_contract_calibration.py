"""The calibration paths of cases P10 (implicit quantization's lifecycle), P11 (a handed calibration cache) and P13
(optimization and calibration profiles) against the CONTRACT STAND-IN of each TensorRT version.

As in test_contract.py, the stand-in returns placeholders: these tests check which TensorRT calls the backend makes,
with which arguments, and what it records, never what a real build would observe.
"""
import json
import warnings

import pytest

from cases import get_case
from harness.worker.backends.base import BackendFailure
from harness.tensorrt.calibration_cache import read_cache
from harness.worker.casedata import load_cells
from tests.trt_contract.backend_run import (
    answers_that_let_the_path_continue,
    network_shaped_like_the_model,
    run,
)
from tests.trt_contract.standin import ContractStandIn, installed_as_tensorrt

WEAK_TYPING = ("8.6.1", "10.0.1", "10.2.0", "10.3.0")  # the contract versions that still calibrate


@pytest.fixture(scope="module")
def cells(generated_cases):
    out = generated_cases("calibration-cases", [get_case(c) for c in ("p10-implicit-lifecycle", "p11-calibration-cache",
                                                                      "p13-dynamic-batch-calibration")])
    return {(cell["case"].split("-")[0], cell["variant"]): cell for cell in load_cells(out)}


@pytest.fixture(params=WEAK_TYPING)
def standin(request):
    standin = ContractStandIn.for_version(request.param)
    answers_that_let_the_path_continue(standin)
    with installed_as_tensorrt(standin):
        yield standin


def run_cell(standin, cell, tmp_path):
    standin.calls.clear()
    network_shaped_like_the_model(standin, cell)
    return run(cell, tmp_path)


def profile_shapes(standin):
    """The (input, min, opt, max) of every IOptimizationProfile.set_shape call, per profile object, in order."""
    profiles = {}
    for call in standin.calls_to("IOptimizationProfile.set_shape"):
        name, *shapes = call.args
        profiles.setdefault(id(call.obj), []).append((name, *(tuple(s) for s in shapes)))
    return list(profiles.values())


# ---- P13: optimization and calibration profiles ----


def test_no_calibration_profile_leaves_tensorrt_its_default(standin, cells, tmp_path):
    execution = run_cell(standin, cells["p13", "no-calibration-profile"], tmp_path)
    assert profile_shapes(standin) == [[("images", (1, 3, 16, 16), (1, 3, 16, 16), (8, 3, 16, 16))]]
    assert len(standin.calls_to("IBuilderConfig.add_optimization_profile")) == 1
    assert not standin.calls_to("IBuilderConfig.set_calibration_profile")
    assert not standin.calls_to("IBuilderConfig.get_calibration_profile")  # Polygraphy does not read it back
    (attached,) = [c.args[0] for c in standin.calls_to("IBuilderConfig.int8_calibrator", "set")]
    assert isinstance(attached, standin.module.IInt8EntropyCalibrator2)
    plan = execution.details["tensorrt_calls"]["config"]["calibration"]
    assert (plan["profile"], plan["calibration_profile_set"]) == (0, False)
    assert plan["tensorrt_reads"] == {"images": [1, 3, 16, 16]}
    assert plan["batches_handed"] == {"images": [8, 3, 16, 16]}
    assert plan["share_of_each_batch_read"] == {"images": 1 / 8}


def test_a_named_calibration_profile_is_set_and_calibrates_whole_batches(standin, cells, tmp_path):
    execution = run_cell(standin, cells["p13", "calibration-profile-set"], tmp_path)
    shapes = profile_shapes(standin)
    # The two optimization profiles in the knob's order, then the calibration profile made again from the second.
    assert shapes == [[("images", (1, 3, 16, 16), (1, 3, 16, 16), (8, 3, 16, 16))],
                      [("images", (8, 3, 16, 16), (8, 3, 16, 16), (8, 3, 16, 16))],
                      [("images", (8, 3, 16, 16), (8, 3, 16, 16), (8, 3, 16, 16))]]
    (set_calibration_profile,) = standin.calls_to("IBuilderConfig.set_calibration_profile")
    assert id(set_calibration_profile.args[0]) == id(standin.calls_to("IOptimizationProfile.set_shape")[-1].obj)
    (build,) = standin.calls_to("Builder.build_serialized_network")
    assert set_calibration_profile.obj is build.args[1]  # on the config the engine is built with
    plan = execution.details["tensorrt_calls"]["config"]["calibration"]
    assert (plan["profile"], plan["calibration_profile_set"], plan["share_of_each_batch_read"]) == (
        1, True, {"images": 1.0})


@pytest.mark.parametrize(("knobs", "message"), [
    ({"calibration_profile": None, "profiles": [{"images": {"min": [1, 3, 16, 16], "opt": [16, 3, 16, 16],
                                                             "max": [16, 3, 16, 16]}}]},
     "would read past the end of each batch"),
    ({"calibration_profile": 0, "profiles": [{"images": {"min": [1, 3, 16, 16], "opt": [4, 3, 16, 16],
                                                          "max": [8, 3, 16, 16]}}]},
     "must have the calibration profile's kOPT shape"),
])
def test_batches_tensorrt_cannot_read_as_told_are_refused_before_the_build(standin, cells, tmp_path, knobs, message):
    cell = cells["p13", "no-calibration-profile"]
    with pytest.raises(ValueError, match=message):
        run_cell(standin, {**cell, "knobs": {**cell["knobs"], **knobs}}, tmp_path)
    assert not standin.calls_to("Builder.build_serialized_network")


# ---- P11: a handed calibration cache ----


def test_an_old_cache_is_written_with_its_header_and_compared_with_the_running_version(standin, cells, tmp_path):
    cell = cells["p11", "old-cache-only"]
    execution = run_cell(standin, cell, tmp_path)
    calibrator = execution.details["tensorrt_calls"]["config"]["calibrator"]
    cache = read_cache(tmp_path / cell["case"] / "calibration.cache")
    assert cache.header == "TRT-8600-EntropyCalibration2"
    assert set(cache.scales) >= {"input", "/conv1/Conv_output_0", "/act2/Relu_output_0"}
    assert calibrator["batches"] == 0  # cache_only: nothing to calibrate with, as trtexec --calib
    handed = calibrator["handed_cache"]
    assert (handed["written_by"], handed["running"]) == ("8.6.0", standin.version)
    assert handed["mismatches"] == ["version"]
    assert handed["tensors"] == len(cache.scales)
    assert handed["written_by_harness"] == (  # a reader must not take the file for one TensorRT wrote
        "scales are the largest absolute values / 127 over the calibration batches (from the reference evaluation); "
        "the header is the variant's, not TensorRT's")
    # The stand-in builds nothing, so the file stays as handed; on a GPU this says whether TensorRT used it.
    assert calibrator["cache_after_build"]["state"] == "used"


def test_a_running_version_cache_names_this_version(standin, cells, tmp_path):
    cell = cells["p11", "other-algorithm-cache-only"]
    handed = run_cell(standin, cell, tmp_path).details["tensorrt_calls"]["config"]["calibrator"]["handed_cache"]
    assert handed["written_by"] == standin.version and handed["mismatches"] == ["algorithm"]


@pytest.mark.parametrize(("calibrator", "mismatches"), [("minmax", []), (None, ["algorithm"])],
                         ids=["minmax-calibrator", "no-calibrator-knob-is-entropy2"])
def test_the_cache_is_compared_with_the_cells_own_calibrator(cells, tmp_path, calibrator, mismatches):
    """A MinMaxCalibration cache fits a MinMax calibrator; a cell without a calibrator knob gets (and is compared
    with) the default entropy calibrator."""
    standin = ContractStandIn.for_version("10.3.0")
    answers_that_let_the_path_continue(standin)
    cell = cells["p11", "other-algorithm-cache-only"]
    knobs = {key: value for key, value in cell["knobs"].items() if key != "calibrator"}
    cell = {**cell, "knobs": {**knobs, **({"calibrator": calibrator} if calibrator else {})}}
    with installed_as_tensorrt(standin):
        handed = run_cell(standin, cell, tmp_path).details["tensorrt_calls"]["config"]["calibrator"]["handed_cache"]
    assert handed["mismatches"] == mismatches


def failing_build_on_a_foreign_cache(standin, error_line, cache_after=None):
    """A build fake on the stand-in logging as TensorRT does when it rejects a cache, then ``error_line``; with
    ``cache_after`` (bytes) it leaves that in the cell's cache file first, as TensorRT does when it calibrates."""

    def failing_build(builder, network, config):
        (logger,) = [c.args[0] for c in standin.calls_to("Builder", "new") if c.obj is builder]
        severity = standin.module.ILogger.Severity
        logger.log(severity.WARNING, "Calibration table does not match calibrator algorithm type")
        if cache_after is not None:
            (call,) = standin.calls_to("IBuilderConfig.int8_calibrator", "set")
            call.args[0].write_calibration_cache(memoryview(cache_after))
        logger.log(severity.ERROR, error_line)
        return None

    standin.on("Builder.build_serialized_network", failing_build)


def test_a_build_failing_on_a_foreign_cache_says_what_the_cache_is(cells, tmp_path):
    standin = ContractStandIn.for_version("10.3.0")
    answers_that_let_the_path_continue(standin)
    failing_build_on_a_foreign_cache(standin, "Something TensorRT says when calibration has no data.")
    with installed_as_tensorrt(standin), pytest.raises(BackendFailure) as failure:
        run_cell(standin, cells["p11", "old-cache-only"], tmp_path)
    assert failure.value.stage == "build" and failure.value.category == "calibration"
    assert failure.value.message.startswith("The calibration cache ")
    assert "written by TensorRT 8.6.0" in failure.value.message and "this is TensorRT 10.3.0" in failure.value.message
    assert "; the file was left as handed (TensorRT read it and did not calibrate). TensorRT said: Something " \
        "TensorRT says when calibration has no data." in failure.value.message
    assert failure.value.warnings["calibration-cache-rejected"] == 1


def test_a_build_that_recalibrated_over_a_foreign_cache_says_which_version_rewrote_it(cells, tmp_path):
    """TensorRT skipped the handed cache, calibrated and wrote its own, then failed at a node: the category is the
    node's, the message says what happened to the cache."""
    standin = ContractStandIn.for_version("10.3.0")
    answers_that_let_the_path_continue(standin)
    failing_build_on_a_foreign_cache(
        standin, "10: Could not find any implementation for node /conv1/Conv.",
        cache_after=b"TRT-100300-EntropyCalibration2\ninput: 3c010204\n")
    with installed_as_tensorrt(standin), pytest.raises(BackendFailure) as failure:
        run_cell(standin, cells["p11", "old-cache"], tmp_path)
    assert (failure.value.category, failure.value.node) == ("no-implementation", "/conv1/Conv")
    assert "; the file was rewritten by TensorRT 10.3.0 (it calibrated instead). TensorRT said: Could not find any " \
        "implementation for node /conv1/Conv." in failure.value.message


def test_a_build_that_left_the_cache_unreadable_says_so(cells, tmp_path):
    standin = ContractStandIn.for_version("10.3.0")
    answers_that_let_the_path_continue(standin)
    failing_build_on_a_foreign_cache(standin, "Calibration failure occurred with no scaling factors detected.",
                                     cache_after=b"TRT-1003")
    with installed_as_tensorrt(standin), pytest.raises(BackendFailure) as failure:
        run_cell(standin, cells["p11", "old-cache"], tmp_path)
    assert failure.value.category == "calibration"
    assert "; the file was unreadable after the build. TensorRT said: Calibration failure" in failure.value.message


# ---- P10: implicit quantization's lifecycle in the record ----


def deprecating_int8_calibrator_setter(standin):
    """Test fake: the >=10.1 binding's deprecateMember on IBuilderConfig.int8_calibrator (pyCore.cpp), whose
    DeprecationWarning text utils.cpp builds as "Use <message> instead."; the JSON cannot show warnings."""
    setter = standin.module.IBuilderConfig.int8_calibrator

    def set_calibrator(config, calibrator):
        warnings.warn("Use Deprecated in TensorRT 10.1. Superseded by explicit quantization. instead.",
                      DeprecationWarning)
        setter.fset(config, calibrator)

    type.__setattr__(standin.module.IBuilderConfig, "int8_calibrator", property(setter.fget, set_calibrator))


@pytest.mark.parametrize(("version", "status"), [("8.6.1", "supported"), ("10.0.1", "supported"),
                                                 ("10.2.0", "deprecated"), ("10.3.0", "deprecated")])
def test_every_calibrator_build_records_where_its_version_stands(cells, tmp_path, version, status):
    standin = ContractStandIn.for_version(version)
    answers_that_let_the_path_continue(standin)
    if status == "deprecated":
        deprecating_int8_calibrator_setter(standin)
    with installed_as_tensorrt(standin):
        execution = run_cell(standin, cells["p10", "calibrator-entropy2"], tmp_path)
    lifecycle = execution.details["tensorrt_calls"]["implicit_quantization"]
    assert (lifecycle["status"], lifecycle["warning_expected"]) == (status, status == "deprecated")
    seen = 1 if status == "deprecated" else 0
    assert lifecycle["deprecation_warnings_seen"] == execution.warnings["implicit-quantization-deprecated"] == seen
    assert "note" not in lifecycle


def test_a_missing_deprecation_warning_is_noted(cells, tmp_path):
    standin = ContractStandIn.for_version("10.3.0")  # the plain stand-in raises no warning
    answers_that_let_the_path_continue(standin)
    with installed_as_tensorrt(standin):
        execution = run_cell(standin, cells["p10", "calibrator-entropy2"], tmp_path)
    lifecycle = execution.details["tensorrt_calls"]["implicit_quantization"]
    assert lifecycle["deprecation_warnings_seen"] == 0
    assert lifecycle["note"] == "a DeprecationWarning was expected from 10.1 on, and none was captured"


def test_the_migration_variant_builds_on_11_and_the_calibrator_variant_is_unsupported(cells, tmp_path):
    from harness.worker.backends.tensorrt.backend import TensorRTBackend

    standin = ContractStandIn.for_version("11.4.0.106")
    answers_that_let_the_path_continue(standin)
    with installed_as_tensorrt(standin):
        reason = TensorRTBackend({"id": "trt-contract", "backend": "tensorrt"}).unavailable_reason(
            cells["p10", "calibrator-entropy2"])
        execution = run_cell(standin, cells["p10", "explicit-qdq"], tmp_path)
    assert reason.startswith("Unsupported: ") and "migrate to explicit quantization" in reason
    assert "implicit_quantization" not in execution.details["tensorrt_calls"]
    assert execution.details["tensorrt_calls"]["network"]["strongly_typed"]["set"] is True
    json.dumps(execution.details)  # the record stays JSON


# ---- P8: a Myelin region in the engine's layer information ----


def test_a_myelin_region_makes_the_nodes_it_swallowed_fallbacks(generated_cases, tmp_path):
    """The 10.3.0 stand-in's engine inspector answers with one ForeignNode layer over the whole P8 block, shaped like
    TensorRT's JSON (constructed, not TensorRT output)."""
    out = generated_cases("p8", [get_case("p8-attention-myelin")])
    cell = next(c for c in load_cells(out) if c["variant"] == "as-reported")
    region = "{ForeignNode[/norm1/LayerNormalization.../Add]}"
    layer = {"Name": region, "LayerType": "Myelin", "TacticName": "",
             "Inputs": [{"Name": "x", "Dimensions": [1, 16, 32], "Format/Datatype": "Row major linear FP32"}],
             "Outputs": [{"Name": "/Add_output_0", "Dimensions": [1, 16, 32],
                          "Format/Datatype": "Row major linear FP32"}]}
    standin = ContractStandIn.for_version("10.3.0")
    answers_that_let_the_path_continue(standin)
    standin.on("EngineInspector.get_engine_information", json.dumps({"Layers": [layer], "Bindings": []}))
    with installed_as_tensorrt(standin):
        execution = run_cell(standin, cell, tmp_path)
    information = execution.details["layer_information"]
    assert list(information["fallback"]) == cell["expected_int8"]  # every MatMul, none INT8
    assert len(information["myelin_regions"][region]) == 15
    assert set(execution.precision.values()) == {"fp32"}


def test_a_calibration_profile_on_a_version_without_the_setter_is_unsupported_api_naming_the_knob(cells, tmp_path):
    """DERIVED surface: 10.3.0 without IBuilderConfig.set_calibration_profile (every recorded weakly typed surface
    has it)."""
    standin = ContractStandIn.without("10.3.0", "IBuilderConfig.set_calibration_profile")
    answers_that_let_the_path_continue(standin)
    with installed_as_tensorrt(standin), pytest.raises(BackendFailure) as failure:
        run_cell(standin, cells["p13", "calibration-profile-set"], tmp_path)
    assert failure.value.category == "unsupported-api"
    assert failure.value.message.startswith(
        "IBuilderConfig.set_calibration_profile is not in TensorRT 10.3.0: it is needed for knobs.calibration_profile. ")
