"""The reference data as fixtures: verbatim TensorRT logs and engine inspector JSON, one test per file.

The data lives in the repository's ``reference/`` (sources in reference/SOURCES.md). Nothing here skips when it is
missing: a parser test that silently ran on nothing would pass for the wrong reason.
"""
from pathlib import Path

import pytest

from tests.conftest import REFERENCE


def existing_reference_dir() -> Path:
    """The reference directory, or an error saying where it was expected and what it must hold."""
    if not (REFERENCE / "SOURCES.md").is_file():
        raise FileNotFoundError(
            f"the reference data is missing: expected {REFERENCE} (reference/ in the repository) with SOURCES.md, "
            "trt-logs/ and engine-layers/. The TensorRT parser tests run on that verbatim TensorRT output and "
            "refuse to pass without it."
        )
    return REFERENCE


def reference_files(subdirectory: str, pattern: str) -> list[Path]:
    """The reference files matching ``pattern`` in ``subdirectory``; never empty."""
    found = sorted((existing_reference_dir() / subdirectory).glob(pattern))
    if not found:
        raise FileNotFoundError(f"no {pattern} files in {existing_reference_dir() / subdirectory}")
    return found


@pytest.fixture(scope="session")
def reference_dir() -> Path:
    return existing_reference_dir()


def pytest_generate_tests(metafunc):
    """A test asking for ``trt_log`` runs per trt-logs/*.log, for ``engine_graph`` per engine-layers/*.graph.json."""
    if "trt_log" in metafunc.fixturenames:
        logs = reference_files("trt-logs", "*.log")
        metafunc.parametrize("trt_log", logs, ids=[path.stem for path in logs])
    if "engine_graph" in metafunc.fixturenames:
        graphs = reference_files("engine-layers", "*.graph.json")
        metafunc.parametrize("engine_graph", graphs, ids=[path.name.removesuffix(".graph.json") for path in graphs])
