"""Small questions about an onnx_graphsurgeon graph that the cases' ``find`` matchers ask of a user's model.

A matcher reads a graph; it never changes it. Tensors are ``gs.Variable`` / ``gs.Constant``; a tensor's producer is
``tensor.inputs[0]`` and its consumers are ``tensor.outputs`` (onnx-graphsurgeon's own links).

One order convention for every walker: it takes the tensor (or node) it starts from first. The nodes of a chain it
returns are in data-flow order, producer first (a Q/DQ pair is always ``[QuantizeLinear, DequantizeLinear]``), as a
list, empty when there is none; a walker that steps over nodes to reach something returns ``(what it reached, the
nodes stepped over in data-flow order)``. Searches of a neighbourhood (``ancestors``, ``descendants``) return nodes
nearest the start first.

The Q/DQ walkers, upstream of a tensor: ``dequantized`` (the DQ that writes it), ``quantizer_before`` (that DQ and the
Q before it, if any), ``qdq_before`` (a whole Q -> DQ pair only), ``through_qdq`` (the tensor before such a pair);
downstream: ``qdq_after``. Questions about the quantizer writing a tensor (``quantization_axis``, ``is_per_channel``,
``dequantize_scale``, ``weight_constant``) take the tensor too.
"""
from __future__ import annotations

import collections
import contextlib
import functools
import heapq
import math
from typing import Any, Callable, Iterable, Iterator

QDQ_OPS = ("QuantizeLinear", "DequantizeLinear")

_INDEXES: dict[int, tuple[Any, dict[str, list[tuple[int, Any]]]]] = {}  # id(graph) -> (graph, op -> (position, node))
_FROM_CONSTANTS: list[dict[int, bool]] = []  # while indexed(): id(tensor) -> computed from constants alone
_NEAREST: list[dict[tuple, Any]] = []  # while indexed(): nearest_variant's answers (a pattern repeats per block)
_PRECISIONS: list[dict[int, frozenset]] = []  # while indexed(): id(graph) -> dequantized_precisions' answer


@contextlib.contextmanager
def indexed(graph: Any) -> Iterator[None]:
    """While the matchers read ``graph`` (they never change it), :func:`nodes_of` answers from one index of its nodes
    by op type (unless the graph keeps its own): thirty matchers each walking 50,000 nodes for a few op types is most
    of a large model's match time."""
    if not hasattr(type(graph), "op_positions"):
        by_op: dict[str, list[tuple[int, Any]]] = collections.defaultdict(list)
        for position, node in enumerate(graph.nodes):
            by_op[node.op].append((position, node))
        _INDEXES[id(graph)] = (graph, by_op)
    _FROM_CONSTANTS.append({})
    _NEAREST.append({})
    _PRECISIONS.append({})
    try:
        yield
    finally:
        _FROM_CONSTANTS.pop()
        _NEAREST.pop()
        _PRECISIONS.pop()
        _INDEXES.pop(id(graph), None)


def nodes_of(graph: Any, *op_types: str) -> Iterator[Any]:
    """The graph's nodes of the given op types, in graph order. A graph that indexes its own nodes by op (the scan's
    view of a model's protobuf: ``graph.op_positions(op)``, its ``graph.nodes`` by position) answers from its index."""
    if hasattr(type(graph), "op_positions"):
        positions = [graph.op_positions(op) for op in dict.fromkeys(op_types)]
        return map(graph.nodes.__getitem__, positions[0] if len(positions) == 1 else heapq.merge(*positions))
    index = _INDEXES.get(id(graph))
    if index is None or index[0] is not graph:
        wanted = set(op_types)
        return (node for node in graph.nodes if node.op in wanted)
    lists = [index[1].get(op, []) for op in dict.fromkeys(op_types)]
    return (node for _, node in (lists[0] if len(lists) == 1 else heapq.merge(*lists, key=lambda item: item[0])))


def producer(tensor: Any) -> Any | None:
    """The node that writes ``tensor``; None for graph inputs and constants."""
    return tensor.inputs[0] if tensor.inputs else None


def consumers(tensor: Any) -> list[Any]:
    """The nodes that read ``tensor``."""
    return list(tensor.outputs)


def only_consumer(tensor: Any) -> Any | None:
    """The one node that reads ``tensor``, or None when zero or several do."""
    readers = tensor.outputs  # read, not copied: asked of most tensors of a model
    return readers[0] if len(readers) == 1 else None


def is_graph_output(graph: Any, tensor: Any) -> bool:
    return any(out is tensor or out.name == tensor.name for out in graph.outputs)


def is_constant(tensor: Any) -> bool:
    """A tensor whose value is fixed: an initializer, or the output of a Constant node."""
    if tensor.__class__.__name__ == "Constant":
        return True
    node = producer(tensor)
    return node is not None and node.op == "Constant"


def is_weight(tensor: Any) -> bool:
    """A tensor computed from constants alone, however many nodes away: an initializer, a Constant's output, or any
    node's output whose inputs all are (DQ(Q(W)), Transpose(DQ(Q(W))) as torch.onnx writes ``F.linear(x,
    fake_quant(W))``, Reshape, Cast, Identity...). A graph input, or a node with no input (RandomNormal), is not.

    While :func:`indexed` is open the answers are remembered, so asking of every tensor costs one walk of the graph."""
    memo = _FROM_CONSTANTS[-1] if _FROM_CONSTANTS else {}
    stack = [tensor]
    while stack:
        current = stack[-1]
        if id(current) in memo:
            stack.pop()
            continue
        node = producer(current)
        if is_constant(current) or node is None:
            memo[id(current)] = is_constant(current)
            stack.pop()
            continue
        inputs = [t for t in node.inputs if t.name]  # an omitted optional input is an empty Variable
        pending = [t for t in inputs if id(t) not in memo]
        if not inputs or any(memo.get(id(t)) is False for t in inputs):
            memo[id(current)] = False
        elif pending:
            stack.extend(pending)
            continue
        else:
            memo[id(current)] = True
        stack.pop()
    return memo[id(tensor)]


LAYOUT_OPS = ("Transpose", "Reshape", "Identity", "Cast", "Squeeze", "Unsqueeze", "Flatten")


def weight_dequantizer(tensor: Any) -> tuple[Any | None, list[Any]]:
    """The DequantizeLinear a weight comes out of, walking back through layout-only nodes (a Transpose of DQ(W), a
    Reshape...), and the nodes walked through in data-flow order; ``(None, [])`` when ``tensor`` is no weight or no DQ
    is behind it that way."""
    steps: list[Any] = []
    node = producer(tensor)
    while node is not None and node.op in LAYOUT_OPS and is_weight(tensor):
        steps.insert(0, node)
        tensor = node.inputs[0]
        node = producer(tensor)
    if node is None or node.op != "DequantizeLinear" or not is_weight(tensor):
        return None, []
    return node, steps


def weight_quantization_axis(tensor: Any) -> tuple[bool, int | None]:
    """``(known, axis)``: the per-channel axis of a quantized weight in the frame of the tensor its layer reads (a
    Transpose after the DQ moves it), None when it is quantized per tensor; ``known`` is False when a node between the
    DQ and the layer (a Reshape) leaves the axis unknown, or no DQ is behind the weight."""
    dq, steps = weight_dequantizer(tensor)
    if dq is None:
        return False, None
    axis = quantization_axis(dq.outputs[0])
    if axis is None:
        return True, None
    rank = len(getattr(dq.outputs[0], "shape", None) or ()) or None
    axis = axis % rank if rank and axis < 0 else axis
    for step in steps:
        if step.op == "Transpose":
            perm = attr(step, "perm")
            perm = list(perm) if perm is not None else (list(range(rank))[::-1] if rank else None)
            if perm is None or axis not in perm:
                return False, None
            axis = perm.index(axis)
        elif step.op not in ("Identity", "Cast"):
            return False, None
    return True, axis


def dequantized(tensor: Any) -> Any | None:
    """The DequantizeLinear node that writes ``tensor``, or None: is this tensor quantized on its way in?"""
    node = producer(tensor)
    return node if node is not None and node.op == "DequantizeLinear" else None


def quantizer_before(tensor: Any) -> list[Any]:
    """The quantizer nodes that write ``tensor``: ``[Q, DQ]`` for DQ(Q(x)), ``[DQ]`` for a DQ of stored INT8 values
    (a pre-quantized weight), ``[]`` when no DequantizeLinear writes it."""
    dq = dequantized(tensor)
    if dq is None:
        return []
    q = producer(dq.inputs[0])
    return [q, dq] if q is not None and q.op == "QuantizeLinear" else [dq]


def qdq_before(tensor: Any) -> list[Any]:
    """``[Q, DQ]`` when ``tensor`` is written by a whole DQ(Q(x)) pair (a fake quantizer), else ``[]``."""
    nodes = quantizer_before(tensor)
    return nodes if len(nodes) == 2 else []


def qdq_after(tensor: Any) -> list[Any]:
    """``[Q, DQ]`` when ``tensor`` is read only by a Q and that Q only by a DQ, else ``[]``."""
    q = only_consumer(tensor)
    if q is None or q.op != "QuantizeLinear":
        return []
    dq = only_consumer(q.outputs[0])
    return [q, dq] if dq is not None and dq.op == "DequantizeLinear" else []


def through_qdq(tensor: Any) -> tuple[Any, list[Any]]:
    """The tensor a DQ(Q(x)) pair that writes ``tensor`` reads, and the pair ``[Q, DQ]``; ``(tensor, [])`` when no
    pair writes it."""
    pair = qdq_before(tensor)
    return (pair[0].inputs[0], pair) if pair else (tensor, [])


def is_quantized_weight(tensor: Any) -> bool:
    """A weight that reaches its layer through Q/DQ: DQ(INT8 constant) or DQ(Q(float constant)), also behind
    layout-only nodes (Transpose(DQ(Q(W))), as torch.onnx writes a fake-quantized Linear weight)."""
    return weight_dequantizer(tensor)[0] is not None


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
    quantizer = quantizer_before(tensor)
    source = quantizer[0].inputs[0] if quantizer else tensor
    return source if is_constant(source) else None


def is_depthwise(conv: Any) -> bool:
    """A Conv with more than one group and one input channel per group (weight shape (Cout, 1, kh, kw))."""
    if attr(conv, "group", 1) <= 1 or len(conv.inputs) < 2:
        return False
    weight = weight_constant(conv.inputs[1])
    shape = getattr(weight, "shape", None)
    return bool(shape) and len(shape) >= 2 and shape[1] == 1


def ends_graph(graph: Any, tensor: Any) -> bool:
    """``tensor`` is a graph output that no node reads: nothing follows it."""
    return is_graph_output(graph, tensor) and not consumers(tensor)


def follow_chain(node: Any, optional_ops: tuple[str, ...]) -> list[Any]:
    """``node`` and, in order, each of ``optional_ops`` that is the only reader of the chain's last output."""
    chain = [node]
    for op in optional_ops:
        reader = only_consumer(chain[-1].outputs[0])
        if reader is not None and reader.op == op:
            chain.append(reader)
    return chain


def swish_after(tensor: Any) -> list[Any] | None:
    """[Sigmoid, Mul] when ``tensor`` is read exactly by Sigmoid(x) and Mul(x, Sigmoid(x)) (SiLU as exported)."""
    readers = consumers(tensor)
    sigmoids = [n for n in readers if n.op == "Sigmoid"]
    muls = [n for n in readers if n.op == "Mul"]
    if len(readers) != 2 or len(sigmoids) != 1 or len(muls) != 1:
        return None
    sigmoid, mul = sigmoids[0], muls[0]
    if only_consumer(sigmoid.outputs[0]) is not mul:
        return None
    return [sigmoid, mul] if {id(t) for t in mul.inputs} == {id(tensor), id(sigmoid.outputs[0])} else None


def quantization_axis(tensor: Any) -> int | None:
    """The per-channel axis of the DequantizeLinear that writes ``tensor``; None when its scale is one value (or no
    DQ writes it)."""
    dq = dequantized(tensor)
    shape = getattr(dq.inputs[1], "shape", None) if dq is not None else None
    return attr(dq, "axis", 1) if shape and math.prod(shape) > 1 else None  # ONNX's default axis is 1


def is_per_channel(tensor: Any) -> bool:
    """``tensor`` is written by a DequantizeLinear with more than one scale value (per-axis quantization)."""
    return quantization_axis(tensor) is not None


PASS_THROUGH_OPS = ("BatchNormalization", "Relu", "LeakyRelu", "Clip", "Sigmoid", "HardSwish")


def quantized_layer_behind(tensor: Any, layer_ops: tuple[str, ...] = ("Conv", "ConvTranspose")) -> Any | None:
    """The layer with a quantized weight that computes ``tensor``, walking back through Q/DQ pairs, BatchNorm,
    activations and SiLU (Mul(x, Sigmoid(x))); None when something else computes it."""
    for _ in range(8):  # a Q/DQ, a BN and an activation at most between a layer and its consumer; bounded anyway
        node = producer(tensor)
        if node is None:
            return None
        if node.op in layer_ops:
            weight = node.inputs[1] if len(node.inputs) > 1 else None
            return node if weight is not None and is_quantized_weight(weight) else None
        source, pair = through_qdq(tensor)
        if pair:
            tensor = source
        elif node.op in PASS_THROUGH_OPS:
            tensor = node.inputs[0]
        elif node.op == "Mul" and len(node.inputs) == 2 and swish_after(node.inputs[0]) == [
                producer(node.inputs[1]), node]:
            tensor = node.inputs[0]
        else:
            return None
    return None


def dequantize_scale(tensor: Any) -> Any | None:
    """The scale values of the DequantizeLinear that writes ``tensor`` (a numpy array), None if not a constant."""
    dq = dequantized(tensor)
    scale = dq.inputs[1] if dq is not None else None
    return getattr(scale, "values", None)


def ancestors(*tensors: Any, max_nodes: int | None = None) -> list[Any]:
    """The nodes that ``tensors`` are computed from, breadth first, nearest first; at most ``max_nodes``."""
    return _breadth_first(tensors, lambda t: t.inputs[:1], lambda node: node.inputs, max_nodes)


def descendants(*tensors: Any, max_nodes: int | None = None) -> list[Any]:
    """The nodes that read ``tensors``, directly or not, breadth first, nearest first; at most ``max_nodes``."""
    return _breadth_first(tensors, lambda t: t.outputs, lambda node: node.outputs, max_nodes)


def _breadth_first(tensors, nodes_at, tensors_of, max_nodes: int | None) -> list[Any]:
    found, seen, queue = [], set(), collections.deque(tensors)
    while queue and (max_nodes is None or len(found) < max_nodes):
        for node in nodes_at(queue.popleft()):
            if id(node) not in seen:
                seen.add(id(node))
                found.append(node)
                queue.extend(tensors_of(node))
    return found[:max_nodes]


def nearest_upstream(tensors: Iterable[Any], wanted: Callable[[Any], bool]) -> Any | None:
    """The node nearest ``tensors`` upstream (breadth first, through any number of nodes) for which ``wanted`` is
    true; None when none is. The walk stops at the first one: a form decided by the data, not by a window."""
    seen, queue = set(), collections.deque(tensors)
    while queue:
        for node in queue.popleft().inputs[:1]:
            if id(node) in seen:
                continue
            seen.add(id(node))
            if wanted(node):
                return node
            queue.extend(node.inputs)
    return None


def ancestor(tensor: Any, op: str, max_nodes: int = 32) -> Any | None:
    """The nearest node of type ``op`` upstream of ``tensor`` among its ``max_nodes`` nearest (a layer or two back,
    not the whole network); None when there is none that close."""
    return next((node for node in ancestors(tensor, max_nodes=max_nodes) if node.op == op), None)


def has_qdq(graph: Any) -> bool:
    """Any QuantizeLinear/DequantizeLinear in the graph: TensorRT then quantizes explicitly, the whole network, and
    ignores a calibrator (implicit-INT8 patterns cannot arise)."""
    return next(nodes_of(graph, *QDQ_OPS), None) is not None


def producer_skipping(tensor: Any, *skipped_ops: str) -> tuple[Any | None, list[Any]]:
    """The node that writes ``tensor`` once nodes of ``skipped_ops`` (single-activation-input ones, such as
    BatchNormalization) are walked through, and the nodes walked through in data-flow order."""
    skipped = []
    node = producer(tensor)
    while node is not None and node.op in skipped_ops:
        skipped.insert(0, node)
        node = producer(node.inputs[0])
    return node, skipped


def is_quantized_conv(conv: Any) -> bool:
    """A Conv whose input and weight both reach it through Q/DQ: explicit quantization can run it in INT8."""
    return conv.op == "Conv" and dequantized(conv.inputs[0]) is not None and is_quantized_weight(conv.inputs[1])


def path_between(source: Any, tensor: Any, max_nodes: int = 16) -> list[Any] | None:
    """The nodes on a path from ``source`` to ``tensor`` walking producers back from ``tensor`` through at most
    ``max_nodes`` nodes, nearest ``source`` first; ``[]`` when they are the same tensor, None when there is no such
    path (e.g. ``source`` is no ancestor of ``tensor`` within that distance)."""
    if tensor is source:
        return []
    frontier = collections.deque([(tensor, None, 0)])  # (a tensor, the node that reads it on the way, its depth)
    reached_from: dict[int, Any] = {}  # id(node) -> the node the walk came from (None: the one writing ``tensor``)
    while frontier:
        current, reader, depth = frontier.popleft()
        node = producer(current)
        if node is None or id(node) in reached_from or depth >= max_nodes:
            continue
        reached_from[id(node)] = reader
        for t in node.inputs:
            if t is source:
                path = [node]
                while reached_from[id(path[-1])] is not None:
                    path.append(reached_from[id(path[-1])])
                return path
            if t.inputs:  # a graph input or a constant leads nowhere
                frontier.append((t, node, depth + 1))
    return None


def read_elsewhere(graph: Any, tensor: Any, *readers: Any) -> bool:
    """``tensor`` is a graph output or is read by a node other than ``readers``."""
    known = {id(r) for r in readers}
    return is_graph_output(graph, tensor) or any(id(n) not in known for n in consumers(tensor))


def nearest_variant(variants: Iterable[Any], params: dict[str, Any], required: tuple[str, ...] = (),
                    roles: tuple[str, ...] = ("failing", "workaround", "sweep")) -> tuple[Any, list[str]] | None:
    """The library variant whose ``params`` are closest to a user's, and how it differs, in words.

    Variants of ``roles`` whose ``required`` params equal the user's are candidates; the closest has the smallest
    distance over the other params the user's graph told (a ``None`` value is unknown and not counted): 0 when
    equal, |log2(a/b)| for positive numbers, 1 for any other difference. Ties go to the variant declared first (a
    case lists its failing form first). None when no variant has the required params.
    """
    if not _NEAREST:
        return _nearest_variant(variants, params, required, roles)
    variants = tuple(variants)
    try:  # variants by identity: the memo keeps them, so no other object can take their id while it lives
        key = (tuple(map(id, variants)), tuple(params.items()), required, roles)
        hash(key)
    except TypeError:  # a param value that cannot be a key (a list): asked afresh
        return _nearest_variant(variants, params, required, roles)
    memo = _NEAREST[-1]
    if key not in memo:
        memo[key] = (variants, _nearest_variant(variants, params, required, roles))
    answer = memo[key][1]
    return answer if answer is None else (answer[0], list(answer[1]))


def _nearest_variant(variants: Iterable[Any], params: dict[str, Any], required: tuple[str, ...],
                     roles: tuple[str, ...]) -> tuple[Any, list[str]] | None:
    best = None
    for variant in variants:
        if variant.role not in roles or any(variant.params.get(k) != params.get(k) for k in required):
            continue
        distance = sum(_distance(params[k], variant.params.get(k)) for k in params
                       if k not in required and params[k] is not None)
        if best is None or distance < best[0]:
            best = (distance, variant)
    if best is None:
        return None
    variant = best[1]
    differences = [f"{k} {params[k]} (library: {variant.params.get(k)})" for k in params
                   if k not in required and params[k] is not None and params[k] != variant.params.get(k)]
    return variant, differences


def _distance(mine: Any, theirs: Any) -> float:
    if mine == theirs:
        return 0.0
    numbers = all(isinstance(v, (int, float)) and not isinstance(v, bool) and v > 0 for v in (mine, theirs))
    return abs(math.log2(mine / theirs)) if numbers else 1.0


FP8_ONNX_TYPE = 17  # onnx.TensorProto.FLOAT8E4M3FN: onnx-graphsurgeon keeps the ONNX type of a dtype NumPy lacks


def quantized_tensors(node: Any) -> list[Any]:
    """Where the type a QuantizeLinear or DequantizeLinear quantizes to can be read, in the order to read them. ONNX
    gives the quantized tensor (a Q's output, a DQ's input) and the zero point one type: first the zero point when it
    is an initializer (a model's zero points are a few shared initializers: no inferred type needed), else the
    quantized tensor, then a zero point of unknown type."""
    quantized = node.outputs[0] if node.op == "QuantizeLinear" else node.inputs[0]
    zero_point = node.inputs[2] if len(node.inputs) > 2 else None
    if zero_point.__class__.__name__ == "Constant":  # an initializer: its type is in the file
        return [zero_point, quantized]
    return [quantized, zero_point]


def quantized_precision(dq: Any) -> str | None:
    """The precision a DequantizeLinear reads: "int8", "fp8" (E4M3) or None when its input type is unknown or another
    (read as :func:`quantized_tensors` says)."""
    for tensor in quantized_tensors(dq):
        dtype = getattr(tensor, "dtype", None)
        precision = None if dtype is None else _precision_of_dtype(dtype)
        if precision:
            return precision
    return None


def dequantized_precisions(graph: Any) -> frozenset[str | None]:
    """The precisions (:func:`quantized_precision`) the graph's DequantizeLinear nodes read: whether a graph has FP8
    Q/DQ at all, or INT8 and FP8 both, is what several matchers ask first. Read once while :func:`indexed` is open."""
    memo = _PRECISIONS[-1] if _PRECISIONS else {}
    if id(graph) not in memo:
        memo[id(graph)] = frozenset(_dequantized_precisions(graph))
    return memo[id(graph)]


def _dequantized_precisions(graph: Any) -> Iterator[str | None]:
    """:func:`quantized_precision` of each DequantizeLinear, read once per zero point that is an initializer of
    type INT8 or FP8 (which decides it: :func:`quantized_tensors` reads it first): a model's thousands of DQ share a
    few zero points. A graph that groups its DQs by their zero point's type itself (the scan's view: ``graph.
    dequantizer_groups()``) is read a type at a time."""
    if hasattr(type(graph), "dequantizer_groups"):
        by_type, others = graph.dequantizer_groups()
        for dtype, dequantizers in by_type:
            precision = _precision_of_dtype(dtype)
            if precision:
                yield precision
            else:
                yield from map(quantized_precision, dequantizers)
        yield from map(quantized_precision, others)
        return
    of_zero_point: dict[int, str | None] = {}  # id(zero point) -> its precision (the graph holds the tensor)
    for dq in nodes_of(graph, "DequantizeLinear"):
        zero_point = dq.inputs[2] if len(dq.inputs) > 2 else None
        if zero_point.__class__.__name__ == "Constant":
            if id(zero_point) not in of_zero_point:
                dtype = getattr(zero_point, "dtype", None)
                of_zero_point[id(zero_point)] = None if dtype is None else _precision_of_dtype(dtype)
            precision = of_zero_point[id(zero_point)]
            if precision:
                yield precision
                continue
        yield quantized_precision(dq)


@functools.lru_cache(maxsize=64)
def _precision_of_dtype(dtype: Any) -> str | None:
    """"fp8", "int8" or None for a tensor's dtype (a NumPy dtype, or an ONNX type number where NumPy has none);
    cached: naming a NumPy dtype costs more than the rest of a matcher's question."""
    if dtype == FP8_ONNX_TYPE or str(dtype) == "float8_e4m3fn":
        return "fp8"
    return "int8" if str(dtype) == "int8" else None


def scale_dtype(dq: Any) -> str | None:
    """The type of a Q or DQ node's scale ("float32", "float16"), or None when unknown."""
    dtype = getattr(dq.inputs[1], "dtype", None)
    return None if dtype is None else str(dtype)
