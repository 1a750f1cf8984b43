"""``trt-matrix doctor``: what this environment can run, observed, never assumed."""
from __future__ import annotations

import os
from typing import Any

from harness.worker.environment import observe, package_version


def onnxruntime_status() -> dict[str, Any]:
    try:
        import onnxruntime
    except ImportError as err:
        return {"importable": False, "error": str(err)}
    return {"importable": True, "version": onnxruntime.__version__, "providers": onnxruntime.get_available_providers()}


def tensorrt_status() -> dict[str, Any]:
    from harness.worker.backends.tensorrt.doctor import tensorrt_doctor

    return tensorrt_doctor()


def docker_status() -> dict[str, Any]:
    try:
        import docker
    except ImportError as err:
        return {"reachable": False, "error": f"docker SDK not installed: {err}"}
    try:
        client = docker.from_env(timeout=5)
        version = client.version()
    except Exception as err:  # the SDK raises several types for "no engine"
        return {"reachable": False, "docker_host": os.environ.get("DOCKER_HOST"), "error": str(err)}
    return {"reachable": True, "docker_host": os.environ.get("DOCKER_HOST"), "engine_version": version.get("Version")}


def diagnose() -> dict[str, Any]:
    return {
        "environment": observe({}),
        "onnxruntime": onnxruntime_status(),
        "tensorrt": tensorrt_status(),
        "polygraphy": package_version("polygraphy"),
        "onnx_graphsurgeon": package_version("onnx-graphsurgeon") or package_version("onnx_graphsurgeon"),
        "docker": docker_status(),
    }
