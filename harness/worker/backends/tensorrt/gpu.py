"""GPU facts (INT8 support, CUDA versions, devices, compute capability), read in a forked child: a process that has
initialised CUDA cannot hand it to the cell processes it forks."""
from __future__ import annotations

import ctypes
from typing import Any

from harness.worker.backends.tensorrt.compat import tensorrt_api
from harness.worker.backends.tensorrt.lazy import lazy_import, resolve
from harness.worker.isolation import run_isolated

tensorrt = lazy_import("tensorrt")
polygraphy_cuda = lazy_import("polygraphy.cuda")
PROBE_TIMEOUT_S = 120.0  # a probe still running after this is killed and reported, so a hung driver stops nothing


def gpu_facts() -> dict[str, Any]:
    """What needs CUDA: run only in a throwaway process (see probe_gpu). Each fact is guarded; errors are listed."""
    trt = resolve(tensorrt)
    facts: dict[str, Any] = {"gpu_probe_errors": []}
    if tensorrt_api(trt, "Builder.platform_has_fast_int8") is None:
        facts["platform_has_fast_int8"] = None
        facts["gpu_probe_errors"].append(f"Builder.platform_has_fast_int8 is not in TensorRT {trt.__version__}")
    else:
        try:
            facts["platform_has_fast_int8"] = bool(trt.Builder(trt.Logger(trt.Logger.WARNING)).platform_has_fast_int8)
        except Exception as err:
            facts["gpu_probe_errors"].append(f"trt.Builder: {type(err).__name__}: {err}")
    try:
        runtime = polygraphy_cuda.wrapper().handle
        queries = (("cuda_driver_version", "cudaDriverGetVersion"), ("cuda_runtime_version", "cudaRuntimeGetVersion"),
                   ("cuda_devices", "cudaGetDeviceCount"))
        for key, function in queries:
            value = ctypes.c_int(0)
            status = getattr(runtime, function)(ctypes.byref(value))
            if status != 0:
                raise RuntimeError(f"{function} returned CUDA error {status}")
            facts[key] = value.value if key == "cuda_devices" else f"{value.value // 1000}.{value.value % 1000 // 10}"
        major, minor = ctypes.c_int(0), ctypes.c_int(0)
        for value, attribute in ((major, 75), (minor, 76)):  # cudaDevAttrComputeCapabilityMajor / Minor, device 0
            status = runtime.cudaDeviceGetAttribute(ctypes.byref(value), attribute, 0)
            if status != 0:
                raise RuntimeError(f"cudaDeviceGetAttribute({attribute}) returned CUDA error {status}")
        facts["compute_capability"] = f"{major.value}.{minor.value}"
    except Exception as err:
        facts["gpu_probe_errors"].append(f"CUDA runtime via polygraphy.cuda: {type(err).__name__}: {err}")
    return facts


def probe_gpu(timeout_s: float = PROBE_TIMEOUT_S) -> dict[str, Any]:
    """:func:`gpu_facts` read in a forked child, so this process never initialises CUDA before it forks cells."""
    ends = []
    run_isolated([None], lambda _task: gpu_facts(), jobs=1, timeout_s=timeout_s, on_end=ends.append)
    (end,) = ends  # run_isolated ends every task it starts, or raises
    if end.kind == "result":
        return end.result
    return {"gpu_probe_errors": [f"the GPU probe process ended without facts ({end.kind}: {end.detail})"]}
