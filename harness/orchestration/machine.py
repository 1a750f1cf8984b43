"""The machine a nightly runs on, apart from the series it adds to.

``--host`` names a series (a host kind in the workflow: any runner of a pool continues the same line); the machine
is the one box that ran tonight: its name (``--machine``, which the workflow gives as the runner's name, else
``--host``, else the hostname), its kind, its GPUs and their architecture. The GPU comes from
``nvidia-smi`` where there is one, else from a Jetson's device tree; a CPU-only machine has no GPU and no
architecture.
"""
from __future__ import annotations

import platform
import re
import socket
from pathlib import Path
from typing import Any

from harness.tensorrt.platforms import compute_capability, gpu_arch
from harness.worker.environment import nvidia_gpus

DEVICE_TREE_MODEL = Path("/proc/device-tree/model")
# A Jetson's module name -> its GPU architecture (Orin: Ampere sm_87; Thor: Blackwell sm_110).
JETSON_ARCH = (("thor", "sm_110"), ("orin", "sm_87"), ("xavier", "sm_72"))


def machine_name(explicit: str | None, host: str | None) -> str:
    """The machine's name: --machine, else --host, else the hostname."""
    return explicit or host or socket.gethostname().split(".")[0] or "localhost"


def observed_gpus() -> list[dict[str, str]]:
    """Each GPU nvidia-smi lists (name, compute capability, driver), else the Jetson module of the device tree."""
    gpus = [{"name": g["name"], "compute_capability": g.get("compute_cap", ""),
             "driver_version": g.get("driver_version", "")} for g in nvidia_gpus() if g.get("name")]
    if gpus:
        return gpus
    try:
        model = DEVICE_TREE_MODEL.read_text(errors="replace").strip("\x00 \n")
    except OSError:
        return []
    for word, arch in JETSON_ARCH:
        if word in model.lower():
            return [{"name": model, "compute_capability": compute_capability(arch), "driver_version": ""}]
    return []


def architecture_of(gpus: list[dict[str, str]]) -> str | None:
    """The machine's GPU architecture (sm_89); with GPUs of several architectures, the first GPU's (the one cells
    run on unless CUDA_VISIBLE_DEVICES says otherwise)."""
    return gpu_arch(gpus[0].get("compute_capability")) if gpus else None


def machine_facts(name: str, kind: str | None, gpus: list[dict[str, str]] | None = None) -> dict[str, Any]:
    """What run.json says about the machine: name, kind, GPUs, architecture, OS and CPU."""
    gpus = observed_gpus() if gpus is None else gpus
    return {"name": name, "kind": kind, "gpus": gpus, "gpu_arch": architecture_of(gpus),
            "os": f"{platform.system()} {platform.release()}", "cpu": platform.machine(),
            "hostname": socket.gethostname()}


_ARCH = re.compile(r"^sm_\d{2,3}$")


def valid_arch(text: str) -> bool:
    return bool(_ARCH.match(text))
