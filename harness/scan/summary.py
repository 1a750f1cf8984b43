"""What a scan says about the model itself: file, versions, size of the graph, its ops, whether it carries Q/DQ."""
from __future__ import annotations

import collections
from typing import Any

import numpy as np

from cases.matching import QDQ_OPS
from harness.scan.loading import DEFAULT_DOMAINS, LoadedModel


def model_summary(loaded: LoadedModel) -> dict[str, Any]:
    model, graph = loaded.model, loaded.graph
    ops = collections.Counter(node.op for node in graph.nodes)
    qdq = {op: ops.get(op, 0) for op in QDQ_OPS}
    explicit = any(qdq.values())
    return {
        "path": str(loaded.path),
        "size_bytes": loaded.path.stat().st_size,
        "ir_version": model.ir_version,
        "opset": loaded.opset,
        "other_opsets": {o.domain: o.version for o in model.opset_import if o.domain not in DEFAULT_DOMAINS},
        "producer": " ".join(p for p in (model.producer_name, model.producer_version) if p) or None,
        "nodes": len(graph.nodes),
        "ops": [[op, count] for op, count in sorted(ops.items(), key=lambda item: (-item[1], item[0]))],
        "qdq": qdq,
        "mode": "explicit-qdq" if explicit else "implicit-int8",
        "mode_text": ("explicit quantization: Q/DQ nodes set the INT8 tensors, TensorRT uses no calibrator" if explicit
                      else "no Q/DQ: INT8 needs implicit quantization with a calibrator"),
        "inputs": [_tensor(t) for t in graph.inputs],
        "outputs": [_tensor(t) for t in graph.outputs],
        "external_data": loaded.external_data,
        "notes": loaded.notes,
    }


def _tensor(tensor: Any) -> dict[str, Any]:
    dtype = np.dtype(tensor.dtype).name if tensor.dtype is not None else None
    shape = [d if isinstance(d, int) else str(d) for d in tensor.shape] if tensor.shape is not None else None
    return {"name": tensor.name, "dtype": dtype, "shape": shape}
