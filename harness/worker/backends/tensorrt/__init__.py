"""The TensorRT backend, one package, one concern per module:

* ``backend``: the backend itself, the stages of a cell (parse, build, inspect, infer) and its record;
* ``network``: how the ONNX model becomes a TensorRT network (parser flags, strong typing, extra outputs, layer
  precisions); ``build_config``: the builder config (precision flags, profiling); ``calibrator``: the INT8 calibrator
  of implicit-int8 cells;
* ``capture``: the cell's TensorRT, Python-warning and Polygraphy logs, read by the log classifier and the layer
  reader of :mod:`harness.tensorrt` (TensorRT's facts and readers, standard library only, shipped with the worker);
* ``compat``: the TensorRT names the package uses and the releases it needs; ``gpu``: GPU facts;
  ``doctor``: the TensorRT section of ``trt-matrix doctor``; ``lazy``: imports at first use.

Importing any module here needs neither TensorRT nor Polygraphy: each module declares them at its top with
:func:`~harness.worker.backends.tensorrt.lazy.lazy_import`, and they are imported at first use. So the worker (and the
host) import on machines without a GPU.

Why the TensorRT module is passed around as an argument (``trt``) instead of being imported where it is used: no
machine this project is developed or tested on has TensorRT. The tests put in its place the *contract stand-in* of
each recorded TensorRT version (tests/trt_contract/standin.py, built from the binding API recorded in
reference/trt-api/*.json): a module holding exactly that version's classes, members and enum values, which
records every call made on it. Code that takes ``trt`` can be handed the stand-in of 8.6, 10.x or 11.x in one test
run and is checked against each; only the entry points (the backend's methods, ``doctor``, the GPU probe) resolve the
real ``tensorrt`` and hand it on.
"""
