"""onnx's own checks of a model file: strict shape inference (type-checked; permissive when strict fails) written to a
second file, and ``onnx.checker`` on the file, in C++ on the files themselves (no 2 GB protobuf limit, no round trip
through Python).

Standard library and onnx only, so a large model's checks can run as a script in a second process
(``python file_checks.py MODEL INFERRED``, answering one JSON line) while the scanner imports the same file into
onnx-graphsurgeon: onnx's calls keep the interpreter's lock, so only a second process puts both halves of loading on
two cores at once.
"""
from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
from pathlib import Path

import onnx


@dataclasses.dataclass
class FileChecks:
    """What onnx's checks said of a model file."""

    inferred: str | None  # the model with inferred shapes; None when shape inference failed in both modes
    strict: bool  # strict shape inference passed: with the checker, a full check
    notes: list[str]  # the shape inference fallbacks, for the report
    invalid: str | None = None  # the checker's first line, when the model is not valid ONNX


def check_file(model: str, inferred: str) -> FileChecks:
    """Infer ``model``'s shapes into ``inferred`` (strict, then permissive) and run the checker on ``model``."""
    notes: list[str] = []
    written, strict = None, False
    for strict_mode in (True, False):
        try:
            onnx.shape_inference.infer_shapes_path(model, inferred, check_type=True, strict_mode=strict_mode,
                                                   data_prop=True)
        except (onnx.shape_inference.InferenceError, onnx.checker.ValidationError, RuntimeError) as err:
            message = " ".join(str(err).split())[:300]
            notes.append(f"strict shape inference failed ({message}); scanned with the shapes the permissive mode "
                         "infers, some may be unknown" if strict_mode else
                         f"shape inference failed ({message}); scanned without inferred shapes")
            continue
        written, strict = inferred, strict_mode
        break
    try:
        onnx.checker.check_model(model)  # not full_check: shape inference has run
    except onnx.checker.ValidationError as err:
        first = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        return FileChecks(written, strict, notes, first)
    return FileChecks(written, strict, notes)


class ChildChecks:
    """:func:`check_file` running in a second Python process; :meth:`result` waits for it."""

    def __init__(self, model: str, inferred: str):
        self.process = subprocess.Popen([sys.executable, os.fspath(Path(__file__)), model, inferred],
                                        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    def result(self) -> FileChecks:
        out, err = self.process.communicate()
        if self.process.returncode != 0 or not out.strip():
            last = (err.strip().splitlines() or [f"exit status {self.process.returncode}"])[-1]
            raise RuntimeError(f"onnx's checks of the model stopped in their process ({last})")
        return FileChecks(**json.loads(out))

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
        self.process.communicate()


if __name__ == "__main__":
    print(json.dumps(dataclasses.asdict(check_file(sys.argv[1], sys.argv[2]))))
