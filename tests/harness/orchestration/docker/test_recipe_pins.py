"""The TensorRT images cannot be built here (no NGC/L4T registry, no GPU): their pins are checked by reading them.

Every docker target's facts live in matrix.yaml and reach its recipe as build args. These tests check the pins
(base image, Python, CUDA, driver, TensorRT wheel and tarball) against platforms.md and platforms-2026.md (a fact
neither table gives must carry its own source in the target's ``sources``), that the one TensorRT recipe takes them
from its build args, the build context and args the harness would send for each target, and what
``containers build TARGET --dry-run`` shows of it.
"""
from __future__ import annotations

import re

import pytest

from harness.matrix import load_matrix
from harness.orchestration.docker.images import (
    RECIPES_DIR,
    BuildInputs,
    MissingBuildInput,
    declared_args,
    plan_build,
    rendered_instructions,
)
from harness.orchestration.docker.wheelhouse import REQUIREMENTS_FILE, TENSORRT_COMPANIONS, tensorrt_requirements
from harness.tensorrt.versions import version_tuple
from harness.worker.backends.tensorrt.compat import POLYGRAPHY_MINIMUM_FOR_TENSORRT_11
from tests.conftest import REFERENCE

PLATFORMS_MD = REFERENCE / "platforms.md"
PLATFORMS_2026_MD = REFERENCE / "platforms-2026.md"
TENSORRT_RECIPE = "tensorrt"

DOCKER_TARGETS = [t for t in load_matrix().values() if t.runner == "docker" and t.available]
TRT_TARGETS = [t for t in DOCKER_TARGETS if t.backend == "tensorrt"]


def dockerfile_text(target) -> str:
    return (RECIPES_DIR / target.recipe / "Dockerfile").read_text()


def rendered(text: str, buildargs: dict[str, str]) -> list[tuple[str, str]]:
    """FROM and LABEL instructions with ``${NAME}`` replaced as Docker does: the build arg, else the ARG default."""
    return [(word, rest) for word, rest in rendered_instructions(text, buildargs) if word in ("FROM", "LABEL")]


def table_rows(path) -> list[list[str]]:
    """Table rows of a platforms file as lists of cells (header and separator rows included; they match nothing)."""
    if not path.exists():
        pytest.fail(f"{path} is missing (reference/ is part of the repository): the pins are checked against it")
    return [[cell.strip() for cell in line.strip().strip("|").split("|")]
            for line in path.read_text().splitlines() if line.startswith("|")]


def platforms_rows() -> list[list[str]]:
    return table_rows(PLATFORMS_MD)


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
    # Only an image without Python (a plain CUDA image, TensorRT from the wheel) needs the network: apt installs Python.
    assert plan.network == ("default" if target.tensorrt_wheel else "none")
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
    target = load_matrix()["trt100-orin"]._replace(recipe="plain")
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


def in_platforms_md(target) -> bool:
    """Whether platforms.md has a row of the target's TensorRT version naming its base image (the pre-2026 rows)."""
    return any(short_name(target.base_image) in " ".join(row) for row in rows_for(target))


@pytest.mark.parametrize("target", TRT_TARGETS, ids=lambda t: t.id)
def test_base_image_python_cuda_and_driver_agree_with_platforms_md_or_platforms_2026_md(target):
    if in_platforms_md(target):
        check_pins_against_platforms_md(target)
    else:
        check_pins_against_platforms_2026_md(target)


# Facts a target must either find in a platforms-2026.md row or source itself (``sources`` in matrix.yaml).
SOURCED_FACTS = ("version", "base_image", "cuda", "python", "glibc")


def agrees(ours: str, theirs: str) -> bool:
    """Two versions agree on the parts both give ("10.3" and "10.3.0"; "10.16" and "10.16.2.10")."""
    a, b = ours.split("."), theirs.split(".")
    n = min(len(a), len(b))
    return a[:n] == b[:n]


def versions_in(text: str) -> list[str]:
    return re.findall(r"\d+(?:\.\d+)+", text)


def jetson_row_2026(target) -> dict[str, str] | None:
    """The platforms-2026.md Jetson row of the target's JetPack release ("JetPack 6 + tarball" for a tarball
    target), as {column: cell}."""
    rows = table_rows(PLATFORMS_2026_MD)
    header = next(r for r in rows if r and r[0] == "release")
    wanted = f"JetPack {target.jetpack.split('.')[0]} + tarball" if target.tensorrt_tarball else None
    for row in rows:
        release = row[0]
        if wanted and release == wanted or not wanted and release.rstrip("+") == f"JetPack {target.jetpack}":
            return dict(zip(header, row))
    return None


def x86_row_2026(target) -> dict[str, str] | None:
    """The platforms-2026.md NGC row covering the target's image tag ("25.11-25.12" covers 25.12)."""
    tag = re.search(r":(\d\d\.\d\d)-py3$", target.base_image)
    if not tag:
        return None
    rows = table_rows(PLATFORMS_2026_MD)
    header = next(r for r in rows if r and r[0] == "NGC tag")
    for row in rows[rows.index(header) + 2:]:
        if not re.match(r"^\d\d\.\d\d", row[0]):
            break
        first, _, last = row[0].split()[0].partition("-")
        if first <= tag.group(1) <= (last or first):
            return dict(zip(header, row))
    return None


def check_pins_against_platforms_2026_md(target) -> None:
    """A 2026 target's facts agree with its platforms-2026.md row; those the row lacks are sourced in matrix.yaml."""
    confirmed = set()
    if target.platform in ("orin", "thor"):
        row = jetson_row_2026(target)
        assert row, f"{target.id}: platforms-2026.md has no row of JetPack {target.jetpack}"
        assert target.platform.capitalize() in row["GPU"] or "Orin and Thor" in row["GPU"], (target.id, row)
        stack = row["CUDA / cuDNN / TensorRT"]
        parts = [part.strip() for part in stack.split(" / ")] if " / " in stack else ["", "", stack]
        assert any(agrees(target.version, v) for v in versions_in(parts[-1])), (target.id, stack)
        confirmed.add("version")
        if versions_in(parts[0]):
            assert agrees(target.cuda, versions_in(parts[0])[0]), (target.id, stack)
            confirmed.add("cuda")
        if target.tensorrt_tarball:
            assert any(agrees(target.version, v) for v in versions_in(parts[-1])), (target.id, stack)
    else:
        row = x86_row_2026(target)
        if row is not None:
            assert agrees(target.version, row["TensorRT"]), (target.id, row)
            confirmed |= {"version", "base_image"}
            if versions_in(row["CUDA"]):
                assert agrees(target.cuda, row["CUDA"]), (target.id, row)
                confirmed.add("cuda")
    if any(short_name(target.base_image) in " ".join(row) for row in platforms_rows()):
        confirmed.add("base_image")  # an image platforms.md names (JetPack 6.1's, under a tarball)
    needed = set(SOURCED_FACTS) | ({"min_driver"} if target.platform == "x86_64" else set())
    needed |= {key for key in ("tensorrt_wheel", "tensorrt_tarball") if getattr(target, key)}
    unsourced = sorted(needed - confirmed - set(target.sources))
    assert not unsourced, (f"{target.id}: {unsourced} are in no platforms-2026.md row of this target: give each a "
                           "source in matrix.yaml (sources: {key: \"[C|I|U] link\"})")


def test_the_2026_checks_read_the_rows_they_should():
    """Guards the readers above: the rows of three known targets are found and hold the expected TensorRT."""
    targets = load_matrix()
    assert "10.16.2.10" in jetson_row_2026(targets["trt1016-orin"])["CUDA / cuDNN / TensorRT"]
    assert "10.7" in jetson_row_2026(targets["trt107-orin"])["CUDA / cuDNN / TensorRT"]
    assert x86_row_2026(targets["trt1013-x86"])["TensorRT"] == "10.13.3.9"
    assert x86_row_2026(targets["trt11-x86"]) is None  # 26.10: in no row, so every fact is sourced


def test_a_2026_fact_in_no_row_and_without_a_source_is_refused():
    target = load_matrix()["trt11-x86"]._replace(sources={})
    with pytest.raises(AssertionError, match="give each a source"):
        check_pins_against_platforms_2026_md(target)


def test_every_tensorrt_11_wheelhouse_has_a_polygraphy_that_knows_11():
    rows = [(first, pins) for first, pins in TENSORRT_COMPANIONS if first >= (11, 0)]
    assert rows
    for _, pins in rows:
        (polygraphy,) = [pin for pin in pins if pin.startswith("polygraphy==")]
        assert version_tuple(polygraphy.split("==")[1]) >= version_tuple(POLYGRAPHY_MINIMUM_FOR_TENSORRT_11)
    assert tensorrt_requirements("11.4.1") == rows[-1][1] and tensorrt_requirements("11") == rows[-1][1]
    assert tensorrt_requirements("10.16") != tensorrt_requirements("8.6.1")  # 8.x keeps its older Polygraphy


def test_trt92_installs_the_wheel_platforms_md_names():
    target = load_matrix()["trt92-x86"]
    assert target.tensorrt_wheel
    assert re.search(re.escape(target.tensorrt_wheel) + r"(?![\w.])", " ".join(row_of_image(target)))


def test_trt100_orin_takes_the_l4t_tarball_platforms_md_names():
    target = load_matrix()["trt100-orin"]
    assert target.tensorrt_tarball and target.tensorrt_tarball in " ".join(row_of_image(target))


# --- containers build TARGET --dry-run: what a build would be, checked against matrix.yaml -------------------------


@pytest.mark.parametrize("target", TRT_TARGETS, ids=lambda t: t.id)
def test_dry_run_shows_the_base_image_the_wheelhouse_and_the_steps_of_the_matrix_entry(target, tmp_path):
    from tests.harness.commands.test_main import harness

    env = {"TRT_MATRIX_WHEELHOUSE": str(tmp_path), "BASE_IMAGE": "", "DOCKER_HOST": "tcp://127.0.0.1:9"}
    out = harness("containers", "build", target.id, "--dry-run", env=env).stdout  # no engine is asked
    lines = out.splitlines()
    assert f"base image:  {target.base_image}" in lines
    assert f"TENSORRT_VERSION={target.version}" in out.split("build args:")[1].splitlines()[0]
    assert f"wheelhouse:  {tmp_path / target.id} (missing: run `trt-matrix containers wheelhouse --target " \
           f"{target.id}`" in out
    installs = next(line for line in lines if line.startswith("  installs:")).split()[1:]
    expected = ([target.tensorrt_wheel] if target.tensorrt_wheel else []) + list(tensorrt_requirements(target.version))
    assert installs[:len(expected)] == expected
    steps = lines[lines.index("build steps:") + 1:]
    assert f"  FROM {target.base_image} AS python" in steps
    assert any(f'org.trt-matrix.tensorrt="{target.version}"' in step for step in steps)
    assert f"network:     {target.build_network} " in out
    if target.tensorrt_tarball:
        assert f"provided:    {target.tensorrt_tarball}: not passed yet" in out


def test_dry_run_of_an_unavailable_target_says_why_it_cannot_be_built():
    from tests.harness.commands.test_main import harness

    result = harness("containers", "build", "trt114-thor-dla", "--dry-run", check=False)
    assert result.returncode == 2 and "Jetson Thor has no DLA" in result.stderr


@pytest.mark.parametrize("image", ["nvcr.io/nvidia/tensorrt:26.02-py3-igpu", "nvcr.io/nvidia/pytorch:25.08-py3-igpu"])
def test_an_igpu_base_image_passed_for_one_build_is_refused_too(image, wheelhouse, tmp_path):
    """matrix.yaml cannot name one; --base-image / BASE_IMAGE cannot slip one in either (it fails on JetPack 7)."""
    target = load_matrix()["trt1016-thor"]
    with pytest.raises(MissingBuildInput, match="is an `-igpu` tag"):
        plan_of(target, wheelhouse, tmp_path, base_image=image)
    from tests.harness.commands.test_main import harness

    result = harness("containers", "build", target.id, "--dry-run", "--base-image", image, check=False)
    assert result.returncode == 3 and "-igpu" in result.stderr and "SBSA image" in result.stderr
