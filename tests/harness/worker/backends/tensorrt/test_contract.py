"""The TensorRT backend against the CONTRACT STAND-IN of each TensorRT version (tests/trt_contract/standin.py).

The stand-in is generated from the recorded binding API of each version and returns placeholders, never results:
these tests assert which TensorRT calls the backend makes and that each exists in the version, never what a record
of a real build would say. The run stops before inference (a stand-in engine cannot run).
"""
import warnings

import pytest

from harness.worker.backends.base import BackendFailure
from harness.worker.backends.tensorrt.build_config import PRECISION_FLAG_KNOBS
from harness.worker.backends.tensorrt.doctor import build_modes, tensorrt_doctor
from harness.worker.casedata import load_cells
from tests.trt_contract.backend_run import (
    TARGET,
    BackendUpToInference,
    answers_that_let_the_path_continue,
    created_network_flags,
    major,
    network_has_the_conv,
    network_shaped_like_the_model,
    run,
    set_builder_flags,
    with_knobs,
)
from tests.trt_contract.standin import ContractStandIn, installed_as_tensorrt


def test_parse_build_inspect_runs_on_every_version(standin, cells, tmp_path):
    backend = BackendUpToInference(TARGET)
    for cell in cells.values():
        if backend.unavailable_reason(cell):
            continue
        execution = run(cell, tmp_path)
        assert execution.details["tensorrt_calls"]["network"] and execution.details["tensorrt_calls"]["config"]
    assert standin.calls_to("Builder.build_serialized_network")
    assert standin.calls_to("EngineInspector.get_engine_information")


NEW_PATTERNS = ("p14", "p15", "p16", "p17", "p18", "p19", "p20")  # the 2025-2026 cases (issue 22)


@pytest.fixture(scope="module")
def library_cells(generated_cases):
    """Every variant of the case library, generated once."""
    import cases

    return load_cells(generated_cases("library", cases.all_cases()))


def test_every_cell_of_the_case_library_runs_or_is_unavailable_or_unsupported(standin, library_cells, tmp_path):
    """The library's knobs (extra outputs, parser flags, calibrators, FP8/FP4/FP16 requests) on every version, the
    2025-2026 cases (P14-P20) on 10.16 and 11.4 included: only the documented outcomes of the code path, a finished
    run, an unavailable cell (implicit INT8 where it is gone, an fp8/fp4 knob whose builder flag the version lacks)
    or an unsupported-api failure, each with its reason, never another exception. A float cell (no Q/DQ) never gets
    BuilderFlag.INT8 or a calibrator; a precision knob gets its flag where the version has it."""
    backend = BackendUpToInference(TARGET)
    backend.dla_cores = 0  # test fake: what the GPU probe counts on a GPU without DLA (every one but AGX Orin's)
    ended = {}
    for cell in library_cells:
        reason = backend.unavailable_reason(cell)
        if reason:
            lacking = [flag for knob, flag in PRECISION_FLAG_KNOBS.items()
                       if cell["knobs"].get(knob) and not standin.has(flag)]
            asks_dla = cell["knobs"].get("dla_core") is not None
            assert lacking or (cell["mode"] == "implicit-int8" and not standin.has("BuilderFlag.INT8")) or (
                asks_dla and "counts 0 DLA core(s) on this device" in reason), reason
            assert all(flag in reason for flag in lacking) and f"TensorRT {standin.version}" in reason, reason
            ended[cell["case"], cell["variant"]] = "unavailable"
            continue
        standin.calls.clear()
        network_shaped_like_the_model(standin, cell)
        try:
            execution = run(cell, tmp_path / cell["variant"])
        except BackendFailure as failure:
            assert failure.category == "unsupported-api", failure.message
            assert " is not in TensorRT " in failure.message  # names the API it lacks
            ended[cell["case"], cell["variant"]] = "unsupported-api"
        else:
            ended[cell["case"], cell["variant"]] = "built"
            flags = {f.name for f in set_builder_flags(standin)}
            config = execution.details["tensorrt_calls"]["config"]
            if cell["mode"] == "float":
                assert "INT8" not in flags and config["calibrator"] is None, cell["variant"]
            for knob, flag in PRECISION_FLAG_KNOBS.items():
                assert (flag.split(".")[1] in flags) == bool(cell["knobs"].get(knob)), (cell["variant"], knob)
            if cell["knobs"].get("fp16") and not standin.has("BuilderFlag.FP16"):
                assert config["fp16"]["set"] is False and "cannot be expressed" in config["fp16"]["why"]
        marked = [c.args[0].name for c in standin.calls_to("INetworkDefinition.mark_output")]
        assert marked == [name for name in cell["knobs"]["extra_outputs"] if name not in cell["outputs"]]
    assert len(ended) == len(library_cells)
    new_cases = {key: how for key, how in ended.items() if key[0].split("-")[0] in NEW_PATTERNS}
    assert {key[0].split("-")[0] for key in new_cases} == set(NEW_PATTERNS)
    if standin.version.startswith("10.16"):  # every 2025-2026 case builds there but what needs the GPU or a cache
        assert "built" in set(new_cases.values())
        assert new_cases[("p15-precision-flag-without-qdq", "fp4-flag")] == "built"  # BuilderFlag.FP4 from 10.8
    if standin.version.startswith("11."):  # strongly typed only: FP8/FP4 flags unavailable, the FP16 request built
        assert new_cases[("p15-precision-flag-without-qdq", "as-reported")] == "unavailable"
        assert new_cases[("p15-precision-flag-without-qdq", "fp16-flag-trt11")] == "built"
        assert new_cases[("p18-fp8-gemm-mixed-scales", "as-reported")] == "built"


@pytest.mark.parametrize("knob", [True, False, None])
def test_native_instancenorm_is_set_explicitly_both_ways(standin, cells, tmp_path, knob):
    flag = standin.enum("OnnxParserFlag.NATIVE_INSTANCENORM")
    expected = knob if knob is not None else major(standin) >= 10
    execution = run(with_knobs(cells["explicit-qdq"], native_instancenorm=knob), tmp_path)
    if expected:
        assert [c.args[0] for c in standin.calls_to("OnnxParser.flags", "set")] == [1 << int(flag)]
        assert not standin.calls_to("OnnxParser.clear_flag")
    else:
        assert [c.args[0] for c in standin.calls_to("OnnxParser.clear_flag")] == [flag]
        assert not standin.calls_to("OnnxParser.flags", "set")
    assert [c.args[0] for c in standin.calls_to("OnnxParser.get_flag")] == [flag]
    recorded = execution.details["tensorrt_calls"]["network"]["native_instancenorm"]
    assert recorded["set"] is expected and recorded["observed"] is expected


@pytest.mark.parametrize("calibrator, class_name",
                         [("entropy2", "IInt8EntropyCalibrator2"), ("minmax", "IInt8MinMaxCalibrator")])
def test_implicit_mode_sets_int8_and_attaches_the_chosen_calibrator(weakly_typed_standin, cells, tmp_path, calibrator,
                                                                   class_name):
    standin = weakly_typed_standin
    cell = with_knobs(cells["implicit-int8"], calibrator=calibrator)
    execution = run(cell, tmp_path)
    set_flags = [c.args[0] for c in standin.calls_to("IBuilderConfig.set_flag")]
    assert standin.enum("BuilderFlag.INT8") in set_flags
    (attached,) = [c.args[0] for c in standin.calls_to("IBuilderConfig.int8_calibrator", "set")]
    assert isinstance(attached, getattr(standin.module, class_name))
    recorded = execution.details["tensorrt_calls"]["config"]["calibrator"]
    cache = str(tmp_path / cell["case"] / "calibration.cache")
    # The stand-in builds nothing, so TensorRT never asked the calibrator to write a cache.
    assert recorded == {"class": class_name, "batches": cell["calibration_batches"], "cache": cache,
                        "cache_after_build": {"state": "none", "file": cache}}


def test_explicit_mode_attaches_no_calibrator_and_types_the_network_as_the_version_requires(standin, cells, tmp_path):
    execution = run(cells["explicit-qdq"], tmp_path)
    assert not standin.calls_to("IBuilderConfig.int8_calibrator", "set")
    set_flags = [c.args[0] for c in standin.calls_to("IBuilderConfig.set_flag")]
    flags = created_network_flags(standin)
    if standin.has("BuilderFlag.INT8"):  # weak typing: INT8 enables the Q/DQ layers' int8 kernels
        assert standin.enum("BuilderFlag.INT8") in set_flags
        if standin.has("NetworkDefinitionCreationFlag.STRONGLY_TYPED"):
            assert not flags & (1 << int(standin.enum("NetworkDefinitionCreationFlag.STRONGLY_TYPED")))
    else:  # 11.x: only strongly typed networks, no precision flags
        assert flags & (1 << int(standin.enum("NetworkDefinitionCreationFlag.STRONGLY_TYPED")))
        assert execution.details["tensorrt_calls"]["network"]["strongly_typed"]["set"] is True


def test_strongly_typed_knob_uses_the_flag_where_it_exists_and_is_unsupported_where_not(standin, cells, tmp_path):
    cell = with_knobs(cells["explicit-qdq"], strongly_typed=True)
    if not standin.has("NetworkDefinitionCreationFlag.STRONGLY_TYPED"):
        with pytest.raises(BackendFailure) as failure:
            run(cell, tmp_path)
        assert failure.value.category == "unsupported-api" and failure.value.stage == "parse"
        expected = f"NetworkDefinitionCreationFlag.STRONGLY_TYPED is not in TensorRT {standin.version}"
        assert expected in failure.value.message
        assert not standin.calls_to("Builder.create_network")
        return
    run(cell, tmp_path)
    assert created_network_flags(standin) & (1 << int(standin.enum("NetworkDefinitionCreationFlag.STRONGLY_TYPED")))
    set_flags = [c.args[0] for c in standin.calls_to("IBuilderConfig.set_flag")]
    assert not [f for f in set_flags if f.name in ("INT8", "FP16")]


def test_engines_are_built_with_detailed_profiling_and_inspected_as_json(standin, cells, tmp_path):
    run(cells["explicit-qdq"], tmp_path)
    assert [c.args[0] for c in standin.calls_to("IBuilderConfig.profiling_verbosity", "set")] == [
        standin.enum("ProfilingVerbosity.DETAILED")]
    assert [c.args[0] for c in standin.calls_to("EngineInspector.get_engine_information")] == [
        standin.enum("LayerInformationFormat.JSON")]


def test_every_tensorrt_call_exists_in_the_version(standin, cells, tmp_path):
    """Redundant by construction (the stand-in has nothing else), kept as the statement the closing note cites."""
    run(cells["explicit-qdq"], tmp_path)
    used = {c.api for c in standin.calls}
    assert used and all(standin.has(api) for api in used)


def test_implicit_cells_are_unavailable_exactly_where_implicit_quantization_is_gone(standin, cells):
    reason = BackendUpToInference(TARGET).unavailable_reason(cells["implicit-int8"])
    assert BackendUpToInference(TARGET).unavailable_reason(cells["explicit-qdq"]) is None
    if standin.has("BuilderFlag.INT8"):
        assert reason is None
    else:
        assert reason.startswith("Unsupported: ") and f"not in TensorRT {standin.version}" in reason
        assert "11.0 removed BuilderFlag.INT8 and the calibrators" in reason
        assert "migrate to explicit quantization" in reason and "Q/DQ" in reason  # the migration path
        assert "https://docs.nvidia.com/deeplearning/tensorrt/" in reason


@pytest.mark.parametrize("knobs, api", [({"precision_constraints": "obey"}, "BuilderFlag.OBEY_PRECISION_CONSTRAINTS"),
                                        ({"layer_precisions": {"/conv/Conv": "int8"}}, "ILayer.precision")])
def test_a_knob_needing_an_api_the_version_lacks_is_unsupported_api(standin, cells, tmp_path, knobs, api):
    network_has_the_conv(standin)
    cell = with_knobs(cells["explicit-qdq"], **knobs)
    if standin.has(api):
        run(cell, tmp_path)
        return
    with pytest.raises(BackendFailure) as failure:
        run(cell, tmp_path)
    assert failure.value.category == "unsupported-api"
    assert f"{api} is not in TensorRT {standin.version}" in failure.value.message
    assert failure.value.log and "tensorrt.log" in failure.value.log


def test_an_api_polygraphy_finds_missing_is_unsupported_api(cells, tmp_path):
    """A 10.3.0 stand-in with BuilderFlag.TF32 deleted: Polygraphy's 'not available' error becomes unsupported-api."""
    standin = ContractStandIn.for_version("10.3.0")
    answers_that_let_the_path_continue(standin)
    type.__delattr__(standin.module.BuilderFlag, "TF32")
    with installed_as_tensorrt(standin), pytest.raises(BackendFailure) as failure:
        run(cells["explicit-qdq"], tmp_path)
    assert failure.value.category == "unsupported-api" and failure.value.stage == "build"
    assert "not available on TensorRT version 10.3.0" in failure.value.details["polygraphy_error"]


def test_extra_outputs_are_marked_in_addition_to_the_models_outputs(standin, cells, tmp_path):
    conv, output = network_has_the_conv(standin)
    run(with_knobs(cells["explicit-qdq"], extra_outputs=["/conv/Conv_output_0"]), tmp_path)
    assert [c.args[0] for c in standin.calls_to("INetworkDefinition.mark_output")] == [output]
    assert not standin.calls_to("INetworkDefinition.unmark_output")


def test_layer_precisions_set_the_layer_named_after_the_onnx_node(weakly_typed_standin, cells, tmp_path):
    standin = weakly_typed_standin
    conv, _ = network_has_the_conv(standin)
    execution = run(with_knobs(cells["explicit-qdq"], layer_precisions={"/conv/Conv": "fp16"}), tmp_path)
    (call,) = standin.calls_to("ILayer.precision", "set")
    assert call.obj is conv and call.args[0] == standin.enum("DataType.HALF")
    assert execution.details["tensorrt_calls"]["network"]["layer_precisions"] == {"/conv/Conv": "DataType.HALF"}


def test_a_layer_precision_for_a_node_the_network_lacks_names_the_layers_it_has(cells, tmp_path):
    standin = ContractStandIn.for_version("10.3.0")
    answers_that_let_the_path_continue(standin)
    with installed_as_tensorrt(standin):
        network_has_the_conv(standin)
        with pytest.raises(ValueError, match=r"\['/conv/Conv2'\].*'/conv/Conv'"):
            run(with_knobs(cells["explicit-qdq"], layer_precisions={"/conv/Conv2": "fp16"}), tmp_path)


def test_a_failed_build_is_classified_from_what_tensorrt_logged(cells, tmp_path):
    """A build fake on the 10.3.0 stand-in: it logs like TensorRT through the logger the backend gave the builder."""
    standin = ContractStandIn.for_version("10.3.0")
    answers_that_let_the_path_continue(standin)

    def failing_build(builder, network, config):
        (logger,) = [c.args[0] for c in standin.calls_to("Builder", "new") if c.obj is builder]
        severity = standin.module.ILogger.Severity
        logger.log(severity.VERBOSE, "Applying generic optimizations to the graph for inference.")
        logger.log(severity.WARNING, "Missing scale and zero-point for tensor /act/Relu_output_0, expect fall back to "
                                     "non-int8 implementation for any layer consuming or producing given tensor")
        logger.log(severity.ERROR, "10: Could not find any implementation for node /conv/Conv + /act/Relu.")
        return None

    standin.on("Builder.build_serialized_network", failing_build)
    with installed_as_tensorrt(standin), pytest.raises(BackendFailure) as failure:
        run(cells["explicit-qdq"], tmp_path)
    assert failure.value.stage == "build" and failure.value.category == "no-implementation"
    assert failure.value.node == "/conv/Conv + /act/Relu"
    assert failure.value.warnings["missing-scale"] == 1
    log = (tmp_path / cells["explicit-qdq"]["case"] / "tensorrt.log").read_text().splitlines()
    assert log == ["[V] [TRT] Applying generic optimizations to the graph for inference.",
                   "[W] [TRT] Missing scale and zero-point for tensor /act/Relu_output_0, expect fall back to non-int8 "
                   "implementation for any layer consuming or producing given tensor",
                   "[E] [TRT] 10: Could not find any implementation for node /conv/Conv + /act/Relu."]
    assert "[V]" not in failure.value.log and "Could not find any implementation" in failure.value.log


@pytest.mark.parametrize("version", ["10.2.0", "10.3.0"])
def test_the_10_1_calibrator_deprecation_warning_is_recorded_not_fatal(cells, tmp_path, version):
    """DeprecatingCalibratorFake: the JSON cannot show warnings, so this fake of the >=10.1 stand-in emulates the
    DeprecationWarning that implicit quantization raises from 10.1 on (failure-patterns.md P10)."""
    standin = ContractStandIn.for_version(version)
    answers_that_let_the_path_continue(standin)
    calibrator_init = standin.module.IInt8EntropyCalibrator2.__init__

    def deprecating_init(calibrator, *args):
        warnings.warn("IInt8EntropyCalibrator2 is deprecated; use explicit quantization", DeprecationWarning)
        calibrator_init(calibrator, *args)

    type.__setattr__(standin.module.IInt8EntropyCalibrator2, "__init__", deprecating_init)
    with installed_as_tensorrt(standin):
        execution = run(cells["implicit-int8"], tmp_path)
    assert execution.warnings["deprecated-api"] == 1
    (recorded,) = [w for w in execution.details["python_warnings"] if w["category"] == "DeprecationWarning"]
    assert "IInt8EntropyCalibrator2 is deprecated" in recorded["message"] and recorded["count"] == 1
    assert "[W] [python] DeprecationWarning: IInt8EntropyCalibrator2 is deprecated" in execution.log


def test_unreadable_layer_information_is_a_harness_error_never_a_fallback(cells, tmp_path):
    standin = ContractStandIn.for_version("10.3.0")
    answers_that_let_the_path_continue(standin)
    standin.on("EngineInspector.get_engine_information", "")  # the plain stand-in's neutral str
    with installed_as_tensorrt(standin), pytest.raises(ValueError) as error:
        run(cells["explicit-qdq"], tmp_path)
    raw = tmp_path / cells["explicit-qdq"]["case"] / "engine-layers.json"
    assert str(error.value).startswith(
        "TensorRT built an engine, but its per-layer information could not be read, so no node's precision is known "
        "(and none may be reported as a fallback). Tried: engine inspector JSON: Expecting value: line 1 column 1 "
        "(char 0) | verbose TensorRT log: ")  # then the log reader's own reason
    assert str(error.value).endswith(
        f"The raw inspector output is in {raw}; harness/tensorrt/layers.py must learn this format.")


def test_build_modes_follow_the_versions_api(standin):
    modes = build_modes(standin.module)
    assert modes["explicit-qdq"]["available"]
    assert modes["implicit-int8"]["available"] is standin.has("BuilderFlag.INT8")
    assert modes["strongly-typed"]["available"] is standin.has("NetworkDefinitionCreationFlag.STRONGLY_TYPED")


def test_environment_and_doctor_never_raise_and_report_the_version(standin):
    environment = BackendUpToInference(TARGET).environment()
    assert environment["tensorrt_version"] == standin.version
    assert isinstance(environment["gpu_probe_errors"], list)  # no CUDA here: the errors say why
    report = tensorrt_doctor()
    assert report["tensorrt"]["version"] == standin.version and report["polygraphy"]["usable"]
    assert set(report["build_modes"]) == {"implicit-int8", "explicit-qdq", "strongly-typed"}
