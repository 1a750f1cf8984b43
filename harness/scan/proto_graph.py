"""A user's graph read once from its ``onnx.GraphProto``, for the scan's two readers: the cases' matchers and the
engine prediction.

:class:`GraphIndex` is the one pass over the nodes both share: each node's op and tensor names, the scan's unique node
names, who writes and who reads each tensor, the nodes of each op. :class:`ProtoGraph` answers the matchers'
questions (``cases/matching.py``) on top of it as an onnx-graphsurgeon graph would, with the same attributes (a node's
``name``, ``op``, ``inputs``, ``outputs``, ``attrs``; a tensor's ``inputs`` (its producer), ``outputs`` (its
readers), ``shape``, ``dtype``, a constant's ``values``), with plain objects made in one pass over the index when a
matcher first reaches one, and what they hold beyond their links (types, attributes, values) read on first use:
importing all 50,000 nodes of a large model into onnx-graphsurgeon costs more than the whole scan may.

Objects are made once per node and per tensor name, so ``is`` and ``id()`` work as on onnx-graphsurgeon's graph; the
view never changes. A test compares every finding on both for every model the tests hold.
"""
from __future__ import annotations

import collections
import collections.abc
import functools
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, NamedTuple

import numpy as np
import onnx
from onnx import numpy_helper

# ONNX element types NumPy has no dtype for: onnx-graphsurgeon keeps their ONNX type number as the dtype.
_NO_NUMPY_TYPE = frozenset({onnx.TensorProto.BFLOAT16, onnx.TensorProto.FLOAT8E4M3FN, onnx.TensorProto.FLOAT8E4M3FNUZ,
                            onnx.TensorProto.FLOAT8E5M2, onnx.TensorProto.FLOAT8E5M2FNUZ})
_TYPE_FIELDS = ("tensor_type", "sequence_type", "map_type", "optional_type", "opaque_type", "sparse_tensor_type")


class IndexedNode(NamedTuple):
    """A node's op and tensor names, read from the protobuf once (its fields cost a lookup on every access); the
    names are lists (a slice of the protobuf's field, the quickest copy of it) that nothing changes."""

    op_type: str
    input: list[str]
    output: list[str]


class QuantizerGroups(NamedTuple):
    """The positions of a graph's QuantizeLinear and DequantizeLinear nodes (each list in graph order), grouped by
    what decides the type they quantize to: ``by_type``, those whose zero point is an initializer, by its element
    type (an ``onnx.TensorProto`` type number: it decides theirs); ``by_zero_point``, the others by the name of
    their zero point (a node's output, or "" where it is left out), which each reader reads its own way. A model's tens of thousands of Q/DQ have a few types
    and can have thousands of zero points (one per weight quantizer): each type is read once."""

    by_type: dict[int, list[int]]
    by_zero_point: dict[str, list[int]]


class GraphIndex:
    """One pass over ``graph.node``: the nodes (:class:`IndexedNode`), their names as the scan gives them
    (:func:`unique_names`), each tensor's producer and readers (node positions; a node reading a tensor twice is
    listed twice, as onnx-graphsurgeon lists it), and the positions of each op's nodes; and, when first asked, the
    initializers by name."""

    def __init__(self, graph: onnx.GraphProto) -> None:
        self.graph = graph
        protos, make = graph.node, tuple.__new__  # IndexedNode(...) without its Python-level __new__: 50,000 calls
        self.nodes = [make(IndexedNode, (node.op_type, node.input[:], node.output[:])) for node in protos]
        names = [node.name for node in protos]
        if all(names) and len(set(names)) == len(names):  # as exporters name them: nothing to make unique
            self.names, self.unnamed, self.repeated = names, 0, []
        else:
            self.names, self.unnamed, self.repeated = unique_names(
                zip(names, (n.op_type for n in self.nodes), (n.output for n in self.nodes)))
        # a tensor written twice has its last writer (a comprehension: quicker than one loop filling all three)
        self.producer: dict[str, int] = {tensor: index for index, node in enumerate(self.nodes)
                                         for tensor in node.output}
        self.readers: dict[str, list[int]] = collections.defaultdict(list)
        self.by_op: dict[str, list[int]] = collections.defaultdict(list)
        readers, by_op = self.readers, self.by_op
        for index, (op, inputs, _) in enumerate(self.nodes):
            by_op[op].append(index)
            for tensor in inputs:
                if tensor:
                    readers[tensor].append(index)

    @functools.cached_property
    def quantizer_groups(self) -> QuantizerGroups:
        """The QuantizeLinear and DequantizeLinear nodes grouped by what decides the type they quantize to
        (:class:`QuantizerGroups`), for the engine prediction, the summary and the matchers alike."""
        by_zero_point: dict[str, list[int]] = collections.defaultdict(list)
        nodes = self.nodes
        for position in sorted(self.by_op.get("QuantizeLinear", []) + self.by_op.get("DequantizeLinear", [])):
            inputs = nodes[position].input
            by_zero_point[inputs[2] if len(inputs) > 2 else ""].append(position)
        by_type: dict[int, list[int]] = collections.defaultdict(list)
        initializers = self.initializers
        for zero_point in [name for name in by_zero_point if name in initializers]:
            by_type[initializers[zero_point].data_type] += by_zero_point.pop(zero_point)
        for positions in by_type.values():
            positions.sort()
        return QuantizerGroups(dict(by_type), dict(by_zero_point))

    @functools.cached_property
    def initializers(self) -> dict[str, onnx.TensorProto]:
        """The graph's initializers by name, read once for the engine prediction and the matchers' view."""
        return {tensor.name: tensor for tensor in self.graph.initializer}

    def naming_notes(self) -> list[str]:
        """What naming the nodes uniquely had to do, for the report."""
        notes = []
        if self.unnamed:
            notes.append(f"{self.unnamed} node(s) had no name: called node_of_<first output> here, as onnx-tensorrt "
                         "names them in TensorRT's log")
        if self.repeated:
            shown = ", ".join(sorted(set(self.repeated))[:5])
            notes.append(f"{len(self.repeated)} node name(s) repeat ({shown}...): later ones are suffixed ~2, ~3 here")
        return notes


def unique_names(nodes: Iterable[tuple[str, str, tuple[str, ...]]]) -> tuple[list[str], int, list[str]]:
    """Node names as the scan gives them, from (name, op, outputs) per node: an unnamed node is called
    ``node_of_<first output>`` (as onnx-tensorrt, and so TensorRT's log, names it), a repeated name gets ``~2``,
    ``~3``...; and how many were unnamed, and which names repeated."""
    seen: collections.Counter[str] = collections.Counter()
    names, unnamed, repeated = [], 0, []
    for name, op, outputs in nodes:
        if not name:
            name = f"node_of_{outputs[0]}" if outputs else f"node_of_{op}"
            unnamed += 1
        seen[name] += 1
        if seen[name] > 1:
            repeated.append(name)
            name = f"{name}~{seen[name]}"
        names.append(name)
    return names, unnamed, repeated


@functools.lru_cache(maxsize=64)
def numpy_dtype(element: int) -> Any:
    """The dtype onnx-graphsurgeon gives a tensor of ONNX element type ``element``: a NumPy dtype, or the ONNX type
    number where NumPy has none (bfloat16, the FP8 types)."""
    if element not in _NO_NUMPY_TYPE and element in onnx.helper.get_all_tensor_dtypes():
        return onnx.helper.tensor_dtype_to_np_dtype(element)
    return element


def value_info_type(info: onnx.ValueInfoProto) -> tuple[Any, list | None, str | None]:
    """(dtype, shape, type field) of a value info, as onnx-graphsurgeon reads them: a dimension is its symbolic
    name, else its value, else None; the shape is None when the rank is unknown."""
    kind = next((field for field in _TYPE_FIELDS if info.type.HasField(field)), None)
    if kind == "tensor_type":
        tensor = info.type.tensor_type
        element = tensor.elem_type
        shape = [_dim(d) for d in tensor.shape.dim] if tensor.HasField("shape") else None
    else:
        element = {"sequence_type": lambda t: t.sequence_type.elem_type.tensor_type.elem_type,
                   "map_type": lambda t: t.map_type.value_type,
                   "optional_type": lambda t: t.optional_type.elem_type,
                   "sparse_tensor_type": lambda t: t.sparse_tensor_type.elem_type}.get(kind, lambda t: 0)(info.type)
        shape = None
    return numpy_dtype(element) if isinstance(element, int) else element, shape, kind


def _dim(dim: onnx.TensorShapeProto.Dimension) -> int | str | None:
    which = dim.WhichOneof("value")
    return None if which is None else getattr(dim, which)


class _Lazy:
    """An object whose attributes named in ``_LAZY`` are read from the graph on first use, then kept in their slots
    (a matcher reads a tensor's type or a node's attributes many times: later reads cost nothing). Every attribute
    is a slot: the view makes a large model's 100,000 objects in a fifth less time, and a matcher reads them quicker,
    than with a dict each; an unset slot reaches ``__getattr__`` as a missing attribute would."""

    __slots__ = ()
    _LAZY: frozenset[str] = frozenset()

    def __getattr__(self, attribute: str) -> Any:  # only for an attribute not set yet
        if attribute not in self._LAZY:
            raise AttributeError(f"{type(self).__name__!r} object has no attribute {attribute!r}")
        self._read(attribute)
        return object.__getattribute__(self, attribute)  # the slot _read filled

    def _read(self, attribute: str) -> None:
        raise NotImplementedError


class Node(_Lazy):
    """A node of the view: ``name`` (unique, as the scan names it), ``op``, ``inputs`` and ``outputs`` (set when the
    view makes its objects), and, read on first use, ``attrs`` and ``domain`` (None for ONNX's own, as
    onnx-graphsurgeon has it)."""

    __slots__ = ("_graph", "index", "name", "op", "inputs", "outputs", "attrs", "domain")
    _LAZY = frozenset({"attrs", "domain"})

    def __init__(self, graph: ProtoGraph, index: int, name: str, op: str) -> None:
        self._graph, self.index, self.name, self.op = graph, index, name, op

    def _read(self, attribute: str) -> None:
        if attribute == "attrs":
            self.attrs = self._graph.attributes(self.index)
        else:
            self.domain = self._graph.index.graph.node[self.index].domain or None

    def __repr__(self) -> str:
        return f"{self.op} node {self.name!r}"


class _Tensor(_Lazy):
    """A tensor: ``name``, ``inputs`` (the node that writes it, in a list: empty for a graph input, an initializer
    or an omitted input) and ``outputs`` (the nodes that read it, in graph order). The view sets both when it makes
    its objects; a tensor made later (a node attribute's, one no node writes or reads) reads them on first use."""

    __slots__ = ("_graph", "name", "inputs", "outputs")
    _LAZY = frozenset({"inputs", "outputs"})

    def __init__(self, graph: ProtoGraph | None, name: str) -> None:
        self._graph, self.name = graph, name

    def _read(self, attribute: str) -> None:
        graph = self._graph if self.name else None
        if attribute == "inputs":
            position = graph.index.producer.get(self.name) if graph else None
            self.inputs = [] if position is None else [graph.node_at(position)]
        else:
            positions = graph.index.readers.get(self.name, ()) if graph else ()
            self.outputs = [graph.node_at(position) for position in positions]

    def __repr__(self) -> str:
        return f"{type(self).__name__} {self.name!r}"


class Variable(_Tensor):
    """A tensor computed by the graph, or a graph input: its ``dtype``, ``shape`` and ``type`` as shape inference
    left them (None where unknown)."""

    __slots__ = ("dtype", "shape", "type")
    _LAZY = _Tensor._LAZY | {"dtype", "shape", "type"}

    def _read(self, attribute: str) -> None:
        if attribute in _Tensor._LAZY:
            super()._read(attribute)
        elif attribute == "dtype":  # read alone: a matcher asks the types of many tensors, the shapes of few
            self.dtype = self._graph.dtype_of(self.name) if self._graph else None
        else:
            _, self.shape, self.type = self._graph.type_of(self.name) if self._graph else (None, None, None)


class Constant(_Tensor):
    """An initializer, or the tensor of a node's TENSOR attribute (a Constant node's ``value``): its ``dtype`` and
    ``shape`` from the proto, its ``values`` read on first use."""

    __slots__ = ("_proto", "values", "dtype", "shape")
    _LAZY = _Tensor._LAZY | {"values", "dtype", "shape"}
    type = "tensor_type"

    def __init__(self, graph: ProtoGraph | None, proto: onnx.TensorProto, name: str | None = None) -> None:
        """``name``: the proto's, where the caller has it already (reading it from the proto costs)."""
        self._graph, self.name, self._proto = graph, proto.name if name is None else name, proto

    def _read(self, attribute: str) -> None:
        if attribute in _Tensor._LAZY:
            super()._read(attribute)
        elif attribute == "dtype":
            self.dtype = numpy_dtype(self._proto.data_type)
        elif attribute == "shape":
            self.shape = list(self._proto.dims)
        else:
            base = str(self._graph.base_dir) if self._graph and self._graph.base_dir else ""
            self.values = np.array(numpy_helper.to_array(self._proto, base))


_MISSING = object()  # what Attributes remembers of an attribute the node does not have
_DECODERS: dict[int, Callable[[ProtoGraph, onnx.AttributeProto], Any]] = {
    onnx.AttributeProto.FLOAT: lambda graph, attribute: attribute.f,
    onnx.AttributeProto.INT: lambda graph, attribute: attribute.i,
    onnx.AttributeProto.STRING: lambda graph, attribute: attribute.s.decode(),
    onnx.AttributeProto.TENSOR: lambda graph, attribute: Constant(graph, attribute.t),
    onnx.AttributeProto.GRAPH: lambda graph, attribute: attribute.g,  # no matcher reads inside a subgraph
    onnx.AttributeProto.FLOATS: lambda graph, attribute: list(attribute.floats),
    onnx.AttributeProto.INTS: lambda graph, attribute: list(attribute.ints),
    onnx.AttributeProto.STRINGS: lambda graph, attribute: [s.decode() for s in attribute.strings],
}


class Attributes(collections.abc.Mapping):
    """A node's attributes as onnx-graphsurgeon imports them: strings decoded, lists as lists, a tensor as a
    :class:`Constant`, a subgraph left an ``onnx.GraphProto``; other kinds, and references to a function's
    attributes (only inside function bodies), left out. Each is decoded when first read: a matcher asks a node for
    one attribute (a Conv's ``group``), seldom for all, and decoding all of a large model's costs a tenth of its
    matching."""

    __slots__ = ("_graph", "_protos", "_read")

    def __init__(self, graph: ProtoGraph, protos: Iterable[onnx.AttributeProto]) -> None:
        self._graph, self._protos, self._read = graph, protos, {}

    def get(self, name: str, default: Any = None) -> Any:  # the Mapping's own would go through KeyError
        value = self._read.get(name, _MISSING)
        if value is _MISSING and name not in self._read:
            value = self._read[name] = self._decode(name)
        return default if value is _MISSING else value

    def __getitem__(self, name: str) -> Any:
        value = self.get(name, _MISSING)
        if value is _MISSING:
            raise KeyError(name)
        return value

    def __iter__(self) -> Iterator[str]:
        return iter(dict.fromkeys(attribute.name for attribute in self._protos
                                  if attribute.type in _DECODERS and not attribute.ref_attr_name))

    def __len__(self) -> int:
        return sum(1 for _ in self)

    def __repr__(self) -> str:
        return repr(dict(self.items()))

    def _decode(self, name: str) -> Any:
        """The attribute called ``name`` (one name appears once in a valid node), or _MISSING."""
        for attribute in self._protos:
            if attribute.name == name and not attribute.ref_attr_name:
                decode = _DECODERS.get(attribute.type)
                return _MISSING if decode is None else decode(self._graph, attribute)
        return _MISSING


class ProtoGraph:
    """The matchers' view of ``model``'s main graph (see the module's docstring).

    ``types``: called once, when a matcher first asks a computed tensor's dtype or shape, it returns shape
    inference's value infos by tensor name (the scan's checks may still be inferring them in a second process while
    the view is indexed and the engine predicted). The model's own value infos, inputs and outputs type the rest.
    """

    def __init__(self, model: onnx.ModelProto, index: GraphIndex | None = None,
                 types: Callable[[], dict[str, onnx.ValueInfoProto]] = dict, base_dir: Path | None = None) -> None:
        self.model, self.base_dir = model, base_dir
        graph = model.graph
        self.index = index or GraphIndex(graph)
        self.opset = max((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), default=None)
        self._initializers = self.index.initializers
        self._nodes: list[Node] | None = None  # made, all at once, when a matcher first reaches one
        self._tensors: dict[str, _Tensor] = {}
        self._inferred_types = types
        self._types: dict[str, onnx.ValueInfoProto] | None = None

    # -- what a matcher reaches -----------------------------------------------------------------------------------
    @property
    def nodes(self) -> list[Node]:
        """Every node, in graph order."""
        return self._nodes if self._nodes is not None else self._make_objects()

    @functools.cached_property
    def inputs(self) -> list[_Tensor]:
        return [self.tensor(info.name) for info in self.index.graph.input]

    @functools.cached_property
    def outputs(self) -> list[_Tensor]:
        return [self.tensor(info.name) for info in self.index.graph.output]

    def op_positions(self, op: str) -> list[int]:
        """The positions of ``op``'s nodes, in graph order."""
        return self.index.by_op.get(op, [])

    def dequantizer_groups(self) -> tuple[list[tuple[Any, list[Node]]], list[Node]]:
        """The DequantizeLinear nodes of :attr:`GraphIndex.quantizer_groups`: (the dtype of their zero point, as its
        :class:`Constant` has it; the nodes) per type of initializer zero point, and the nodes whose zero point is
        no initializer."""
        nodes, groups = self.nodes, self.index.quantizer_groups
        by_type = [(numpy_dtype(element), [nodes[p] for p in positions if nodes[p].op == "DequantizeLinear"])
                   for element, positions in groups.by_type.items()]
        others = [nodes[p] for positions in groups.by_zero_point.values() for p in positions
                  if nodes[p].op == "DequantizeLinear"]
        return [(dtype, group) for dtype, group in by_type if group], others

    def node_at(self, position: int) -> Node:
        return (self._nodes if self._nodes is not None else self._make_objects())[position]

    def initializer_dtype(self, name: str) -> Any:
        """The dtype of the initializer called ``name`` (as its :class:`Constant` has it), None when no initializer
        has that name."""
        proto = self._initializers.get(name)
        return None if proto is None else numpy_dtype(proto.data_type)

    def node_names(self) -> set[str]:
        return set(self.index.names)

    def tensor(self, name: str) -> _Tensor:
        """The tensor called ``name``: one object per name; an omitted optional input ("") is a new empty Variable
        each time, as in onnx-graphsurgeon."""
        if self._nodes is None:
            self._make_objects()
        return self._tensors.get(name) or self._new_tensor(name)

    def _new_tensor(self, name: str) -> _Tensor:
        if not name:
            return Variable(None, "")
        proto = self._initializers.get(name)
        tensor = self._tensors[name] = Constant(self, proto, name) if proto is not None else Variable(self, name)
        return tensor

    def _make_objects(self) -> list[Node]:
        """Every node's object and every tensor's that a node writes or reads, linked as the index links them, in one
        pass: a matcher walks most of a model's nodes, and making them all at once costs a third of making each on
        first use."""
        index, tensors, new_tensor = self.index, self._tensors, self._new_tensor
        nodes = [Node(self, position, name, indexed.op_type)
                 for position, (name, indexed) in enumerate(zip(index.names, index.nodes))]
        for node, indexed in zip(nodes, index.nodes):
            inputs = []
            for name in indexed.input:
                tensor = tensors.get(name)
                if tensor is None:
                    tensor = new_tensor(name)
                    tensor.inputs, tensor.outputs = [], []
                    if not name:  # an omitted optional input: read by nobody, as in onnx-graphsurgeon
                        inputs.append(tensor)
                        continue
                tensor.outputs.append(node)
                inputs.append(tensor)
            node.inputs = inputs
            outputs = []
            for name in indexed.output:
                tensor = tensors.get(name)
                if tensor is None:
                    tensor = new_tensor(name)
                    tensor.outputs = []
                if name:  # the last writer of a name, as in the index; an omitted output has none
                    tensor.inputs = [node]
                else:
                    tensor.inputs = []
                outputs.append(tensor)
            node.outputs = outputs
        self._nodes = nodes
        return nodes

    # -- what the objects read ------------------------------------------------------------------------------------
    def type_of(self, name: str) -> tuple[Any, list | None, str | None]:
        """(dtype, shape, type field) of a computed tensor or graph input; (None, None, None) when unknown."""
        info = self._value_info(name)
        return (None, None, None) if info is None else value_info_type(info)

    def dtype_of(self, name: str) -> Any:
        """The dtype of :meth:`type_of`, without reading the shape."""
        info = self._value_info(name)
        if info is None:
            return None
        return numpy_dtype(info.type.tensor_type.elem_type) if info.type.HasField("tensor_type") else \
            value_info_type(info)[0]

    def _value_info(self, name: str) -> onnx.ValueInfoProto | None:
        """The value info typing ``name`` (declared, else inferred), None when there is none or it has no type."""
        if self._types is None:
            self._types = self._declared_types()
            self._types.update(self._inferred_types())
        info = self._types.get(name)
        return info if info is not None and info.type.ByteSize() else None

    def _declared_types(self) -> dict[str, onnx.ValueInfoProto]:
        graph = self.index.graph
        return {info.name: info for infos in (graph.input, graph.output, graph.value_info) for info in infos}

    def attributes(self, position: int) -> Attributes:
        """The attributes of the node at ``position`` (:class:`Attributes`)."""
        return Attributes(self, self.index.graph.node[position].attribute)
