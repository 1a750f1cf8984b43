"""Predict the engine TensorRT builds from an explicit (Q/DQ) ONNX model: its fused layers, the ONNX nodes each
holds, the precision each computes in, the type each writes, and the documented rule that decided it.

One pass over the ``onnx.GraphProto`` in node order, then one backwards, then one forwards again: linear in the
graph, no onnx-graphsurgeon import. What it does, in the rules' terms (:mod:`.rules`):

1. Constants and everything computed from constants only (weights and their Q/DQ) fold away.
2. ``dq-forward``: an activation DequantizeLinear's INT8 moves forward through commuting layers.
3. ``q-backward``: a tensor whose every reader is a QuantizeLinear (directly or through commuting layers) can be
   written in INT8 by the layer that produces it.
4. In node order, each layer: a convolution/MatMul/Gemm takes its input and weight DQs, batch norm, constant
   scale/bias, activation, one residual Add (of two candidate convolutions, the later), and, in INT8, a following
   max pooling; quantizable layers run INT8 with every input dequantized and the output quantized; commuting
   layers move whatever type reaches them; everything else runs float.
5. A QuantizeLinear whose input no layer wrote in INT8 becomes a Reformat, and so does a DequantizeLinear whose output
   some layer reads in float.

A model without Q/DQ gets the float engine's fusions in the float precision asked (TensorRT's FP32 and FP16
builds); what INT8 a calibrator would add is chosen by timing and is never predicted here.
"""
from __future__ import annotations

import collections
import dataclasses
import functools
import itertools
from typing import Any, NamedTuple

from harness.scan.engine_prediction.rules import Ruleset
from harness.scan.proto_graph import GraphIndex
from harness.judgement import PRECISIONS

INT8, FP16, FP32, BF16, FP8, FP4, UNKNOWN = PRECISIONS  # the precisions a record names (harness.worker.record), in order
INT4 = "int4"  # a weight type only (weight-only quantization): no layer computes in it
UINT8 = "uint8"  # a Q/DQ type TensorRT's parser refuses (harness/tensorrt/parser_facts.py): never computed in

COMPUTE, REFORMAT, MOVEMENT = "compute", "reformat", "data-movement"  # what a predicted layer is
QUANTIZED_MATH = (INT8, FP8, FP4)

WEIGHTED_OPS = frozenset({"Conv", "ConvTranspose", "Gemm", "MatMul"})
ADD_FUSING_OPS = frozenset({"Conv", "ConvTranspose", "Gemm"})
COMMUTING_OPS = frozenset({"MaxPool", "GlobalMaxPool", "Reshape", "Flatten", "Transpose", "Squeeze", "Unsqueeze",
                           "Slice", "Identity", "Concat", "Resize"})
MOVEMENT_OPS = COMMUTING_OPS - {"MaxPool", "GlobalMaxPool", "Resize"}
QUANTIZABLE_OPS = frozenset({"AveragePool", "GlobalAveragePool", "Add", "ReduceMean"})
ACTIVATION_OPS = frozenset({"Relu", "LeakyRelu", "Clip", "Sigmoid", "Tanh", "HardSigmoid", "HardSwish", "Elu",
                            "Selu", "Softplus", "ThresholdedRelu"})
ARITHMETIC_OPS = frozenset({"Add", "Sub", "Mul", "Div"})  # with a constant operand: a scale or bias folded in
# what TensorRT fuses into a convolution or GEMM as one pointwise (PWN) region: activations written as one op or as
# several (SiLU as Sigmoid and Mul, Mish as Softplus, Tanh and Mul, GELU as Div, Erf, Add and Muls)
POINTWISE_OPS = ACTIVATION_OPS | ARITHMETIC_OPS | frozenset({
    "Gelu", "Mish", "Swish", "Erf", "Exp", "Log", "Sqrt", "Abs", "Neg", "Reciprocal", "Pow", "Softsign", "Max",
    "Min"})
UNARY_POINTWISE_OPS = POINTWISE_OPS - ARITHMETIC_OPS - {"Pow", "Max", "Min"}
QDQ = ("QuantizeLinear", "DequantizeLinear")
# what TensorRT has a quantized implementation of, that a DQ on an input asks for: the layers with weights, the
# quantizable ones, and the pooling and resizing that compute on quantized data; a Concat or a reshape is a copy in
# any precision, and LayerNormalization, Softmax and the rest run in float whatever reaches them
QUANTIZED_IMPLEMENTED = WEIGHTED_OPS | QUANTIZABLE_OPS | frozenset({"MaxPool", "GlobalMaxPool", "Resize"})
SUBGRAPH_OPS = frozenset({"If", "Loop", "Scan"})

# ONNX element types (onnx.TensorProto.DataType) -> what a Q/DQ quantizes to; float ones -> the float precision.
_QUANTIZED_ELEMENTS = {3: INT8, 2: UINT8, 17: FP8, 18: FP8, 19: FP8, 20: FP8, 22: INT4, 21: INT4, 23: FP4}
_FLOAT_ELEMENTS = {1: FP32, 10: FP16, 16: BF16, 11: FP32}
_RULE_SUPPORTING = {FP8: "fp8-qdq", FP4: "fp4-qdq", INT4: "int4-weight-only"}


class PredictedLayer(NamedTuple):
    """One layer of the predicted engine: a named tuple, immutable as a frozen dataclass and made in a third of its
    time (a large model's engine has tens of thousands of layers)."""

    name: str  # as TensorRT names a fused layer: its nodes joined by " + ", the output Q it fused left out
    nodes: tuple[str, ...]  # the ONNX nodes it holds, in graph order (weights' Q/DQ and a fused output Q included)
    kind: str  # COMPUTE, REFORMAT or MOVEMENT
    op: str  # the ONNX op of its main node
    precision: str  # what it computes in
    output_type: str  # what it writes
    rule: str  # the rule that decided its precision and output (rules.RULES)
    weights: str | None = None  # the type its weights are stored in, for a layer with weights
    timing_choice: tuple[str, ...] = ()  # float types TensorRT may pick instead by timing (weakly typed, FP16 on)
    fused_add: bool = False  # a residual Add is fused into it

    def to_dict(self) -> dict[str, Any]:
        return layer_dicts([self])[0]


def layer_dicts(layers: list[PredictedLayer]) -> list[dict[str, Any]]:
    """Each layer as scan.json has it, in one loop over its fields (a large model's engine has tens of thousands);
    ``float``: it computes in no quantized type."""
    dicts = []
    for name, nodes, kind, op, precision, output_type, rule, weights, timing_choice, fused_add in layers:
        data = {"name": name, "nodes": list(nodes), "kind": kind, "op": op, "precision": precision,
                "output_type": output_type, "rule": rule, "float": precision not in QUANTIZED_MATH}
        if weights:
            data["weights"] = weights
        if timing_choice:
            data["timing_choice"] = list(timing_choice)
        if fused_add:
            data["fused_add"] = True
        dicts.append(data)
    return dicts


@dataclasses.dataclass
class EnginePrediction:
    ruleset: Ruleset
    float_precision: str
    float_text: str  # how the float layers are typed, in a sentence
    layers: list[PredictedLayer]
    notes: list[str]
    _node_precisions: dict[str, dict[str, str]] | None = dataclasses.field(default=None, init=False, repr=False,
                                                                            compare=False)

    def node_precisions(self) -> dict[str, dict[str, str]]:
        """ONNX node -> its predicted precision, the rule and the layer holding it (what a verdict engine reads as
        ``predicted`` evidence; never an observation). Made once: every target sharing the prediction reads it."""
        if self._node_precisions is None:  # one entry per layer, shared by its nodes (read, never changed)
            self._node_precisions = {node: entry for layer in self.layers
                                     for entry in ({"precision": layer.precision, "rule": layer.rule,
                                                    "layer": layer.name},)
                                     for node in layer.nodes}
        return self._node_precisions

    def summary(self) -> dict[str, Any]:
        compute = [layer for layer in self.layers if layer.kind == COMPUTE]
        by_precision = collections.Counter(layer.precision for layer in compute)
        quantized = sum(by_precision[p] for p in QUANTIZED_MATH)
        adds = [layer for layer in compute if layer.fused_add]
        adds_float = sum(1 for layer in adds if layer.output_type not in QUANTIZED_MATH)
        reformats = sum(1 for layer in self.layers if layer.kind == REFORMAT)
        kinds = " / ".join(p.upper() for p in QUANTIZED_MATH if by_precision[p]) or INT8.upper()
        text = (f"{quantized} of {len(compute)} compute layers {kinds}; {len(adds)} Add(s) fused, {adds_float} of "
                f"them with a float output; {reformats} unfused Q/DQ become Reformat layers")
        return {"compute_layers": len(compute), "quantized_layers": quantized,
                "by_precision": dict(sorted(by_precision.items())), "fused_adds": len(adds),
                "fused_adds_float_output": adds_float, "reformats": reformats, "text": text}

    def to_dict(self) -> dict[str, Any]:
        return {"ruleset": self.ruleset.name, "ruleset_version": self.ruleset.version,
                "ruleset_source": self.ruleset.documentation, "float_precision": self.float_precision,
                "float_text": self.float_text, "summary": self.summary(), "notes": self.notes,
                "layers": layer_dicts(self.layers)}


def has_qdq(graph: Any) -> bool:
    """Any Q/DQ node in ``graph`` (an ``onnx.GraphProto`` or its :class:`GraphIndex`)."""
    if isinstance(graph, GraphIndex):
        return any(graph.by_op.get(op) for op in QDQ)
    return any(node.op_type in QDQ for node in graph.node)


def quantized_requests(index: GraphIndex) -> frozenset[str]:
    """The nodes (by the scan's names) the model asks a quantized precision of: an input of theirs comes from a
    DequantizeLinear and TensorRT has a quantized implementation of their op (:data:`QUANTIZED_IMPLEMENTED`)."""
    readers = {reader for position in index.by_op.get("DequantizeLinear", ())
               for tensor in index.nodes[position].output for reader in index.readers.get(tensor, ())}
    return frozenset(index.names[reader] for reader in readers
                     if index.nodes[reader].op_type in QUANTIZED_IMPLEMENTED)


def predict_engine(graph: Any, ruleset: Ruleset, fp16: bool = False) -> EnginePrediction:
    """The engine of ``graph`` (an ``onnx.GraphProto``, its :class:`GraphIndex`, or its :class:`GraphFacts` gathered
    once for several rulesets) under ``ruleset``. ``fp16``: the weakly typed build also enables FP16 (TensorRT then
    picks FP16 or FP32 per float layer by timing); strongly typed rulesets ignore it."""
    facts = graph if isinstance(graph, GraphFacts) else GraphFacts(graph)
    return _Predictor(facts, ruleset, fp16).run()


class GraphFacts:
    """What every ruleset's prediction reads from the graph, gathered once: producers and readers of each tensor,
    the constants (folded), element types, and the two Q/DQ propagations (``dq-forward``, ``q-backward``)."""

    def __init__(self, graph: Any) -> None:
        index = graph if isinstance(graph, GraphIndex) else GraphIndex(graph)
        self.graph = graph = index.graph
        self.nodes, self.names, self.producer, self.readers = index.nodes, index.names, index.producer, index.readers
        self.outputs = {o.name: o.type.tensor_type.elem_type for o in graph.output}
        self.initializers = index.initializers
        self.constant_values: dict[str, int] = {}  # a Constant node's output -> its value's element type, once read
        self.constant = set(self.initializers) | {""}  # "": an optional input left out, nothing to compute
        self._fold_constants()
        self.model_float = next((_FLOAT_ELEMENTS[i.type.tensor_type.elem_type] for i in graph.input
                                 if i.type.tensor_type.elem_type in _FLOAT_ELEMENTS), FP32)
        self._qtypes = self._read_quantized_types(index)
        self._propagate(index.by_op)
        self.quantized_types = frozenset(self._qtypes.values())
        self.has_subgraphs = any(op in index.by_op for op in SUBGRAPH_OPS)
        self._by_op = index.by_op

    @functools.cached_property
    def float_types(self) -> dict[str, str]:
        """Each float tensor's own type, as a strongly typed network has it: a graph input's, an initializer's or a
        Constant's element type, a Cast's ``to``, a DequantizeLinear's scale's type, and otherwise the type of a
        node's first float input (one pass in node order; what no float reaches is left out)."""
        types = {name: _FLOAT_ELEMENTS[t.data_type] for name, t in self.initializers.items()
                 if t.data_type in _FLOAT_ELEMENTS}
        types.update((i.name, _FLOAT_ELEMENTS[i.type.tensor_type.elem_type]) for i in self.graph.input
                     if i.type.tensor_type.elem_type in _FLOAT_ELEMENTS)
        declared = {position: element for op in ("Cast", "Constant") for position in self._by_op.get(op, ())
                    for element in [self._declared_type(position)] if element is not None}
        for position, node in enumerate(self.nodes):
            if not node.output:
                continue
            if position in declared:
                element = declared[position]
            elif node.op_type == "DequantizeLinear":
                element = types.get(node.input[1]) if len(node.input) > 1 else None
            elif node.op_type in ("QuantizeLinear", "Cast", "Constant", "Shape", "Size", "NonZero", "ArgMax",
                                  "ArgMin", "TopK"):
                element = types.get(node.input[0]) if node.op_type == "TopK" else None
            else:
                element = next((types[t] for t in node.input if t in types), None)
            if element is not None:
                types[node.output[0]] = element
        return types

    def _declared_type(self, position: int) -> str | None:
        """The float type a Cast's ``to`` or a Constant's value declares; None for a non-float one."""
        for attribute in self.graph.node[position].attribute:
            if attribute.name == "to":
                return _FLOAT_ELEMENTS.get(attribute.i)
            if attribute.name == "value":
                return _FLOAT_ELEMENTS.get(attribute.t.data_type)
        return None

    @functools.cached_property
    def typed_floats(self) -> frozenset[str]:
        """The float types the network's tensors have (what a strongly typed build runs its float layers in)."""
        return frozenset(self.float_types.values()) or frozenset({self.model_float})

    def _fold_constants(self) -> None:
        constant = self.constant
        for node in self.nodes:
            if node.op_type == "Constant" or (node.input and constant.issuperset(node.input)):
                constant.update(node.output)

    def data_inputs(self, node: Any) -> list[str]:
        """The inputs a commuting layer moves: every non-constant input of a Concat, the first of the others."""
        if node.op_type == "Concat":
            return [t for t in node.input if t and t not in self.constant]
        return list(node.input[:1])

    def quantized_type(self, index: int) -> str | None:
        """What the Q/DQ node at ``index`` quantizes to: its zero point's type; without one, a Q's output_dtype or a
        DQ's input type; INT8 else (ONNX's default)."""
        return self._qtypes[index]

    def _read_quantized_types(self, index: GraphIndex) -> dict[int, str | None]:
        """:meth:`quantized_type` of every Q/DQ, read once per type or zero point where it decides
        (:attr:`~harness.scan.proto_graph.GraphIndex.quantizer_groups`), else per node."""
        types: dict[int, str | None] = {}
        groups = index.quantizer_groups
        decided = list(groups.by_type.items())
        decided += [(self._element(zero_point) if zero_point else None, positions)
                    for zero_point, positions in groups.by_zero_point.items()]
        for element, positions in decided:
            if element in _QUANTIZED_ELEMENTS:
                types.update(dict.fromkeys(positions, _QUANTIZED_ELEMENTS[element]))
            else:
                types.update((position, self._read_quantized_type(position)) for position in positions)
        return types

    def _read_quantized_type(self, index: int) -> str | None:
        node = self.nodes[index]
        tensors = [node.input[2]] if len(node.input) > 2 and node.input[2] else []
        if not tensors and node.op_type == "QuantizeLinear":
            for attribute in self.graph.node[index].attribute:
                if attribute.name == "output_dtype" and attribute.i:
                    return _QUANTIZED_ELEMENTS.get(attribute.i)
        if node.op_type == "DequantizeLinear":
            tensors.append(node.input[0])
        for tensor in tensors:
            element = self._element(tensor)
            if element in _QUANTIZED_ELEMENTS:
                return _QUANTIZED_ELEMENTS[element]
        return INT8

    def _element(self, tensor: str) -> int | None:
        """The element type of an initializer or of a Constant node's value."""
        initializer = self.initializers.get(tensor)
        if initializer is not None:
            return initializer.data_type
        if tensor not in self.constant_values and tensor in self.producer:
            index = self.producer[tensor]
            if self.nodes[index].op_type == "Constant":
                for attribute in self.graph.node[index].attribute:
                    if attribute.name == "value":
                        self.constant_values[tensor] = attribute.t.data_type
        return self.constant_values.get(tensor)

    def _propagate(self, by_op: dict[str, list[int]]) -> None:
        """dq-forward (in node order) and q-backward (in reverse), over the nodes that can take part (``by_op``: the
        positions of each op's nodes): the DQs and commuting layers, and the writers of what a Q or a commuting layer
        reads."""
        commuting = [position for op in COMMUTING_OPS for position in by_op.get(op, [])]
        moving = sorted(itertools.chain(by_op.get("DequantizeLinear", []), commuting))
        self.dq: dict[str, tuple[str, int]] = {}  # tensor -> (quantized type, the DQ it comes from)
        for index in moving:
            node = self.nodes[index]
            if node.op_type == "DequantizeLinear" and node.input[0] not in self.constant:
                self.dq[node.output[0]] = (self.quantized_type(index), index)
            elif node.op_type in COMMUTING_OPS and node.input:
                data = self.data_inputs(node)
                if data and all(t in self.dq for t in data) and len({self.dq[t][0] for t in data}) == 1:
                    self.dq[node.output[0]] = self.dq[data[0]]
        self.q: dict[str, str] = {}  # tensor -> the type every reader quantizes it to
        nodes, readers, q, skipped = self.nodes, self.readers, self.q, self.constant.union(self.outputs)
        # a tensor gets a type only when each of its readers is a Q or a commuting layer: the writers of what those
        # read, latest first (a commuting layer's output is decided before its input)
        read = itertools.chain.from_iterable(nodes[index].input for index in itertools.chain(
            by_op.get("QuantizeLinear", []), commuting))
        producer = self.producer
        for node in map(nodes.__getitem__, sorted({producer[t] for t in read if t in producer}, reverse=True)):
            if not node.output or node.output[0] in skipped:
                continue
            tensor, kind = node.output[0], None
            for reader in readers.get(tensor, ()):
                other = nodes[reader]
                if other.op_type == "QuantizeLinear":
                    this = self.quantized_type(reader)
                elif other.op_type in COMMUTING_OPS and other.output[0] in q and tensor in self.data_inputs(other):
                    this = q[other.output[0]]
                else:
                    this = None
                if this is None or (kind is not None and this != kind):
                    kind = None
                    break
                kind = this
            if kind is not None:
                q[tensor] = kind


class _Predictor:
    def __init__(self, facts: GraphFacts, ruleset: Ruleset, fp16: bool) -> None:
        self.facts, self.ruleset = facts, ruleset
        self.nodes, self.names, self.producer, self.readers = facts.nodes, facts.names, facts.producer, facts.readers
        self.outputs, self.constant, self.dq, self.q = facts.outputs, facts.constant, facts.dq, facts.q
        self.notes: list[str] = []
        model_float = facts.model_float
        self.typed = ruleset.strongly_typed_only
        if self.typed:  # a tensor of no known type runs in the type most of the network's float tensors have
            kinds = sorted(facts.typed_floats)
            counted = collections.Counter(facts.float_types.values()).most_common()
            self.float = counted[0][0] if counted and (len(counted) == 1 or counted[0][1] > counted[1][1]) else (
                model_float if model_float in kinds or not kinds else kinds[0])
            self.choice = ()
            self.float_text = (f"strongly typed (TensorRT {ruleset.version}): each float layer runs in its tensors' "
                               f"own type ({', '.join(k.upper() for k in kinds)}: casts and initializers included)")
        elif fp16:
            self.float, self.choice = FP16, (FP16, FP32)
            self.float_text = ("weakly typed with FP16 enabled: TensorRT picks FP16 or FP32 per float layer by timing "
                               "(FP16 shown)")
        else:
            self.float, self.choice = FP32, ()
            self.float_text = "weakly typed, INT8 only: float layers run FP32"
        self.layers: list[tuple[int, PredictedLayer]] = []
        self.taken: set[int] = set()
        self.int8_written: dict[str, str] = {}  # tensor -> quantized type a layer writes it in
        self.float_reads: set[int] = set()  # activation DQs some layer reads in float
        self.unfused_q: dict[tuple[str, str], int] = {}  # (tensor, type) -> its unfused Q's place in self.layers
        self.writer: dict[str, int] = {}  # tensor written in INT8 -> the place in self.layers of the layer writing it

    def run(self) -> EnginePrediction:
        for index, node in enumerate(self.nodes):
            if index in self.taken or not node.output or node.output[0] in self.constant:
                continue
            op = node.op_type
            if op == "QuantizeLinear":
                self._quantize(index, node)
            elif op == "DequantizeLinear":
                continue  # decided once every reader has been: below
            elif op in WEIGHTED_OPS and len(node.input) > 1 and (
                    node.input[1] in self.constant or (op == "MatMul" and node.input[1] in self.dq)):
                self._weighted(index, node)
            elif op in COMMUTING_OPS:
                self._commuting(index, node)
            elif op in QUANTIZABLE_OPS:
                self._quantizable(index, node)
            else:
                self._float(index, node, "float-layer")
        for index in sorted(self.float_reads):
            node = self.nodes[index]
            kind = self.facts.quantized_type(index)
            self._add(index, PredictedLayer(self.names[index], (self.names[index],), REFORMAT, node.op_type, kind,
                                            self._float_type(node.output[0]), "unfused-dequantize",
                                            timing_choice=self.choice))
        if self.facts.has_subgraphs:
            self.notes.append("subgraphs (If, Loop, Scan bodies) are not predicted: their layers are left out")
        layers = [layer for _, layer in sorted(self.layers, key=lambda item: item[0])]
        if self.typed:  # the type most float compute layers run in
            counted = collections.Counter(layer.precision for layer in layers
                                          if layer.kind == COMPUTE and layer.precision not in QUANTIZED_MATH)
            self.float = counted.most_common(1)[0][0] if counted else self.float
        return EnginePrediction(self.ruleset, self.float, self.float_text, layers, self.notes)

    # -- layers --------------------------------------------------------------------------------------------------
    def _add(self, index: int, layer: PredictedLayer, writes: str | None = None) -> None:
        """Add ``layer`` (its first node at ``index``); ``writes``: the tensor it writes in a quantized type."""
        if writes is not None:
            self.writer[writes] = len(self.layers)
        self.layers.append((index, layer))

    def _float_type(self, tensor: str) -> str:
        """The float type ``tensor`` is written in: a network output's declared type; under strong typing the
        tensor's own type; else the build's float precision."""
        if tensor in self.outputs:
            return _FLOAT_ELEMENTS.get(self.outputs[tensor], self.float)
        if self.typed:
            return self.facts.float_types.get(tensor, self.float)
        return self.float

    def _float_math(self, tensor: str) -> str:
        """The float precision a layer writing ``tensor`` computes in: under strong typing its output's own type."""
        return self.facts.float_types.get(tensor, self.float) if self.typed else self.float

    def _read_float(self, tensor: str) -> None:
        """A layer reads ``tensor`` in float: the DQ it comes from (if any) is left unfused."""
        if tensor in self.dq:
            self.float_reads.add(self.dq[tensor][1])

    def _supported(self, kind: str | None) -> bool:
        return kind == INT8 or (kind in _RULE_SUPPORTING and self.ruleset.has(_RULE_SUPPORTING[kind]))

    def _quantize(self, index: int, node: Any) -> None:
        kind = self.facts.quantized_type(index)
        if node.input[0] in self.int8_written:
            self.int8_written[node.output[0]] = kind
            writer = self.writer.get(node.input[0])
            if writer is not None:  # fused into the layer that wrote its input
                first, layer = self.layers[writer]
                self.layers[writer] = (first, layer._replace(nodes=layer.nodes + (self.names[index],)))
                self.writer[node.output[0]] = writer
            return
        self._read_float(node.input[0])
        self.int8_written[node.output[0]] = kind
        twin = self.unfused_q.get((node.input[0], kind))
        if twin is not None:  # quantizers of one tensor to one type: one Reformat
            first, layer = self.layers[twin]
            self.layers[twin] = (first, layer._replace(
                nodes=layer.nodes + (self.names[index],),
                rule="merged-quantize" if layer.rule == "unfused-quantize" else layer.rule))
            return
        self.unfused_q[(node.input[0], kind)] = len(self.layers)
        rule = "unfused-quantize" if self._supported(kind) else "quantized-type-unsupported"
        self._add(index, PredictedLayer(self.names[index], (self.names[index],), REFORMAT, node.op_type,
                                        kind if self._supported(kind) else UNKNOWN, kind, rule))

    def _weight_chain(self, tensor: str) -> tuple[list[int], str | None]:
        """The Q/DQ nodes (and other folded nodes) a weight passes through, and the type its DQ dequantizes from."""
        chain, kind = [], None
        while tensor in self.producer:
            index = self.producer[tensor]
            node = self.nodes[index]
            if node.op_type == "Constant":
                break
            chain.append(index)
            if node.op_type == "DequantizeLinear" and kind is None:
                kind = self.facts.quantized_type(index)
            tensor = node.input[0] if node.input else ""
        return chain[::-1], kind

    def _only_reader(self, tensor: str) -> int | None:
        readers = self.readers.get(tensor, ())
        return readers[0] if len(readers) == 1 and tensor not in self.outputs else None

    def _fusable_behind(self, tensor: str) -> int | None:
        """The convolution/Gemm an Add's input comes from through batch norm and constant arithmetic only, when
        nothing else reads along the way: a candidate to take the Add."""
        while tensor in self.producer:
            index = self.producer[tensor]
            node = self.nodes[index]
            if self._only_reader(tensor) is None:
                return None
            if node.op_type in ADD_FUSING_OPS and len(node.input) > 1 and node.input[1] in self.constant:
                return index
            if not self._is_folded_scale(node):
                return None
            tensor = self._scaled_input(node)
        return None

    def _pointwise_region(self, tensor: str, only: int | None) -> tuple[list[int], str] | None:
        """The pointwise nodes TensorRT fuses after the layer writing ``tensor`` (its PWN region, as its log names
        it: ``Conv + PWN(PWN(Sigmoid), Mul)``): every pointwise reader whose other inputs are constants or tensors
        of the region, grown until nothing more joins, when the region then writes exactly one tensor read outside
        it. ``only``: the tensor's one reader, which starts a region only when it is an activation (a batch norm
        or a constant scale is folded first, a residual Add fused as such). None where there is no such region."""
        if only is not None and self.nodes[only].op_type not in UNARY_POINTWISE_OPS:
            return None
        inside, region, grown = {tensor}, set(), True
        while grown:
            grown = False
            for source in list(inside):
                for reader in self.readers.get(source, ()):
                    node = self.nodes[reader]
                    if (reader in region or reader in self.taken or node.op_type not in POINTWISE_OPS
                            or len(node.output) != 1
                            or not all(t in inside or t in self.constant for t in node.input if t)):
                        continue
                    region.add(reader)
                    inside.add(node.output[0])
                    grown = True
        exits = [t for t in inside if t in self.outputs or any(r not in region for r in self.readers.get(t, ()))]
        if not region or len(exits) != 1 or exits[0] == tensor:
            return None
        return sorted(region), exits[0]

    def _is_folded_scale(self, node: Any) -> bool:
        """Batch norm, or arithmetic with a constant: the second operand, or either of an Add's or a Mul's (a bias
        written ``Add(bias, MatMul)``, as torch.onnx writes a Linear's)."""
        if node.op_type == "BatchNormalization":
            return True
        if node.op_type not in ARITHMETIC_OPS or len(node.input) != 2:
            return False
        return node.input[1] in self.constant or (node.op_type in ("Add", "Mul") and node.input[0] in self.constant)

    def _scaled_input(self, node: Any) -> str:
        """The non-constant input of a folded scale (:meth:`_is_folded_scale`)."""
        return node.input[1] if len(node.input) == 2 and node.input[0] in self.constant else node.input[0]

    def _weighted(self, index: int, node: Any) -> None:
        members = []
        if node.input[1] in self.constant:
            weight_nodes, weights = self._weight_chain(node.input[1])
        else:  # a MatMul of two activations (attention): its second operand's DQ is its "weights"
            weight_nodes, weights = [self.dq[node.input[1]][1]], self.dq[node.input[1]][0]
        members += weight_nodes
        tensor_in = node.input[0]
        in_kind = self.dq.get(tensor_in, (None, -1))[0]
        if weights == INT4 and self.ruleset.has("int4-weight-only") and node.op_type in ("MatMul", "Gemm"):
            math, rule = None, "int4-weight-only"
        elif weights is not None and (not self._supported(weights) or (in_kind and not self._supported(in_kind))):
            math, rule = UNKNOWN, "quantized-type-unsupported"
        elif in_kind is not None and in_kind == weights:
            math, rule = in_kind, None
        else:
            math, rule = None, "weighted-float-input"
        members.append(index)
        if math in QUANTIZED_MATH:
            if self.dq[tensor_in][1] >= 0:
                members.insert(len(weight_nodes), self.dq[tensor_in][1])
        else:
            self._read_float(tensor_in)
            if node.input[1] not in self.constant:
                members.remove(weight_nodes[0])
                self._read_float(node.input[1])
        for extra in node.input[2:]:  # a Gemm's bias, a Conv's bias: folded in
            if extra in self.producer and extra in self.constant:
                members[:0] = [i for i in self._weight_chain(extra)[0] if i not in members]
        tensor = node.output[0]
        residual, fused_add, activation = None, False, False
        while True:
            reader = self._only_reader(tensor)
            if reader is None and not activation and tensor not in self.outputs:  # SiLU's conv output: two readers
                region = self._pointwise_region(tensor, None)
                if region is not None:
                    activation = True
                    members += region[0]
                    tensor = region[1]
                    continue
            if reader is None or reader in self.taken:
                break
            other = self.nodes[reader]
            region = None if activation else self._pointwise_region(tensor, reader)
            if region is not None:
                activation = True
                members += region[0]
                tensor = region[1]
                continue
            if (self._is_folded_scale(other) and self._scaled_input(other) == tensor and not fused_add
                    and not activation):
                pass
            elif other.op_type in ACTIVATION_OPS and not activation:
                activation = True
            elif (other.op_type == "Add" and not fused_add and not activation and node.op_type in ADD_FUSING_OPS
                  and len(other.input) == 2 and not any(t in self.constant for t in other.input)):
                side = 1 if other.input[0] == tensor else 0
                rival = self._fusable_behind(other.input[side])
                if rival is not None and rival > index:
                    break  # residual-add-choice: the later convolution takes it
                residual, fused_add = other.input[side], True
            else:
                break
            members.append(reader)
            tensor = other.output[0]
        if math in QUANTIZED_MATH and node.op_type == "Conv":
            reader = self._only_reader(tensor)
            if (reader is not None and self.nodes[reader].op_type == "MaxPool"
                    and self.q.get(self.nodes[reader].output[0]) == math and residual is None):
                members.append(reader)
                tensor = self.nodes[reader].output[0]
                rule = "conv-act-pool"
        residual_kind = self.dq.get(residual, (None, -1))[0] if residual else None
        if math in QUANTIZED_MATH and self.q.get(tensor) == math and (residual is None or residual_kind == math):
            output = math
            rule = rule or "weighted-int8-output"
            self.int8_written[tensor] = math
            if residual is not None and self.dq[residual][1] >= 0:
                members.append(self.dq[residual][1])
        else:
            output = self._float_type(tensor)
            if math in QUANTIZED_MATH:
                rule = rule if rule == "conv-act-pool" else (
                    "residual-add-fusion" if residual is not None and self.q.get(tensor) == math
                    else "weighted-float-output")
            if residual is not None:
                self._read_float(residual)
        precision = math or self._float_math(node.output[0])
        self.taken.update(members)
        ordered = tuple(map(self.names.__getitem__, sorted(set(members))))
        self._add(index, PredictedLayer(" + ".join(ordered), ordered, COMPUTE, node.op_type, precision, output,
                                        rule or "weighted-int8", weights=weights or self.float,
                                        timing_choice=() if output in QUANTIZED_MATH else self.choice,
                                        fused_add=fused_add), writes=tensor if output in QUANTIZED_MATH else None)

    def _commuting(self, index: int, node: Any) -> None:
        data, tensor_out = self.facts.data_inputs(node), node.output[0]
        kind = MOVEMENT if node.op_type in MOVEMENT_OPS else COMPUTE
        carried = {self.dq[t][0] if t in self.dq else self.int8_written.get(t) for t in data}
        if len(carried) != 1 or None in carried:
            self._float(index, node, "float-layer", kind)
            return
        precision = carried.pop()
        if all(t in self.dq for t in data):
            rule = "dq-forward"
            if tensor_out not in self.dq:
                self.int8_written[tensor_out] = precision
        else:
            rule = "q-backward"
            self.int8_written[tensor_out] = precision
        self._add(index, PredictedLayer(self.names[index], (self.names[index],), kind, node.op_type, precision,
                                        precision, rule), writes=tensor_out)

    def _quantizable(self, index: int, node: Any) -> None:
        data = [t for t in node.input if t and t not in self.constant]
        kinds = {self.dq.get(t, (None, -1))[0] for t in data}
        tensor = node.output[0]
        if len(kinds) == 1 and None not in kinds and self.q.get(tensor) in kinds and self._supported(self.q[tensor]):
            kind = self.q[tensor]
            members = [index] + [self.dq[t][1] for t in data]
            self.int8_written[tensor] = kind
            self.taken.update(members)
            ordered = tuple(map(self.names.__getitem__, sorted(set(members))))
            self._add(index, PredictedLayer(" + ".join(ordered), ordered, COMPUTE, node.op_type, kind, kind,
                                            "quantizable-int8"), writes=tensor)
        else:
            self._float(index, node, "quantizable-float" if kinds != {None} or tensor in self.q else "float-layer")

    def _float(self, index: int, node: Any, rule: str, kind: str = COMPUTE) -> None:
        for tensor in node.input:
            if tensor and tensor not in self.constant:
                self._read_float(tensor)
        tensor = node.output[0] if node.output else ""
        self._add(index, PredictedLayer(self.names[index], (self.names[index],), kind, node.op_type,
                                        self._float_math(tensor), self._float_type(tensor), rule,
                                        timing_choice=self.choice))

