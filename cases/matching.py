"""Small questions about an onnx_graphsurgeon graph that the cases' ``find`` matchers ask of a user's model.

A matcher reads a graph; it never changes it. Tensors are ``gs.Variable`` / ``gs.Constant``; a tensor's producer is
``tensor.inputs[0]`` and its consumers are ``tensor.outputs`` (onnx-graphsurgeon's own links).
"""
from __future__ import annotations

from typing import Any, Iterator

QDQ_OPS = ("QuantizeLinear", "DequantizeLinear")


def nodes_of(graph: Any, *op_types: str) -> Iterator[Any]:
    """The graph's nodes of the given op types, in graph order."""
    wanted = set(op_types)
    return (node for node in graph.nodes if node.op in wanted)


def producer(tensor: Any) -> Any | None:
    """The node that writes ``tensor``; None for graph inputs and constants."""
    return tensor.inputs[0] if tensor.inputs else None


def consumers(tensor: Any) -> list[Any]:
    """The nodes that read ``tensor``."""
    return list(tensor.outputs)


def only_consumer(tensor: Any) -> Any | None:
    """The one node that reads ``tensor``, or None when zero or several do."""
    readers = consumers(tensor)
    return readers[0] if len(readers) == 1 else None


def is_graph_output(graph: Any, tensor: Any) -> bool:
    return any(out is tensor or out.name == tensor.name for out in graph.outputs)


def is_constant(tensor: Any) -> bool:
    """A tensor whose value is fixed: an initializer, or the output of a Constant node."""
    if tensor.__class__.__name__ == "Constant":
        return True
    node = producer(tensor)
    return node is not None and node.op == "Constant"


def dequantized(tensor: Any) -> Any | None:
    """The DequantizeLinear node that writes ``tensor``, or None: is this tensor quantized on its way in?"""
    node = producer(tensor)
    return node if node is not None and node.op == "DequantizeLinear" else None


def qdq_pair(tensor: Any) -> tuple[Any, Any] | None:
    """(QuantizeLinear, DequantizeLinear) when ``tensor`` is written by DQ(Q(x)), else None."""
    dq = dequantized(tensor)
    if dq is None:
        return None
    q = producer(dq.inputs[0])
    return (q, dq) if q is not None and q.op == "QuantizeLinear" else None


def is_quantized_weight(tensor: Any) -> bool:
    """A weight that reaches its layer through Q/DQ: DQ(INT8 constant) or DQ(Q(float constant))."""
    return dequantized(tensor) is not None and weight_constant(tensor) is not None


def attr(node: Any, name: str, default: Any = None) -> Any:
    return node.attrs.get(name, default)


def channels_of(tensor: Any, axis: int = 1) -> int | None:
    """A static dimension of a tensor's shape, or None when shape inference left it unknown."""
    shape = getattr(tensor, "shape", None)
    if not shape or len(shape) <= axis or not isinstance(shape[axis], int):
        return None
    return shape[axis]


def weight_constant(tensor: Any) -> Any | None:
    """The constant behind a layer's weight input: itself, or through DQ(W) / DQ(Q(W)); None if not constant."""
    if is_constant(tensor):
        return tensor
    dq = dequantized(tensor)
    if dq is None:
        return None
    source = dq.inputs[0]
    if is_constant(source):
        return source
    q = producer(source)
    return q.inputs[0] if q is not None and q.op == "QuantizeLinear" and is_constant(q.inputs[0]) else None


def is_depthwise(conv: Any) -> bool:
    """A Conv with more than one group and one input channel per group (weight shape (Cout, 1, kh, kw))."""
    if attr(conv, "group", 1) <= 1 or len(conv.inputs) < 2:
        return False
    weight = weight_constant(conv.inputs[1])
    shape = getattr(weight, "shape", None)
    return bool(shape) and len(shape) >= 2 and shape[1] == 1
