"""Docker for the container tests: a reachable engine, the base image, and ORT worker images built once.

The rule: when Docker is unreachable, the container tests FAIL under CI (CI=true), where .ci/run provisions Docker
first, and are skipped with the reason everywhere else.
"""
from __future__ import annotations

import os

import pytest

from harness.orchestration.docker.images import BuildInputs, build_image, find_image
from harness.orchestration.docker.wheelhouse import DEFAULT_WHEELHOUSE, REQUIREMENTS_FILE, fill_wheelhouse, wheelhouse_spec
from harness.matrix import Target, load_matrix

LOCAL_BASE_IMAGE = "trt-matrix/debian-python:bookworm"  # made by containers/provision-docker.sh (no registry here)


def docker_missing(reason: str) -> None:
    """Fail under CI, skip elsewhere."""
    if os.environ.get("CI") == "true":
        pytest.fail(f"CI=true and {reason}. .ci/run must provision Docker first (containers/provision-docker.sh).",
                    pytrace=False)
    pytest.skip(f"{reason} (run containers/provision-docker.sh as root to get Docker and the base image)")


@pytest.fixture(scope="session")
def docker_client():
    import docker

    try:
        client = docker.from_env(timeout=30)
        client.ping()
    except Exception as err:  # the SDK raises several types for "no engine"
        docker_missing(f"no Docker engine answers at {os.environ.get('DOCKER_HOST') or 'the local socket'} ({err})")
    return client


@pytest.fixture(scope="session")
def base_image(docker_client) -> str:
    """The base image ORT worker images are built on here: BASE_IMAGE, else the provisioned local one."""
    name = os.environ.get("BASE_IMAGE") or LOCAL_BASE_IMAGE
    try:
        docker_client.images.get(name)
    except Exception as err:
        docker_missing(f"the base image {name} is not on the engine ({err})")
    return name


def ort_targets() -> list[Target]:
    """Docker ONNX Runtime targets of matrix.yaml, oldest version first."""
    targets = [t for t in load_matrix().values() if t.runner == "docker" and t.backend == "onnxruntime"]
    return sorted(targets, key=lambda t: tuple(int(p) for p in t.version.split(".")))


@pytest.fixture(scope="session")
def ort_images(docker_client, base_image) -> dict[str, Target]:
    """The oldest and the newest ORT targets with their images on the engine (an existing image is reused)."""
    chosen = ort_targets()[0], ort_targets()[-1]
    for target in chosen:
        if find_image(docker_client, target) is not None:
            continue
        if not (DEFAULT_WHEELHOUSE / target.id / REQUIREMENTS_FILE).is_file():
            fill_wheelhouse(wheelhouse_spec(target), DEFAULT_WHEELHOUSE / target.id)
        build_image(docker_client, target, BuildInputs(base_image=base_image), log=lambda line: None)
    return {t.id: t for t in chosen}
