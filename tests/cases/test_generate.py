"""The generator's parts that cases P8-P13 rely on: the remedy in index.json, sizes of dynamic input dimensions, and
the tensor ranges a cache-reusing variant needs."""
from __future__ import annotations

import json

import numpy as np
import onnx_graphsurgeon as gs
import pytest

from cases import all_cases
from cases.generate import export_model, generate, make_data
from cases.model import Built, Case, Knobs, Variant
from cases.p13_dynamic_batch_calibration import DynamicBatchCalibration


def test_every_case_exports_its_remedy_in_the_index(tmp_path):
    cases = [c for c in all_cases() if c.pattern in ("P8", "P9", "P10", "P11", "P12", "P13")]
    index = generate(tmp_path, cases)
    assert [entry["remedy"] for entry in index["cases"]] == [case.remedy for case in cases]
    assert all(entry["remedy"] for entry in index["cases"])
    written = json.loads((tmp_path / "index.json").read_text())
    assert written["cases"][0]["remedy"] == cases[0].remedy


def test_a_dynamic_dimension_is_named_in_the_index(tmp_path):
    index = generate(tmp_path, [DynamicBatchCalibration])
    first = index["cases"][0]["variants"][0]
    assert first["inputs"]["images"]["shape"] == ["batch", 3, 16, 16]
    assert first["outputs"]["/act/Relu_output_0"]["shape"] == ["batch", 16, 16, 16]


class _Dynamic:
    """A throwaway case with one dynamic input, sizes given or not; not a Case subclass, so not in the library."""

    id = "zz-dynamic-probe"
    mode = "implicit-int8"
    batch_count = 8
    variants = (Variant("sized", "control", "sized", params={"input_shapes": {"x": [2, 3]},
                                                              "calibration_shapes": {"x": [5, 3]}},
                        knobs=Knobs(calibration_cache=("8.6.1", "EntropyCalibration2"))),
                Variant("unsized", "control", "no sizes"))
    mode_of = classmethod(Case.mode_of.__func__)

    @staticmethod
    def opset_of(variant):
        return 17

    @staticmethod
    def build(variant):
        graph = gs.Graph(opset=17)
        x = gs.Variable("x", np.float32, ("n", 3))
        graph.inputs = [x]
        y = gs.Variable("y", np.float32, ("n", 3))
        graph.nodes.append(gs.Node("Relu", name="relu", inputs=[x], outputs=[y]))
        graph.outputs = [y]
        return Built(graph, ("relu",))


def test_dynamic_inputs_take_the_sizes_of_the_params_and_cache_variants_get_ranges():
    sized = _Dynamic.variants[0]
    data = make_data(_Dynamic, sized, export_model(_Dynamic, sized)[0])
    assert data["input/x"].shape == (2, 3) and data["calib/0/x"].shape == (5, 3)
    names, amax = data["calibration_ranges/names"].tolist(), data["calibration_ranges/amax"]
    assert names == ["x", "y"]
    batches = [data[k] for k in data if k.startswith("calib/")]
    assert amax[0] == pytest.approx(max(np.abs(b).max() for b in batches))
    assert amax[1] == pytest.approx(max(b.max() for b in batches))  # Relu: the largest positive value


def test_a_dynamic_input_without_a_size_is_an_error_naming_it():
    unsized = _Dynamic.variants[1]
    with pytest.raises(ValueError, match=r"zz-dynamic-probe, variant unsized: input 'x' has a dynamic dimension; "
                                         r"give its size in params\['input_shapes'\]\['x'\]"):
        make_data(_Dynamic, unsized, export_model(_Dynamic, unsized)[0])


def test_the_index_says_which_precision_each_expected_node_is_asked_for(tmp_path):
    """FP8 and FP16 requests are written next to INT8 ones; expected_int8 keeps listing the INT8 nodes only."""
    from cases.p16_mixed_int8_fp8_weakly_typed import CONVS, MixedInt8Fp8WeaklyTyped
    from cases.p5_resize_qdq import ResizeQdq

    index = generate(tmp_path, [MixedInt8Fp8WeaklyTyped, ResizeQdq])
    mixed = {v["name"]: v for v in index["cases"][0]["variants"]}
    assert mixed["as-reported"]["expected_precision"] == {CONVS[0]: "int8", CONVS[1]: "fp8"}
    assert mixed["as-reported"]["expected_int8"] == [CONVS[0]]
    assert mixed["fp8-only"]["expected_int8"] == []
    resize = index["cases"][1]["variants"][0]
    assert resize["expected_precision"] == dict.fromkeys(resize["expected_int8"], "int8")


def test_the_index_carries_the_engine_predicted_for_each_q_dq_variant_per_ruleset(tmp_path):
    """What the planning view shows where nothing ran (the entry_extras `harness generate` and the nightly pass):
    each expected quantized node's predicted precision and rule, per ruleset; nothing for a variant without Q/DQ
    (TensorRT picks its precisions by timing)."""
    from cases.p16_mixed_int8_fp8_weakly_typed import CONVS, MixedInt8Fp8WeaklyTyped
    from cases.s1_conv_silu import ConvSilu
    from harness.scan.engine_prediction.rules import RULESETS
    from harness.scan.predicted import predicted_entry

    index = generate(tmp_path, [MixedInt8Fp8WeaklyTyped, ConvSilu], entry_extras=predicted_entry)
    predicted = index["cases"][0]["variants"][0]["predicted_engine"]
    assert list(predicted) == [ruleset.name for ruleset in RULESETS]
    assert predicted["trt-10.12"][CONVS[0]]["precision"] == "int8" and predicted["trt-10.12"][CONVS[1]] == {
        "precision": "fp8", "rule": predicted["trt-10.12"][CONVS[1]]["rule"]}
    assert predicted["trt-8.6"][CONVS[1]]["rule"] == "quantized-type-unsupported"  # no FP8 Q/DQ before 10.0
    assert not any("predicted_engine" in variant for variant in index["cases"][1]["variants"])


def test_fp8_and_fp16_scaled_variants_get_reference_outputs_of_their_own_quantization(tmp_path):
    """The reference evaluator runs FP8 E4M3 Q/DQ (opset 19) and FP16-scaled DQ: the reference of an FP8 variant
    differs from the same graph's FP32 output by FP8 rounding, not by nothing and not by garbage."""
    import onnx

    from cases.p15_precision_flag_without_qdq import PrecisionFlagWithoutQdq as P15

    model, _ = export_model(P15, P15.variant("explicit-fp8-qdq"))
    assert {i.data_type for i in model.graph.initializer} >= {onnx.TensorProto.FLOAT8E4M3FN}
    variant = P15.variant("explicit-fp8-qdq")  # the same variant twice: the same seed, the same inputs
    fp8 = make_data(P15, variant, model)
    fp32 = make_data(P15, variant, export_model(P15, P15.variant("as-reported"))[0])
    np.testing.assert_array_equal(fp8["input/input"], fp32["input/input"])
    (fp8_out,), (fp32_out,) = ([v for k, v in d.items() if k.startswith("reference/")] for d in (fp8, fp32))
    cosine = float(np.dot(fp8_out.ravel(), fp32_out.ravel()) / np.linalg.norm(fp8_out) / np.linalg.norm(fp32_out))
    assert 0 < np.abs(fp8_out - fp32_out).max() < 0.5 and cosine > 0.99
