"""GPU facts as ``doctor`` and every record's environment report them: INT8 support from TensorRT, CUDA versions,
device count and compute capability from the CUDA runtime, every fact that cannot be read listed with the reason.
The CUDA runtime here is a test fake (this machine has no GPU); TensorRT is the contract stand-in."""
import ctypes

import pytest

from harness.worker.backends.tensorrt import gpu
from tests.trt_contract.standin import ContractStandIn, installed_as_tensorrt

ORIN_LIKE = {"cudaDriverGetVersion": 12020, "cudaRuntimeGetVersion": 12040, "cudaGetDeviceCount": 1,
             75: 8, 76: 7}  # test fake values: CUDA 12.2 driver, 12.4 runtime, compute capability 8.7


class FakeCudaRuntime:
    """Test fake of polygraphy.cuda's runtime handle: each query writes its value, or returns an error status."""

    def __init__(self, values, failing=()):
        self.values, self.failing = values, failing

    def __getattr__(self, function):
        def query(reference, *arguments):
            key = arguments[0] if function == "cudaDeviceGetAttribute" else function
            if key in self.failing:
                return 100  # cudaErrorNoDevice
            if function == "cudaDeviceGetAttribute" and arguments[1:] != (0,):
                return 101  # cudaErrorInvalidDevice: the fake has one device, 0
            ctypes.cast(reference, ctypes.POINTER(ctypes.c_int)).contents.value = self.values[key]
            return 0
        return query


@pytest.fixture()
def cuda(monkeypatch):
    """Call inside ``installed_as_tensorrt``: it imports a fresh Polygraphy, whose polygraphy.cuda gets the fake."""
    def install(values=ORIN_LIKE, failing=()):
        import polygraphy.cuda

        runtime = FakeCudaRuntime(values, failing)
        monkeypatch.setattr(polygraphy.cuda, "wrapper", lambda: type("Wrapper", (), {"handle": runtime})())
    return install


def test_gpu_facts_from_tensorrt_and_the_cuda_runtime(cuda):
    standin = ContractStandIn.for_version("10.3.0")
    standin.on("Builder.platform_has_fast_int8", True)
    standin.on("Builder.num_DLA_cores", 2)  # test fake: AGX Orin's two DLA cores
    with installed_as_tensorrt(standin):
        cuda()
        facts = gpu.gpu_facts()
    assert facts == {"gpu_probe_errors": [], "platform_has_fast_int8": True, "dla_cores": 2,
                     "cuda_driver_version": "12.2", "cuda_runtime_version": "12.4", "cuda_devices": 1, "compute_capability": "8.7",
                     "gpu_arch": "sm_87"}
    (logger,) = standin.calls_to("Logger", "new")  # the INT8 query's builder logs warnings and worse only
    assert logger.args == (standin.module.Logger.WARNING,)
    (builder,) = standin.calls_to("Builder", "new")
    assert builder.args == (logger.obj,)


@pytest.mark.parametrize(("code", "version"), [(12010, "12.1"), (11080, "11.8"), (10020, "10.2"), (12090, "12.9")])
def test_cuda_version_codes_read_as_major_dot_minor(cuda, code, version):
    """CUDA encodes a version as 1000 * major + 10 * minor (cudaDriverGetVersion)."""
    with installed_as_tensorrt(ContractStandIn.for_version("10.3.0")):
        cuda({**ORIN_LIKE, "cudaDriverGetVersion": code, "cudaRuntimeGetVersion": code})
        facts = gpu.gpu_facts()
    assert facts["cuda_driver_version"] == facts["cuda_runtime_version"] == version


@pytest.mark.parametrize(("failing", "error"), [
    (("cudaGetDeviceCount",), "cudaGetDeviceCount returned CUDA error 100"),
    ((76,), "cudaDeviceGetAttribute(76) returned CUDA error 100"),
])
def test_a_cuda_query_that_fails_is_listed_and_the_facts_before_it_kept(cuda, failing, error):
    with installed_as_tensorrt(ContractStandIn.for_version("10.3.0")):
        cuda(failing=failing)
        facts = gpu.gpu_facts()
    assert facts["gpu_probe_errors"] == [f"CUDA runtime via polygraphy.cuda: RuntimeError: {error}"]
    assert (facts["cuda_driver_version"], facts["cuda_runtime_version"]) == ("12.2", "12.4")
    assert "compute_capability" not in facts


def test_a_tensorrt_without_the_int8_query_or_whose_builder_fails_says_so(cuda):
    """DERIVED surface: 10.3.0 without Builder.platform_has_fast_int8 (TensorRT 10 deprecated it; every recorded
    surface still lists it)."""
    with installed_as_tensorrt(ContractStandIn.without("10.3.0", "Builder.platform_has_fast_int8")):
        cuda()
        facts = gpu.gpu_facts()
    assert facts["platform_has_fast_int8"] is None and facts["dla_cores"] == 0
    assert facts["gpu_probe_errors"] == ["Builder.platform_has_fast_int8 is not in TensorRT 10.3.0"]
    standin = ContractStandIn.for_version("10.3.0")

    def no_gpu(*args):
        raise RuntimeError("no CUDA-capable device is detected")

    standin.on("Builder.platform_has_fast_int8", no_gpu)
    standin.on("Builder.num_DLA_cores", no_gpu)
    with installed_as_tensorrt(standin):
        cuda()
        facts = gpu.gpu_facts()
    assert facts["platform_has_fast_int8"] is None and facts["dla_cores"] is None
    assert facts["gpu_probe_errors"] == [f"Builder.{name}: RuntimeError: no CUDA-capable device is detected"
                                         for name in ("platform_has_fast_int8", "num_DLA_cores")]


@pytest.mark.parametrize(("major", "minor", "arch"), [(8, 7, "sm_87"), (11, 0, "sm_110"), (8, 6, "sm_86"),
                                                      (12, 0, "sm_120")])
def test_the_compute_capability_is_recorded_with_its_architecture_name(cuda, major, minor, arch):
    """Orin is sm_87, Thor sm_110, an RTX 30x0 sm_86, an RTX 50x0 sm_120: the name targets and claims use."""
    with installed_as_tensorrt(ContractStandIn.for_version("10.16.1.11")):
        cuda({**ORIN_LIKE, 75: major, 76: minor})
        facts = gpu.gpu_facts()
    assert facts["compute_capability"] == f"{major}.{minor}" and facts["gpu_arch"] == arch


def test_the_probe_reads_the_facts_in_a_child_process_and_reports_one_that_dies(monkeypatch):
    import os

    parent = os.getpid()
    monkeypatch.setattr(gpu, "gpu_facts", lambda: {"gpu_probe_errors": [], "pid_is_parent": os.getpid() == parent})
    assert gpu.probe_gpu() == {"gpu_probe_errors": [], "pid_is_parent": False}

    def crash():
        os._exit(3)

    monkeypatch.setattr(gpu, "gpu_facts", crash)
    assert gpu.probe_gpu() == {"gpu_probe_errors": ["the GPU probe process ended without facts (crash: exited with "
                                                    "status 3 without a result)"]}
