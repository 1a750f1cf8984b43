"""What the ONNX parser of the target's TensorRT version refuses in the user's model, from the parser's documented
facts (:func:`harness.tensorrt.parser_check.check_parser`): one piece per refusing rule, with its nodes, the document
that states it and the remedy (``fail``: the build stops at parsing); one piece per question the documents leave
open (``unverified``: it answers nothing, and the scan says unverified rather than a verdict that assumes the parser
takes the model). Read from ``sources.graph`` (the model's graph index) and ``sources.opset``: asked for the model's
own verdict on a target, not for one form of a pattern."""
from __future__ import annotations

from typing import Any

from harness import judgement as j
from harness.evidence.model import Evidence, Form, Sources, matrix_target
from harness.tensorrt.parser_check import RULES, ParserFinding, check_parser

TENSORRT = "tensorrt"


def produce(form: Form, target: Any, sources: Sources, scope: str) -> list[Evidence]:
    if sources.graph is None or not matrix_target(target) or target.backend != TENSORRT or not target.version:
        return []
    check = check_parser(sources.graph, target.version, sources.opset)
    return ([_piece(form, target, scope, found, j.FAIL) for found in _by_rule(check.refusals)]
            + [_piece(form, target, scope, found, j.UNVERIFIED) for found in _by_rule(check.silent)])


def _by_rule(findings: tuple[ParserFinding, ...]) -> list[list[ParserFinding]]:
    """The findings of each rule together (a QuantizeLinear and a DequantizeLinear refused by one rule are one
    refusal), in the checker's order."""
    grouped: dict[str, list[ParserFinding]] = {}
    for found in findings:
        grouped.setdefault(found.rule, []).append(found)
    return list(grouped.values())


def refusal_words(rule: str, findings: list[ParserFinding] | tuple[ParserFinding, ...]) -> str:
    """One rule's refusal (or open question) in words, without its document: ``qdq-zero-point (a Q/DQ zero point
    is not zero ...): 5 QuantizeLinear node(s) ... at a, b, c and 2 more``."""
    nodes = tuple(node for found in findings for node in found.nodes)
    details = "; ".join(dict.fromkeys(found.detail for found in findings))
    return f"{rule} ({RULES[rule]}): {details}" + (f" at {_nodes(nodes)}" if nodes else "")


def _piece(form: Form, target: Any, scope: str, findings: list[ParserFinding], outcome: str) -> Evidence:
    first = findings[0]
    source = "; ".join(dict.fromkeys(found.source for found in findings))
    remedy = "; ".join(dict.fromkeys(found.remedy for found in findings if found.remedy))
    verb = "refuses" if outcome == j.FAIL else "is not settled by its documents on"
    said = f"the ONNX parser (TensorRT {target.version}) {verb} {refusal_words(first.rule, findings)} [{source}]"
    return Evidence(j.PARSER, scope, form.case, form.variant, target.id, outcome, first.rule, source,
                    nodes=tuple(node for found in findings for node in found.nodes),
                    strength="documented" if outcome == j.FAIL else "silent",
                    note=remedy, said=said + (f"; what to do: {remedy}" if remedy else ""),
                    conditions=(f"TensorRT {target.version}",), item=tuple(findings))


def _nodes(nodes: tuple[str, ...], shown: int = 3) -> str:
    more = f" and {len(nodes) - shown} more" if len(nodes) > shown else ""
    return ", ".join(nodes[:shown]) + more
