"""The worker (the code that goes into containers) imports with only the standard library, numpy and onnx."""
import os
import subprocess
import sys

from tests.conftest import REPO

HOST_ONLY = ["yaml", "jsonschema", "pandas", "jinja2", "docker", "onnx_graphsurgeon", "polygraphy", "tensorrt",
             "onnxruntime", "cases", "reports"]
WORKER_MODULES = [
    "harness.worker.__main__", "harness.worker.job", "harness.worker.cell", "harness.worker.isolation",
    "harness.worker.environment", "harness.worker.metrics", "harness.worker.casedata", "harness.worker.record",
    "harness.worker.shapes", "harness.worker.serve", "harness.worker.backends", "harness.worker.backends.onnxruntime",
    "harness.worker.backends.tensorrt", "harness.worker.backends.tensorrt.compat",
    "harness.worker.backends.tensorrt.capture", "harness.worker.backends.tensorrt.gpu",
    "harness.worker.backends.tensorrt.doctor", "harness.worker.backends.tensorrt.lazy",
    "harness.worker.backends.tensorrt.network", "harness.worker.backends.tensorrt.build_config",
    "harness.worker.backends.tensorrt.calibrator",
    "harness.tensorrt.classify", "harness.tensorrt.layers", "harness.tensorrt.devices",
    "harness.tensorrt.calibration_cache", "harness.tensorrt.pasted", "harness.tensorrt.release_facts",
    "harness.tensorrt.quantization_lifecycle",
]

BLOCKER = f"""
import sys
class Blocker:
    def find_spec(self, name, path=None, target=None):
        if name.split('.')[0] in {HOST_ONLY!r}:
            raise ImportError('worker code imported ' + name + ', which a worker container may not have')
sys.meta_path.insert(0, Blocker())
import importlib
for module in {WORKER_MODULES!r}:
    importlib.import_module(module)
print('ok')
"""


def test_worker_modules_import_without_host_only_packages():
    result = subprocess.run([sys.executable, "-c", BLOCKER], capture_output=True, text=True, cwd=REPO,
                            env=dict(os.environ, PYTHONPATH=str(REPO)))
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "ok"
