"""P11: one graph (two Conv + ReLU) handed calibration caches whose header names another version or algorithm."""
from __future__ import annotations

import numpy as np
import onnx
import onnx_graphsurgeon as gs
import pytest

from cases.generate import export_model
from cases.model import CACHE_ALGORITHMS, Case
from cases.p11_calibration_cache import OLD_CACHE, CalibrationCache
from harness.tensorrt.calibration_cache import KNOWN_ALGORITHMS


variant = CalibrationCache.variant


def model_of(name) -> onnx.ModelProto:
    return export_model(CalibrationCache, variant(name))[0]


@pytest.fixture(scope="module")
def generated(generated_cases):
    return generated_cases("p11", [CalibrationCache]) / CalibrationCache.id


@pytest.mark.parametrize("name", [v.name for v in CalibrationCache.variants])
def test_every_variant_is_the_same_checked_graph(name):
    model = model_of(name)
    onnx.checker.check_model(model, full_check=True)
    onnx.shape_inference.infer_shapes(model, check_type=True, strict_mode=True)
    assert [n.op_type for n in model.graph.node] == ["Conv", "Relu", "Conv", "Relu"]
    assert model.graph == model_of("recalibrate").graph
    assert CalibrationCache.build(variant(name)).expected_int8 == ("/conv1/Conv", "/conv2/Conv")


def test_the_variants_hand_these_caches():
    handed = {v.name: (v.knobs.calibration_cache, v.knobs.cache_only) for v in CalibrationCache.variants}
    assert handed == {
        "old-cache-only": (("8.6.0", "EntropyCalibration2"), True),
        "old-cache": (("8.6.0", "EntropyCalibration2"), False),
        "own-version-cache-only": (("running", "EntropyCalibration2"), True),
        "other-algorithm-cache-only": (("running", "MinMaxCalibration"), True),
        "recalibrate": (None, False),
    }
    assert OLD_CACHE == ("8.6.0", "EntropyCalibration2")  # the header of the 10.3.0 report (DLA-SW#26)
    assert all(v.knobs.calibrator == "entropy2" for v in CalibrationCache.variants)
    (claim,) = variant("old-cache-only").claims
    assert (claim.target, claim.outcome, claim.strength) == ("trt103-orin", "fail", "issue-thread")


def test_the_cases_and_the_harness_know_the_same_cache_algorithms():
    assert set(CACHE_ALGORITHMS) == set(KNOWN_ALGORITHMS)


def test_cache_variants_carry_the_range_of_every_tensor_tensorrt_names(generated):
    tensors = {"input", "/conv1/Conv_output_0", "/act1/Relu_output_0", "/conv2/Conv_output_0", "/act2/Relu_output_0"}
    for name in ("old-cache-only", "old-cache", "own-version-cache-only", "other-algorithm-cache-only"):
        with np.load(generated / f"{name}.npz") as data:
            ranges = dict(zip(data["calibration_ranges/names"].tolist(), data["calibration_ranges/amax"].tolist()))
            batches = [data[k] for k in data.files if k.startswith("calib/") and k.endswith("/input")]
        assert set(ranges) == tensors
        assert all(value > 0 for value in ranges.values())
        assert ranges["input"] == pytest.approx(max(float(np.abs(b).max()) for b in batches))
    with np.load(generated / "recalibrate.npz") as data:
        assert not [k for k in data.files if k.startswith("calibration_ranges/")]


def test_the_matcher_finds_nothing_the_pattern_is_not_in_the_graph():
    assert CalibrationCache.find(gs.import_onnx(model_of("old-cache"))) == []
    assert CalibrationCache.find.__func__ is Case.find.__func__, "the pattern is not in the graph: no matcher of its own"
