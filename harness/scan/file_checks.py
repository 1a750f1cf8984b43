"""onnx's own checks of a model file: strict shape inference (type-checked; permissive when strict fails) and
``onnx.checker``, in C++ on the files themselves (no 2 GB protobuf limit, no round trip of the model through Python),
and the types and shapes inferred, handed back as one serialized ``onnx.GraphProto`` (its value infos and outputs).

Standard library and onnx only, so a large model's checks can run as a script in a second process
(``python file_checks.py MODEL TYPES_FILE``) while the scanner reads the same file: onnx's calls keep the
interpreter's lock, so only a second process puts both on two cores at once. The script answers in two parts, the
inferred types first, so the scanner can match the graph while the checker still runs. onnx is imported where it is
used: the scan command starts the script before its own imports (onnx's among them), and importing this module costs
it nothing.
"""
from __future__ import annotations

import dataclasses
import functools
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import onnx


@dataclasses.dataclass
class FileChecks:
    """What onnx's checks said of a model file, and the types and shapes shape inference gave its tensors."""

    strict: bool  # strict shape inference passed: with the checker, a full check
    notes: list[str]  # the shape inference fallbacks, for the report
    invalid: str | None = None  # the checker's first line, when the model is not valid ONNX
    # the inferred value infos and graph outputs, as an onnx.GraphProto serialized (empty: nothing inferred)
    inferred: bytes = b""

    @functools.cached_property
    def _inferred_graph(self) -> onnx.GraphProto:
        import onnx

        return onnx.GraphProto.FromString(self.inferred)

    def value_infos(self) -> dict[str, onnx.ValueInfoProto]:
        """Each tensor's inferred value info by name: the value infos, and the graph outputs not among them (an
        entry may be untyped: its ``type`` empty)."""
        graph = self._inferred_graph
        found = {info.name: info for info in graph.output}
        found.update((info.name, info) for info in graph.value_info)
        return found

    def outputs(self) -> list[onnx.ValueInfoProto]:
        """The graph outputs as shape inference typed them."""
        return list(self._inferred_graph.output)


def infer_types(model: str, directory: str | None = None) -> FileChecks:
    """Infer ``model``'s shapes (strict, then permissive) and keep them; the checker has not run yet. Shape inference
    writes the inferred model into ``directory`` (default: a temporary one of its own, removed after)."""
    if directory is None:
        with tempfile.TemporaryDirectory(prefix="trt-matrix-checks-") as tmp:
            return infer_types(model, tmp)
    import onnx

    notes: list[str] = []
    checks = FileChecks(strict=False, notes=notes)
    inferred = os.path.join(directory, "inferred.onnx")
    for strict_mode in (True, False):
        try:
            onnx.shape_inference.infer_shapes_path(model, inferred, check_type=True, strict_mode=strict_mode,
                                                   data_prop=True)
        except (onnx.shape_inference.InferenceError, onnx.checker.ValidationError, RuntimeError) as err:
            message = " ".join(str(err).split())[:300]
            notes.append(f"strict shape inference failed ({message}); scanned with the shapes the permissive "
                         "mode infers, some may be unknown" if strict_mode else
                         f"shape inference failed ({message}); scanned without inferred shapes")
            continue
        checks.strict = strict_mode
        graph = onnx.load(inferred, load_external_data=False).graph
        checks.inferred = onnx.GraphProto(value_info=graph.value_info, output=graph.output).SerializeToString()
        break
    return checks


def checker_verdict(model: str) -> str | None:
    """The checker's first line on ``model``, None when it is valid (not full_check: shape inference has run)."""
    import onnx

    try:
        onnx.checker.check_model(model)
    except onnx.checker.ValidationError as err:
        return str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
    return None


def check_file(model: str) -> FileChecks:
    """Both checks of ``model``, in this process."""
    checks = infer_types(model)
    checks.invalid = checker_verdict(model)
    return checks


class ChildChecks:
    """:func:`check_file` running in a second Python process: :meth:`types` waits for the inferred types,
    :meth:`result` for the checker too.

    The script says how shape inference went, then the checker's verdict, one JSON line each; the types themselves
    (megabytes on a large model) go into a file of a directory this object owns and removes. Through the pipe they
    would come a pipe's buffer at a time, each waiting for the scan's thread to let go of the interpreter, and hold
    the checker back until the scan asked for them."""

    def __init__(self, model: str):
        self._directory = tempfile.mkdtemp(prefix="trt-matrix-checks-")
        self._types_file = os.path.join(self._directory, "inferred-types.pb")
        # PYTHONSAFEPATH (Python 3.11+): the script's directory, this package's, is not put before the libraries
        self.process = subprocess.Popen(self.command(model, self._types_file), stdout=subprocess.PIPE,
                                        stderr=subprocess.PIPE, env={**os.environ, "PYTHONSAFEPATH": "1"})
        self._types: FileChecks | None = None
        self._result: FileChecks | None = None

    @staticmethod
    def command(model: str, types_file: str) -> list[str]:
        """This module run as a script on ``model``, writing the inferred types to ``types_file``."""
        return [sys.executable, os.fspath(Path(__file__)), model, types_file]

    def types(self) -> FileChecks:
        """What shape inference said (``invalid`` not known yet)."""
        if self._types is None:
            header = self._line()
            with open(self._types_file, "rb") as stream:
                self._types = FileChecks(**header, inferred=stream.read())
        return self._types

    def result(self) -> FileChecks:
        if self._result is None:
            types, verdict = self.types(), self._line()
            self._end()
            self._result = dataclasses.replace(types, invalid=verdict["invalid"])
        return self._result

    def stop(self) -> None:
        """End the process if it still runs (nothing to do once it has ended)."""
        if self.process.poll() is None:
            self.process.kill()
        self._end()

    def _line(self) -> dict:
        line = self.process.stdout.readline()
        if not line:  # the process ended before its answer
            err = self._end().decode(errors="replace")
            last = (err.strip().splitlines() or [f"exit status {self.process.returncode}"])[-1]
            raise RuntimeError(f"onnx's checks of the model stopped in their process ({last})")
        return json.loads(line)

    def _end(self) -> bytes:
        """Wait for the process, remove the types' directory; what the process wrote to stderr."""
        err = b""
        if not self.process.stdout.closed:
            _, err = self.process.communicate()
        shutil.rmtree(self._directory, ignore_errors=True)
        return err


def cores() -> int:
    """The CPU cores this process may run on."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def start_checks(model: str) -> ChildChecks | None:
    """The checks of the file ``model`` started in their process, when there is a second core to run them on and the
    file exists (None: :func:`~harness.scan.loading.load_model` checks it in this process, or says what is wrong)."""
    return ChildChecks(model) if cores() > 1 and os.path.isfile(model) else None


def _answer(model: str, types_file: str) -> None:
    # the inferred model goes beside the types, into the directory the scan owns: killed halfway, nothing is left
    types = infer_types(model, os.path.dirname(types_file))
    with open(types_file, "wb") as stream:
        stream.write(types.inferred)
    print(json.dumps({"strict": types.strict, "notes": types.notes}), flush=True)
    print(json.dumps({"invalid": checker_verdict(model)}), flush=True)


if __name__ == "__main__":
    _answer(sys.argv[1], sys.argv[2])
