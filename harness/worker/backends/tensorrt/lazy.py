"""Modules declared at the top of the module that uses them and imported at first use (the idea of Polygraphy's
``polygraphy.mod.lazy_import``).

``tensorrt = lazy_import("tensorrt")`` imports nothing: the package imports with the standard library, numpy and onnx
alone (worker containers without TensorRT, the host, this machine), while each module still says up front what it
will need. The import happens when an attribute is first read; a missing library then raises the ImportError (or the
OSError of a missing libnvinfer) at that point, where the backend turns it into a readable environment problem.

Unlike Polygraphy's, a lazy module here keeps nothing: every use looks the module up again (a dictionary look-up in
``sys.modules`` once imported). The tests put the contract stand-in of one TensorRT version after another into
``sys.modules["tensorrt"]`` (tests/trt_contract/), and each use must see the one installed now.
"""
from __future__ import annotations

import importlib
from types import ModuleType
from typing import Any


class LazyModule:
    """A module named now and imported when one of its attributes is read or written."""

    __slots__ = ("_lazy_name",)

    def __init__(self, name: str):
        object.__setattr__(self, "_lazy_name", name)

    def __getattr__(self, attribute: str) -> Any:
        return getattr(resolve(self), attribute)

    def __setattr__(self, attribute: str, value: Any) -> None:
        setattr(resolve(self), attribute, value)

    def __repr__(self) -> str:
        return f"<lazy module {self._lazy_name!r}, imported at first use>"


def lazy_import(name: str) -> LazyModule:
    """Declare module ``name`` ("tensorrt", "polygraphy.backend.trt") without importing it."""
    return LazyModule(name)


def resolve(module: LazyModule) -> ModuleType:
    """The module itself, imported now if it was not yet: what code that takes ``trt`` as an argument is handed."""
    return importlib.import_module(object.__getattribute__(module, "_lazy_name"))
