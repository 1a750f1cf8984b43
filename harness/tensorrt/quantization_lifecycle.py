"""Where a TensorRT version stands in implicit quantization's lifecycle (a build with ``BuilderFlag.INT8`` and a
calibrator): ``supported`` before 10.1, ``deprecated`` from 10.1 (it still builds, with a DeprecationWarning), and
``removed`` from 11.0.

Sources of the two edges:

* 10.1: the Python binding wraps ``IBuilderConfig.int8_calibrator`` in ``utils::deprecateMember(..., "Deprecated in
  TensorRT 10.1. Superseded by explicit quantization.")``, which raises a DeprecationWarning
  (https://github.com/NVIDIA/TensorRT/blob/main/python/src/infer/pyCore.cpp); a user sees it from 10.1 on
  (https://github.com/NVIDIA/TensorRT/issues/4095), and ``setDynamicRange`` is deprecated since 10.1 too
  (https://github.com/NVIDIA/TensorRT/issues/4292).
* 11.0: weak typing, ``BuilderFlag.INT8`` and the calibrators are removed
  (https://docs.nvidia.com/deeplearning/tensorrt/11.4.0/api/migration/tensorrt-10x-to-11x.html).

The recorded binding API of every version in reference/trt-api agrees: the implicit-quantization API
(``BuilderFlag.INT8``, ``IBuilderConfig.int8_calibrator``, the ``IInt8*Calibrator`` classes) is in 8.6.1 to 10.16.1.11
and not in 11.4.0.106 (checked by the tests against each JSON file). The JSON carries no deprecation marks (10.0.1 and
10.1.0 have the same names), so the 10.1 edge comes from the sources above, not from the JSON.
"""
from __future__ import annotations

import re
from typing import NamedTuple

SUPPORTED, DEPRECATED, REMOVED = "supported", "deprecated", "removed"
DEPRECATED_FROM = (10, 1)
REMOVED_FROM = (11, 0)
DEPRECATION_SOURCES = (
    "https://github.com/NVIDIA/TensorRT/blob/main/python/src/infer/pyCore.cpp",
    "https://github.com/NVIDIA/TensorRT/issues/4095",
)
REMOVAL_SOURCES = ("https://docs.nvidia.com/deeplearning/tensorrt/11.4.0/api/migration/tensorrt-10x-to-11x.html",)
MIGRATION = (
    "migrate to explicit quantization: calibrate offline and write Q/DQ nodes into the ONNX model (e.g. with TensorRT "
    "Model Optimizer's ONNX PTQ), then build without a calibrator (a strongly typed network on 11)"
)


class Lifecycle(NamedTuple):
    """Implicit quantization on one TensorRT version."""

    version: str
    status: str  # supported, deprecated or removed
    warning_expected: bool  # a build with a calibrator raises a DeprecationWarning
    statement: str  # where the version stands, without advice
    advice: str  # what to do where it is deprecated or removed (MIGRATION); "" where it is supported
    sources: tuple[str, ...]

    @property
    def reason(self) -> str:
        """The statement with its advice, in one sentence: what a cell's record and its skip say."""
        return f"{self.statement}; {self.advice}." if self.advice else f"{self.statement}."

    def to_dict(self) -> dict:
        return {"version": self.version, "status": self.status, "warning_expected": self.warning_expected,
                "reason": self.reason, "sources": list(self.sources)}


def implicit_quantization(version: str) -> Lifecycle:
    """The lifecycle status of implicit quantization on TensorRT ``version`` ("10.3.0", "11.4.0.106", "9.2.0.post12")."""
    numbers = [int(part) for part in re.findall(r"\d+", version)[:2]]
    if not numbers:
        raise ValueError(f"{version!r} is not a TensorRT version (expected MAJOR.MINOR...)")
    major_minor = tuple((numbers + [0])[:2])
    if major_minor >= REMOVED_FROM:
        return Lifecycle(version, REMOVED, False,
                         f"TensorRT {version} has no implicit quantization: 11.0 removed BuilderFlag.INT8 and the "
                         "calibrators (deprecated since 10.1)", MIGRATION, REMOVAL_SOURCES + DEPRECATION_SOURCES)
    if major_minor >= DEPRECATED_FROM:
        return Lifecycle(version, DEPRECATED, True,
                         f"TensorRT {version} still calibrates, but implicit quantization is deprecated since 10.1: "
                         "setting IBuilderConfig.int8_calibrator raises a DeprecationWarning, and 11.0 removes it",
                         MIGRATION, DEPRECATION_SOURCES + REMOVAL_SOURCES)
    return Lifecycle(version, SUPPORTED, False,
                     f"TensorRT {version} supports implicit quantization without a deprecation (it is deprecated "
                     "from 10.1 and removed in 11.0)", "", DEPRECATION_SOURCES + REMOVAL_SOURCES)
