"""The platforms TensorRT targets run on and how a GPU architecture is named: ``sm_`` and the compute capability's
digits (sm_87 is 8.7, Orin; sm_110 is 11.0, Thor), or "any"."""
from __future__ import annotations

import re

PLATFORMS = ("any", "x86_64", "orin", "thor")
# The GPU architecture a Jetson platform always has (platforms.md: Orin sm_87; platforms-2026.md: Thor sm_110); an x86
# target expects a named architecture or "any" (whatever GPU the host has: hosts of several GPUs, one column each).
PLATFORM_ARCH = {"orin": "sm_87", "thor": "sm_110"}
JETSON_PLATFORMS = tuple(PLATFORM_ARCH)

ANY_GPU_ARCH = "any"
GPU_ARCH_FORM = re.compile(r"^(?:sm_\d{2,3}|any)$")


def gpu_arch(compute_capability: str | None) -> str | None:
    """``sm_87`` from the compute capability ``8.7`` (``sm_110`` from ``11.0``); None when it is not known."""
    if not compute_capability or not re.match(r"^\d+\.\d+$", compute_capability):
        return None
    major, minor = compute_capability.split(".")
    return f"sm_{major}{minor}"


def compute_capability(arch: str | None) -> str | None:
    """``8.7`` from the GPU architecture ``sm_87`` (``11.0`` from ``sm_110``); None for "any" or when not known."""
    match = re.match(r"^sm_(\d+)(\d)$", arch or "")
    return f"{match.group(1)}.{match.group(2)}" if match else None
