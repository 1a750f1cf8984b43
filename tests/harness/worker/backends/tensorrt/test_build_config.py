"""The builder config of a cell, as TensorRT receives it: which IBuilderConfig calls the build made and with what
(the contract stand-in records every call), for every precision knob, on every recorded version that has the API."""
import pytest

from harness.worker.backends.base import BackendFailure
from harness.worker.backends.tensorrt.build_config import PRECISION_CONSTRAINT_FLAGS
from tests.trt_contract.backend_run import answers_that_let_the_path_continue, run, set_builder_flags, with_knobs
from tests.trt_contract.standin import ContractStandIn, installed_as_tensorrt


def _unpacked(built):
    """(CreateConfig arguments, record) of a BuildConfig."""
    return built.arguments, built.record


def flag(standin, dotted):
    return standin.enum(dotted)


def test_weakly_typed_builds_set_int8_and_tf32_and_no_other_precision_flag(weakly_typed_standin, cells, tmp_path):
    standin = weakly_typed_standin
    execution = run(cells["explicit-qdq"], tmp_path)
    assert sorted(f.name for f in set_builder_flags(standin)) == ["INT8", "TF32"]
    assert not [c for c in standin.calls_to("IBuilderConfig.clear_flag") if c.args[0].name in ("INT8", "TF32")]
    config = execution.details["tensorrt_calls"]["config"]
    assert config == {"tf32": True, "profiling_verbosity": "DETAILED", "int8": True, "calibrator": None}


def test_fp16_knob_sets_the_fp16_flag(weakly_typed_standin, cells, tmp_path):
    execution = run(with_knobs(cells["explicit-qdq"], fp16=True), tmp_path)
    assert flag(weakly_typed_standin, "BuilderFlag.FP16") in set_builder_flags(weakly_typed_standin)
    assert execution.details["tensorrt_calls"]["config"]["fp16"] is True


def test_without_the_fp16_knob_no_fp16_flag_is_set(weakly_typed_standin, cells, tmp_path):
    execution = run(with_knobs(cells["explicit-qdq"], fp16=False), tmp_path)
    assert flag(weakly_typed_standin, "BuilderFlag.FP16") not in set_builder_flags(weakly_typed_standin)
    assert "fp16" not in execution.details["tensorrt_calls"]["config"]


@pytest.mark.parametrize("constraint", sorted(PRECISION_CONSTRAINT_FLAGS))
def test_precision_constraints_set_their_own_flag_only(weakly_typed_standin, cells, tmp_path, constraint):
    standin = weakly_typed_standin
    execution = run(with_knobs(cells["explicit-qdq"], precision_constraints=constraint), tmp_path)
    wanted = flag(standin, PRECISION_CONSTRAINT_FLAGS[constraint])
    other = flag(standin, PRECISION_CONSTRAINT_FLAGS[({"obey", "prefer"} - {constraint}).pop()])
    assert wanted in set_builder_flags(standin) and other not in set_builder_flags(standin)
    assert execution.details["tensorrt_calls"]["config"]["precision_constraints"] == constraint


def test_strongly_typed_builds_set_no_precision_flag(standin, cells, tmp_path):
    if not standin.has("NetworkDefinitionCreationFlag.STRONGLY_TYPED"):
        pytest.skip(f"TensorRT {standin.version} has no strongly typed networks")
    execution = run(with_knobs(cells["explicit-qdq"], strongly_typed=True), tmp_path)
    assert [f.name for f in set_builder_flags(standin)] == ["TF32"]
    config = execution.details["tensorrt_calls"]["config"]
    assert config["int8"] == "from the graph's Q/DQ nodes (strongly typed: no precision flags)"
    assert "fp16" not in config and "precision_constraints" not in config


@pytest.mark.parametrize("knobs", [{"fp16": True}, {"precision_constraints": "obey"},
                                   {"layer_precisions": {"c": "int8"}}])
def test_strongly_typed_with_a_precision_knob_is_refused_as_a_mistake_in_the_case(standin, cells, tmp_path, knobs):
    cell = with_knobs(cells["explicit-qdq"], strongly_typed=True, **knobs)
    with pytest.raises(ValueError) as error:
        run(cell, tmp_path)
    assert str(error.value) == (
        f"Cell {cell['case']}/{cell['variant']} asks for a strongly typed network together with "
        f"['{next(iter(knobs))}']: a strongly typed network takes its precisions from the graph's types and Q/DQ nodes "
        "only (TensorRT allows no precision flags or layer precisions there). Fix the case's knobs.")


def test_strongly_typed_implicit_int8_is_refused_as_a_mistake_in_the_case(weakly_typed_standin, cells, tmp_path):
    with pytest.raises(ValueError, match="together with implicit INT8 calibration.*Fix the case's knobs"):
        run(with_knobs(cells["implicit-int8"], strongly_typed=True), tmp_path)


def test_prefer_constraints_on_a_version_without_the_flag_is_unsupported_api(cells, tmp_path):
    """DERIVED surface: 10.3.0 without BuilderFlag.PREFER_PRECISION_CONSTRAINTS (every recorded weakly typed version
    has it), to see the knob meet a TensorRT that lacks the flag."""
    standin = ContractStandIn.without("10.3.0", "BuilderFlag.PREFER_PRECISION_CONSTRAINTS")
    answers_that_let_the_path_continue(standin)
    with installed_as_tensorrt(standin), pytest.raises(BackendFailure) as failure:
        run(with_knobs(cells["explicit-qdq"], precision_constraints="prefer"), tmp_path)
    assert failure.value.category == "unsupported-api" and failure.value.stage == "build"
    assert failure.value.message.startswith("BuilderFlag.PREFER_PRECISION_CONSTRAINTS is not in TensorRT 10.3.0: it "
                                            "is needed for the knob precision_constraints='prefer'.")


def test_config_settings_of_a_strongly_typed_network_set_no_precision_argument(tmp_path):
    from harness.worker.backends.tensorrt.build_config import config_settings

    trt = ContractStandIn.for_version("10.3.0").module
    cell = {"mode": "explicit-qdq", "knobs": {}}
    arguments, record = _unpacked(config_settings(trt, cell, True, tmp_path / "calibration.cache", []))
    assert arguments == {"tf32": True, "profiling_verbosity": trt.ProfilingVerbosity.DETAILED}
    assert record == {"tf32": True, "profiling_verbosity": "DETAILED", "calibrator": None,
                      "int8": "from the graph's Q/DQ nodes (strongly typed: no precision flags)"}


@pytest.mark.parametrize("constraints", sorted(PRECISION_CONSTRAINT_FLAGS))
def test_config_settings_with_fp16_and_precision_constraints(tmp_path, constraints):
    from harness.worker.backends.tensorrt.build_config import config_settings

    trt = ContractStandIn.for_version("10.0.1").module
    cell = {"mode": "explicit-qdq", "knobs": {"fp16": True, "precision_constraints": constraints}}
    arguments, record = _unpacked(config_settings(trt, cell, False, tmp_path / "calibration.cache", []))
    assert arguments == {"tf32": True, "profiling_verbosity": trt.ProfilingVerbosity.DETAILED, "int8": True,
                         "fp16": True, "precision_constraints": constraints}
    assert record == {"tf32": True, "profiling_verbosity": "DETAILED", "int8": True, "fp16": True,
                      "precision_constraints": constraints, "calibrator": None}


def test_the_fp16_knob_on_a_version_without_the_flag_is_unsupported_api(tmp_path):
    """DERIVED surface: 10.0.1 without BuilderFlag.FP16 (every recorded weakly typed version has it)."""
    from harness.worker.backends.tensorrt.build_config import config_settings

    trt = ContractStandIn.without("10.0.1", "BuilderFlag.FP16").module
    with pytest.raises(BackendFailure) as failure:
        config_settings(trt, {"mode": "explicit-qdq", "knobs": {"fp16": True}}, False, tmp_path / "c.cache", [])
    assert failure.value.message.startswith("BuilderFlag.FP16 is not in TensorRT 10.0.1: it is needed for the knob "
                                            "fp16=True.")


def test_config_settings_of_an_implicit_cell_attach_its_calibrator(tmp_path):
    from harness.worker.backends.tensorrt.build_config import config_settings

    standin = ContractStandIn.for_version("10.0.1")
    batches = [{"x": 1}, {"x": 2}, {"x": 3}]
    with installed_as_tensorrt(standin):
        arguments, record = _unpacked(config_settings(standin.module, {"mode": "implicit-int8", "knobs": {"calibrator": "minmax"}},
                                            False, tmp_path / "calibration.cache", batches))
    assert record["calibrator"] == {"class": "IInt8MinMaxCalibrator", "batches": 3,
                                    "cache": str(tmp_path / "calibration.cache")}
    assert isinstance(arguments["calibrator"], standin.module.IInt8MinMaxCalibrator)
    assert arguments["int8"] is True


@pytest.mark.parametrize("cache_only", [False, True])
def test_config_settings_of_an_implicit_cell_with_profiles_leave_the_calibrator_to_the_harness(tmp_path, cache_only):
    """With optimization profiles the harness attaches the calibrator after CreateConfig (Polygraphy would make its
    last profile the calibration profile) and plans what TensorRT reads of each batch; a cache-only cell hands it
    none."""
    import numpy as np

    from harness.worker.backends.tensorrt.build_config import config_settings

    standin = ContractStandIn.for_version("10.0.1")
    profiles = [{"x": {"min": [1, 3, 8, 8], "opt": [2, 3, 8, 8], "max": [4, 3, 8, 8]}}]
    knobs = {"calibrator": "entropy2", "profiles": profiles, **({"cache_only": True} if cache_only else {})}
    batches = [{"x": np.zeros((2, 3, 8, 8), np.float32)}] * 2
    with installed_as_tensorrt(standin):
        built = config_settings(standin.module, {"mode": "implicit-int8", "knobs": knobs}, False,
                                tmp_path / "calibration.cache", batches)
    arguments, record = _unpacked(built)
    assert record["profiles"] == profiles and len(arguments["profiles"]) == 1
    assert "calibrator" not in arguments and built.calibrator.is_polygraphy_calibrator is False
    assert record["calibrator_attached_by"] == ("the harness, after CreateConfig (so no calibration profile is set "
                                                "unless the cell names one)")
    assert record["calibrator"]["batches"] == (0 if cache_only else 2)
    assert record["calibration"]["tensorrt_reads"] == {"x": [2, 3, 8, 8]}  # profile 0's kOPT
    assert record["calibration"]["batches_handed"] == ({} if cache_only else {"x": [2, 3, 8, 8]})


def float_cell(cells, **knobs):
    """The implicit control's FP32 graph as a float cell: no Q/DQ, no calibrator, precision asked by knobs only."""
    return with_knobs({**cells["implicit-int8"], "mode": "float"}, **knobs)


def test_a_float_cell_gets_no_int8_flag_and_no_calibrator(weakly_typed_standin, cells, tmp_path):
    execution = run(float_cell(cells), tmp_path)
    assert "INT8" not in {f.name for f in set_builder_flags(weakly_typed_standin)}
    assert not [c for c in weakly_typed_standin.calls_to("IBuilderConfig.int8_calibrator") if c.action == "set"]
    config = execution.details["tensorrt_calls"]["config"]
    assert config["calibrator"] is None and config["int8"].startswith("not set: a float cell")


@pytest.mark.parametrize("knob, flag_name", [("fp8", "FP8"), ("fp4", "FP4")])
def test_an_fp8_or_fp4_knob_sets_its_flag_where_it_exists_else_the_cell_is_unavailable(standin, cells, tmp_path, knob,
                                                                                        flag_name):
    from tests.trt_contract.backend_run import BackendUpToInference, TARGET

    cell = float_cell(cells, **{knob: True})
    reason = BackendUpToInference(TARGET).unavailable_reason(cell)
    if not standin.has(f"BuilderFlag.{flag_name}"):  # FP4 before 10.8; neither on 11.x (strongly typed only)
        assert reason and f"BuilderFlag.{flag_name} is not in TensorRT {standin.version}" in reason
        return
    assert reason is None
    execution = run(cell, tmp_path)
    assert flag_name in {f.name for f in set_builder_flags(standin)}
    assert execution.details["tensorrt_calls"]["config"][knob] is True


def test_an_fp16_request_where_only_strongly_typed_networks_exist_is_recorded_as_not_expressible(standin, cells,
                                                                                                tmp_path):
    """P15's TensorRT 11 form: no BuilderFlag.FP16, so the FP32 graph builds FP32; the record says the request could
    not be expressed (the inspector on a GPU then shows the fallback fp16 -> fp32)."""
    execution = run(float_cell(cells, fp16=True), tmp_path)
    config = execution.details["tensorrt_calls"]["config"]
    if standin.has("BuilderFlag.FP16"):
        assert config["fp16"] is True and "FP16" in {f.name for f in set_builder_flags(standin)}
        return
    assert config["fp16"]["set"] is False and "cannot be expressed" in config["fp16"]["why"]
    assert not {"FP16", "INT8"} & {f.name for f in set_builder_flags(standin)}


def test_a_strongly_typed_cell_asking_for_a_precision_flag_is_refused_as_a_mistake_of_the_case(standin, cells,
                                                                                               tmp_path):
    if not standin.has("NetworkDefinitionCreationFlag.STRONGLY_TYPED"):
        pytest.skip(f"TensorRT {standin.version} has no strongly typed networks")
    with pytest.raises(ValueError, match=r"strongly typed network together with \['fp8'\]"):
        run(with_knobs(cells["explicit-qdq"], strongly_typed=True, fp8=True), tmp_path)
