"""The TensorRT recipes cannot be built here (no NGC/L4T registry, no GPU): their pins are checked by reading them.

Each docker TensorRT target's Dockerfile must pin, through ``ARG BASE_IMAGE=...``, the image that platforms.md
names for the target's TensorRT version, and label the same TensorRT version as matrix.yaml.
"""
from __future__ import annotations

import re

import pytest

from harness.orchestration.docker.images import RECIPES_DIR, copied_sources, declared_args
from harness.orchestration.docker.wheelhouse import RECIPE_PYTHON, TENSORRT_FROM_NVIDIA_INDEX
from harness.matrix import load_matrix
from tests.conftest import SHARED_REFERENCE

PLATFORMS_MD = SHARED_REFERENCE / "platforms.md"
TENSORRT_LABEL = re.compile(r'org\.trt-matrix\.tensorrt="([^"]+)"')

DOCKER_TARGETS = [t for t in load_matrix().values() if t.runner == "docker" and t.available]
TRT_TARGETS = [t for t in DOCKER_TARGETS if t.backend == "tensorrt"]


def dockerfile_text(target) -> str:
    return (RECIPES_DIR / target.recipe / "Dockerfile").read_text()


def platforms_rows() -> list[list[str]]:
    """Table rows of platforms.md as lists of cells (header and separator rows included; they match nothing)."""
    if not PLATFORMS_MD.exists():
        pytest.skip(f"{PLATFORMS_MD} is not beside the repository (shared/ comes with the project's checkout)")
    return [[cell.strip() for cell in line.strip().strip("|").split("|")]
            for line in PLATFORMS_MD.read_text().splitlines() if line.startswith("|")]


def short_name(image: str) -> str:
    """``name:tag`` of an image reference, without registry and namespace (platforms.md writes both forms)."""
    return image.rsplit("/", 1)[-1]


def rows_for(target) -> list[list[str]]:
    """platforms.md rows that give the target's TensorRT version in a cell of their own."""
    return [row for row in platforms_rows() if any(cell.startswith(target.version) for cell in row)]


@pytest.mark.parametrize("target", DOCKER_TARGETS, ids=lambda t: t.id)
def test_every_docker_target_has_a_recipe_with_an_overridable_base(target):
    text = dockerfile_text(target)
    assert declared_args(text).get("BASE_IMAGE"), f"{target.recipe}: no `ARG BASE_IMAGE=<pin>` before FROM"
    stages = set()
    for line in text.splitlines():
        if line.startswith("FROM "):
            words = line.split()
            assert words[1] == "${BASE_IMAGE}" or words[1] in stages, f"{target.recipe}: {line!r} bypasses BASE_IMAGE"
            stages.update(words[3:4] if len(words) > 3 and words[2].upper() == "AS" else [])
    assert "USER 65534:65534" in text, f"{target.recipe}: the worker image must run as nobody"
    assert target.recipe in RECIPE_PYTHON, f"{target.recipe}: no Python/glibc facts for its wheelhouse"


@pytest.mark.parametrize("target", TRT_TARGETS, ids=lambda t: t.id)
def test_tensorrt_label_matches_matrix_version(target):
    labels = TENSORRT_LABEL.findall(dockerfile_text(target))
    assert labels == [target.version], f"{target.recipe}: TensorRT label {labels}, matrix.yaml says {target.version}"


@pytest.mark.parametrize("target", TRT_TARGETS, ids=lambda t: t.id)
def test_base_image_pin_is_the_platforms_md_image_of_that_tensorrt(target):
    pin = declared_args(dockerfile_text(target))["BASE_IMAGE"]
    rows = rows_for(target)
    assert rows, f"platforms.md has no row with TensorRT {target.version} ({target.id})"
    assert any(short_name(pin) in " ".join(row) for row in rows), (
        f"{target.recipe} pins {pin}, but the platforms.md rows of TensorRT {target.version} name other images: {rows}")


@pytest.mark.parametrize("target", TRT_TARGETS, ids=lambda t: t.id)
def test_platform_and_python_agree_with_the_base_image(target):
    pin = declared_args(dockerfile_text(target))["BASE_IMAGE"]
    assert ("l4t-jetpack" in pin) == (target.platform == "orin"), f"{target.id}: {pin} on platform {target.platform}"
    python = RECIPE_PYTHON[target.recipe].python_version
    header = next(row for row in platforms_rows() if "image" in row and "TensorRT" in row)
    if "Python" in header:  # the x86 table says which Python each image has
        for row in rows_for(target):
            if len(row) == len(header) and short_name(pin) in " ".join(row):
                assert row[header.index("Python")].startswith(python), f"{target.id}: {row} vs Python {python}"
    if pin.endswith(":r35.4.1"):  # JetPack 5 is Ubuntu 20.04
        assert python == "3.8"


def test_trt92_installs_the_wheel_platforms_md_names():
    target = load_matrix()["trt92-x86"]
    (row,) = [r for r in rows_for(target) if "tensorrt==" in " ".join(r)]
    assert TENSORRT_FROM_NVIDIA_INDEX[target.id] in " ".join(row)


def test_trt100_orin_copies_the_l4t_tarball_platforms_md_names():
    target = load_matrix()["trt100-orin"]
    tarballs = [s for s in copied_sources(dockerfile_text(target)) if s.endswith(".tar.gz")]
    assert len(tarballs) == 1
    assert any(tarballs[0] in " ".join(row) for row in rows_for(target)), tarballs
