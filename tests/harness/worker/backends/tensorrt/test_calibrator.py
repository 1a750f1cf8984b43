"""The calibrator an implicit-int8 cell attaches to the builder config, driven as TensorRT drives it: every
calibration batch of the cell, in order, until it says there are no more; the cache written into the cell's directory
and read back by the next build of that cell.

The calibrator under test is the object the backend really handed to ``IBuilderConfig.int8_calibrator`` (the contract
stand-in records it), not a second one built for the test.
"""
import numpy as np
import pytest

from harness.worker.backends.base import BackendFailure
from harness.worker.backends.tensorrt.backend import TensorRTBackend
from harness.worker.backends.tensorrt.calibrator import calibration_plan, make_calibrator
from harness.worker.casedata import load_arrays
from tests.trt_contract.backend_run import TARGET, run, with_knobs
from tests.trt_contract.standin import ContractStandIn, installed_as_tensorrt

# Test content for the cache file: TensorRT writes a header line naming its version and the calibrator, then one
# "tensor: scale" line per tensor; the bytes here only have to come back unchanged.
CACHE_BYTES = b"TRT-100300-EntropyCalibration2\ninput: 3c010a14\n"


@pytest.fixture()
def network_inputs(weakly_typed_standin, cells):
    """Test fake: the stand-in network has the control model's input (name, FLOAT, shape), as a parse would give it;
    Polygraphy reads it to check the calibration batches against."""
    standin = weakly_typed_standin
    (name, array), = load_arrays(cells["implicit-int8"])["calibration"][0].items()
    tensor = standin.make("ITensor", name=name, dtype=standin.enum("DataType.FLOAT"), shape=array.shape,
                          is_shape_tensor=False)
    standin.on("INetworkDefinition.num_inputs", 1)
    standin.on("INetworkDefinition.get_input", lambda network, index: tensor)


@pytest.fixture()
def device_copies(weakly_typed_standin, network_inputs, monkeypatch):
    """Test fake for Polygraphy's host-to-GPU copy (there is no CUDA here): each array the calibrator would copy to
    the GPU is recorded, and TensorRT is handed a made-up device pointer instead."""
    import polygraphy.backend.trt.util as polygraphy_trt_util  # the Polygraphy imported for this stand-in

    copied = []

    def to_gpu(array, name, device_buffers):
        copied.append((name, np.array(array)))
        return 0x1000 + len(copied)

    monkeypatch.setattr(polygraphy_trt_util, "_get_array_on_gpu", to_gpu)
    return copied


def attached_calibrator(standin):
    (call,) = standin.calls_to("IBuilderConfig.int8_calibrator", "set")
    return call.args[0]


def drive(calibrator, names):
    """Ask for batches as TensorRT does, until the calibrator answers None; the pointers of each batch."""
    batches = []
    while (pointers := calibrator.get_batch(names)) is not None:
        batches.append(pointers)
        assert len(batches) <= 1000, "the calibrator never said it had no more batches"
    return batches


@pytest.mark.parametrize("calibrator_knob", ["entropy2", "minmax"])
def test_the_attached_calibrator_yields_every_calibration_batch_in_order(weakly_typed_standin, device_copies, cells,
                                                                        tmp_path, calibrator_knob):
    cell = with_knobs(cells["implicit-int8"], calibrator=calibrator_knob)
    execution = run(cell, tmp_path)
    calibration = load_arrays(cell)["calibration"]
    names = list(calibration[0])

    batches = drive(attached_calibrator(weakly_typed_standin), names)

    assert len(batches) == len(calibration) == cell["calibration_batches"] > 1
    assert all(len(pointers) == len(names) for pointers in batches)
    assert [name for name, _ in device_copies] == names * len(calibration)
    for (_, copied), batch in zip(device_copies, calibration):
        np.testing.assert_array_equal(copied, batch[names[0]])
    assert execution.details["tensorrt_calls"]["config"]["calibrator"]["batches"] == len(batches)


def test_the_cache_is_written_to_the_cells_directory_and_read_by_its_next_build(weakly_typed_standin, device_copies,
                                                                               cells, tmp_path):
    cell = cells["implicit-int8"]
    cache = tmp_path / cell["case"] / "calibration.cache"
    first = run(cell, tmp_path)
    calibrator = attached_calibrator(weakly_typed_standin)
    assert calibrator.read_calibration_cache() is None  # a first build calibrates: there is no cache yet
    drive(calibrator, list(load_arrays(cell)["calibration"][0]))
    calibrator.write_calibration_cache(memoryview(CACHE_BYTES))  # what TensorRT does after calibrating
    assert cache.read_bytes() == CACHE_BYTES
    assert first.details["tensorrt_calls"]["config"]["calibrator"]["cache"] == str(cache)

    weakly_typed_standin.calls.clear()
    run(cell, tmp_path)  # the same cell again, in the same directory
    assert attached_calibrator(weakly_typed_standin).read_calibration_cache() == CACHE_BYTES


def test_a_cell_without_a_calibrator_knob_gets_the_entropy_calibrator(weakly_typed_standin, cells, tmp_path):
    cell = cells["implicit-int8"]
    knobs = {knob: value for knob, value in cell["knobs"].items() if knob != "calibrator"}
    calibrator, record, handed = make_calibrator(weakly_typed_standin.module, {**cell, "knobs": knobs}, [],
                                                 tmp_path / "calibration.cache")
    assert isinstance(calibrator, weakly_typed_standin.module.IInt8EntropyCalibrator2)
    assert record == {"class": "IInt8EntropyCalibrator2", "batches": 0, "cache": str(tmp_path / "calibration.cache")}
    assert handed is None  # no calibration_cache knob: nothing is handed to TensorRT


def test_a_calibrator_class_the_version_lacks_is_unsupported_api_naming_it(cells, tmp_path):
    """DERIVED surface: 10.3.0's recorded API without IInt8MinMaxCalibrator (no recorded weakly typed version lacks
    it), so that the minmax knob meets a TensorRT that has implicit quantization but not that calibrator."""
    standin = ContractStandIn.without("10.3.0", "IInt8MinMaxCalibrator")
    with installed_as_tensorrt(standin), pytest.raises(BackendFailure) as failure:
        make_calibrator(standin.module, with_knobs(cells["implicit-int8"], calibrator="minmax"), [],
                        tmp_path / "calibration.cache")
    assert failure.value.category == "unsupported-api"
    assert failure.value.message.startswith("IInt8MinMaxCalibrator is not in TensorRT 10.3.0: it is needed for "
                                            "implicit INT8 calibration with the minmax calibrator.")


def test_explicit_cells_attach_no_calibrator_and_record_none(standin, cells, tmp_path):
    execution = run(cells["explicit-qdq"], tmp_path)
    assert not standin.calls_to("IBuilderConfig.int8_calibrator", "set")
    assert execution.details["tensorrt_calls"]["config"]["calibrator"] is None
    assert not (tmp_path / cells["explicit-qdq"]["case"] / "calibration.cache").exists()


def test_on_11_a_cell_without_a_calibrator_knob_is_judged_by_the_entropy_calibrator(cells):
    cell = cells["implicit-int8"]
    knobs = {knob: value for knob, value in cell["knobs"].items() if knob != "calibrator"}
    with installed_as_tensorrt(ContractStandIn.for_version("11.4.0.106")):
        reason = TensorRTBackend(TARGET).unavailable_reason({**cell, "knobs": knobs})
    assert ", IInt8EntropyCalibrator2 are absent from its Python API." in reason


# ---- a calibration cache handed to TensorRT (knobs.calibration_cache), its scales from the data's ranges ----

OLD_ENTROPY_CACHE = {"version": "8.6.0", "algorithm": "EntropyCalibration2"}


def with_ranges(cell, tmp_path, names, amax, **knobs):
    """The cell with ``knobs`` and, as its data, a file holding only the calibration ranges ``names`` and ``amax``."""
    data = tmp_path / "ranges.npz"
    np.savez(data, **{"calibration_ranges/names": names, "calibration_ranges/amax": amax})
    return {**with_knobs(cell, **knobs), "data": str(data)}


@pytest.mark.parametrize(("calibrator_knob", "mismatches"), [("minmax", []), ("entropy2", ["algorithm"])])
def test_a_handed_cache_is_compared_with_the_calibrator_the_cell_chooses(weakly_typed_standin, cells, tmp_path,
                                                                        calibrator_knob, mismatches):
    cell = with_ranges(cells["implicit-int8"], tmp_path, np.array(["input"]), np.array([4.0]),
                       calibrator=calibrator_knob,
                       calibration_cache={"version": "running", "algorithm": "MinMaxCalibration"})
    _, record, handed = make_calibrator(weakly_typed_standin.module, cell, [], tmp_path / "calibration.cache")
    expected = {"minmax": "MinMaxCalibration", "entropy2": "EntropyCalibration2"}[calibrator_knob]
    assert record["handed_cache"]["calibrator_algorithm"] == expected
    assert record["handed_cache"]["mismatches"] == mismatches
    assert handed == (tmp_path / "calibration.cache").read_bytes()


def test_a_cell_handing_a_cache_without_calibration_ranges_says_to_regenerate_the_cases(weakly_typed_standin, cells,
                                                                                       tmp_path):
    cell = with_knobs(cells["implicit-int8"], calibration_cache=OLD_ENTROPY_CACHE)
    with pytest.raises(ValueError) as error:
        make_calibrator(weakly_typed_standin.module, cell, [], tmp_path / "calibration.cache")
    assert str(error.value) == (
        f"{cell['data']}: cell {cells['implicit-int8']['case']}/{cells['implicit-int8']['variant']} hands TensorRT a "
        "calibration cache (knobs.calibration_cache) but its data has no 'calibration_ranges/names': regenerate the "
        "cases with `trt-matrix generate`.")
    assert not (tmp_path / "calibration.cache").exists()


def test_calibration_ranges_stored_as_pickled_objects_are_not_loaded(weakly_typed_standin, cells, tmp_path):
    """Unpickling runs code from the data file: ranges saved as an object array are refused, not unpickled."""
    cell = with_ranges(cells["implicit-int8"], tmp_path, np.array(["input"], dtype=object), np.array([4.0]),
                       calibration_cache=OLD_ENTROPY_CACHE)
    with pytest.raises(ValueError, match="Object arrays cannot be loaded when allow_pickle=False"):
        make_calibrator(weakly_typed_standin.module, cell, [], tmp_path / "calibration.cache")
    assert not (tmp_path / "calibration.cache").exists()


# ---- the calibration plan: which profile TensorRT calibrates with, at what shape ----

ONE_TO_EIGHT = {"min": [1, 3, 16, 16], "opt": [1, 3, 16, 16], "max": [8, 3, 16, 16]}
EIGHT = {"min": [8, 3, 16, 16], "opt": [8, 3, 16, 16], "max": [8, 3, 16, 16]}


def images(batch_size):
    return {"images": np.zeros((batch_size, 3, 16, 16), np.float32)}


def test_without_a_calibration_profile_the_plan_says_tensorrt_takes_profile_0_and_warns():
    plan = calibration_plan({"profiles": [{"images": ONE_TO_EIGHT}], "calibration_profile": None}, [images(8)])
    assert plan == {
        "profile": 0,
        "calibration_profile_set": False,
        "why": ("no calibration profile set: TensorRT's default, profile 0 (it warns 'Calibration Profile is not "
                "defined. Calibrating with Profile 0')"),
        "tensorrt_reads": {"images": [1, 3, 16, 16]},
        "batches_handed": {"images": [8, 3, 16, 16]},
        "share_of_each_batch_read": {"images": 1 / 8},
    }


def test_a_calibration_profile_the_knobs_set_is_why_that_profile_calibrates():
    plan = calibration_plan({"profiles": [{"images": ONE_TO_EIGHT}, {"images": EIGHT}], "calibration_profile": 1},
                            [images(8), images(8)])
    assert (plan["profile"], plan["calibration_profile_set"], plan["why"]) == (1, True, "knobs.calibration_profile")
    assert plan["share_of_each_batch_read"] == {"images": 1.0}


def test_without_batches_the_plan_says_what_tensorrt_would_read_and_that_none_were_handed():
    """A cache_only cell: TensorRT is handed the cache and no batches."""
    plan = calibration_plan({"profiles": [{"images": ONE_TO_EIGHT}], "calibration_profile": None}, [])
    assert (plan["tensorrt_reads"], plan["batches_handed"], plan["share_of_each_batch_read"]) == (
        {"images": [1, 3, 16, 16]}, {}, {})


def test_an_input_the_batches_do_not_hold_leaves_the_next_inputs_planned():
    knobs = {"profiles": [{"mask": ONE_TO_EIGHT, "images": {**ONE_TO_EIGHT, "opt": [4, 3, 16, 16]}}],
             "calibration_profile": None}
    assert calibration_plan(knobs, [images(8)])["share_of_each_batch_read"] == {"images": 0.5}


def test_batches_smaller_than_kopt_are_refused_naming_the_input_shapes_and_remedy():
    knobs = {"profiles": [{"images": {**ONE_TO_EIGHT, "opt": [16, 3, 16, 16], "max": [16, 3, 16, 16]}}],
             "calibration_profile": None}
    with pytest.raises(ValueError) as error:
        calibration_plan(knobs, [images(8)])
    assert str(error.value) == (
        "knobs: TensorRT calibrates input 'images' at kOPT [16, 3, 16, 16] of profile 0, but the calibration batches "
        "hold [8, 3, 16, 16]: it would read past the end of each batch. Give batches at least that large "
        "(params['calibration_shapes']) or another calibration_profile.")
