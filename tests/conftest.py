"""Shared fixtures: a generated cases directory (the control cases), built once per test session."""
import json
import shutil
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
SHARED_REFERENCE = REPO.parent / "shared" / "reference"


@pytest.fixture(scope="session")
def control_cases_dir(tmp_path_factory) -> Path:
    """A cases directory holding the two control cases (fast to run on ONNX Runtime)."""
    import cases
    from cases.generate import generate

    out = tmp_path_factory.mktemp("control-cases")
    generate(out, [c for c in cases.all_cases() if c.pattern == "control"])
    return out


@pytest.fixture()
def cases_copy(control_cases_dir, tmp_path) -> Path:
    """A private copy of the control cases directory, for tests that break it."""
    return Path(shutil.copytree(control_cases_dir, tmp_path / "cases"))


def read_records(path: Path) -> list[dict]:
    return [json.loads(line) for line in Path(path).read_text().splitlines() if line.strip()]
