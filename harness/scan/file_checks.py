"""onnx's own checks of a model file: strict shape inference (type-checked; permissive when strict fails) and
``onnx.checker``, in C++ on the files themselves (no 2 GB protobuf limit, no round trip of the model through Python),
and the types and shapes inferred, handed back as one serialized ``onnx.GraphProto`` (its value infos and outputs).

Standard library and onnx only, so a large model's checks can run as a script in a second process
(``python file_checks.py MODEL``) while the scanner reads the same file: onnx's calls keep the interpreter's lock, so
only a second process puts both on two cores at once. The script answers in two parts, the inferred types first, so
the scanner can match the graph while the checker still runs.
"""
from __future__ import annotations

import dataclasses
import functools
import json
import os
import select
import struct
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import BinaryIO

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


def infer_types(model: str) -> FileChecks:
    """Infer ``model``'s shapes (strict, then permissive) and keep them; the checker has not run yet."""
    notes: list[str] = []
    checks = FileChecks(strict=False, notes=notes)
    with tempfile.TemporaryDirectory(prefix="trt-matrix-checks-") as tmp:
        inferred = os.path.join(tmp, "inferred.onnx")
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
    :meth:`result` for the checker too."""

    def __init__(self, model: str):
        # PYTHONSAFEPATH (Python 3.11+): the script's directory, this package's, is not put before the libraries
        self.process = subprocess.Popen([sys.executable, os.fspath(Path(__file__)), model],
                                        stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                        env={**os.environ, "PYTHONSAFEPATH": "1"})
        self._types: FileChecks | None = None
        self._result: FileChecks | None = None

    def answering(self) -> bool:
        """The inferred types have begun to arrive (or the process ended): :meth:`types` would not wait long."""
        if self._types is not None:
            return True
        try:
            return bool(select.select([self.process.stdout], [], [], 0)[0])
        except (OSError, ValueError):  # no select on pipes here (Windows): say so, and nobody waits on the answer
            return True

    def types(self) -> FileChecks:
        """What shape inference said (``invalid`` not known yet)."""
        if self._types is None:
            header, inferred = _receive(self.process.stdout), _receive(self.process.stdout)
            if header is None or inferred is None:
                self._fail()
            self._types = FileChecks(**json.loads(header), inferred=inferred)
        return self._types

    def result(self) -> FileChecks:
        if self._result is None:
            types = self.types()
            verdict = _receive(self.process.stdout)
            if verdict is None:
                self._fail()
            self.process.wait()
            self.process.stderr.close()
            self.process.stdout.close()
            self._result = dataclasses.replace(types, invalid=json.loads(verdict)["invalid"])
        return self._result

    def _fail(self) -> None:
        self.process.stdout.close()
        err = self.process.stderr.read().decode(errors="replace")
        self.process.stderr.close()
        self.process.wait()
        last = (err.strip().splitlines() or [f"exit status {self.process.returncode}"])[-1]
        raise RuntimeError(f"onnx's checks of the model stopped in their process ({last})")

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
        self.process.communicate()


def _send(stream: BinaryIO, payload: bytes) -> None:
    stream.write(struct.pack("<Q", len(payload)) + payload)
    stream.flush()


def _receive(stream: BinaryIO) -> bytes | None:
    """One length-prefixed part of the script's answer; None when the process ended before it."""
    head = stream.read(8)
    if len(head) < 8:
        return None
    (size,) = struct.unpack("<Q", head)
    payload = stream.read(size)
    return payload if len(payload) == size else None


def _answer(model: str) -> None:
    out = sys.stdout.buffer
    types = infer_types(model)
    _send(out, json.dumps({"strict": types.strict, "notes": types.notes}).encode())
    _send(out, types.inferred)
    _send(out, json.dumps({"invalid": checker_verdict(model)}).encode())


if __name__ == "__main__":
    _answer(sys.argv[1])
