"""The contract stand-in of each recorded TensorRT version, installed as ``tensorrt``, and the cells the backend runs."""
from pathlib import Path

import pytest

from harness.worker.casedata import load_cells
from tests.trt_contract.backend_run import answers_that_let_the_path_continue
from tests.trt_contract.standin import ContractStandIn, api_exists, installed_as_tensorrt, recorded_versions

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
