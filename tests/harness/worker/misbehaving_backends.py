"""Test-only backends that misbehave on purpose (segfault, hang, raise), to show isolation turns them into records.

They are not fakes of any real backend: they exist to break a cell's process in the ways real backends do.
Cells whose variant name contains "bad" misbehave; the others pass straight through to ONNX Runtime.
"""
import ctypes
import time

from harness.worker.backends.onnxruntime import OnnxRuntimeBackend


class _MisbehaveOnBadCells(OnnxRuntimeBackend):
    def run(self, cell, arrays, workdir, stages):
        if "bad" in cell["variant"] or "bad" in cell["case"]:
            stages.enter("build")
            self.misbehave()
        return super().run(cell, arrays, workdir, stages)


class SegfaultBackend(_MisbehaveOnBadCells):
    """Dereferences a null pointer: the process dies by SIGSEGV, as a native library crash does."""

    def misbehave(self):
        ctypes.string_at(0)


class HangBackend(_MisbehaveOnBadCells):
    """Sleeps far past any timeout, as a hung build does."""

    def misbehave(self):
        time.sleep(3600)


class BuggyBackend(_MisbehaveOnBadCells):
    """Raises a plain Python error: a harness bug, which must be infra-error, never a pattern failure."""

    def misbehave(self):
        raise KeyError("a bug in the harness")


class SlowBackend(OnnxRuntimeBackend):
    """Takes a while per cell, so a test can interrupt a run between two records."""

    def run(self, cell, arrays, workdir, stages):
        time.sleep(0.4)
        return super().run(cell, arrays, workdir, stages)


class PrecisionBlindBackend(OnnxRuntimeBackend):
    """Runs on ONNX Runtime but cannot tell precisions, as a TensorRT engine built without detailed profiling."""

    def run(self, cell, arrays, workdir, stages):
        execution = super().run(cell, arrays, workdir, stages)
        execution.precision = {node: "unknown" for node in execution.precision}
        return execution


class StallAtStartBackend(OnnxRuntimeBackend):
    """Hangs on "bad" cells before entering any stage, as a cell stuck loading its inputs does."""

    def run(self, cell, arrays, workdir, stages):
        if "bad" in cell["variant"]:
            time.sleep(3600)
        return super().run(cell, arrays, workdir, stages)
