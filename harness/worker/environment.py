"""The environment a cell actually ran in, observed from inside it (never taken from the target's nominal values)."""
from __future__ import annotations

import os
import platform
import shutil
import subprocess
from pathlib import Path
from typing import Any

from harness.tensorrt.platforms import ANY_GPU_ARCH

TEGRA_RELEASE = Path("/etc/nv_tegra_release")
IMAGE_ENV = "TRT_MATRIX_IMAGE"  # set by the Docker runner: "<image id> <repo digest or tag>"


def arch_mismatch(expected: str | None, observed: str | None) -> str | None:
    """A message when the GPU the cell ran on is not the architecture the target expects ("any" expects nothing)."""
    if not expected or expected == ANY_GPU_ARCH:
        return None
    if not observed:
        return f"expected GPU architecture {expected}, but the GPU's compute capability could not be observed"
    if observed != expected:
        return f"expected GPU architecture {expected}, observed {observed}"
    return None


def package_version(name: str) -> str | None:
    from importlib import metadata  # here: importing it costs every command's start

    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith(("model name", "Model", "Hardware")):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def nvidia_gpus() -> list[dict[str, str]]:
    """GPUs as nvidia-smi reports them (name, compute capability, driver); empty where there is none."""
    if shutil.which("nvidia-smi") is None:
        return []
    query = "name,compute_cap,driver_version"
    try:
        out = subprocess.run(["nvidia-smi", f"--query-gpu={query}", "--format=csv,noheader"],
                             capture_output=True, text=True, timeout=20, check=True).stdout
    except (subprocess.SubprocessError, OSError) as err:
        return [{"error": f"nvidia-smi failed: {err}"}]
    return [dict(zip(query.split(","), (v.strip() for v in line.split(",")))) for line in out.splitlines() if line]


def observe(backend_environment: dict[str, Any]) -> dict[str, Any]:
    """Versions, CPU/GPU, driver, Jetson release and container image of this process's environment."""
    env = {
        "python": platform.python_version(),
        "machine": platform.machine(),
        "os": platform.platform(),
        "cpu": cpu_model(),
        "cpu_count": os.cpu_count(),
        "numpy": package_version("numpy"),
        "onnx": package_version("onnx"),
        "gpus": nvidia_gpus(),
        "nv_tegra_release": TEGRA_RELEASE.read_text().splitlines()[0] if TEGRA_RELEASE.exists() else None,
        "container_image": os.environ.get(IMAGE_ENV),
    }
    env.update(backend_environment)
    return env


def version_mismatch(nominal: str | None, observed: str | None) -> str | None:
    """A message when the observed library version is not the nominal one (compared on the nominal's parts)."""
    if not nominal:
        return None
    if not observed:
        return f"nominal version {nominal}, but the library's version could not be observed"
    parts = nominal.split(".")
    if observed.split(".")[: len(parts)] != parts:
        return f"nominal version {nominal}, observed {observed}"
    return None
