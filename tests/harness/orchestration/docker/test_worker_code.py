"""What a worker container is given to run: every module the worker reaches through its imports (TensorRT's floor,
harness/tensorrt, and the judgement's words included), so a cell never fails on an import the host had."""
from harness.matrix import load_matrix
from harness.orchestration.docker.containers import _worker_code_files
from tests.test_import_layers import GRAPH, MODULES, REPO, reach


def test_the_worker_code_put_into_a_container_holds_every_module_the_worker_reaches():
    shipped = set(_worker_code_files(load_matrix()["trt100-x86"]))
    reached = {"harness.worker.__main__", *reach(GRAPH, "harness.worker.__main__"),
               *reach(GRAPH, "harness.worker.backends.tensorrt.backend")}
    missing = sorted(str(MODULES[m].relative_to(REPO)) for m in reached if str(MODULES[m].relative_to(REPO)) not in shipped)
    assert "harness/tensorrt/classify.py" in shipped and not missing, missing
