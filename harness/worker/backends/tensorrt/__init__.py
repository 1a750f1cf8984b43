"""The TensorRT backend, one package: the backend (``backend``), log capture (``capture``), the log classifier
(``classify``), the layer-precision parser (``layers``), version feature detection (``compat``), GPU facts (``gpu``)
and the TensorRT section of ``doctor``.

Importing any module here needs neither TensorRT nor Polygraphy: those are imported lazily, inside the functions that
call them, so the worker (and the host) import on machines without a GPU.
"""
