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
