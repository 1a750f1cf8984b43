"""The input sizes a reduction runs with. A cell needs static input shapes (its inputs are drawn once, its reference
outputs computed once), and most exported models have a symbolic batch dimension: each symbolic dimension is set as
``scan --run`` sets those of its reproducers, to 1, unless ``--input-shape NAME:D1xD2...`` (polygraphy's way of
naming a size) gives the input's whole shape. The model with those sizes is written into the reduction's directory
and reduced instead of the user's file, which is left as it is."""
from __future__ import annotations

import dataclasses
import os
from pathlib import Path

import onnx

STATIC_MODEL = "static-inputs.onnx"


class InputShapeError(ValueError):
    """An --input-shape that names no input of the model or does not fit its shape."""


@dataclasses.dataclass
class StaticInputs:
    """The model a reduction runs (the user's, or a copy with static input sizes) and what was decided."""

    path: Path
    shapes: dict[str, list[int]]  # input name -> the shape it runs with
    notes: list[str]  # one per input whose size was set, saying how

    def to_dict(self) -> dict:
        return {"model": str(self.path), "input_shapes": self.shapes, "notes": self.notes}


def _dims(value: onnx.ValueInfoProto) -> list[int | str]:
    return [d.dim_value if d.HasField("dim_value") else (d.dim_param or "?")
            for d in value.type.tensor_type.shape.dim]


def static_inputs(model_path: Path, given: dict[str, list[int]], out_dir: Path) -> StaticInputs:
    """The model at ``model_path`` with every input shape static: as it is when its inputs are static and nothing is
    given, else a copy in ``out_dir`` (:data:`STATIC_MODEL`) with ``given`` shapes and every other symbolic dimension
    set to 1, shapes inferred again. InputShapeError for a ``given`` shape that names no input or does not fit."""
    model = onnx.load(os.fspath(model_path))
    initializers = {i.name for i in model.graph.initializer}
    inputs = [v for v in model.graph.input if v.name not in initializers]
    unknown = sorted(set(given) - {v.name for v in inputs})
    if unknown:
        raise InputShapeError(f"--input-shape names {unknown}, which {'is' if len(unknown) == 1 else 'are'} not an "
                              f"input of {model_path}; its inputs: "
                              + ", ".join(f"{v.name} {_dims(v)}" for v in inputs))
    shapes, notes, changed = {}, [], False
    for value in inputs:
        dims = _dims(value)
        if value.name in given:
            shape = given[value.name]
            if len(shape) != len(dims) or any(isinstance(d, int) and d != s for d, s in zip(dims, shape)):
                raise InputShapeError(f"--input-shape {value.name}:{'x'.join(map(str, shape))} does not fit input "
                                      f"{value.name!r} of {model_path}, whose shape is {dims}")
            if shape != dims:
                notes.append(f"input {value.name!r} has the shape {dims}: it runs with {shape} (--input-shape)")
        else:
            shape = [d if isinstance(d, int) and d > 0 else 1 for d in dims]
            if shape != dims:
                spelled = "x".join(map(str, shape))
                notes.append(f"input {value.name!r} has the shape {dims}: symbolic dimensions set to 1, as `scan "
                             f"--run` does: {shape} (--input-shape {value.name}:{spelled} with other sizes to "
                             "choose them)")
        changed |= shape != dims
        shapes[value.name] = shape
    if not changed:
        return StaticInputs(Path(model_path), shapes, notes)
    for value in inputs:
        for dim, size in zip(value.type.tensor_type.shape.dim, shapes[value.name]):
            dim.Clear()
            dim.dim_value = size
    del model.graph.value_info[:]  # inferred again from the static inputs
    for value in model.graph.output:
        value.type.tensor_type.ClearField("shape")
    model = onnx.shape_inference.infer_shapes(model, data_prop=True)
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / STATIC_MODEL
    path.write_bytes(model.SerializeToString(deterministic=True))
    return StaticInputs(path, shapes, notes)
