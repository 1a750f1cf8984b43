"""Export the case library to a cases directory: ``DIR/<case>/<variant>.onnx``, ``.npz`` data and ``DIR/index.json``.

Generation is deterministic: the same code writes byte-identical files. Every model passes ``onnx.checker`` with
``full_check`` and strict shape inference before it is written. Reference outputs come from ONNX's own reference
evaluator (``onnx.reference``), independent of every backend under test.
"""
from __future__ import annotations

import io
import json
import zipfile
import zlib
from pathlib import Path
from typing import Callable, Iterable

import numpy as np
import onnx
import onnx.version_converter

from cases._graphs import gs
from cases.model import Built, Case, Variant, all_cases, library_signatures, needs_of

INDEX_FORMAT = "trt-matrix/cases/1"
IR_VERSION_FOR_OPSET = {13: 7, 14: 7, 15: 8, 16: 8, 17: 8, 18: 8, 19: 9, 20: 9, 21: 10}  # oldest IR that carries the opset
_ZIP_EPOCH = (1980, 1, 1, 0, 0, 0)
REFERENCE_OPSET = 21  # QuantizeLinear/DequantizeLinear-21: same INT8 per-tensor and per-axis semantics as 13


def export_model(case: type[Case], variant: Variant) -> tuple[onnx.ModelProto, tuple[str, ...]]:
    """Build ``variant``, export it to ONNX and check it; return the model and its expected-INT8 nodes."""
    model, built = export_built(case, variant)
    return model, tuple(built.expected_int8)


def export_built(case: type[Case], variant: Variant) -> tuple[onnx.ModelProto, Built]:
    """Build ``variant``, export it to ONNX and check it; return the model and what ``build`` returned (the
    expected nodes and the precision each is asked for)."""
    built = case.build(variant)
    opset = case.opset_of(variant)
    model = gs.export_onnx(built.graph.cleanup().toposort(), do_type_check=True)
    del model.opset_import[:]
    model.opset_import.append(onnx.helper.make_opsetid("", opset))
    model.ir_version = IR_VERSION_FOR_OPSET[opset]
    model.producer_name = "trt-matrix"
    model.producer_version = ""
    model.doc_string = f"{case.id}/{variant.name}: {variant.description}"
    try:  # inference first: it fills the shapes of graph outputs that a case leaves to be inferred
        model = onnx.shape_inference.infer_shapes(model, check_type=True, strict_mode=True, data_prop=True)
        onnx.checker.check_model(model, full_check=True)
    except Exception as err:
        raise ValueError(f"Case {case.id}, variant {variant.name}: the exported model fails onnx.checker: {err}") from err
    node_names = {n.name for n in model.graph.node}
    missing = [n for n in built.requested if n not in node_names]
    if missing:
        raise ValueError(
            f"Case {case.id}, variant {variant.name}: expected_int8/expected_precision name nodes the graph does not "
            f"have: {missing}. Graph nodes: {sorted(node_names)}"
        )
    return model, built


def seed_of(case_id: str, variant_name: str) -> int:
    """A stable seed for a variant's data (crc32: same on every run and machine, unlike hash())."""
    return zlib.crc32(f"{case_id}/{variant_name}".encode())


def reference_model(model: onnx.ModelProto) -> onnx.ModelProto:
    """The model converted to the opset the reference evaluator implements (it has e.g. no DequantizeLinear-13)."""
    opset = model.opset_import[0].version
    return model if opset >= REFERENCE_OPSET else onnx.version_converter.convert_version(model, REFERENCE_OPSET)


def make_data(case: type[Case], variant: Variant, model: onnx.ModelProto) -> dict[str, np.ndarray]:
    """Deterministic inputs, calibration batches (implicit-int8 only) and reference outputs, keyed for the .npz.

    A dynamic input dimension takes its size from the variant's ``params["input_shapes"]`` (inference) and
    ``params["calibration_shapes"]`` (calibration batches). A variant that reuses a calibration cache
    (``knobs.calibration_cache``) also gets the largest absolute value of every tensor over its calibration batches
    (``calibration_ranges/names``, ``calibration_ranges/amax``): the harness writes the cache from them.
    """
    import onnx.reference  # imported here: the scan reads the library's declarations without running any

    rng = np.random.default_rng(seed_of(case.id, variant.name))
    initializers = {i.name for i in model.graph.initializer}

    def draw(shapes_key: str) -> dict[str, np.ndarray]:
        feeds = {}
        for value in model.graph.input:
            if value.name in initializers:
                continue
            shape = _concrete_shape(case, variant, value, shapes_key)
            dtype = onnx.helper.tensor_dtype_to_np_dtype(value.type.tensor_type.elem_type)
            feeds[value.name] = rng.standard_normal(shape).astype(dtype)
        return feeds

    inputs = draw("input_shapes")
    data = {f"input/{k}": v for k, v in inputs.items()}
    calibration = []
    if case.mode_of(variant) == "implicit-int8":
        calibration = [draw("calibration_shapes") for _ in range(case.batch_count)]
        for i, batch in enumerate(calibration):
            data.update({f"calib/{i}/{k}": v for k, v in batch.items()})
    evaluator = onnx.reference.ReferenceEvaluator(reference_model(model))
    outputs = evaluator.run(None, inputs)
    for value, array in zip(model.graph.output, outputs):
        data[f"reference/{value.name}"] = np.asarray(array)
    if variant.knobs.calibration_cache is not None:
        data.update(_calibration_ranges(evaluator, calibration, initializers))
    return data


def _concrete_shape(case: type[Case], variant: Variant, value, shapes_key: str) -> list[int]:
    dims = value.type.tensor_type.shape.dim
    if all(d.HasField("dim_value") for d in dims):
        return [d.dim_value for d in dims]
    given = variant.params.get(shapes_key, {}).get(value.name)
    if given is None:
        raise ValueError(
            f"Case {case.id}, variant {variant.name}: input {value.name!r} has a dynamic dimension; give its size in "
            f"params[{shapes_key!r}][{value.name!r}]"
        )
    return list(given)


def _calibration_ranges(evaluator, calibration: list[dict[str, np.ndarray]], initializers: set[str]) -> dict:
    """The largest absolute value of every float tensor the network computes (and of its inputs) over the batches."""
    amax: dict[str, float] = {}
    for batch in calibration:
        values = {**batch, **evaluator.run(None, batch, intermediate=True)}
        for name, array in values.items():
            array = np.asarray(array)
            if name in initializers or array.dtype.kind != "f" or not array.size:
                continue
            amax[name] = max(amax.get(name, 0.0), float(np.abs(array).max()))
    names = sorted(amax)
    return {"calibration_ranges/names": np.array(names), "calibration_ranges/amax": np.array(
        [amax[n] for n in names], dtype=np.float32)}


def write_npz(path: Path, arrays: dict[str, np.ndarray]) -> None:
    """Write an .npz that np.load reads, with fixed zip timestamps so the bytes are reproducible."""
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for key in sorted(arrays):
            buffer = io.BytesIO()
            np.lib.format.write_array(buffer, np.ascontiguousarray(arrays[key]), allow_pickle=False)
            info = zipfile.ZipInfo(f"{key}.npy", date_time=_ZIP_EPOCH)
            info.compress_type = zipfile.ZIP_DEFLATED
            archive.writestr(info, buffer.getvalue())


def _value_info(values) -> dict[str, dict]:
    return {
        v.name: {
            "shape": [d.dim_param or d.dim_value for d in v.type.tensor_type.shape.dim],
            "dtype": onnx.helper.tensor_dtype_to_np_dtype(v.type.tensor_type.elem_type).name,
        }
        for v in values
    }


def new_index(generator: dict) -> dict:
    """An index.json without cases, made by ``generator``: it carries the library's log signatures, which the worker
    classifies TensorRT's logs with (every pattern's, whichever cases the directory holds)."""
    return {"format": INDEX_FORMAT, "generator": generator, "log_signatures": library_signatures().to_json(),
            "cases": []}


def case_entry(case: type[Case]) -> dict:
    """The index.json entry of a case, without its variants."""
    return {"id": case.id, "title": case.title, "pattern": case.pattern, "links": list(case.links),
            "backend_notes": dict(case.backend_notes), "not_applicable": dict(case.not_applicable),
            "remedy": case.remedy, "variants": []}


def declared_entry(case: type[Case], variant: Variant) -> dict:
    """The part of a variant's index.json entry its declaration gives (the rest describes its files)."""
    return {
        "name": variant.name,
        "role": variant.role,
        "varies": variant.varies,
        "inherits": variant.inherits,
        "description": variant.description,
        "mode": case.mode_of(variant),
        "opset": case.opset_of(variant),
        "params": variant.params,
        "knobs": variant.knobs.to_dict(),
        "claims": [claim.to_dict() for claim in variant.claims],
        "range_claims": [claim.to_dict() for claim in variant.range_claims],
        "needs": list(needs_of(variant, case.mode_of(variant))),
    }


def declared_index(cases: Iterable[type[Case]] | None = None) -> dict:
    """The index.json of ``cases`` (default: the library) as far as their declarations give it, built in memory
    without writing a file: what a reader of a written index reads of the cases, variants and claims."""
    return {"format": INDEX_FORMAT, "log_signatures": library_signatures().to_json(),
            "cases": [declared_case(case) for case in (cases if cases is not None else all_cases())]}


def declared_case(case: type[Case]) -> dict:
    """One case's entry of :func:`declared_index`, its variants' declared entries in it."""
    return case_entry(case) | {"variants": [declared_entry(case, variant) for variant in case.variants]}


def variant_entry(case: type[Case], variant: Variant, model: onnx.ModelProto, expected_int8, model_bytes: bytes,
                  data_bytes: bytes, expected_precision: dict[str, str] | None = None) -> dict:
    """The index.json entry of one variant: everything a worker needs besides the .onnx and .npz files.

    ``expected_precision`` maps every expected node to the precision it is asked for (INT8 nodes included); without
    it, the ``expected_int8`` nodes are asked for INT8 and nothing else is.
    """
    import hashlib  # when writing the library (a scan reads only the declared entries)

    initializers = {i.name for i in model.graph.initializer}
    return {
        **declared_entry(case, variant),
        "expected_int8": list(expected_int8),
        "expected_precision": dict(expected_precision if expected_precision is not None
                                   else dict.fromkeys(expected_int8, "int8")),
        "tolerance": case.tolerance._asdict(),
        "model": f"{case.id}/{variant.name}.onnx",
        "data": f"{case.id}/{variant.name}.npz",
        "model_sha256": hashlib.sha256(model_bytes).hexdigest(),
        "data_sha256": hashlib.sha256(data_bytes).hexdigest(),
        "inputs": _value_info(v for v in model.graph.input if v.name not in initializers),
        "outputs": _value_info(model.graph.output),
        "calibration_batches": case.batch_count if case.mode_of(variant) == "implicit-int8" else 0,
    }


def existing_index(out_dir: Path) -> dict | None:
    """The index.json a former ``generate`` wrote in ``out_dir`` (None when there is none), checked enough to merge
    into; a ValueError naming the file and what to do when it is not one."""
    path = Path(out_dir) / "index.json"
    if not path.exists():
        return None
    remedy = (f"give --out another directory, or delete {path} (or the whole of {Path(out_dir)}) and generate again")
    try:
        index = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as err:
        raise ValueError(f"{path}: not a readable cases index ({err}); the selected cases would be merged into it: "
                         f"{remedy}") from err
    cases = index.get("cases") if isinstance(index, dict) else None
    if (not isinstance(index, dict) or index.get("format") != INDEX_FORMAT or not isinstance(cases, list)
            or not all(isinstance(case, dict) and isinstance(case.get("id"), str) for case in cases)):
        found = index.get("format") if isinstance(index, dict) else type(index).__name__
        raise ValueError(f"{path}: not a cases index of format {INDEX_FORMAT} (found {found!r}); the selected cases "
                         f"would be merged into it: {remedy}")
    return index


def merged_cases(kept: list[dict], written: list[dict]) -> list[dict]:
    """The case entries of a former index with those just ``written`` in place of the entries of the same id; new
    cases come after, in the order they were written."""
    by_id = {entry["id"]: entry for entry in written}
    merged = [by_id.pop(entry["id"], entry) for entry in kept]
    return merged + [entry for entry in written if entry["id"] in by_id]


def generate(
    out_dir: Path,
    cases: Iterable[type[Case]] | None = None,
    progress: Callable[[str], None] = lambda message: None,
    merge_into: dict | None = None,
    entry_extras: Callable[[Variant, onnx.ModelProto, dict[str, str]], dict] | None = None,
) -> dict:
    """Write every case (default: the library) under ``out_dir``; return the index that was written.

    ``merge_into`` (a former index of ``out_dir``, from ``existing_index``): the index written keeps its other
    cases, whose files stay as they are, and holds the written cases in place of their former entries.
    ``entry_extras``: what the caller adds to a variant's entry from its model and the precision each expected node is
    asked for (the harness's engine prediction, harness.scan.predicted.predicted_entry: the library imports
    none of the harness's rooms).
    """
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    index = new_index({"onnx": onnx.__version__, "onnx_graphsurgeon": gs.__version__, "numpy": np.__version__})
    for case in cases if cases is not None else all_cases():
        entry = case_entry(case)
        (out_dir / case.id).mkdir(exist_ok=True)
        for variant in case.variants:
            model, built = export_built(case, variant)
            model_bytes = model.SerializeToString(deterministic=True)
            (out_dir / case.id / f"{variant.name}.onnx").write_bytes(model_bytes)
            data_path = out_dir / case.id / f"{variant.name}.npz"
            write_npz(data_path, make_data(case, variant, model))
            entry["variants"].append(variant_entry(case, variant, model, built.expected_int8, model_bytes,
                                                   data_path.read_bytes(), built.requested)
                                     | (entry_extras(variant, model, built.requested) if entry_extras else {}))
            progress(f"{case.id}/{variant.name}")
        index["cases"].append(entry)
    if merge_into is not None:
        index["cases"] = merged_cases(merge_into["cases"], index["cases"])
    (out_dir / "index.json").write_text(json.dumps(index, indent=1, sort_keys=True) + "\n")
    return index
