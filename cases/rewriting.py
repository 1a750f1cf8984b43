"""Small edits of a user's onnx_graphsurgeon graph that the cases' ``fix`` rewrites make (the writing side of
:mod:`cases.matching`): find a node by name, mark a tensor as an output, put an Identity or a Q/DQ pair on a tensor.

Every helper keeps the user's names: a graph output keeps its name (the node before it writes a new tensor), new
nodes and tensors get names derived from the place, made unique in the graph. A helper that cannot edit raises
:class:`cases.model.NoRewrite` before changing anything.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from cases._graphs import gs
from cases.model import FixTolerance, NoRewrite


class _Index:
    """A graph's nodes by name and every name taken (nodes and tensors), built once per graph and kept up to date by
    the helpers here: looking a name up must not walk 50,000 nodes at each of a thousand places."""

    def __init__(self, graph: Any):
        self.nodes = {node.name: node for node in graph.nodes}
        self.taken = set(self.nodes) | set(graph.tensors())
        self.removed: set[int] = set()  # ids of nodes unlinked, still to leave graph.nodes


INDEX_ATTRIBUTE = "_trt_matrix_rewrite_index"  # kept on the graph object itself (a gs.Graph is not hashable)


def _index(graph: Any) -> _Index:
    index = graph.__dict__.get(INDEX_ATTRIBUTE)
    if index is None:
        index = graph.__dict__[INDEX_ATTRIBUTE] = _Index(graph)
    return index


def node_named(graph: Any, name: str) -> Any:
    """The node called ``name``; NoRewrite when the graph has none."""
    node = _index(graph).nodes.get(name)
    if node is None:
        raise NoRewrite(f"the graph has no node {name!r}")
    return node


def unique_name(graph: Any, base: str) -> str:
    """``base``, or ``base~2``, ``base~3``... when a node or tensor of the graph already has that name (the name is
    taken from then on)."""
    taken = _index(graph).taken
    name, count = base, 1
    while name in taken:
        count += 1
        name = f"{base}~{count}"
    taken.add(name)
    return name


def add_node(graph: Any, node: Any) -> str:
    """Append ``node`` (named with :func:`unique_name`) to the graph; its name."""
    graph.nodes.append(node)
    _index(graph).nodes[node.name] = node
    return node.name


def mark_output(graph: Any, tensor: Any) -> str:
    """Make ``tensor`` a graph output (its dtype and shape as shape inference left them); its name."""
    if any(out is tensor for out in graph.outputs):
        return tensor.name
    if tensor.dtype is None:
        raise NoRewrite(f"tensor {tensor.name!r} has no known type, so it cannot become a graph output")
    graph.outputs.append(tensor)
    return tensor.name


def identity_after(graph: Any, tensor: Any) -> str:
    """Put an Identity after ``tensor`` (written by a node): the Identity writes ``tensor`` (so a graph output keeps
    its name and readers keep reading it) and the node before writes a new tensor; the Identity's name."""
    writer = tensor.inputs[0] if tensor.inputs else None
    if writer is None:
        raise NoRewrite(f"tensor {tensor.name!r} is not written by a node")
    before = gs.Variable(unique_name(graph, f"{tensor.name}_before_identity"), dtype=tensor.dtype, shape=tensor.shape)
    writer.outputs[writer.outputs.index(tensor)] = before
    return add_node(graph, gs.Node("Identity", name=unique_name(graph, f"{writer.name}/Identity"), inputs=[before],
                                   outputs=[tensor]))


def constant_values(tensor: Any) -> Any:
    """The values of a constant tensor: an initializer, or the output of a Constant node (torch.onnx's TorchScript
    exporter writes Q/DQ scales so); None for any other tensor."""
    if isinstance(tensor, gs.Constant):
        return tensor.values
    producers = getattr(tensor, "inputs", [])
    if len(producers) == 1 and producers[0].op == "Constant" and "value" in producers[0].attrs:
        value = producers[0].attrs["value"]
        return value.values if isinstance(value, gs.Constant) else np.asarray(value)
    return None


def quantizer_of(tensor: Any) -> tuple[Any, Any, int | None] | None:
    """(scale, zero point, axis) of a QuantizeLinear with a constant scale (an initializer or a Constant node's
    output) that already reads ``tensor`` and feeds a DequantizeLinear (the user's own quantizer of that tensor), or
    None when no such quantizer reads it."""
    for q in tensor.outputs:
        if q.op != "QuantizeLinear" or len(q.inputs) < 2 or constant_values(q.inputs[1]) is None:
            continue
        if any(dq.op == "DequantizeLinear" for dq in q.outputs[0].outputs):
            zero_point = q.inputs[2] if len(q.inputs) > 2 else None
            return q.inputs[1], zero_point, q.attrs.get("axis") if constant_values(q.inputs[1]).ndim == 1 else None
    return None


def qdq_between(graph: Any, tensor: Any, readers: list[Any], quantizer: tuple[Any, Any, int | None],
                prefix: str) -> list[str]:
    """Put one QuantizeLinear -> DequantizeLinear pair (``quantizer``: scale, zero point, axis; the user's constants,
    shared) between ``tensor`` and ``readers`` (some or all of its readers; the others, and a graph output, keep
    reading ``tensor``); the two new nodes' names, Q first."""
    scale, zero_point, axis = quantizer
    for reader in readers:
        if not any(t is tensor for t in reader.inputs):
            raise NoRewrite(f"node {reader.name!r} does not read tensor {tensor.name!r}")
    params = [scale] + ([zero_point] if zero_point is not None else [])
    attrs = {"axis": axis} if axis is not None else {}
    q_name, dq_name = unique_name(graph, f"{prefix}/QuantizeLinear"), unique_name(graph, f"{prefix}/DequantizeLinear")
    quantized_type = constant_values(zero_point).dtype if zero_point is not None else np.uint8
    q_out = gs.Variable(unique_name(graph, f"{q_name}_output_0"), dtype=quantized_type, shape=tensor.shape)
    dq_out = gs.Variable(unique_name(graph, f"{dq_name}_output_0"), dtype=tensor.dtype, shape=tensor.shape)
    add_node(graph, gs.Node("QuantizeLinear", name=q_name, inputs=[tensor, *params], outputs=[q_out], attrs=attrs))
    add_node(graph, gs.Node("DequantizeLinear", name=dq_name, inputs=[q_out, *params], outputs=[dq_out],
                            attrs=dict(attrs)))
    for reader in readers:
        for index, t in enumerate(reader.inputs):
            if t is tensor:
                reader.inputs[index] = dq_out
    return [q_name, dq_name]


def constant_value(tensor: Any) -> np.ndarray | None:
    """What ``tensor`` holds when it is a constant, or a QuantizeLinear / DequantizeLinear of constants (a weight's
    quantizer), computed as ONNX defines those ops; None otherwise."""
    if isinstance(tensor, gs.Constant):
        return tensor.values
    node = tensor.inputs[0] if tensor.inputs else None
    if node is None or node.op not in ("QuantizeLinear", "DequantizeLinear") or len(node.inputs) < 2:
        return None
    source = constant_value(node.inputs[0])
    scale = node.inputs[1].values if isinstance(node.inputs[1], gs.Constant) else None
    zero = node.inputs[2] if len(node.inputs) > 2 else None
    if source is None or scale is None or (zero is not None and not isinstance(zero, gs.Constant)):
        return None
    zero_point = zero.values if zero is not None else np.zeros(scale.shape, np.uint8)
    if scale.ndim == 1 and scale.size > 1 or zero_point.ndim == 1:
        axis = node.attrs.get("axis", 1) % source.ndim
        shape = [-1 if i == axis else 1 for i in range(source.ndim)]
        scale, zero_point = scale.reshape(shape), zero_point.reshape(shape)
    if node.op == "DequantizeLinear":
        return ((source.astype(np.int32) - zero_point.astype(np.int32)).astype(np.float32) * scale).astype(np.float32)
    info = np.iinfo(zero_point.dtype)
    quantized = np.rint(source.astype(np.float32) / scale) + zero_point.astype(np.float32)
    return np.clip(quantized, info.min, info.max).astype(zero_point.dtype)


def remove_unread(graph: Any, nodes: list[Any]) -> list[str]:
    """Remove those of ``nodes`` whose outputs nothing reads and no graph output is (in the order given, so a
    chain goes from its reader back); the names of the removed ones. They are unlinked at once and leave
    ``graph.nodes`` at :func:`drop_removed` (one pass for every place, not one per node)."""
    removed = []
    outputs = {id(t) for t in graph.outputs}
    index = _index(graph)
    for node in nodes:
        if any(t.outputs or id(t) in outputs for t in node.outputs):
            continue
        node.inputs.clear()  # unlinks the node from the tensors it reads
        node.outputs.clear()
        index.nodes.pop(node.name, None)
        index.removed.add(id(node))
        removed.append(node.name)
    return removed


def drop_removed(graph: Any) -> None:
    """Take the nodes :func:`remove_unread` removed out of ``graph.nodes``."""
    removed = _index(graph).removed
    if removed:
        graph.nodes = [node for node in graph.nodes if id(node) not in removed]
        removed.clear()


def in_data_flow_order(graph: Any) -> None:
    """Order ``graph.nodes`` so that each node comes after the writers of what it reads, the user's order kept
    otherwise: a node the helpers appended moves up to just before its first reader.

    The user's graph was in that order (ONNX requires it) and the helpers only append nodes that read tensors already
    written where they are put, so one pass in the user's order, placing the unplaced writers of a node's inputs
    before it, is enough; onnx-graphsurgeon's ``Graph.toposort`` re-sorts every node by depth, a second at 50,000.
    """
    placed: set[int] = set()
    ordered = []
    for node in graph.nodes:
        pending, opened = [(node, False)], set()
        while pending:
            current, inputs_placed = pending.pop()
            if id(current) in placed:
                continue
            if inputs_placed:
                placed.add(id(current))
                ordered.append(current)
                continue
            if id(current) in opened:  # reached again before it was placed: it reads what it writes
                raise ValueError(f"the rewritten graph has a cycle through node {current.name!r}")
            opened.add(id(current))
            pending.append((current, True))
            pending.extend((t.inputs[0], False) for t in reversed(current.inputs)
                           if t.inputs and id(t.inputs[0]) not in placed)
    graph.nodes = ordered


# The tolerance of a rewrite that adds a Q/DQ pair with a scale the model already uses: the tensor there is rounded
# to a 255-step grid (at most half a step off, values beyond the grid clipped), which the layers after it carry on.
QDQ_ADDED = FixTolerance(
    min_cosine=0.999,
    max_relative_error=0.05,
    reason="one more rounding to an INT8 grid the model already uses moves the tensor there by at most half a step "
           "(0.2% of the quantizer's range) and clips what lies beyond it; 5% of each output's largest magnitude and "
           "a cosine of 0.999 leave room for the layers after it and flag a wrong scale or a wrong wire",
)
