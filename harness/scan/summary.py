"""What a scan says about the model itself: file, versions, size of the graph, its ops, whether it carries Q/DQ."""
from __future__ import annotations

import collections
import functools
import heapq
from typing import Any

import numpy as np

from cases.matching import QDQ_OPS, quantized_tensors
from harness.scan.loading import DEFAULT_DOMAINS, LoadedModel
from harness.scan.proto_graph import ProtoGraph


def model_summary(loaded: LoadedModel) -> dict[str, Any]:
    model, graph = loaded.model, loaded.view
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
        "inputs": [_tensor(t) for t in graph.inputs],
        "outputs": [_tensor(t) for t in graph.outputs],
        "external_data": loaded.external_data,
        "notes": loaded.notes,
    }


# The ONNX types a Q/DQ node quantizes to, as a user names them.
QUANTIZED_TYPE_NAMES = {"INT8": "INT8", "UINT8": "UINT8", "INT4": "INT4", "UINT4": "UINT4", "INT16": "INT16",
                        "UINT16": "UINT16", "FLOAT8E4M3FN": "FP8 (E4M3)", "FLOAT8E4M3FNUZ": "FP8 (E4M3, FNUZ)",
                        "FLOAT8E5M2": "FP8 (E5M2)", "FLOAT8E5M2FNUZ": "FP8 (E5M2, FNUZ)", "FLOAT4E2M1": "FP4 (E2M1)"}


def quantized_types(graph: ProtoGraph) -> list[str]:
    """The types the Q/DQ nodes of ``graph`` (the scan's view of the model) quantize to ("INT8", "FP8 (E4M3)", ...),
    most nodes first; "unknown type" for a node whose quantized tensor and zero point carry no type. A zero point that
    is an initializer is read from the index (a model's tens of thousands of Q/DQ share a few); the others' nodes from
    the view, as :func:`~cases.matching.quantized_tensors` orders them."""
    found: collections.Counter = collections.Counter()
    index = graph.index
    for position in heapq.merge(*(index.by_op.get(op, ()) for op in QDQ_OPS)):
        inputs = index.nodes[position].input
        name = _onnx_type_name(graph.initializer_dtype(inputs[2])) if len(inputs) > 2 and inputs[2] else None
        name = name or _type_name_of(graph.node_at(position))
        found[QUANTIZED_TYPE_NAMES.get(name, name) if name else "unknown type"] += 1
    return [name for name, _ in found.most_common()]


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


def _tensor(tensor: Any) -> dict[str, Any]:
    dtype = np.dtype(tensor.dtype).name if tensor.dtype is not None else None
    shape = [d if isinstance(d, int) else str(d) for d in tensor.shape] if tensor.shape is not None else None
    return {"name": tensor.name, "dtype": dtype, "shape": shape}
