"""The one TensorRT recipe, built for real on the local Debian image with stand-ins: no TensorRT is involved.

NGC and L4T images are out of reach here, so these builds check the recipe's own steps (the python stage, pip from
its wheel into the worker's site directory, a tarball's libraries and the wheel for the image's Python, labels,
user) on ``trt-matrix/debian-python:bookworm``, with a stand-in wheelhouse and a stand-in tarball whose "tensorrt"
wheel only holds a version string.
"""
from __future__ import annotations

import base64
import ensurepip
import hashlib
import io
import json
import shutil
import tarfile
import zipfile
from pathlib import Path

import docker.errors
import pytest

from harness.matrix import load_matrix
from harness.orchestration.docker.images import (
    LABEL_TARGET,
    BuildInputs,
    ImageBuildError,
    build_image,
    image_tag,
)
from harness.orchestration.docker.wheelhouse import REQUIREMENTS_FILE

MATRIX = load_matrix()
IMAGE_PYTHON_TAG = "cp311-none-linux_x86_64"  # the Python of trt-matrix/debian-python:bookworm
PROBE = """
import json, os, sys
try:
    import tensorrt
    found = {"version": tensorrt.__version__, "file": tensorrt.__file__}
except ImportError:
    found = None
try:
    import standin_requirement
    requirement = standin_requirement.__file__
except ImportError:
    requirement = None
print(json.dumps({"tensorrt": found, "requirement": requirement, "uid": os.getuid(), "cwd": os.getcwd(),
                  "opt_tensorrt": sorted(os.listdir("/opt/tensorrt")), "ld": os.environ.get("LD_LIBRARY_PATH", "")}))
"""


def standin_wheel(directory: Path, name: str, version: str, tag: str) -> Path:
    """A minimal wheel whose one module holds its version string."""
    dist = f"{name}-{version}.dist-info"
    files = {f"{name}/__init__.py": f'__version__ = "{version}"\n',
             f"{dist}/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n",
             f"{dist}/WHEEL": f"Wheel-Version: 1.0\nGenerator: trt-matrix-tests\nRoot-Is-Purelib: false\nTag: {tag}\n"}
    record = [f"{path},sha256={base64.urlsafe_b64encode(hashlib.sha256(text.encode()).digest()).decode().rstrip('=')},"
              f"{len(text.encode())}" for path, text in files.items()] + [f"{dist}/RECORD,,"]
    files[f"{dist}/RECORD"] = "\n".join(record) + "\n"
    path = directory / f"{name}-{version}-{tag}.whl"
    with zipfile.ZipFile(path, "w") as wheel:
        for member, text in files.items():
            wheel.writestr(member, text)
    return path


def standin_wheelhouse(root: Path, target_id: str, *requirements: str) -> Path:
    """A wheelhouse with pip's own wheel (the recipe runs pip from it) and stand-in wheels for REQUIREMENTS."""
    bundled = sorted((Path(ensurepip.__file__).parent / "_bundled").glob("pip-*.whl"))
    if not bundled:
        pytest.skip("this Python's ensurepip carries no pip wheel to put into the stand-in wheelhouse")
    directory = root / target_id
    directory.mkdir(parents=True)
    shutil.copy(bundled[-1], directory)
    for name in requirements:
        standin_wheel(directory, name, "1.0", "py3-none-any")
    (directory / REQUIREMENTS_FILE).write_text("# stand-in wheelhouse\n" + "".join(f"{n}\n" for n in requirements))
    return root


def standin_tarball(path: Path, version: str, wheel_tags: tuple[str, ...]) -> Path:
    """A tarball laid out like NVIDIA's (TensorRT-<v>/lib, bin, include, python/*.whl) with stand-in contents."""
    top = path.name.removesuffix(".tar.gz")
    with tarfile.open(path, "w:gz") as tar:
        def add(member: str, data: bytes) -> None:
            info = tarfile.TarInfo(f"{top}/{member}")
            info.size, info.mode = len(data), 0o755
            tar.addfile(info, io.BytesIO(data))

        add("lib/libnvinfer.so.10", b"stand-in")
        add("bin/trtexec", b"#!/bin/sh\necho stand-in\n")
        add("include/NvInfer.h", b"// stand-in\n")
        for tag in wheel_tags:
            for name in ("tensorrt", "tensorrt_lean"):
                wheel = standin_wheel(path.parent, name, version, tag)
                add(f"python/{wheel.name}", wheel.read_bytes())
                wheel.unlink()
    return path


@pytest.fixture()
def built(docker_client, base_image):
    """Build a target's image, probe it and remove it afterwards."""
    tags = []

    def build(target, inputs: BuildInputs) -> tuple[object, dict]:
        tags.append(image_tag(target))
        image = build_image(docker_client, target, inputs, log=lambda line: None)
        output = docker_client.containers.run(image.id, ["python3", "-c", PROBE], remove=True, network_disabled=True)
        return image, json.loads(output)

    yield build
    for tag in tags:
        try:
            docker_client.images.remove(tag, force=True)
        except docker.errors.ImageNotFound:  # the build failed: nothing to remove
            continue


def standin_target(model: str, target_id: str, base_image: str, **changes):
    return MATRIX[model]._replace(id=target_id, platform="x86_64", gpu="none", base_image=base_image,
                                  python="3.11", glibc="2.36", **changes)


def test_a_target_whose_image_brings_tensorrt_gets_the_wheelhouse_in_its_site_directory(built, base_image, tmp_path):
    target = standin_target("trt86-x86", "standin-image-tensorrt", base_image)
    wheelhouse = standin_wheelhouse(tmp_path / "wheelhouse", target.id, "standin_requirement")
    image, probe = built(target, BuildInputs(wheelhouse_dir=wheelhouse))
    assert image.labels["org.trt-matrix.tensorrt"] == "8.6.1" and image.labels[LABEL_TARGET] == target.id
    assert probe["requirement"].startswith("/opt/trt-matrix/site/standin_requirement/")
    assert probe["tensorrt"] is None  # the stand-in base has none, and the recipe added none
    assert probe["opt_tensorrt"] == []
    assert (probe["uid"], probe["cwd"]) == (65534, "/work")


def test_a_tarball_replaces_the_image_tensorrt_with_its_libraries_and_its_wheel_for_this_python(built, base_image,
                                                                                              tmp_path):
    name = "TensorRT-10.0.1.6.standin.tar.gz"
    target = standin_target("trt100-orin", "standin-tarball", base_image, tensorrt_tarball=name)
    tarball = standin_tarball(tmp_path / name, "10.0.1", ("cp310-none-linux_x86_64", IMAGE_PYTHON_TAG))
    wheelhouse = standin_wheelhouse(tmp_path / "wheelhouse", target.id)
    image, probe = built(target, BuildInputs(wheelhouse_dir=wheelhouse, provided_files=(tarball,)))
    assert image.labels["org.trt-matrix.tensorrt"] == "10.0.1"
    assert probe["tensorrt"] == {"version": "10.0.1", "file": "/opt/trt-matrix/site/tensorrt/__init__.py"}
    assert probe["opt_tensorrt"] == ["bin", "lib"]  # headers, samples and wheels stay behind
    assert probe["ld"].split(":")[0] == "/opt/tensorrt/lib"


def test_a_tarball_without_a_wheel_for_the_image_python_fails_the_build_saying_so(built, base_image, tmp_path):
    name = "TensorRT-10.0.1.6.standin.tar.gz"
    target = standin_target("trt100-orin", "standin-tarball-other-python", base_image, tensorrt_tarball=name)
    tarball = standin_tarball(tmp_path / name, "10.0.1", ("cp310-none-linux_x86_64",))
    wheelhouse = standin_wheelhouse(tmp_path / "wheelhouse", target.id)
    with pytest.raises(ImageBuildError) as caught:
        built(target, BuildInputs(wheelhouse_dir=wheelhouse, provided_files=(tarball,)))
    assert f"{name} has no single python/tensorrt-10.*-cp311-*.whl" in caught.value.describe()
