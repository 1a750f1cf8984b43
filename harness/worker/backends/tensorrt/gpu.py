"""GPU facts (INT8 support, DLA cores, CUDA versions, devices, compute capability and architecture), read in a
forked child: a process that has initialised CUDA cannot hand it to the cell processes it forks."""
from __future__ import annotations

import ctypes
from typing import Any

from harness.tensorrt.platforms import gpu_arch
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
    try:
        builder = trt.Builder(trt.Logger(trt.Logger.WARNING))
    except Exception as err:
        builder = None
        facts["gpu_probe_errors"].append(f"trt.Builder: {type(err).__name__}: {err}")
    for key, api, read in (("platform_has_fast_int8", "Builder.platform_has_fast_int8", bool),
                           ("dla_cores", "Builder.num_DLA_cores", int)):  # DLA engines: 2 on AGX Orin, 0 elsewhere
        facts[key] = None
        if tensorrt_api(trt, api) is None:
            facts["gpu_probe_errors"].append(f"{api} is not in TensorRT {trt.__version__}")
        elif builder is not None:
            try:
                facts[key] = read(getattr(builder, api.split(".")[1]))
            except Exception as err:
                facts["gpu_probe_errors"].append(f"{api}: {type(err).__name__}: {err}")
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
        facts["gpu_arch"] = gpu_arch(facts["compute_capability"])
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
