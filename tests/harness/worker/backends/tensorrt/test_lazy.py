"""Lazy module declarations: nothing is imported until used, a missing library fails at first use, and every use sees
the module installed now (the tests swap the TensorRT contract stand-in of one version for another)."""
import sys
import types

import pytest

from harness.worker.backends.tensorrt.lazy import lazy_import, resolve


@pytest.fixture()
def fake_module(monkeypatch):
    """A module ``trt_matrix_lazy_probe`` that exists only in sys.modules, as the contract stand-in does."""
    module = types.ModuleType("trt_matrix_lazy_probe")
    module.answer = 1
    monkeypatch.setitem(sys.modules, "trt_matrix_lazy_probe", module)
    return module


def test_declaring_a_module_imports_nothing(monkeypatch):
    monkeypatch.delitem(sys.modules, "colorsys", raising=False)
    declared = lazy_import("colorsys")
    assert "colorsys" not in sys.modules
    assert "colorsys" in repr(declared) and "first use" in repr(declared)
    assert declared.rgb_to_hsv(1.0, 0.0, 0.0) == (0.0, 1.0, 1.0)
    assert "colorsys" in sys.modules


def test_a_missing_module_fails_at_first_use_not_at_declaration():
    declared = lazy_import("trt_matrix_no_such_module")
    with pytest.raises(ImportError, match="trt_matrix_no_such_module"):
        declared.anything
    with pytest.raises(ImportError):
        resolve(declared)


def test_attributes_are_read_and_written_on_the_module_itself(fake_module):
    declared = lazy_import("trt_matrix_lazy_probe")
    assert resolve(declared) is fake_module and declared.answer == 1
    declared.answer = 2  # Polygraphy's TRT_LOGGER is set this way
    assert fake_module.answer == 2


def test_every_use_sees_the_module_installed_now(fake_module, monkeypatch):
    declared = lazy_import("trt_matrix_lazy_probe")
    assert declared.answer == 1
    replacement = types.ModuleType("trt_matrix_lazy_probe")
    replacement.answer = 11
    monkeypatch.setitem(sys.modules, "trt_matrix_lazy_probe", replacement)
    assert declared.answer == 11 and resolve(declared) is replacement
