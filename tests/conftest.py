"""Shared fixtures: generated cases directories (the control cases, built once per test session)."""
import json
import locale
import os
import shutil
import tempfile
from pathlib import Path

import pytest

# the mutation run names there a directory where generated cases outlive the test session
from tests.harness.worker.backends.tensorrt.mutation import CASES_CACHE_VARIABLE

REPO = Path(__file__).resolve().parent.parent
REFERENCE = REPO / "reference"  # the reference data the tests read, in the repository (reference/SOURCES.md)


@pytest.fixture(scope="session")
def generated_cases(tmp_path_factory):
    """``generated_cases(name, selected_cases)``: a cases directory holding those cases, generated once."""
    from cases.generate import generate

    cache = os.environ.get(CASES_CACHE_VARIABLE)

    def generated(name: str, selected: list) -> Path:
        if not cache:
            out = tmp_path_factory.mktemp(name)
            generate(out, selected)
            return out
        out = Path(cache) / name
        if not out.is_dir():
            Path(cache).mkdir(parents=True, exist_ok=True)
            staging = Path(tempfile.mkdtemp(dir=cache, prefix=f".{name}-"))
            generate(staging, selected)
            try:
                staging.rename(out)  # whole or not at all: a parallel session may have finished first
            except OSError:
                shutil.rmtree(staging)
        return out

    return generated


@pytest.fixture(scope="session")
def control_cases_dir(generated_cases) -> Path:
    """A cases directory holding the two control cases (fast to run on ONNX Runtime)."""
    import cases

    return generated_cases("control-cases", [c for c in cases.all_cases() if c.pattern == "control"])


@pytest.fixture()
def cases_copy(control_cases_dir, tmp_path) -> Path:
    """A private copy of the control cases directory, for tests that break it."""
    return Path(shutil.copytree(control_cases_dir, tmp_path / "cases"))


def read_records(path: Path) -> list[dict]:
    return [json.loads(line) for line in Path(path).read_text().splitlines() if line.strip()]


def evidence_piece(kind: str, scope: str, outcome: str):
    """A piece of evidence that says only what the verdict engine reads (its basis, its scope, its word)."""
    from harness.evidence import Evidence

    return Evidence(kind, scope, "a-case", "a-form", "a-target", outcome, None, "")


@pytest.fixture()
def ascii_locale():
    """Test fake for a machine whose locale encoding is not UTF-8: LC_CTYPE is C (ASCII) while the test runs."""
    before = locale.setlocale(locale.LC_CTYPE)
    locale.setlocale(locale.LC_CTYPE, "C")
    yield
    locale.setlocale(locale.LC_CTYPE, before)
