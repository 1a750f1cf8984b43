"""Version gates on both sides of each edge, on every recorded API surface: which build modes ``doctor`` reports
(implicit INT8 deprecated from 10.1 and gone in 11.0, explicit Q/DQ layers, strongly typed networks), which cells
are unavailable, and which Polygraphy a TensorRT 11 needs."""
import pytest

from harness.worker.backends.base import EnvironmentProblem
from harness.worker.backends.tensorrt.doctor import build_modes, tensorrt_doctor
from tests.trt_contract.backend_run import TARGET, BackendUpToInference, with_knobs
from tests.trt_contract.standin import ContractStandIn, installed_as_tensorrt, recorded_versions

DEPRECATED = {"available": True, "why": "deprecated since 10.1: expect DeprecationWarnings"}
REMOVED = {"available": False, "why": "absent: BuilderFlag.INT8, IBuilderConfig.int8_calibrator, "
                                      "IInt8EntropyCalibrator2, IInt8MinMaxCalibrator (removed in 11.0)"}
# What each recorded surface offers (facts of trt-api/*.json: 8.6.1 has no STRONGLY_TYPED flag, 11.x no implicit
# quantization; TensorRT deprecated implicit quantization in 10.1, failure-patterns.md P10).
IMPLICIT_BY_VERSION = {"8.6.1": {"available": True}, "10.0.1": {"available": True}, "10.1.0": DEPRECATED,
                       "10.2.0": DEPRECATED, "10.3.0": DEPRECATED, "10.16.1.11": DEPRECATED, "11.4.0.106": REMOVED}


def test_every_recorded_surface_has_an_expected_row():
    assert set(IMPLICIT_BY_VERSION) == set(recorded_versions())


@pytest.mark.parametrize("version", sorted(IMPLICIT_BY_VERSION))
def test_build_modes_of_each_recorded_version(version):
    modes = build_modes(ContractStandIn.for_version(version).module)
    assert modes["implicit-int8"] == IMPLICIT_BY_VERSION[version]
    assert modes["explicit-qdq"] == {"available": True}
    if version == "8.6.1":
        assert modes["strongly-typed"] == {"available": False,
                                           "why": "absent: NetworkDefinitionCreationFlag.STRONGLY_TYPED"}
    else:
        assert modes["strongly-typed"] == {"available": True}


@pytest.mark.parametrize("removed, why", [(("IQuantizeLayer",), "absent: IQuantizeLayer"),
                                         (("IDequantizeLayer",), "absent: IDequantizeLayer"),
                                         (("IQuantizeLayer", "IDequantizeLayer"),
                                          "absent: IQuantizeLayer, IDequantizeLayer")])
def test_explicit_qdq_is_unavailable_without_the_qdq_layers(removed, why):
    """DERIVED surfaces: 8.6.1 without its Q/DQ layer classes (every recorded version has them; TensorRT before 8.0
    had none), to see the explicit Q/DQ mode reported unavailable and say which class is missing."""
    modes = build_modes(ContractStandIn.without("8.6.1", *removed).module)
    assert modes["explicit-qdq"] == {"available": False, "why": why}
    assert modes["implicit-int8"] == {"available": True}


def test_implicit_int8_is_unavailable_when_any_one_calibrator_class_is_missing():
    """DERIVED surface: 10.0.1 without IInt8MinMaxCalibrator only: the mode needs every calibrator class it offers."""
    modes = build_modes(ContractStandIn.without("10.0.1", "IInt8MinMaxCalibrator").module)
    assert modes["implicit-int8"] == {"available": False, "why": "absent: IInt8MinMaxCalibrator (removed in 11.0)"}


@pytest.mark.parametrize("calibrator, class_name", [("entropy2", "IInt8EntropyCalibrator2"),
                                                    ("minmax", "IInt8MinMaxCalibrator")])
def test_unavailable_implicit_cells_name_what_their_calibrator_lacks(cells, calibrator, class_name):
    cell = with_knobs(cells["implicit-int8"], calibrator=calibrator)
    with installed_as_tensorrt(ContractStandIn.for_version("11.4.0.106")):
        reason = BackendUpToInference(TARGET).unavailable_reason(cell)
    assert reason.startswith("Unsupported: implicit INT8 quantization (BuilderFlag.INT8 with a calibrator) is not in "
                             f"TensorRT 11.4.0.106: BuilderFlag.INT8, IBuilderConfig.int8_calibrator, {class_name} are "
                             "absent")
    assert reason.endswith("Sources: https://docs.nvidia.com/deeplearning/tensorrt/11.4.0/api/migration/"
                           "tensorrt-10x-to-11x.html, https://github.com/NVIDIA/TensorRT/blob/main/python/src/infer/"
                           "pyCore.cpp, https://github.com/NVIDIA/TensorRT/issues/4095")


def test_a_surface_lacking_only_the_other_calibrator_keeps_the_cell_available(cells):
    """DERIVED surface: 10.3.0 without IInt8MinMaxCalibrator; an entropy2 cell does not need it."""
    with installed_as_tensorrt(ContractStandIn.without("10.3.0", "IInt8MinMaxCalibrator")):
        backend = BackendUpToInference(TARGET)
        assert backend.unavailable_reason(with_knobs(cells["implicit-int8"], calibrator="entropy2")) is None
        assert "IInt8MinMaxCalibrator are absent" in backend.unavailable_reason(
            with_knobs(cells["implicit-int8"], calibrator="minmax"))


@pytest.mark.parametrize("tensorrt, polygraphy, accepted", [("11.4.0.106", "0.50.2", False),
                                                            ("11.4.0.106", "0.50.3", True),
                                                            ("10.16.1.11", "0.49.9", True)])
def test_polygraphy_older_than_0_50_3_is_refused_for_tensorrt_11_only(monkeypatch, tensorrt, polygraphy, accepted):
    with installed_as_tensorrt(ContractStandIn.for_version(tensorrt)):
        import polygraphy as polygraphy_module

        monkeypatch.setattr(polygraphy_module, "__version__", polygraphy)
        if accepted:
            BackendUpToInference(TARGET).preload()
            report = tensorrt_doctor()
            assert report["polygraphy"] == {"usable": True, "version": polygraphy}
            return
        with pytest.raises(EnvironmentProblem, match=rf"Polygraphy {polygraphy} predates TensorRT {tensorrt}"):
            BackendUpToInference(TARGET).preload()
        report = tensorrt_doctor()
    assert report["polygraphy"]["usable"] is False and "polygraphy>=0.50.3" in report["polygraphy"]["error"]
    assert report["tensorrt"] == {"importable": True, "version": tensorrt, "module": None}
    assert report["build_modes"] == build_modes(ContractStandIn.for_version(tensorrt).module)


def test_doctor_reports_a_section_that_fails_instead_of_raising(monkeypatch):
    import harness.worker.backends.tensorrt.doctor as doctor_module

    def no_gpu_probe():
        raise OSError("libcudart.so: cannot open shared object file")

    monkeypatch.setattr(doctor_module, "probe_gpu", no_gpu_probe)
    with installed_as_tensorrt(ContractStandIn.for_version("10.3.0")):
        report = tensorrt_doctor()
    assert report["gpu"] == {"error": "OSError: libcudart.so: cannot open shared object file"}
    assert report["build_modes"]["explicit-qdq"] == {"available": True}


def test_doctor_without_tensorrt_reports_only_that_with_the_import_error(monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "tensorrt", None)
    report = tensorrt_doctor()
    assert list(report) == ["tensorrt"]
    assert report["tensorrt"]["importable"] is False
    assert "): ModuleNotFoundError: import of tensorrt halted; None in sys.modules.\n" in report["tensorrt"]["error"]


def test_doctor_names_the_tensorrt_module_file_it_imported(monkeypatch):
    standin = ContractStandIn.for_version("10.3.0")
    monkeypatch.setattr(standin.module, "__file__", "/usr/lib/python3/dist-packages/tensorrt/__init__.py",
                        raising=False)
    with installed_as_tensorrt(standin):
        report = tensorrt_doctor()
    assert report["tensorrt"] == {"importable": True, "version": "10.3.0",
                                  "module": "/usr/lib/python3/dist-packages/tensorrt/__init__.py"}


def test_doctor_reports_the_gpus_nvidia_smi_lists_and_a_failing_nvidia_smi(monkeypatch):
    import harness.worker.backends.tensorrt.doctor as doctor_module

    gpus = [{"name": "NVIDIA A10", "compute_cap": "8.6", "driver_version": "550.54.15"}]
    monkeypatch.setattr(doctor_module, "nvidia_gpus", lambda: gpus)
    with installed_as_tensorrt(ContractStandIn.for_version("10.3.0")):
        assert tensorrt_doctor()["nvidia_smi"] == gpus

        def broken_nvidia_smi():
            raise ValueError("unexpected nvidia-smi output")

        monkeypatch.setattr(doctor_module, "nvidia_gpus", broken_nvidia_smi)
        report = tensorrt_doctor()
    assert report["nvidia_smi"] == {"error": "ValueError: unexpected nvidia-smi output"}
    assert "error" not in report["build_modes"] and "error" not in report["gpu"]
