"""Backends by name. Each is imported only when a target uses it, so the worker imports without TensorRT."""
from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the backends' base is imported with a backend: reading matrix.yaml needs only BACKENDS' names
    from harness.worker.backends.base import Backend
    from harness.worker.shapes import JobTarget

BACKENDS = {
    "onnxruntime": "harness.worker.backends.onnxruntime:OnnxRuntimeBackend",
    "tensorrt": "harness.worker.backends.tensorrt.backend:TensorRTBackend",
}


def load_backend(target: JobTarget) -> Backend:
    """The backend object for ``target``: a name from BACKENDS, or ``module:Class`` for a backend of your own."""
    from harness.worker.backends.base import Backend

    spec = BACKENDS.get(target["backend"], target["backend"])
    if ":" not in spec:
        raise ValueError(
            f"Target {target['id']!r}: backend {target['backend']!r} is not one of {sorted(BACKENDS)} "
            "and not a 'module:Class' path."
        )
    module_name, class_name = spec.split(":", 1)
    cls = getattr(importlib.import_module(module_name), class_name)
    if not (isinstance(cls, type) and issubclass(cls, Backend)):
        raise TypeError(f"Target {target['id']!r}: {spec} is not a subclass of {Backend.__module__}.Backend")
    return cls(target)
