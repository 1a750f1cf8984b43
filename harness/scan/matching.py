"""Find every library pattern in a user's graph: call each registered case's ``find`` and group what it returns.

The scanner knows no pattern itself: any case that implements ``find`` is searched. A matcher that raises, or names
nodes the model does not have, is reported as a problem of the scan (never silently dropped), and the other cases
are still searched.
"""
from __future__ import annotations

from typing import Any, Iterable, NamedTuple

from cases.matching import indexed
from cases.model import Case, Match, Variant, all_cases
from harness.scan.proto_graph import ProtoGraph


WHOLE_MODEL = "(the whole model)"  # the anchor of a whole-model pattern's occurrence (P10: no Q/DQ anywhere)


class Occurrence(NamedTuple):
    """One place in the user's model that has a pattern: the user's node names, the anchor first."""

    nodes: tuple[str, ...]
    note: str

    @property
    def anchor(self) -> str:
        return self.nodes[0] if self.nodes else WHOLE_MODEL


class Finding(NamedTuple):
    """Every occurrence of one case in one library form (variant) in the user's model."""

    case: type[Case]
    variant: Variant | None  # None: the matcher could not tell which library variant this form is
    occurrences: list[Occurrence]

    @property
    def mode(self) -> str:
        return self.case.mode_of(self.variant) if self.variant else self.case.mode

    @property
    def remedy(self) -> str | None:
        """The case's own remedy text, when the case declares one."""
        return getattr(self.case, "remedy", None)

    @property
    def label(self) -> str:
        return f"{self.case.id}/{self.variant.name}" if self.variant else self.case.id


class Matches(NamedTuple):
    findings: list[Finding]
    problems: list[str]  # matchers that failed or named nodes the model does not have


def find_patterns(graph: Any, cases: Iterable[type[Case]] | None = None) -> Matches:
    """Every occurrence of every case of ``cases`` (default: the whole library) in ``graph`` (an onnx-graphsurgeon
    graph, or the scan's :class:`~harness.scan.proto_graph.ProtoGraph` of a model: the same findings)."""
    node_names = graph.node_names() if isinstance(graph, ProtoGraph) else {node.name for node in graph.nodes}
    findings: dict[tuple[str, str | None], Finding] = {}
    problems: list[str] = []
    with indexed(graph):  # the matchers only read the graph
        for case in cases if cases is not None else all_cases():
            try:
                matches = list(case.find(graph))
            except Exception as err:  # a matcher's bug must not hide the other cases' findings
                problems.append(f"case {case.id}: its matcher failed ({type(err).__name__}: {err}); its pattern was "
                                "not searched")
                continue
            variants = {variant.name: variant for variant in case.variants}
            for match in matches:
                problem = _invalid(case, match, node_names, variants)
                if problem:
                    problems.append(problem)
                    continue
                finding = findings.get((case.id, match.variant))
                if finding is None:
                    finding = findings[case.id, match.variant] = Finding(case, variants.get(match.variant), [])
                finding.occurrences.append(Occurrence(tuple(match.nodes), match.note))
    ordered = sorted(findings.values(), key=lambda f: (f.case.id, _variant_position(f)))
    return Matches(ordered, problems)


def _invalid(case: type[Case], match: Match, node_names: set[str], variants: dict[str, Variant]) -> str | None:
    if not isinstance(match, Match) or match.case != case.id:
        return f"case {case.id}: its matcher returned {match!r}, not a Match of case {case.id}"
    if not match.nodes and not case.whole_model:
        return f"case {case.id}: its matcher returned a match without nodes (only a whole-model case may)"
    if match.nodes and case.whole_model:
        return f"case {case.id}: a whole-model case's match must name no nodes"
    if not node_names.issuperset(match.nodes):
        unknown = [name for name in match.nodes if name not in node_names]
        return f"case {case.id}: its matcher named nodes the model does not have: {unknown}"
    if match.variant is not None and match.variant not in variants:
        return f"case {case.id}: its matcher named variant {match.variant!r}, which the case does not declare"
    return None


def _variant_position(finding: Finding) -> int:
    names = [v.name for v in finding.case.variants]
    return names.index(finding.variant.name) if finding.variant else len(names)
