"""trt-matrix as a user installs it: the wheel built from this checkout, installed into a new virtualenv, run as the
`trt-matrix` console script from an empty directory far from the repository. Every file the commands read at run
time must then come from the installed package (harness/shipped.py, setup.py), never from the checkout.

The virtualenv sees the system's site-packages for the dependencies (no index is asked: --no-deps), but the harness
it imports is the wheel's, which the test checks first."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import venv
from pathlib import Path

import pytest

from harness.shipped import SHIPPED
from tests.conftest import REPO

# What a source distribution holds (MANIFEST.in, pyproject.toml): the build sees these and nothing else of the clone.
BUILD_INPUTS = ("pyproject.toml", "setup.py", "MANIFEST.in", "README.md", "harness", "cases", "reports", *SHIPPED)


def run(command: list, cwd: Path, timeout: int = 300, **env: str) -> subprocess.CompletedProcess:
    base = {k: v for k, v in os.environ.items() if k != "PYTHONPATH" and not k.startswith("TRT_MATRIX_")}
    return subprocess.run([str(part) for part in command], cwd=cwd, capture_output=True, text=True, timeout=timeout,
                          env={**base, **env})


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> Path:
    """The bin directory of a new virtualenv holding the wheel built from a copy of this checkout's sources."""
    root = tmp_path_factory.mktemp("installed")
    source = root / "source"
    for name in BUILD_INPUTS:
        if (REPO / name).is_dir():
            shutil.copytree(REPO / name, source / name, ignore=shutil.ignore_patterns("__pycache__", "out"))
        else:
            (source / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(REPO / name, source / name)
    built = run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", root / "dist", source], root)
    assert built.returncode == 0, built.stdout + built.stderr
    (wheel,) = (root / "dist").glob("trt_matrix-*.whl")
    venv.create(root / "venv", system_site_packages=True, with_pip=False, symlinks=True)
    bin_dir = root / "venv" / "bin"
    # The venv has no pip of its own: this pip installs into it, as the venv's python (pip --python, pip >= 22.3).
    done = run([sys.executable, "-m", "pip", "--python", bin_dir / "python", "install", "--no-deps", "--no-index",
                "-q", wheel], root)
    assert done.returncode == 0, done.stdout + done.stderr
    shutil.rmtree(source)  # nothing of the build is left to read from
    return bin_dir


@pytest.fixture()
def elsewhere(tmp_path) -> Path:
    """An empty directory, no matrix.yaml in it or above it."""
    work = tmp_path / "work"
    work.mkdir()
    assert not any((parent / "matrix.yaml").exists() for parent in (work, *work.parents))
    return work


def test_the_venv_imports_the_installed_harness_not_the_checkout(installed, elsewhere):
    where = run([installed / "python", "-c", "import harness, cases, reports; print(harness.__file__); "
                 "print(cases.__file__); print(reports.__file__)"], elsewhere)
    assert where.returncode == 0, where.stderr
    for line in where.stdout.splitlines():
        assert Path(line).is_relative_to(installed.parent), line


def test_the_five_commands_work_from_an_empty_directory(installed, elsewhere):
    trt_matrix = installed / "trt-matrix"
    own_matrix = next((installed.parent / "lib").glob("python3*/site-packages/harness/shipped_data/matrix.yaml"))
    said = f"matrix: {own_matrix} (trt-matrix's own; no --matrix given and no matrix.yaml in the current directory)"

    facts = run([trt_matrix, "facts"], elsewhere)
    assert facts.returncode == 0, facts.stderr
    assert facts.stderr.splitlines() == [said]
    rows = {line.split()[0]: line.split() for line in facts.stdout.splitlines()[2:] if line.startswith("  ")}
    # Read from the shipped TensorRT API records: 8.6 has implicit INT8, 11.4 has strong typing and no implicit INT8.
    assert rows["trt86-orin"][3:5] == ["yes", "no"] and rows["trt114-orin"][3:5] == ["no", "yes"]

    generated = run([trt_matrix, "generate", "--out", "cases"], elsewhere)
    assert generated.returncode == 0, generated.stderr
    index = json.loads((elsewhere / "cases" / "index.json").read_text())
    assert len(index["cases"]) > 20 and not generated.stderr  # generate reads no matrix: it says nothing of one

    model = elsewhere / "cases" / "control-qdq-conv-relu" / "conv-relu.onnx"
    scan = run([trt_matrix, "scan", model], elsewhere)
    assert scan.returncode == 0, scan.stdout + scan.stderr
    assert scan.stderr.splitlines() == [said]
    assert "CLEAR on TensorRT" in scan.stdout and "Thor" in scan.stdout  # the answer, targets grouped
    assert (elsewhere / "out" / "scan" / "conv-relu" / "scan.json").is_file()

    ran = run([trt_matrix, "run", "--target", "ort-cpu", "--cases", "cases", "--results", "r.jsonl", "-k",
               "control"], elsewhere)
    assert ran.returncode == 0, ran.stdout + ran.stderr
    records = [json.loads(line) for line in (elsewhere / "r.jsonl").read_text().splitlines()]
    assert len(records) == 3 and {r["outcome"] for r in records} == {"pass"}

    report = run([trt_matrix, "report", "--results", "r.jsonl", "--cases", "cases", "--out", "report.html"],
                 elsewhere)
    assert report.returncode == 0, report.stdout + report.stderr
    assert report.stderr.splitlines() == [said]
    page = (elsewhere / "report.html").read_text()
    assert "ort-cpu" in page and "control-qdq-conv-relu" in page


def test_a_matrix_here_or_named_wins_over_the_installed_one(installed, elsewhere):
    mine = "targets:\n  my-cpu:\n    title: mine\n    backend: onnxruntime\n    runner: local\n    platform: any\n"
    (elsewhere / "matrix.yaml").write_text(mine)
    here = run([installed / "trt-matrix", "list"], elsewhere)
    assert here.returncode == 0 and not here.stderr, here.stderr
    assert f"Targets (from {elsewhere / 'matrix.yaml'})" in here.stdout and "my-cpu" in here.stdout
    other = elsewhere / "other.yaml"
    other.write_text(mine.replace("my-cpu", "other-cpu"))
    named = run([installed / "trt-matrix", "--matrix", other, "run", "--target", "my-cpu"], elsewhere)
    assert named.returncode == 2
    assert named.stderr == f"error: --target 'my-cpu': not a target of {other}; nearest: other-cpu\n"


def test_an_image_build_reads_the_installed_recipe_and_a_wheelhouse_in_the_home_directory(installed, elsewhere):
    shown = run([installed / "trt-matrix", "containers", "build", "ort1.20-cpu", "--dry-run"], elsewhere,
                HOME=str(elsewhere), BASE_IMAGE="")  # the matrix's base image, not the one CI builds on
    assert shown.returncode == 0, shown.stdout + shown.stderr
    lines = dict(line.split(":", 1) for line in shown.stdout.splitlines() if not line.startswith(" ") and ":" in line)
    recipe = Path(lines["recipe"].strip())
    assert recipe.is_relative_to(installed.parent) and recipe.parts[-3:] == ("containers", "ort-cpu", "Dockerfile")
    assert lines["wheelhouse"].split()[0] == str(elsewhere / "trt-matrix" / "wheelhouse" / "ort1.20-cpu")
    assert "FROM python:3.11-slim" in shown.stdout
