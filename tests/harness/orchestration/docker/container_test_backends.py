"""Test-only backends shipped into worker containers (the runner ships a ``module:Class`` backend's own module).

They stand in for no real backend: they make a container run end in ways a real one can, on demand.
"""
import time

from harness.worker.backends.base import Backend, Execution

FIRST_CELL_MARK = "first-cell-claimed"


def _reference_execution(cell, arrays) -> Execution:
    """What a perfect INT8 backend would report: the reference outputs, every expected node in INT8."""
    return Execution(outputs=arrays["reference"], precision={node: "int8" for node in cell["expected_int8"]})


class SleepAfterFirstCellBackend(Backend):
    """Finishes the first cell at once and sleeps through every later one, so a run can be cut off mid-way."""

    name = "sleep-after-first-cell"

    def run(self, cell, arrays, workdir, stages):
        try:
            (workdir.parent.parent / FIRST_CELL_MARK).open("x").close()  # cells' dirs are WORK/<case>/<variant>
        except FileExistsError:
            time.sleep(3600)
        return _reference_execution(cell, arrays)


class UnknownPrecisionBackend(Backend):
    """Reports a precision the record schema does not allow, so the host must refuse the record."""

    name = "unknown-precision"

    def run(self, cell, arrays, workdir, stages):
        execution = _reference_execution(cell, arrays)
        execution.precision = {node: "int3" for node in execution.precision} or {"any-node": "int3"}
        return execution
