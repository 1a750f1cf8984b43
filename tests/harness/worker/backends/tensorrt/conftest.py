"""The reference data as fixtures: verbatim TensorRT logs and engine inspector JSON, one test per file.

The data lives in the repository's ``reference/`` (sources in reference/SOURCES.md). Nothing here skips when it is
missing: a parser test that silently ran on nothing would pass for the wrong reason.
"""
import locale
from pathlib import Path

import pytest

from harness.worker.casedata import load_cells
from tests.conftest import REFERENCE
from tests.trt_contract.backend_run import answers_that_let_the_path_continue
from tests.trt_contract.standin import ContractStandIn, api_exists, installed_as_tensorrt, recorded_versions


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


# ---- the contract stand-in of each recorded TensorRT version, installed as ``tensorrt`` ----

CONTRACT_VERSIONS = recorded_versions()  # every recorded API surface, reference/trt-api/*.json
WEAKLY_TYPED_VERSIONS = tuple(v for v in CONTRACT_VERSIONS if api_exists(v, "BuilderFlag.INT8"))  # not 11.x


def _installed_standin(version):
    standin = ContractStandIn.for_version(version)
    answers_that_let_the_path_continue(standin)
    with installed_as_tensorrt(standin):
        yield standin


@pytest.fixture(params=CONTRACT_VERSIONS)
def standin(request):
    """The contract stand-in of each recorded version, answering so that a cell's path runs up to inference."""
    yield from _installed_standin(request.param)


@pytest.fixture(params=WEAKLY_TYPED_VERSIONS)
def weakly_typed_standin(request):
    """The stand-in of each version that still has implicit quantization and per-layer precisions."""
    yield from _installed_standin(request.param)


@pytest.fixture(scope="session")
def library_cells(generated_cases):
    """Every variant of the case library, generated once."""
    import cases

    return load_cells(generated_cases("library", cases.all_cases()))


@pytest.fixture(scope="session")
def cells(control_cases_dir):
    """One control cell per build mode ("explicit-qdq", "implicit-int8")."""
    by_mode = {}
    for cell in load_cells(control_cases_dir):
        by_mode.setdefault(cell["mode"], cell)
    return by_mode


@pytest.fixture()
def ascii_locale():
    """Test fake for a machine whose locale encoding is not UTF-8: LC_CTYPE is C (ASCII) while the test runs."""
    before = locale.setlocale(locale.LC_CTYPE)
    locale.setlocale(locale.LC_CTYPE, "C")
    yield
    locale.setlocale(locale.LC_CTYPE, before)
