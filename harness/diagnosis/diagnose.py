"""One diagnosis: identify each file, extract its facts, match them against the library, and, with a model, scan it
and join its findings to the nodes the files name; then the exit status (README, "Exit codes")."""
from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any, Sequence

from harness.diagnosis.identify import identify
from harness.diagnosis.kinds import DAMAGED, KINDS, NO_KIND, READ, Around, Identified
from harness.diagnosis.kinds.engine_layers import metadata_beside
from harness.diagnosis.kinds.onnx_model import NAME as ONNX_MODEL
from harness.diagnosis.library import (
    APPLYING_VERDICTS,
    Context,
    cache_entry,
    joined_findings,
    model_nodes,
    pattern_evidence,
    removed_flags,
    signature_matches,
)
from harness.matrix import Target
from harness.evidence.observations import read_observations
from harness.tensorrt.layers import LayersRead, OnnxNames

# The outcome of a diagnosis, worst first: the command maps each to its exit status.
OUTCOMES = {
    "damaged": "a file is damaged, or the --results evidence is",
    "no-kind": "a file is of no kind this command reads",
    "applies": "a known failure applies to a chosen target",
    "explained": "every file identified and explained; no known failure applies to a chosen target",
}
DIAGNOSIS_FORMAT = "trt-matrix/diagnosis/1"


@dataclasses.dataclass
class DiagnoseOptions:
    targets: Sequence[Target]  # chosen
    matrix: Sequence[Target]  # every target of the matrix
    results: Sequence[Path] = ()
    model: Path | None = None  # --model; else the one readable ONNX model among the files, if there is one
    out_dir: Path = Path("out/diagnose")


@dataclasses.dataclass
class FileDiagnosis:
    """What one file is, what it says, and what the library knows about it."""

    path: Path
    kind: str | None
    kind_text: str
    status: str
    problem: str | None = None
    facts: dict[str, Any] = dataclasses.field(default_factory=dict)
    patterns: list[dict[str, Any]] = dataclasses.field(default_factory=list)
    caches: list[dict[str, Any]] = dataclasses.field(default_factory=list)
    removed_flags: list[dict[str, Any]] = dataclasses.field(default_factory=list)
    names_checked: bool = False  # a model was scanned and this file names layers or tensors to look up in it
    model_nodes: list[str] = dataclasses.field(default_factory=list)
    joined: list[dict[str, Any]] = dataclasses.field(default_factory=list)
    applies: dict[str, list[str]] = dataclasses.field(default_factory=dict)  # chosen target -> known failures there
    engine_comparison: dict[str, Any] | None = None  # with a model: its predicted engine beside these layers

    def to_dict(self) -> dict[str, Any]:
        return {**dataclasses.asdict(self), "path": str(self.path)}


@dataclasses.dataclass
class Diagnosis:
    files: list[FileDiagnosis]
    targets: list[str]
    model: dict[str, Any] | None  # the scanned model: path, nodes, findings
    scan: Any  # the ScanResult of the model, or None
    problems: list[str]  # damaged results lines, matchers that failed

    @property
    def outcome(self) -> str:
        """The worst of OUTCOMES that holds."""
        statuses = {f.status for f in self.files}
        if DAMAGED in statuses or self.problems:
            return "damaged"
        if NO_KIND in statuses:
            return "no-kind"
        return "applies" if any(f.applies for f in self.files) else "explained"

    def to_dict(self) -> dict[str, Any]:
        return {"format": DIAGNOSIS_FORMAT, "targets": self.targets, "model": self.model,
                "files": [f.to_dict() for f in self.files], "problems": self.problems, "outcome": self.outcome,
                "outcome_text": OUTCOMES[self.outcome]}


def diagnose_files(paths: Sequence[Path], options: DiagnoseOptions) -> Diagnosis:
    """Diagnose ``paths``. Raises ``ObservationsError`` for unreadable --results and ``ModelInputError`` for a
    --model that cannot be scanned."""
    observations = read_observations(options.results)
    context = Context(options.targets, options.matrix, observations)
    identified = [identify(Path(path)) for path in paths]
    model_path = options.model or _only_model(identified)
    scanned = names = None
    problems = list(observations.problems)
    if model_path is not None:
        from harness.scan.scanner import ScanOptions, scan

        read = next((item.content for item in identified if item.path == model_path and item.status == READ
                     and item.kind == ONNX_MODEL), None)  # a model among the files is not read twice
        scanned = scan(model_path, ScanOptions(targets=options.targets, results=options.results,
                                               out_dir=options.out_dir), loaded=read)
        names = OnnxNames.from_model(scanned.loaded.model)
        problems += [p for p in scanned.problems if p not in problems]
    files = [_diagnose(item, identified, context, scanned, names) for item in identified]
    model = None
    if scanned is not None:
        model = {"path": str(model_path), "nodes": len(scanned.loaded.index.nodes),
                 "findings": [f.label for f in scanned.findings]}
    return Diagnosis(files, [t.id for t in options.targets], model, scanned, problems)


def _only_model(identified: list[Identified]) -> Path | None:
    models = [item.path for item in identified if item.kind == ONNX_MODEL and item.status == READ]
    return models[0] if len(models) == 1 else None


def _diagnose(item: Identified, identified: list[Identified], context: Context, scanned: Any,
              names: OnnxNames | None) -> FileDiagnosis:
    result = FileDiagnosis(item.path, item.kind, item.kind_text, item.status, item.problem)
    kind = KINDS.get(item.kind)
    if kind is None or item.status == NO_KIND or (item.status == DAMAGED and not kind.facts_when_damaged):
        return result  # a damaged log keeps what remains readable; other damaged files hold nothing to trust
    found = kind.facts(item, Around(identified, context.matrix))
    result.facts = found.facts
    result.caches = [cache_entry(cache, written, context) for cache, written in found.caches]
    result.removed_flags = removed_flags(found.commands, context.targets)
    layer_names, tensors = found.layer_names, found.tensors
    if scanned is not None and isinstance(item.content, LayersRead) and item.status == READ:
        from harness.diagnosis.engine_comparison import engine_comparison

        result.engine_comparison = engine_comparison(item, result.facts, scanned.loaded.model,
                                                     metadata_beside(item, identified))
    if names is not None and (layer_names or tensors):
        result.names_checked = True
        producers = [names.producers[tensor] for tensor in tensors if tensor in names.producers]
        result.model_nodes = list(dict.fromkeys(model_nodes(layer_names, names) + producers))
        result.joined = joined_findings(scanned.findings, scanned.verdicts, set(result.model_nodes))
    if scanned is not None and item.kind == ONNX_MODEL and item.path == scanned.loaded.path:
        result.joined = joined_findings(scanned.findings, scanned.verdicts)
    result.patterns = _patterns(result.facts, result.joined if result.names_checked else None, context)
    result.applies = _applies(result, context)
    return result


def _patterns(facts: dict[str, Any], joined: list[dict[str, Any]] | None, context: Context) -> list[dict[str, Any]]:
    """Each pattern the facts name (strongest signature first), with its cases' evidence and whether the model
    confirms it (``joined``: the findings holding the nodes the file names; None: no model to look them up in)."""
    patterns: dict[str, dict[str, Any]] = {}
    joined_patterns = {j["pattern"] for j in joined or ()}
    for match in signature_matches(facts):
        entry = patterns.setdefault(match["pattern"], {"pattern": match["pattern"], "signatures": [],
                                                       "cases": pattern_evidence(match["pattern"], context)})
        entry["signatures"].append(match)
    for entry in patterns.values():
        entry["confirmed_by_model"] = None if joined is None else entry["pattern"] in joined_patterns
        entry["decisive"] = entry["confirmed_by_model"] is True or any(
            s["strength"] == "known-failure" for s in entry["signatures"])
    return list(patterns.values())


def _applies(result: FileDiagnosis, context: Context) -> dict[str, list[str]]:
    """Chosen target -> the known failures that apply there, each in a phrase."""
    applies: dict[str, list[str]] = {}
    for target in context.targets:
        reasons = []
        joined_here = {j["pattern"] for j in result.joined
                       if j["targets"].get(target.id, {}).get("verdict") in APPLYING_VERDICTS}
        for pattern in result.patterns:
            if not pattern["decisive"] or pattern["pattern"] in joined_here:  # the model's own finding says more
                continue
            for case in pattern["cases"]:
                verdict = case["targets"][target.id]["verdict"]
                if verdict in APPLYING_VERDICTS:
                    reasons.append(f"{pattern['pattern']} ({case['case']}): {verdict}")
        for joined in result.joined:
            verdict = joined["targets"].get(target.id, {}).get("verdict")
            if verdict in APPLYING_VERDICTS:
                reasons.append(f"{joined['pattern']} ({joined['finding']} at {joined['anchor']}): {verdict}")
        for cache in result.caches:
            decision = cache["targets"][target.id]["decision"]
            if decision in ("rebuild", "not-supported") and not cache["written_by_this_build"]:
                reasons.append(f"{cache['pattern']} (calibration cache {cache['header']}): {decision}")
        for flag in result.removed_flags:
            if flag["target"] == target.id:
                reasons.append(f"{flag['tool']} {flag['flag']}: removed in TensorRT {flag['removed_in']}")
        if reasons:
            applies[target.id] = list(dict.fromkeys(reasons))
    return applies
