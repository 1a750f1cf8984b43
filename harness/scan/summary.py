"""What a scan says about the model itself: file, versions, size of the graph, its ops, whether it carries Q/DQ."""
from __future__ import annotations

import collections
import functools
import itertools
from typing import Any

import numpy as np

from cases.matching import QDQ_OPS, quantized_tensors
from harness.scan.loading import DEFAULT_DOMAINS, LoadedModel
from harness.scan.proto_graph import ProtoGraph, numpy_dtype, value_info_type


def model_summary(loaded: LoadedModel) -> dict[str, Any]:
    model, graph = loaded.model, loaded.view
    loaded.checked()  # the graph outputs typed as shape inference left them
    ops = collections.Counter({op: len(positions) for op, positions in loaded.index.by_op.items()})
    qdq = {op: ops.get(op, 0) for op in QDQ_OPS}
    explicit = any(qdq.values())
    quantized = quantized_types(graph)
    return {
        "path": str(loaded.path),
        "size_bytes": loaded.path.stat().st_size,
        "ir_version": model.ir_version,
        "opset": loaded.opset,
        "other_opsets": {o.domain: o.version for o in model.opset_import if o.domain not in DEFAULT_DOMAINS},
        "producer": " ".join(p for p in (model.producer_name, model.producer_version) if p) or None,
        "nodes": len(loaded.index.nodes),
        "ops": [[op, count] for op, count in sorted(ops.items(), key=lambda item: (-item[1], item[0]))],
        "qdq": qdq,
        "mode": "explicit-qdq" if explicit else "implicit-int8",
        "quantized_types": quantized,
        "mode_text": (f"explicit quantization: Q/DQ nodes set the {' and '.join(quantized)} tensors, TensorRT uses no "
                      "calibrator" if explicit else "no Q/DQ: INT8 needs implicit quantization with a calibrator"),
        "inputs": [_io_tensor(graph, info) for info in model.graph.input],
        "outputs": [_io_tensor(graph, info) for info in model.graph.output],
        "external_data": loaded.external_data,
        "notes": loaded.notes,
    }


# The ONNX types a Q/DQ node quantizes to, as a user names them.
QUANTIZED_TYPE_NAMES = {"INT8": "INT8", "UINT8": "UINT8", "INT4": "INT4", "UINT4": "UINT4", "INT16": "INT16",
                        "UINT16": "UINT16", "FLOAT8E4M3FN": "FP8 (E4M3)", "FLOAT8E4M3FNUZ": "FP8 (E4M3, FNUZ)",
                        "FLOAT8E5M2": "FP8 (E5M2)", "FLOAT8E5M2FNUZ": "FP8 (E5M2, FNUZ)", "FLOAT4E2M1": "FP4 (E2M1)"}


def quantized_types(graph: ProtoGraph) -> list[str]:
    """The types the Q/DQ nodes of ``graph`` (the scan's view of the model) quantize to ("INT8", "FP8 (E4M3)", ...),
    most nodes first (on a tie, the type met first in graph order); "unknown type" for a node whose quantized tensor
    and zero point carry no type. A zero point that is an initializer says the type of all its nodes, read once per
    type (:attr:`~harness.scan.proto_graph.GraphIndex.quantizer_groups`); the other nodes are read from the view,
    as :func:`~cases.matching.quantized_tensors` orders their tensors."""
    found: dict[str, list[int]] = {}  # type -> [nodes, the first one's position]

    def count(name: str | None, nodes: int, first: int) -> None:
        name = QUANTIZED_TYPE_NAMES.get(name, name) if name else "unknown type"
        entry = found.get(name)
        if entry is None:
            found[name] = [nodes, first]
        else:
            entry[0] += nodes
            entry[1] = min(entry[1], first)

    groups = graph.index.quantizer_groups
    for element, positions in groups.by_type.items():
        name = _onnx_type_name(numpy_dtype(element))
        if name:
            count(name, len(positions), positions[0])
        else:
            for position in positions:
                count(_type_name_of(graph.node_at(position)), 1, position)
    for position in itertools.chain.from_iterable(groups.by_zero_point.values()):
        count(_type_name_of(graph.node_at(position)), 1, position)
    return sorted(found, key=lambda name: (-found[name][0], found[name][1]))


def _type_name_of(node: Any) -> str | None:
    """The ONNX type name a Q/DQ node quantizes to, read from its tensors, else a Q's ``output_dtype``."""
    names = (_onnx_type_name(getattr(t, "dtype", None)) for t in quantized_tensors(node))
    name = next((n for n in names if n), None)
    if not name and node.op == "QuantizeLinear" and "output_dtype" in node.attrs:
        name = _onnx_type_name(int(node.attrs["output_dtype"]))
    return name


@functools.lru_cache(maxsize=64)
def _onnx_type_name(dtype: Any) -> str | None:
    """ONNX's name of a tensor type ("INT8", "FLOAT8E4M3FN"): onnx-graphsurgeon gives a NumPy dtype, or the ONNX type
    number of a type NumPy lacks (cached: a model asks for the same few types tens of thousands of times)."""
    import onnx

    if dtype is None:
        return None
    if isinstance(dtype, int) and not isinstance(dtype, bool):
        return onnx.TensorProto.DataType.Name(dtype) if dtype else None
    try:
        return onnx.TensorProto.DataType.Name(onnx.helper.np_dtype_to_tensor_dtype(np.dtype(dtype)))
    except (TypeError, KeyError, ValueError):
        return None


def _io_tensor(graph: ProtoGraph, info: Any) -> dict[str, Any]:
    """A graph input's or output's name, type and shape, from its value info in the model (the outputs' are shape
    inference's once the checks are in); an input that is an initializer, from the initializer (as the view has it).
    Not through the view's tensors: typing one of those reads every tensor shape inference typed."""
    if graph.initializer_dtype(info.name) is not None:
        tensor = graph.tensor(info.name)
        return _tensor(tensor.name, tensor.dtype, tensor.shape)
    dtype, shape, _ = value_info_type(info) if info.type.ByteSize() else (None, None, None)
    return _tensor(info.name, dtype, shape)


def _tensor(name: str, dtype: Any, shape: list | None) -> dict[str, Any]:
    return {"name": name, "dtype": np.dtype(dtype).name if dtype is not None else None,
            "shape": [d if isinstance(d, int) else str(d) for d in shape] if shape is not None else None}
