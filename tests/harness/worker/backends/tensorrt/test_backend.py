"""What the TensorRT backend records about its environment and about a failed stage, on the contract stand-in: the
run stops before inference (tests/trt_contract/backend_run.py); the stand-in answers placeholders, never results."""
import numpy as np
import pytest

from harness.worker.backends.base import BackendFailure
from tests.trt_contract.backend_run import TARGET, BackendUpToInference, answers_that_let_the_path_continue, run
from tests.trt_contract.standin import ContractStandIn, installed_as_tensorrt


def test_the_environment_names_the_module_parser_and_polygraphy_it_uses(monkeypatch):
    import polygraphy

    standin = ContractStandIn.for_version("10.3.0")
    monkeypatch.setattr(standin.module, "__file__", "/opt/tensorrt/python/tensorrt/__init__.py", raising=False)
    monkeypatch.setattr(standin.module, "get_nv_onnx_parser_version", lambda: 10003)  # fake answer of the stand-in
    with installed_as_tensorrt(standin):
        environment = BackendUpToInference(TARGET).environment()
    assert {key: environment[key] for key in ("tensorrt_version", "tensorrt_module", "onnx_parser_version",
                                              "polygraphy_version")} == {
        "tensorrt_version": "10.3.0", "tensorrt_module": "/opt/tensorrt/python/tensorrt/__init__.py",
        "onnx_parser_version": 10003, "polygraphy_version": polygraphy.__version__}


def test_an_unavailable_implicit_cell_gives_the_whole_reason(cells):
    with installed_as_tensorrt(ContractStandIn.for_version("11.4.0.106")):
        reason = BackendUpToInference(TARGET).unavailable_reason(cells["implicit-int8"])
    assert reason == (
        "Unsupported: implicit INT8 quantization (BuilderFlag.INT8 with a calibrator) is not in TensorRT 11.4.0.106: "
        "BuilderFlag.INT8, IBuilderConfig.int8_calibrator, IInt8EntropyCalibrator2 are absent from its Python API. "
        "TensorRT 11.4.0.106 has no implicit quantization: 11.0 removed BuilderFlag.INT8 and the calibrators "
        "(deprecated since 10.1); migrate to explicit quantization: calibrate offline and write Q/DQ nodes into the "
        "ONNX model (e.g. with TensorRT Model Optimizer's ONNX PTQ), then build without a calibrator (a strongly typed "
        "network on 11). Sources: "
        "https://docs.nvidia.com/deeplearning/tensorrt/11.4.0/api/migration/tensorrt-10x-to-11x.html, "
        "https://github.com/NVIDIA/TensorRT/blob/main/python/src/infer/pyCore.cpp, "
        "https://github.com/NVIDIA/TensorRT/issues/4095")


def failing_build(standin, *lines):
    """Test fake on the stand-in: the build logs ``lines`` (severity, text) through the backend's logger and returns
    no engine, as TensorRT does when a build fails."""

    def build(builder, network, config):
        (logger,) = [c.args[0] for c in standin.calls_to("Builder", "new") if c.obj is builder]
        for severity, text in lines:
            logger.log(getattr(standin.module.ILogger.Severity, severity), text)
        return None

    standin.on("Builder.build_serialized_network", build)


def test_a_failed_build_carries_the_tensorrt_message_its_classification_and_polygraphy_error(cells, tmp_path):
    standin = ContractStandIn.for_version("10.3.0")
    answers_that_let_the_path_continue(standin)
    failing_build(standin, ("WARNING", "Missing scale and zero-point for tensor t, expect fall back to non-int8 "
                                       "implementation for any layer consuming or producing given tensor"),
                  ("ERROR", "2: [calibrator.cpp::calibrateEngine::1181] Error Code 2: Internal Error (Calibration "
                            "failure occurred with no scaling factors detected.)"))
    with installed_as_tensorrt(standin), pytest.raises(BackendFailure) as failure:
        run(cells["explicit-qdq"], tmp_path)
    error = failure.value
    assert (error.stage, error.category, error.node) == ("build", "calibration", None)
    assert error.message == ("Error Code 2: Internal Error (Calibration failure occurred with no scaling factors "
                             "detected.)")
    polygraphy_error = error.details["polygraphy_error"]
    assert polygraphy_error and error.message not in polygraphy_error
    assert error.details["log_classification"] == {"category": "calibration", "node": None, "message": error.message,
                                                   "warnings": error.warnings, "known_failure": None,
                                                   "failure_shown": True, "stage": "build"}
    assert error.warnings["missing-scale"] == 1
    assert f"[failure] {polygraphy_error}" in error.log
    assert "tensorrt_calls" in error.details and "log_files" in error.details


def test_a_failed_build_whose_log_names_no_cause_is_a_runtime_error_with_polygraphys_message(cells, tmp_path):
    standin = ContractStandIn.for_version("10.3.0")
    answers_that_let_the_path_continue(standin)
    failing_build(standin, ("INFO", "Building the engine"))
    with installed_as_tensorrt(standin), pytest.raises(BackendFailure) as failure:
        run(cells["explicit-qdq"], tmp_path)
    error = failure.value
    assert (error.stage, error.category) == ("build", "runtime-error")
    assert error.message == error.details["polygraphy_error"] != ""


def test_a_failed_parse_whose_log_names_no_cause_is_a_parser_failure(cells, tmp_path):
    standin = ContractStandIn.for_version("10.3.0")
    answers_that_let_the_path_continue(standin)
    standin.on("OnnxParser.parse_from_file", False)
    with installed_as_tensorrt(standin), pytest.raises(BackendFailure) as failure:
        run(cells["explicit-qdq"], tmp_path)
    assert (failure.value.stage, failure.value.category) == ("parse", "parser")


def test_a_failure_the_backend_raises_itself_keeps_its_message_and_gets_the_logs_warnings(cells, tmp_path):
    """An unsupported-api failure raised by the backend (strongly typed on 8.6.1, which lacks the flag): its own
    message goes in the digest, and the run's details join its own."""
    standin = ContractStandIn.for_version("8.6.1")
    answers_that_let_the_path_continue(standin)
    cell = {**cells["explicit-qdq"], "knobs": {**cells["explicit-qdq"]["knobs"], "strongly_typed": True}}
    with installed_as_tensorrt(standin), pytest.raises(BackendFailure) as failure:
        run(cell, tmp_path)
    error = failure.value
    assert error.category == "unsupported-api"
    assert f"[failure] {error.message}" in error.log
    assert "tensorrt_calls" in error.details and "log_files" in error.details
    assert set(error.warnings) >= {"missing-scale", "deprecated-api"}


def test_a_parse_failure_in_words_the_classifier_does_not_know_is_still_a_parser_failure(cells, tmp_path,
                                                                                         monkeypatch):
    """Test fake for a Polygraphy that words a failed parse in its own way: the stage says what failed."""
    standin = ContractStandIn.for_version("10.3.0")
    answers_that_let_the_path_continue(standin)
    with installed_as_tensorrt(standin), pytest.raises(BackendFailure) as failure:
        from polygraphy.backend.trt import util  # the Polygraphy imported for this stand-in
        from polygraphy.exception import PolygraphyException

        def check_onnx_parser_errors(parser, success):
            raise PolygraphyException("the network came back empty")

        monkeypatch.setattr(util, "check_onnx_parser_errors", check_onnx_parser_errors)
        run(cells["explicit-qdq"], tmp_path)
    assert (failure.value.stage, failure.value.category) == ("parse", "parser")
    assert failure.value.message == "the network came back empty"


def test_the_outputs_are_what_polygraphys_runner_returned_for_the_cells_inputs(cells, tmp_path, monkeypatch):
    """Test fake for Polygraphy's TrtRunner (it needs CUDA): it records the engine and feed it was given and returns
    outputs as lists; the record's outputs are numpy arrays of the same values."""
    from harness.worker.backends.base import StageTracker
    from harness.worker.backends.tensorrt.backend import TensorRTBackend
    from harness.worker.casedata import load_arrays

    seen = {}

    class RecordingTrtRunner:
        def __init__(self, engine):
            seen["engine"] = engine

        def __enter__(self):
            return self

        def __exit__(self, *exc_info):
            seen["closed"] = True

        def infer(self, feed_dict):
            seen["feed_dict"] = feed_dict
            return {"output": [[0.5, -1.0]], "extra": 3}

    standin = ContractStandIn.for_version("10.3.0")
    answers_that_let_the_path_continue(standin)
    cell = cells["explicit-qdq"]
    arrays = load_arrays(cell)
    with installed_as_tensorrt(standin):
        from polygraphy.backend import trt as polygraphy_trt

        monkeypatch.setattr(polygraphy_trt, "TrtRunner", RecordingTrtRunner)
        backend = TensorRTBackend(TARGET)
        backend.preload()
        execution = backend.run(cell, arrays, tmp_path, StageTracker())
    assert type(seen["engine"]).__name__ == "ICudaEngine" and seen["closed"]  # the engine the build gave
    assert seen["feed_dict"] is arrays["inputs"]
    assert set(execution.outputs) == {"output", "extra"}
    assert isinstance(execution.outputs["output"], np.ndarray) and execution.outputs["output"].tolist() == [[0.5, -1.0]]
    assert execution.outputs["extra"].shape == () and execution.outputs["extra"] == 3


def test_an_implicit_cell_on_a_version_without_its_calibrator_says_what_is_missing_and_why(cells):
    """DERIVED surface: 10.3.0 without IInt8MinMaxCalibrator (every recorded 10.x surface has it): implicit
    quantization is deprecated there, not removed, so the reason is the general one, not 11.0's migration advice."""
    from harness.tensorrt.quantization_lifecycle import implicit_quantization

    cell = {**cells["implicit-int8"], "knobs": {**cells["implicit-int8"]["knobs"], "calibrator": "minmax"}}
    with installed_as_tensorrt(ContractStandIn.without("10.3.0", "IInt8MinMaxCalibrator")):
        reason = BackendUpToInference(TARGET).unavailable_reason(cell)
    assert reason == (
        "Unsupported: implicit INT8 quantization (BuilderFlag.INT8 with a calibrator) is not in TensorRT 10.3.0: "
        "IInt8MinMaxCalibrator are absent from its Python API. TensorRT deprecated implicit quantization in 10.1 and "
        "removed it in 11.0 in favour of explicit Q/DQ. Sources: " + ", ".join(implicit_quantization("10.3.0").sources))


def inspector_layer(name, datatype):
    """One layer of engine inspector JSON, shaped like TensorRT's (constructed, not TensorRT output)."""
    tensor = {"Name": f"{name}_output", "Dimensions": [1, 8, 16, 16], "Format/Datatype": f"Row major linear {datatype}"}
    return {"Name": name, "LayerType": "CaskConvolution", "TacticName": "", "Inputs": [tensor], "Outputs": [tensor]}


def test_the_engine_inspector_json_is_kept_in_the_cells_directory_and_named_as_the_source(cells, tmp_path):
    import json

    standin = ContractStandIn.for_version("10.3.0")
    answers_that_let_the_path_continue(standin)
    information = json.dumps({"Layers": [inspector_layer("/conv/Conv + /act/Relu", "Int8"),
                                         inspector_layer("trt_internal_reformat_0", "Float")], "Bindings": []})
    standin.on("EngineInspector.get_engine_information", information)
    standin.on("ICudaEngine.profiling_verbosity", standin.enum("ProfilingVerbosity.DETAILED"))
    serialized = standin.make("IHostMemory")
    standin.on("Builder.build_serialized_network", serialized)
    with installed_as_tensorrt(standin):
        execution = run(cells["explicit-qdq"], tmp_path)
    (deserialized,) = standin.calls_to("Runtime.deserialize_cuda_engine")
    assert deserialized.args == (serialized,)  # the engine inspected is the one the build serialized
    assert (tmp_path / cells["explicit-qdq"]["case"] / "engine-layers.json").read_text() == information
    assert execution.details["layer_information"]["source"] == "engine inspector JSON"
    assert execution.details["layer_information"]["layers"] == 2
    import onnx

    nodes = [node.name for node in onnx.load(cells["explicit-qdq"]["model"]).graph.node]
    assert set(execution.precision) <= set(nodes)  # a layer of no ONNX node is no node's precision
    assert execution.details["tensorrt_calls"]["engine_profiling_verbosity"] == "DETAILED"
    assert execution.precision["/conv/Conv"] == "int8" and execution.precision["/act/Relu"] == "int8"


def test_without_inspector_json_the_layers_come_from_the_verbose_log(cells, tmp_path):
    """The engine answers no layer information (None) and a profiling verbosity without a name (a plain int, as a
    binding without the enum would): the verbose log's Layer(...) lines, logged by a build fake, give the layers."""
    standin = ContractStandIn.for_version("10.3.0")
    answers_that_let_the_path_continue(standin)
    standin.on("EngineInspector.get_engine_information", None)
    standin.on("ICudaEngine.profiling_verbosity", 2)
    import onnx

    model = onnx.load(cells["explicit-qdq"]["model"])
    weights = model.graph.initializer[0].name  # TensorRT names the constants it fuses, as in P1's reported layer

    def build_logging_layers(builder, network, config):
        (logger,) = [c.args[0] for c in standin.calls_to("Builder", "new") if c.obj is builder]
        logger.log(standin.module.ILogger.Severity.VERBOSE, "Engine Layer Information:\nLayer(CaskConvolution): "
                   f"{weights} + /conv/Conv + /act/Relu, Tactic: 0x1, x (Int8[1,8,16,16]) -> y (Half[1,8,16,16])\n"
                   "Layer(Reformat): Reformatting CopyNode for Output Tensor 0 to /act/Relu, Tactic: 0x0, "
                   "y (Half[1,8,16,16]) -> z (Float[1,8,16,16])")
        return standin.make("IHostMemory")  # what the plain stand-in answers a build with

    standin.on("Builder.build_serialized_network", build_logging_layers)
    with installed_as_tensorrt(standin):
        execution = run(cells["explicit-qdq"], tmp_path)
    assert (tmp_path / cells["explicit-qdq"]["case"] / "engine-layers.json").read_text() == ""
    assert execution.details["layer_information"] == {
        "source": "verbose TensorRT log", "layers": 2, "fallback": (), "unverified": (), "missing": ()}
    nodes = [node.name for node in model.graph.node]
    assert set(execution.precision) <= set(nodes)  # by the model's names: constants are no nodes
    assert execution.details["tensorrt_calls"]["engine_profiling_verbosity"] == 2
    assert execution.precision["/conv/Conv"] == "int8"


def test_an_engine_that_cannot_be_deserialized_fails_at_the_inspect_stage(cells, tmp_path):
    """The stand-in's runtime answers no engine (None), as TensorRT does for bytes it cannot read."""
    standin = ContractStandIn.for_version("10.3.0")
    answers_that_let_the_path_continue(standin)
    standin.on("Runtime.deserialize_cuda_engine", None)
    with installed_as_tensorrt(standin), pytest.raises(BackendFailure) as failure:
        run(cells["explicit-qdq"], tmp_path)
    assert failure.value.stage == "inspect"


def test_a_failing_inference_fails_at_the_infer_stage(cells, tmp_path, monkeypatch):
    """Test fake for Polygraphy's TrtRunner (it needs CUDA) whose inference raises as Polygraphy does."""
    from harness.worker.backends.base import StageTracker
    from harness.worker.backends.tensorrt.backend import TensorRTBackend
    from harness.worker.casedata import load_arrays

    standin = ContractStandIn.for_version("10.3.0")
    answers_that_let_the_path_continue(standin)
    stages = StageTracker()
    with installed_as_tensorrt(standin):
        from polygraphy.backend import trt as polygraphy_trt
        from polygraphy.exception import PolygraphyException

        class FailingTrtRunner:
            def __init__(self, engine):
                pass

            def __enter__(self):
                raise PolygraphyException("Input tensor: images | Received unexpected shape")

            def __exit__(self, *exc_info):
                return False

        monkeypatch.setattr(polygraphy_trt, "TrtRunner", FailingTrtRunner)
        backend = TensorRTBackend(TARGET)
        backend.preload()
        with pytest.raises(BackendFailure) as failure:
            backend.run(cells["explicit-qdq"], load_arrays(cells["explicit-qdq"]), tmp_path, stages)
    assert stages.current == "infer" and failure.value.category == "runtime-error"


def test_an_error_logged_by_a_build_that_still_made_an_engine_is_recorded_and_a_clean_one_records_none(cells, tmp_path):
    standin = ContractStandIn.for_version("10.3.0")
    answers_that_let_the_path_continue(standin)
    with installed_as_tensorrt(standin):
        clean = run(cells["explicit-qdq"], tmp_path / "clean")

    def build_logging_an_internal_error(builder, network, config):
        (logger,) = [c.args[0] for c in standin.calls_to("Builder", "new") if c.obj is builder]
        logger.log(standin.module.ILogger.Severity.INTERNAL_ERROR, "2: Assertion failed: a kernel was skipped")
        return standin.make("IHostMemory")

    standin.calls.clear()
    standin.on("Builder.build_serialized_network", build_logging_an_internal_error)
    with installed_as_tensorrt(standin):
        noisy = run(cells["explicit-qdq"], tmp_path / "noisy")
    assert "log_classification" not in clean.details
    assert noisy.details["log_classification"]["category"] == "internal-assert"
    assert "[F] [TRT] 2: Assertion failed: a kernel was skipped" in noisy.log.splitlines()  # the digest keeps [F]
