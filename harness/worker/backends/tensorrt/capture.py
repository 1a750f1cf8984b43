"""TensorRT keeps one logger per process (the harness runs each cell in its own): each cell's TensorRT messages, Python
warnings and Polygraphy messages go to files in the cell's directory, ``tensorrt.log`` and ``polygraphy.log``.

``trt`` is the TensorRT module, passed in (see the package docstring)."""
from __future__ import annotations

import contextlib
import sys
import threading
import warnings
from pathlib import Path
from typing import Any

from harness.worker.backends.base import EnvironmentProblem
from harness.worker.backends.tensorrt.compat import polygraphy_problem_message
from harness.worker.backends.tensorrt.lazy import lazy_import

polygraphy_trt_util = lazy_import("polygraphy.backend.trt.util")
polygraphy_logger = lazy_import("polygraphy.logger")

SEVERITY_TAGS = {"INTERNAL_ERROR": "F", "ERROR": "E", "WARNING": "W", "INFO": "I", "VERBOSE": "V"}


class TensorRTLogFile:
    """The file where the process's TensorRT logger writes: one ``[E] [TRT] message`` line per line of a message."""

    def __init__(self):
        self._lock = threading.Lock()  # TensorRT may log from its own threads
        self._file = None
        self.path: Path | None = None
        self.counts: dict[str, int] = {}

    def open(self, path: Path) -> None:
        with self._lock:
            self.path, self.counts = Path(path), {}
            self._file = open(path, "w", encoding="utf-8")

    def close(self) -> None:
        with self._lock:
            if self._file is not None:
                self._file.close()
            self._file = None

    def write(self, severity: str, message: str, source: str = "TRT") -> None:
        tag = SEVERITY_TAGS.get(severity, "?")
        with self._lock:
            self.counts[severity] = self.counts.get(severity, 0) + 1
            if self._file is not None:
                for line in str(message).splitlines() or [""]:
                    self._file.write(f"[{tag}] [{source}] {line}\n")
                self._file.flush()


_process_logger = None


def process_logger(trt):
    """This process's one ``trt.ILogger``: TensorRT keeps the first logger it is given, so there is only ever one."""
    global _process_logger
    if _process_logger is not None and _process_logger[0] is trt:
        return _process_logger[1]

    class FileLogger(trt.ILogger):
        """Writes every TensorRT message, whatever its severity, to a TensorRTLogFile."""

        def __init__(self):
            trt.ILogger.__init__(self)
            self.file = TensorRTLogFile()

        def log(self, severity, msg):
            try:
                self.file.write(getattr(severity, "name", None) or str(severity).rsplit(".", 1)[-1], msg)
            except Exception as err:  # log() must not raise into TensorRT
                print(f"trt-matrix: could not record a TensorRT message ({err}): {msg}", file=sys.stderr)

    _process_logger = (trt, FileLogger())
    return _process_logger[1]


class CellCapture:
    """Everything a cell's run says: TensorRT's messages, Python warnings, Polygraphy's messages, in its directory.

    While open, the process's one ``trt.ILogger`` (:func:`process_logger`) is the logger Polygraphy hands to every
    builder, parser and runtime, so every TensorRT message lands, with its severity, in ``tensorrt.log``; Python
    warnings raised meanwhile (TensorRT 10.1+ deprecates the calibrator API) are appended there too. Polygraphy's own
    messages go to ``polygraphy.log``.
    """

    def __init__(self, trt, workdir: Path):
        self.tensorrt_log = Path(workdir) / "tensorrt.log"
        self.polygraphy_log = Path(workdir) / "polygraphy.log"
        self.python_warnings: list[dict[str, Any]] = []
        self._logger = process_logger(trt)
        self._caught: list[warnings.WarningMessage] = []
        self._stack = contextlib.ExitStack()

    def __enter__(self) -> "CellCapture":
        try:
            self._start()
        except BaseException:
            self._stack.close()
            raise
        return self

    def __exit__(self, *exc_info) -> None:
        self._stack.close()

    def _start(self) -> None:
        G_LOGGER = polygraphy_logger.G_LOGGER
        self._logger.file.open(self.tensorrt_log)
        self._stack.callback(self._logger.file.close)
        self._stack.callback(self._flush_python_warnings)
        polygraphy_trt_util.TRT_LOGGER = self._logger  # the logger Polygraphy gives every builder, parser, runtime
        if polygraphy_trt_util.get_trt_logger() is not self._logger:
            raise EnvironmentProblem(polygraphy_problem_message(
                "This Polygraphy does not hand out the TensorRT logger kept in polygraphy.backend.trt.util.TRT_LOGGER, "
                "so TensorRT's messages could not be captured."
            ))
        severity, colors = G_LOGGER.module_severity, G_LOGGER.colors
        self._stack.callback(lambda: setattr(G_LOGGER, "module_severity", severity))
        self._stack.callback(lambda: setattr(G_LOGGER, "colors", colors))
        G_LOGGER.module_severity, G_LOGGER.colors = G_LOGGER.VERBOSE, False
        polygraphy_output = self._stack.enter_context(open(self.polygraphy_log, "w", encoding="utf-8"))
        self._stack.enter_context(contextlib.redirect_stdout(polygraphy_output))
        self._caught = self._stack.enter_context(warnings.catch_warnings(record=True))
        warnings.simplefilter("always")

    def _flush_python_warnings(self) -> None:
        """Python warnings go to the TensorRT log too (the 10.1+ calibrator DeprecationWarning is one): each distinct
        warning once, its number of occurrences in ``python_warnings``."""
        distinct: dict[tuple[str, str, str], dict[str, Any]] = {}
        for caught in self._caught:
            where = f"{Path(caught.filename).name}:{caught.lineno}"
            key = (caught.category.__name__, str(caught.message), where)
            if key in distinct:
                distinct[key]["count"] += 1
            else:
                distinct[key] = {"category": key[0], "message": key[1], "where": where, "count": 1}
        for warning in distinct.values():
            self._logger.file.write("WARNING", f"{warning['category']}: {warning['message']} ({warning['where']})",
                                    "python")
        self.python_warnings = list(distinct.values())

    def tensorrt_text(self) -> str:
        return _text_of(self.tensorrt_log)

    def polygraphy_text(self) -> str:
        return _text_of(self.polygraphy_log)

    def digest(self, failure: str | None = None) -> str:
        """Warning and error lines of the TensorRT log (and the failure), then where the full logs are."""
        kept = [line for line in self.tensorrt_text().splitlines() if line[:3] in ("[F]", "[E]", "[W]")]
        if failure:
            kept.append(f"[failure] {failure}")
        kept.append(f"[full logs, every severity: {self.tensorrt_log} and {self.polygraphy_log}]")
        return "\n".join(kept)

    def summary(self) -> dict[str, Any]:
        return {
            "log_files": {"tensorrt": str(self.tensorrt_log), "polygraphy": str(self.polygraphy_log)},
            "tensorrt_messages": dict(self._logger.file.counts),
            "python_warnings": list(self.python_warnings),
        }


def _text_of(log: Path) -> str:
    """A log's text, "" before it exists; bytes that are not UTF-8 (a node name in another encoding) become U+FFFD."""
    return log.read_bytes().decode("utf-8", "replace") if log.exists() else ""
