"""The base class every backend derives from: one cell goes parse -> build -> inspect -> infer."""
from __future__ import annotations

import dataclasses
import importlib.util
import os
import traceback
from pathlib import Path
from typing import Any

from harness.worker.shapes import Cell, JobTarget


class BackendFailure(Exception):
    """The backend under test failed a stage: a result about the pattern, not about the harness."""

    def __init__(self, category: str, message: str, node: str | None = None, *, log: str | None = None,
                 warnings: dict[str, int] | None = None, details: dict[str, Any] | None = None):
        super().__init__(message)
        self.category, self.message, self.node = category, message, node
        self.log, self.warnings, self.details = log, warnings or {}, details or {}


HARNESS_DIR = Path(__file__).resolve().parents[2]  # the harness package


def raised_in_package(err: BaseException, package: str, called: object = None) -> str | None:
    """Where in ``package`` (the backend library) ``err`` was raised, as "file:line in function" relative to the
    package's parent, or None when the harness raised it.

    The innermost frame of the traceback that lies in either decides: frames of other libraries in between (numpy,
    onnx, called by the backend or by us) do not. A traceback with no such frame below the catching one means
    ``called`` itself raised (a compiled function): its module decides.
    """
    spec = importlib.util.find_spec(package)
    roots = [Path(p).resolve() for p in (spec.submodule_search_locations or []) if p] if spec else []
    for frame in reversed(traceback.extract_tb(err.__traceback__)[1:]):
        path = Path(frame.filename).resolve()
        root = next((root for root in roots if root in path.parents), None)
        if root is not None:
            return f"{path.relative_to(root.parent)}:{frame.lineno} in {frame.name}"
        if HARNESS_DIR in path.parents:
            return None
    module = getattr(called, "__module__", None) or ""
    return f"{module}.{getattr(called, '__qualname__', '?')}" if module.split(".")[0] == package else None


class CellUnavailable(Exception):
    """This cell cannot exist on this backend (an API removed in this version, a platform without the version)."""


class EnvironmentProblem(Exception):
    """The environment is broken (library missing, no GPU where one is needed): an infra-error, not a result."""


@dataclasses.dataclass
class Execution:
    """What a backend observed for one cell."""

    outputs: dict[str, Any]
    precision: dict[str, str]  # ONNX node name -> int8 / fp16 / fp32 / bf16 / fp8 / unknown
    warnings: dict[str, int] = dataclasses.field(default_factory=dict)
    log: str | None = None
    details: dict[str, Any] = dataclasses.field(default_factory=dict)


class StageTracker:
    """Remembers the stage a cell has reached, so a failure is recorded at the stage it happened in.

    With a ``path`` it also writes the stage to that file, so the stage survives a crash of the cell's process. The
    file is replaced atomically: a process killed mid-write leaves the previous stage, never an empty file.
    """

    def __init__(self, path: Path | None = None):
        self.current = "generate"
        self.path = path

    def enter(self, stage: str) -> None:
        self.current = stage
        if self.path is not None:
            partial = self.path.with_name(f".{self.path.name}.{os.getpid()}.tmp")
            partial.write_text(stage)
            os.replace(partial, self.path)


class Backend:
    """One way to run a cell. Subclasses import their heavy modules in :meth:`preload`, never at module import."""

    name = "base"

    def __init__(self, target: JobTarget):
        self.target = target

    def preload(self) -> None:
        """Import heavy modules once, in the parent process, before cell processes fork from it."""

    def environment(self) -> dict[str, Any]:
        """Versions of this backend's libraries as observed in this process."""
        return {}

    def unavailable_reason(self, cell: Cell) -> str | None:
        """Why ``cell`` cannot run on this backend, or None when it can."""
        return None

    def run(self, cell: Cell, arrays: dict[str, Any], workdir: Path, stages: StageTracker) -> Execution:
        raise NotImplementedError
