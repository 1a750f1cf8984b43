"""One diagnosis: identify each file, extract its facts, match them against the library, and, with a model, scan it
and join its findings to the nodes the files name; then the exit status (README, "Exit codes")."""
from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any, Sequence

from harness.diagnosis import facts as fact_reading
from harness.diagnosis.identify import DAMAGED, NO_KIND, READ, Identified, identify
from harness.diagnosis.library import (
    APPLYING_VERDICTS,
    Context,
    cache_checks,
    joined_findings,
    model_nodes,
    pattern_evidence,
    removed_flags,
    signature_matches,
    targets_of_build,
)
from harness.matrix import Target
from harness.scan.observations import read_observations
from harness.tensorrt.calibration_cache import headers_in_text
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
                     and item.kind == "onnx-model"), None)  # a model among the files is not read twice
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
    models = [item.path for item in identified if item.kind == "onnx-model" and item.status == READ]
    return models[0] if len(models) == 1 else None


def _diagnose(item: Identified, identified: list[Identified], context: Context, scanned: Any,
              names: OnnxNames | None) -> FileDiagnosis:
    result = FileDiagnosis(item.path, item.kind, item.kind_text, item.status, item.problem)
    if item.status == NO_KIND or (item.status == DAMAGED and item.kind != "tensorrt-log"):
        return result  # a damaged log keeps what remains readable; other damaged files hold nothing to trust
    layer_names: list[str] = []
    tensors: list[str] = []
    if item.kind == "tensorrt-log":
        result.facts = fact_reading.log_facts(item)
        result.facts["targets_of_this_build"] = targets_of_build(result.facts["tensorrt_version"],
                                                                 result.facts["platform"], context.matrix)
        node = result.facts["failure"]["node"]
        layer_names = [node] if node else []
        if result.facts["layers"]:
            layer_names += [layer["name"] for layer in result.facts["layers"]["left_requested_precision"]]
        result.caches = [{"header": cache.header, "written_by_this_build": True,
                          "targets": cache_checks(cache, context)} for cache in headers_in_text(item.text or "")]
        tensors = result.facts["missing_scale_tensors"]
        result.removed_flags = removed_flags(result.facts["commands"], context.targets)
    elif item.kind == "engine-layers":
        result.facts = fact_reading.engine_facts(item, _metadata_beside(item, identified))
        layer_names = [layer["name"] for layer in result.facts["left_requested_precision"]]
    elif item.kind == "engine-build-metadata":
        result.facts = fact_reading.metadata_facts(item.content)
    elif item.kind == "calibration-cache":
        result.facts = fact_reading.cache_facts(item.content)
        result.caches = [{"header": item.content.header, "written_by_this_build": False,
                          "targets": cache_checks(item.content, context)}]
    elif item.kind == "command-line":
        result.facts = fact_reading.command_file_facts(item)
        result.removed_flags = removed_flags(result.facts["commands"], context.targets)
    elif item.kind == "onnx-model":
        from harness.scan.summary import model_summary

        result.facts = model_summary(item.content)
    if scanned is not None and isinstance(item.content, LayersRead) and item.status == READ:
        from harness.diagnosis.engine_comparison import engine_comparison

        result.engine_comparison = engine_comparison(item, result.facts, scanned.loaded.model,
                                                     _metadata_beside(item, identified))
    if names is not None and (layer_names or tensors):
        result.names_checked = True
        producers = [names.producers[tensor] for tensor in tensors if tensor in names.producers]
        result.model_nodes = list(dict.fromkeys(model_nodes(layer_names, names) + producers))
        result.joined = joined_findings(scanned.findings, scanned.verdicts, set(result.model_nodes))
    if scanned is not None and item.kind == "onnx-model" and item.path == scanned.loaded.path:
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
                reasons.append(f"P11 (calibration cache {cache['header']}): {decision}")
        for flag in result.removed_flags:
            if flag["target"] == target.id:
                reasons.append(f"{flag['tool']} {flag['flag']}: removed in TensorRT {flag['removed_in']}")
        if reasons:
            applies[target.id] = list(dict.fromkeys(reasons))
    return applies


def _metadata_beside(item: Identified, identified: list[Identified]) -> dict[str, Any] | None:
    """The build metadata TREx writes beside an engine's layer JSON (NAME.graph.json, NAME.build.metadata.json):
    among the files given, else on disk, when its content is build metadata."""
    if not item.path.name.endswith(".graph.json"):
        return None
    sibling = item.path.with_name(item.path.name.removesuffix(".graph.json") + ".build.metadata.json")
    given = next((other for other in identified if other.path == sibling), None)
    other = given or (identify(sibling) if sibling.is_file() else None)
    return other.content if other is not None and other.kind == "engine-build-metadata" else None
