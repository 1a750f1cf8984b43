"""The TensorRT images cannot be built here (no NGC/L4T registry, no GPU): their pins are checked by reading them.

Every docker target's facts live in matrix.yaml and reach its recipe as build args. These tests check the pins
(base image, Python, CUDA, driver, TensorRT wheel and tarball) against platforms.md, that the one TensorRT recipe
takes them from its build args, and the build context and args the harness would send for each target.
"""
from __future__ import annotations

import dataclasses
import re

import pytest

from harness.matrix import load_matrix
from harness.orchestration.docker.images import (
    RECIPES_DIR,
    BuildInputs,
    MissingBuildInput,
    _instructions,
    declared_args,
    plan_build,
)
from harness.orchestration.docker.wheelhouse import REQUIREMENTS_FILE
from tests.conftest import SHARED_REFERENCE

PLATFORMS_MD = SHARED_REFERENCE / "platforms.md"
TENSORRT_RECIPE = "tensorrt"

DOCKER_TARGETS = [t for t in load_matrix().values() if t.runner == "docker" and t.available]
TRT_TARGETS = [t for t in DOCKER_TARGETS if t.backend == "tensorrt"]


def dockerfile_text(target) -> str:
    return (RECIPES_DIR / target.recipe / "Dockerfile").read_text()


def rendered(text: str, buildargs: dict[str, str]) -> list[tuple[str, str]]:
    """FROM and LABEL instructions with ``${NAME}`` replaced as Docker does: the build arg, else the ARG default."""
    values = {name: default or "" for name, default in declared_args(text).items()}
    values.update(buildargs)
    return [(word, re.sub(r"\$\{(\w+)\}", lambda m: values[m.group(1)], rest))
            for word, rest in _instructions(text) if word in ("FROM", "LABEL")]


def platforms_rows() -> list[list[str]]:
    """Table rows of platforms.md as lists of cells (header and separator rows included; they match nothing)."""
    if not PLATFORMS_MD.exists():
        pytest.skip(f"{PLATFORMS_MD} is not beside the repository (shared/ comes with the project's checkout)")
    return [[cell.strip() for cell in line.strip().strip("|").split("|")]
            for line in PLATFORMS_MD.read_text().splitlines() if line.startswith("|")]


def header_of(row: list[str]) -> list[str]:
    """The header row of the platforms.md table ``row`` belongs to (the nearest header above it)."""
    rows = platforms_rows()
    return next(r for r in reversed(rows[:rows.index(row)]) if "TensorRT" in r and "CUDA" in r)


def short_name(image: str) -> str:
    """``name:tag`` of an image reference, without registry and namespace (platforms.md writes both forms)."""
    return image.rsplit("/", 1)[-1]


def rows_for(target) -> list[list[str]]:
    """platforms.md rows that give the target's TensorRT version in a cell of their own."""
    return [row for row in platforms_rows() if any(cell.startswith(target.version) for cell in row)]


def row_of_image(target) -> list[str]:
    """The platforms.md row of the target's TensorRT version that names its base image."""
    (row,) = [row for row in rows_for(target) if short_name(target.base_image) in " ".join(row)]
    return row


@pytest.mark.parametrize("target", DOCKER_TARGETS, ids=lambda t: t.id)
def test_every_recipe_takes_its_base_image_from_the_matrix_and_runs_as_nobody(target):
    text = dockerfile_text(target)
    declared = declared_args(text)
    assert "BASE_IMAGE" in declared, f"{target.recipe}: no `ARG BASE_IMAGE` before FROM"
    assert declared["BASE_IMAGE"] is None, f"{target.recipe}: the pin belongs in matrix.yaml, not the recipe"
    stages = set()
    for line in text.splitlines():
        if line.startswith("FROM "):
            words = line.split()
            assert words[1] == "${BASE_IMAGE}" or words[1] in stages, f"{target.recipe}: {line!r} bypasses BASE_IMAGE"
            stages.update(words[3:4] if len(words) > 3 and words[2].upper() == "AS" else [])
    assert "USER 65534:65534" in text, f"{target.recipe}: the worker image must run as nobody"


def test_every_tensorrt_target_is_built_by_the_one_tensorrt_recipe():
    assert {t.recipe for t in TRT_TARGETS} == {TENSORRT_RECIPE}
    recipes = {p.name for p in RECIPES_DIR.iterdir() if (p / "Dockerfile").is_file()}
    assert recipes == {t.recipe for t in DOCKER_TARGETS}, "a recipe no target uses, or a target without its recipe"


@pytest.fixture()
def wheelhouse(tmp_path):
    """A wheelhouse root with a (stand-in) wheelhouse for every docker target: enough for a build plan."""
    for target in DOCKER_TARGETS:
        (tmp_path / target.id).mkdir()
        (tmp_path / target.id / REQUIREMENTS_FILE).write_text("polygraphy\n")
    return tmp_path


def plan_of(target, wheelhouse, tmp_path, **inputs):
    """The build the harness would send for ``target``, with its tarball (if it names one) passed by path."""
    passed = ()
    if target.tensorrt_tarball:
        (tmp_path / "downloads").mkdir(exist_ok=True)
        tarball = tmp_path / "downloads" / target.tensorrt_tarball
        tarball.write_bytes(b"stand-in")
        passed = (tarball,)
    return plan_build(target, BuildInputs(wheelhouse_dir=wheelhouse, provided_files=passed, **inputs))


@pytest.mark.parametrize("target", TRT_TARGETS, ids=lambda t: t.id)
def test_the_build_sends_the_matrix_facts_as_build_args(target, wheelhouse, tmp_path):
    plan = plan_of(target, wheelhouse, tmp_path)
    expected = {"BASE_IMAGE": target.base_image, "TENSORRT_VERSION": target.version}
    if target.tensorrt_tarball:
        expected["TENSORRT_TARBALL"] = target.tensorrt_tarball
    assert plan.buildargs == expected
    assert plan.network == ("default" if target.id == "trt92-x86" else "none")
    # The image is FROM the matrix's pin and labelled with the matrix's version.
    instructions = rendered(dockerfile_text(target), plan.buildargs)
    assert {rest.split()[0] for word, rest in instructions if word == "FROM"} >= {target.base_image}
    labels = " ".join(rest for word, rest in instructions if word == "LABEL")
    assert f'org.trt-matrix.tensorrt="{target.version}"' in labels
    # --base-image / BASE_IMAGE overrides the pin for one build, and nothing else.
    other = plan_of(target, wheelhouse, tmp_path, base_image="local/image:1")
    assert other.buildargs == {**expected, "BASE_IMAGE": "local/image:1"} and other.base_image == "local/image:1"


@pytest.mark.parametrize("target", TRT_TARGETS, ids=lambda t: t.id)
def test_the_build_context_holds_the_recipe_the_wheelhouse_and_only_the_files_the_target_names(target, wheelhouse,
                                                                                            tmp_path):
    context = plan_of(target, wheelhouse, tmp_path).context
    provided = {f"provided/{target.tensorrt_tarball}"} if target.tensorrt_tarball else set()
    assert set(context) == {"Dockerfile", "wheelhouse", "provided"} | provided
    assert context["Dockerfile"] == RECIPES_DIR / TENSORRT_RECIPE / "Dockerfile"
    assert context["wheelhouse"] == wheelhouse / target.id
    assert context["provided"] is None  # an empty directory when no file is passed


def test_a_tarball_under_another_name_is_refused_naming_the_one_the_matrix_wants(wheelhouse, tmp_path):
    target = load_matrix()["trt100-orin"]
    other = tmp_path / "TensorRT-10.3.0.26.l4t.aarch64-gnu.cuda-12.6.tar.gz"
    other.write_bytes(b"stand-in")
    with pytest.raises(MissingBuildInput) as caught:
        plan_build(target, BuildInputs(wheelhouse_dir=wheelhouse, provided_files=(other,)))
    assert target.tensorrt_tarball in str(caught.value) and str(other) in str(caught.value)
    assert "tensorrt_tarball in matrix.yaml" in str(caught.value)


def test_a_target_naming_a_tarball_needs_a_recipe_that_copies_provided_files(wheelhouse, tmp_path):
    recipe = tmp_path / "recipes" / "plain"
    recipe.mkdir(parents=True)
    (recipe / "Dockerfile").write_text("ARG BASE_IMAGE\nFROM ${BASE_IMAGE}\nCOPY wheelhouse /wheelhouse\n")
    target = dataclasses.replace(load_matrix()["trt100-orin"], recipe="plain")
    tarball = tmp_path / target.tensorrt_tarball
    tarball.write_bytes(b"stand-in")
    with pytest.raises(MissingBuildInput, match="does not COPY provided/"):
        plan_build(target, BuildInputs(recipes_dir=recipe.parent, wheelhouse_dir=wheelhouse, provided_files=(tarball,)))


def check_pins_against_platforms_md(target) -> None:
    """A TensorRT target's base image is the platforms.md image of its TensorRT version, with that row's Python,
    CUDA and minimum driver."""
    rows = rows_for(target)
    assert rows, f"platforms.md has no row with TensorRT {target.version} ({target.id})"
    assert any(short_name(target.base_image) in " ".join(row) for row in rows), (
        f"{target.id} pins {target.base_image}, but the platforms.md rows of TensorRT {target.version} name other "
        f"images: {rows}")
    assert ("l4t-jetpack" in target.base_image) == (target.platform == "orin"), (
        f"{target.id}: {target.base_image} on platform {target.platform}")
    row = row_of_image(target)
    header = header_of(row)
    if "Python" in header:  # the x86 table says which Python each image has
        assert row[header.index("Python")].startswith(target.python), f"{target.id}: {row} vs Python {target.python}"
    if target.base_image.endswith(":r35.4.1"):  # JetPack 5 is Ubuntu 20.04
        assert (target.python, target.glibc) == ("3.8", "2.31")
    assert row[header.index("CUDA")] == target.cuda, f"{target.id}: {row} vs CUDA {target.cuda}"
    if "min driver" in header:
        assert row[header.index("min driver")].split()[0] == str(target.min_driver), f"{target.id}: {row}"
    else:  # a Jetson's driver comes with its L4T release
        assert target.min_driver is None


@pytest.mark.parametrize("target", TRT_TARGETS, ids=lambda t: t.id)
def test_base_image_python_cuda_and_driver_are_the_platforms_md_row_of_that_tensorrt(target):
    check_pins_against_platforms_md(target)


def test_trt92_installs_the_wheel_platforms_md_names():
    target = load_matrix()["trt92-x86"]
    assert target.tensorrt_wheel
    assert re.search(re.escape(target.tensorrt_wheel) + r"(?![\w.])", " ".join(row_of_image(target)))


def test_trt100_orin_takes_the_l4t_tarball_platforms_md_names():
    target = load_matrix()["trt100-orin"]
    assert target.tensorrt_tarball and target.tensorrt_tarball in " ".join(row_of_image(target))
