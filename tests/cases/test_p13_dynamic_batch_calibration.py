"""P13: a dynamic-batch Conv + ReLU under implicit INT8, with the profiles and calibration profile of each variant."""
from __future__ import annotations

import numpy as np
import onnx
import onnx_graphsurgeon as gs
import pytest

from cases.generate import export_model
from cases.p10_implicit_lifecycle import ImplicitLifecycle
from cases.p13_dynamic_batch_calibration import CALIBRATION_BATCH, INFERENCE_BATCH, DynamicBatchCalibration
from harness.worker.backends.tensorrt.calibrator import calibration_plan


variant = DynamicBatchCalibration.variant


def model_of(name) -> onnx.ModelProto:
    return export_model(DynamicBatchCalibration, variant(name))[0]


@pytest.fixture(scope="module")
def generated(generated_cases):
    return generated_cases("p13", [DynamicBatchCalibration]) / DynamicBatchCalibration.id


@pytest.mark.parametrize("name", [v.name for v in DynamicBatchCalibration.variants])
def test_every_variant_is_the_same_dynamic_batch_graph(name):
    model = model_of(name)
    onnx.checker.check_model(model, full_check=True)
    onnx.shape_inference.infer_shapes(model, check_type=True, strict_mode=True)
    assert [n.op_type for n in model.graph.node] == ["Conv", "Relu"]
    (images,) = model.graph.input
    dims = images.type.tensor_type.shape.dim
    assert dims[0].dim_param == "batch" and [d.dim_value for d in dims[1:]] == [3, 16, 16]
    assert model.graph.output[0].type.tensor_type.shape.dim[0].dim_param == "batch"


def profiles(name):
    return [{input_name: (lo[0], opt[0], hi[0]) for input_name, lo, opt, hi in profile}
            for profile in variant(name).knobs.profiles]


def test_profiles_and_calibration_profile_per_variant():
    assert profiles("no-calibration-profile") == [{"images": (1, 1, 8)}]
    assert variant("no-calibration-profile").knobs.calibration_profile is None
    assert profiles("calibration-profile-set") == [{"images": (1, 1, 8)}, {"images": (8, 8, 8)}]
    assert variant("calibration-profile-set").knobs.calibration_profile == 1
    assert profiles("opt-is-calibration-batch") == [{"images": (1, 8, 8)}]
    assert profiles("calibration-batch-1") == [{"images": (1, 4, 8)}, {"images": (1, 1, 1)}]
    (claim,) = variant("no-calibration-profile").claims
    assert (claim.target, claim.outcome, claim.strength) == ("trt86-x86", "pass", "documentation")


@pytest.mark.parametrize(("name", "batch", "profile", "share"), [
    ("no-calibration-profile", CALIBRATION_BATCH, 0, 1 / 8),
    ("calibration-profile-set", CALIBRATION_BATCH, 1, 1.0),
    ("opt-is-calibration-batch", CALIBRATION_BATCH, 0, 1.0),
    ("calibration-batch-1", 1, 1, 1.0),
])
def test_generated_batches_have_the_declared_shapes_and_what_tensorrt_reads_of_them(generated, name, batch, profile,
                                                                                    share):
    with np.load(generated / f"{name}.npz") as data:
        assert data["input/images"].shape == (INFERENCE_BATCH, 3, 16, 16)
        calibration = [{"images": data[k]} for k in sorted(data.files) if k.startswith("calib/")]
    assert {b["images"].shape for b in calibration} == {(batch, 3, 16, 16)}
    assert len(calibration) == DynamicBatchCalibration.batch_count
    plan = calibration_plan(variant(name).knobs.to_dict(), calibration)
    assert (plan["profile"], plan["share_of_each_batch_read"]) == (profile, {"images": share})


def test_the_matcher_finds_a_dynamic_batch_input_of_an_unquantized_model():
    (match,) = DynamicBatchCalibration.find(gs.import_onnx(model_of("no-calibration-profile")))
    assert (match.nodes, match.variant) == (("/conv/Conv",), "no-calibration-profile")
    assert "'batch'" in match.note


def test_the_matcher_finds_nothing_for_a_static_batch_or_a_qdq_model():
    assert DynamicBatchCalibration.find(gs.import_onnx(export_model(ImplicitLifecycle, ImplicitLifecycle.variants[0])[0])) == []
    qdq = gs.import_onnx(export_model(ImplicitLifecycle, ImplicitLifecycle.variants[2])[0])
    qdq.inputs[0].shape = ["N", 16, 16, 16]
    assert DynamicBatchCalibration.find(qdq) == []  # explicit quantization: no calibrator, no calibration profile
