"""onnx's own checks of a model file: strict shape inference (type-checked; permissive when strict fails) and
``onnx.checker``, in C++ on the files themselves (no 2 GB protobuf limit, no round trip of the model through Python),
and the types and shapes inferred, read back as plain lists.

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
    """What onnx's checks said of a model file, and the types and shapes shape inference gave its tensors."""

    strict: bool  # strict shape inference passed: with the checker, a full check
    notes: list[str]  # the shape inference fallbacks, for the report
    invalid: str | None = None  # the checker's first line, when the model is not valid ONNX
    # [name, ONNX element type, dims] of each tensor shape inference typed as a tensor, value infos first, then the
    # graph outputs not among them; dims as onnx-graphsurgeon keeps them (an int, a symbolic name, None when
    # unknown), None when the rank is unknown. Plain lists: a second process hands them over as JSON.
    shapes: list[list] = dataclasses.field(default_factory=list)
    other_types: list[str] = dataclasses.field(default_factory=list)  # the other typed value infos, serialized (hex)
    outputs: list[str] = dataclasses.field(default_factory=list)  # the inferred graph outputs, serialized (hex)


def check_file(model: str, inferred: str) -> FileChecks:
    """Infer ``model``'s shapes into ``inferred`` (strict, then permissive), read them, and run the checker on
    ``model``."""
    notes: list[str] = []
    checks = FileChecks(strict=False, notes=notes)
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
        checks.strict = strict_mode
        _read_shapes(onnx.load(inferred, load_external_data=False).graph, checks)
        break
    try:
        onnx.checker.check_model(model)  # not full_check: shape inference has run
    except onnx.checker.ValidationError as err:
        checks.invalid = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
    return checks


def _read_shapes(graph: onnx.GraphProto, checks: FileChecks) -> None:
    """Fill ``checks``' shapes, other types and outputs from the inferred ``graph``."""
    seen = set()
    for info in (*graph.value_info, *graph.output):
        if info.name in seen or info.type.ByteSize() == 0:
            continue
        seen.add(info.name)
        if not info.type.HasField("tensor_type"):
            checks.other_types.append(info.SerializeToString().hex())
            continue
        tensor = info.type.tensor_type
        dims = [_dim(d) for d in tensor.shape.dim] if tensor.HasField("shape") else None
        checks.shapes.append([info.name, tensor.elem_type, dims])
    checks.outputs = [info.SerializeToString().hex() for info in graph.output]


def _dim(dim: onnx.TensorShapeProto.Dimension) -> int | str | None:
    """A dimension as onnx-graphsurgeon reads it: its symbolic name, else its value, else None (unknown)."""
    which = dim.WhichOneof("value")
    return None if which is None else getattr(dim, which)


class ChildChecks:
    """:func:`check_file` running in a second Python process; :meth:`result` waits for it."""

    def __init__(self, model: str, inferred: str):
        # PYTHONSAFEPATH (Python 3.11+): the script's directory, this package's, is not put before the libraries
        self.process = subprocess.Popen([sys.executable, os.fspath(Path(__file__)), model, inferred],
                                        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                        env={**os.environ, "PYTHONSAFEPATH": "1"})

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
    print(json.dumps(vars(check_file(sys.argv[1], sys.argv[2]))))  # not dataclasses.asdict: it deep-copies
