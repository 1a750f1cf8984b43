"""What TensorRT's ONNX parser of one version refuses in a user's model, from the documented facts of
:mod:`.parser_facts`, before any pattern is matched: :func:`check_parser`, on the model as
:func:`read_for_parser` reads it once for every version.

It reads the scan's index of the graph (``harness.scan.proto_graph.GraphIndex``: ``nodes`` with ``op_type``,
``input`` and ``output``; ``names``; ``producer``; ``initializers``; ``graph`` for node attributes and domains)
without importing it: the TensorRT floor imports the standard library only. Zero points are read from the
initializer's (or Constant's) stored bytes: a non-zero byte is a non-zero zero point.

Each refusal names the nodes, the rule, the document and branch that state it, and the remedy. Where the documents
are silent the answer is :data:`~.parser_facts.SILENT`: never taken as accepted.
"""
from __future__ import annotations

from typing import Any, NamedTuple

from harness.tensorrt import parser_facts as facts
from harness.tensorrt.parser_facts import REFUSED, SILENT

QDQ = ("QuantizeLinear", "DequantizeLinear")
DEFAULT_DOMAINS = ("", "ai.onnx")

RULES = {
    "opset-range": "the model's opset is outside the range the parser documents (silent: the parser checks none)",
    "operator-unsupported": "the operator's Supported column says N",
    "operator-undocumented": "the operator is not in the version's table",
    "qdq-zero-point": "a Q/DQ zero point is not zero (asymmetric quantization)",
    "qdq-quantized-type": "the Q/DQ quantizes to a type the DequantizeLinear row does not list",
    "dq-int32-input": "a DequantizeLinear of INT32 data (a quantized bias): INT32 is not a DequantizeLinear type",
    "dq-stored-weights": "a DequantizeLinear reads weights stored quantized, not a QuantizeLinear's output",
    "qdq-scale-type": "the scale's float type is not one the QuantizeLinear row lists",
    "qdq-no-zero-point": "no zero point: ONNX makes the quantized type UINT8; the documents do not say how the "
                         "parser reads it",
    "qdq-blocked": "blocked quantization (block_size) of a type the guide names no blocked form for",
    "dla-precision": "a quantized type DLA has no layer precision for: those layers run on the GPU",
}


class ParserFinding(NamedTuple):
    """One rule's answer at one group of nodes: ``state`` REFUSED (the parser of this version refuses them, per
    ``source``) or SILENT (no document read settles it); ``detail`` what was found; ``remedy`` what to change."""

    rule: str
    state: str
    op: str
    nodes: tuple[str, ...]  # the scan's node names; empty for a model-wide rule (the opset)
    detail: str
    source: str
    remedy: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"rule": self.rule, "state": self.state, "op": self.op, "nodes": list(self.nodes),
                "detail": self.detail, "source": self.source, "remedy": self.remedy}


class ParserCheck(NamedTuple):
    """The parser facts of one TensorRT version applied to one model."""

    version: str
    documents: str  # which documents settle this version's facts, in words
    refusals: tuple[ParserFinding, ...]
    silent: tuple[ParserFinding, ...]
    dla: tuple[ParserFinding, ...] = ()  # on a DLA build: layers DLA has no precision for (not parser refusals)

    @property
    def refused(self) -> bool:
        """The parser of this version refuses the model (a build stops there)."""
        return bool(self.refusals)

    def to_dict(self) -> dict[str, Any]:
        return {"version": self.version, "documents": self.documents, "refused": self.refused,
                "refusals": [f.to_dict() for f in self.refusals], "silent": [f.to_dict() for f in self.silent],
                "dla": [f.to_dict() for f in self.dla]}


class ParserReading(NamedTuple):
    """What the parser's facts ask of one model, read from its graph once (:func:`read_for_parser`) and applied to
    each TensorRT version by :func:`check_parser`: the default-domain operators with their nodes, the Q/DQ nodes
    grouped by what a rule asks of them, and the quantized types."""

    operators: tuple[tuple[str, tuple[str, ...]], ...]  # (op_type, node names), sorted by op_type
    quantizers: tuple[tuple[str, str, str, str, tuple[str, ...]], ...]  # (rule, op, detail, type, node names)
    dla_types: tuple[tuple[str, tuple[str, ...]], ...]  # (quantized type DLA has no precision for, node names)
    quantized: frozenset[str]  # the types the Q/DQ quantize to, by the documents' names


def read_for_parser(index: Any) -> ParserReading:
    """The model indexed by ``index`` (a ``GraphIndex``) as the parser's facts read it, whatever the version."""
    by_op: dict[str, list[str]] = {}
    for node, proto, name in zip(index.nodes, index.graph.node, index.names):
        if proto.domain in DEFAULT_DOMAINS:
            by_op.setdefault(node.op_type, []).append(name)
    quantizers = _Quantizers(index)
    return ParserReading(tuple((op, tuple(nodes)) for op, nodes in sorted(by_op.items())), quantizers.groups(),
                         quantizers.dla_types(), frozenset(t for t in map(quantizers.element, quantizers.positions)
                                                           if t is not None))


def check_parser(model: Any, version: str, opset: int | None = None, dla: bool = False) -> ParserCheck:
    """The refusals and silences of TensorRT ``version``'s ONNX parser on ``model``: a :class:`ParserReading`, or
    a ``GraphIndex`` to read; ``opset``: the model's default-domain opset (``ProtoGraph.opset``), None when not
    known; ``dla``: a DLA build, whose precision limits are added as :attr:`ParserCheck.dla`."""
    reading = model if isinstance(model, ParserReading) else read_for_parser(model)
    _, how = facts.documents_for(version)
    found: list[ParserFinding] = []
    if opset is not None:
        fact = facts.opset_fact(version, opset)
        if fact.state != facts.ACCEPTED:
            found.append(ParserFinding("opset-range", fact.state, "", (),
                                       f"opset {opset}; documented range {facts.opset_range(version)}",
                                       fact.source, facts.REMEDY_OPSET))
    found += _operators(reading, version)
    found += [finding for group in reading.quantizers if (finding := _judge(version, *group)) is not None]
    dla_found = [ParserFinding("dla-precision", REFUSED, "Q/DQ", nodes, f"{len(nodes)} Q/DQ node(s) of type "
                               f"{element}: DLA layers run FP16 or INT8", facts.DLA_SOURCE,
                               "INT8 Q/DQ for the layers meant for the DLA")
                 for element, nodes in reading.dla_types] if dla else []
    return ParserCheck(version, how, tuple(f for f in found if f.state == REFUSED),
                       tuple(f for f in found if f.state == SILENT), tuple(dla_found))


def quantized_types(index: Any) -> frozenset[str]:
    """The types the model's Q/DQ nodes quantize to, by the documents' names (INT8, UINT8, FP8, INT4, FP4, INT32)."""
    return read_for_parser(index).quantized


def _operators(reading: ParserReading, version: str) -> list[ParserFinding]:
    found = []
    for op, nodes in reading.operators:
        fact = facts.operator_fact(version, op)
        if fact.state == facts.ACCEPTED:
            continue
        rule = "operator-unsupported" if fact.state == REFUSED else "operator-undocumented"
        detail = (f"{op} is not supported by the parser of TensorRT {version}" if fact.state == REFUSED else
                  f"{op}: no document read for TensorRT {version} lists it")
        found.append(ParserFinding(rule, fact.state, op, nodes, detail, fact.source, facts.REMEDY_OPERATOR))
    return found


def _judge(version: str, rule: str, op: str, detail: str, element: str,
           nodes: tuple[str, ...]) -> ParserFinding | None:
    """One group of Q/DQ nodes (:attr:`ParserReading.quantizers`) against ``version``'s facts: the refusal or
    silence, None where the facts accept it."""
    count = f"{len(nodes)} {op} node(s)"
    if rule == "qdq-zero-point":
        fact = facts.zero_point_fact(version)
        return ParserFinding(rule, fact.state, op, nodes, f"{count} with a non-zero zero point (asymmetric "
                             "quantization)", fact.source, facts.REMEDY_SYMMETRIC)
    if rule == "qdq-no-zero-point":
        return ParserFinding(rule, SILENT, op, nodes, f"{count} without a zero point or output_dtype: ONNX "
                             "makes their type UINT8", "no document read says how the parser reads them",
                             "give each Q/DQ an INT8 zero point of 0")
    if rule == "quantized-type":
        fact = facts.quantized_type_fact(version, "DequantizeLinear", element)
        if fact.state == facts.ACCEPTED:
            return None
        if element == "INT32":
            return ParserFinding("dq-int32-input", fact.state, op, nodes, f"{count} dequantizing INT32 data "
                                 "(a quantized bias)", f"{fact.source}; {facts.ACTIVATION_INPUT_ONLY}",
                                 facts.REMEDY_BIAS)
        remedy = facts.REMEDY_SYMMETRIC if element == "UINT8" else (
            f"quantize to a type TensorRT {version} documents (INT8), or a TensorRT version whose parser takes "
            f"{element}")
        return ParserFinding("qdq-quantized-type", fact.state, op, nodes, f"{count} of type {element}",
                             fact.source, remedy)
    if rule == "dq-stored-weights":
        fact = facts.stored_weights_fact(version, element)
        if fact.state == facts.ACCEPTED:
            return None
        return ParserFinding(rule, fact.state, op, nodes, f"{count} reading {element} weights stored quantized",
                             fact.source, facts.REMEDY_STORED_WEIGHTS)
    if rule == "scale-type":
        fact = facts.float_type_fact(version, element)
        if fact.state == facts.ACCEPTED:
            return None
        return ParserFinding("qdq-scale-type", fact.state, op, nodes, f"{count} with {element} scales",
                             fact.source, "FP32 (or FP16) scales")
    if rule == "qdq-blocked":
        return ParserFinding(rule, SILENT, op, nodes, f"{count}: {detail} quantization",
                             f"no document read names blocked quantization of {element or 'this type'}; "
                             f"{facts.INT4_WEIGHT_ONLY}", "per-tensor or per-channel (axis) scales")
    return None


class _Quantizers:
    """The model's Q/DQ nodes, each read once: its quantized type, zero point, scale type and block size."""

    def __init__(self, index: Any) -> None:
        self.index = index
        self.positions = sorted(p for op in QDQ for p in index.by_op.get(op, ()))
        self._zero: dict[str, bool | None] = {}
        self._types: dict[str, str | None] = {}  # per tensor: a model's Q/DQ share few scales and zero points
        self._elements: dict[int, str | None] = {}

    def groups(self) -> tuple[tuple[str, str, str, str, tuple[str, ...]], ...]:
        """The Q/DQ nodes grouped by what a rule asks of them: (rule, op, detail, type, node names)."""
        groups: dict[tuple[str, str, str, str], list[str]] = {}  # (rule, op, detail, type) -> nodes
        for position in self.positions:
            node, name = self.index.nodes[position], self.index.names[position]
            element = self.element(position)
            zero_point = node.input[2] if len(node.input) > 2 else ""
            if zero_point and self.nonzero(zero_point):
                groups.setdefault(("qdq-zero-point", node.op_type, "non-zero zero point", ""), []).append(name)
            elif not zero_point and element is None:
                groups.setdefault(("qdq-no-zero-point", node.op_type, "no zero point and no output_dtype", ""),
                                  []).append(name)
            if element is not None:
                groups.setdefault(("quantized-type", node.op_type, element, element), []).append(name)
            if node.op_type == "DequantizeLinear" and element not in (None, "INT32") and self._proto(node.input[0]):
                groups.setdefault(("dq-stored-weights", node.op_type, element, element), []).append(name)
            scale = self.scale_type(position)
            if scale is not None:
                groups.setdefault(("scale-type", node.op_type, scale, scale), []).append(name)
            if self.block_size(position) and element not in ("INT4", "FP4"):
                groups.setdefault(("qdq-blocked", node.op_type, f"blocked {element}", element or ""), []).append(name)
        return tuple((*key, tuple(nodes)) for key, nodes in groups.items())

    def dla_types(self) -> tuple[tuple[str, tuple[str, ...]], ...]:
        """The quantized types DLA has no layer precision for, each with its Q/DQ nodes."""
        by_type: dict[str, list[str]] = {}
        for position in self.positions:
            element = self.element(position)
            if element is not None and element not in facts.DLA_PRECISIONS and element not in ("UINT8", "INT32"):
                by_type.setdefault(element, []).append(self.index.names[position])
        return tuple((element, tuple(nodes)) for element, nodes in by_type.items())

    # -- reading one Q/DQ ------------------------------------------------------------------------------------------
    def element(self, position: int) -> str | None:
        """What the Q/DQ quantizes to, by the documents' names: a DQ's data type where its data is stored, else its
        zero point's type, else a Q's output_dtype; None when nothing says (no zero point)."""
        if position not in self._elements:
            self._elements[position] = self._element(position)
        return self._elements[position]

    def _element(self, position: int) -> str | None:
        node = self.index.nodes[position]
        if node.op_type == "DequantizeLinear":
            data = self._tensor_type(node.input[0])
            if data is not None:
                return data
        if len(node.input) > 2 and node.input[2]:
            zero = self._tensor_type(node.input[2])
            if zero is not None:
                return zero
        if node.op_type == "QuantizeLinear":
            attribute = self._attribute(position, "output_dtype")
            if attribute:
                return facts.ELEMENT_NAMES.get(attribute.i, str(attribute.i))
        else:  # a DQ reading a Q: the Q's type
            producer = self.index.producer.get(node.input[0])
            if producer is not None and self.index.nodes[producer].op_type == "QuantizeLinear":
                return self.element(producer)
        return None

    def scale_type(self, position: int) -> str | None:
        node = self.index.nodes[position]
        return self._tensor_type(node.input[1]) if len(node.input) > 1 else None

    def block_size(self, position: int) -> int:
        attribute = self._attribute(position, "block_size")
        return attribute.i if attribute else 0

    def nonzero(self, tensor: str) -> bool:
        """The zero point ``tensor`` holds a non-zero value (False where it cannot be read: external data)."""
        if tensor not in self._zero:
            proto = self._proto(tensor)
            self._zero[tensor] = proto is not None and (
                any(proto.raw_data) or any(proto.int32_data) or any(proto.int64_data))
        return bool(self._zero[tensor])

    def _tensor_type(self, tensor: str) -> str | None:
        if tensor not in self._types:
            proto = self._proto(tensor)
            self._types[tensor] = None if proto is None else facts.ELEMENT_NAMES.get(proto.data_type,
                                                                                     str(proto.data_type))
        return self._types[tensor]

    def _proto(self, tensor: str) -> Any:
        """The TensorProto of an initializer or of a Constant node's value, None for a computed tensor."""
        proto = self.index.initializers.get(tensor)
        if proto is not None:
            return proto
        producer = self.index.producer.get(tensor)
        if producer is not None and self.index.nodes[producer].op_type == "Constant":
            for attribute in self.index.graph.node[producer].attribute:
                if attribute.name == "value":
                    return attribute.t
        return None

    def _attribute(self, position: int, name: str) -> Any:
        for attribute in self.index.graph.node[position].attribute:
            if attribute.name == name:
                return attribute
        return None
