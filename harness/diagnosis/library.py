"""What the case library knows about a file's facts: the pattern a signature names and that pattern's evidence per
target (observed records, upstream claims, the workarounds known to pass), a calibration cache against each target
(and the pattern whose case reads caches), a command's flags that a target's TensorRT removed, and, with the user's model, the scan's findings that hold
the nodes a log or engine names.

Evidence is the scan's (``harness.scan.prediction.predict``, which gathers it with
:func:`harness.evidence.evidence_for`) on the case's reported forms: this module names the pattern and words it.
"""
from __future__ import annotations

import dataclasses
from typing import Any, Collection, Iterable, Sequence

from cases.model import Case, all_cases
from harness.matrix import Target
from harness.scan.matching import Finding
from harness.evidence.observations import Observations
from harness.scan.prediction import Verdict, predict
from harness import judgement as j
from harness.tensorrt.calibration_cache import NEWEST_MAJOR, CalibrationCache, check_cache
from harness.tensorrt.classify import WARNING_KINDS
from harness.tensorrt.versions import version_tuple
from harness.tensorrt.release_facts import REMOVED_COMMAND_FLAGS, flag_removed
from harness.tensorrt.layers import OnnxNames, onnx_nodes_from_layer_name

# How a file's text names a pattern. Only a known failure decides alone; a form (other models show it too) applies
# to a target once the model confirms it: a finding of that pattern holds a node the log names. A known message in
# text that does not show the build failed (a pasted fragment without its tags, a tactic skipped for that reason)
# names the pattern and its evidence, but decides nothing alone either.
STRENGTHS = {
    "known-failure": "the failure message an upstream report of the pattern prints",
    "known-message": "the message an upstream report of the pattern prints, in text that does not show the build "
                     "failed",
    "warning-form": "warnings of the form the pattern gives (other models give them too)",
    "node-form": "a failing node of the form the pattern gives (other models fail in this form too)",
}
CALIBRATION_CACHE = "calibration-cache"  # the diagnose file kind (harness/diagnosis/kinds/calibration_cache.py)
APPLYING_VERDICTS = j.SCAN_FAILING  # a known failure applies to a target the scan judges so
CACHE_DECISIONS = {
    "reuse": "the header names this version: TensorRT reads the cache",
    "rebuild": "the header names another version: TensorRT skips the cache and calibrates again, and a build given "
               "only the cache (trtexec --calib) has nothing to calibrate with; recalibrate on this version",
    "not-supported": f"TensorRT {NEWEST_MAJOR + 1}.x removed implicit quantization and calibration caches: move to "
                     "explicit Q/DQ",
    j.NOT_APPLICABLE: "this backend reads no TensorRT calibration cache",
    "unknown": "the target names no TensorRT version",
}


@dataclasses.dataclass
class Context:
    """What matching reads: the chosen targets, every target of the matrix, and the observed records."""

    targets: Sequence[Target]  # chosen: a known failure here makes the exit status 1
    matrix: Sequence[Target]  # every target: where a pattern is fixed is told over all of them
    observations: Observations

    @property
    def chosen(self) -> set[str]:
        return {t.id for t in self.targets}


def signature_matches(facts: dict[str, Any]) -> list[dict[str, Any]]:
    """The patterns a log's facts name: its known failure, then its known forms."""
    found = []
    failure = facts.get("failure") or {}
    known = failure.get("known_failure")
    if known:
        shown = failure.get("failure_shown", True)
        note = failure.get("message") or "" if shown else (
            "the whole log (its error lines, its end) or the model (--model) decides whether the build failed: tactics "
            "skipped for this reason can still end with an engine")
        found.append({"pattern": known["pattern"], "signature": known["id"],
                      "strength": "known-failure" if shown else "known-message", "source": known["source"],
                      "note": note})
    for form in facts.get("known_forms") or ():
        strength = "warning-form" if form["kind"] in WARNING_KINDS else "node-form"
        found.append({"pattern": form["pattern"], "signature": form["id"], "strength": strength,
                      "source": form["source"], "note": form["note"], "lines": form["lines"]})
    return found


def pattern_evidence(pattern: str, context: Context) -> list[dict[str, Any]]:
    """Per case of ``pattern``: its title, remedy and links, and the verdict of its reported form on every target."""
    evidence = []
    for case in cases_of(pattern):
        verdicts = {t.id: predict(Finding(case, None, []), t, context.observations) for t in context.matrix}
        evidence.append({
            "case": case.id, "title": case.title, "remedy": case.remedy or None, "links": list(case.links),
            "targets": {tid: _verdict_dict(v, tid in context.chosen) for tid, v in verdicts.items()},
            "fixed_on": [tid for tid, v in verdicts.items() if v.verdict in j.SCAN_GOOD],
            "fails_on": [tid for tid, v in verdicts.items() if v.verdict in APPLYING_VERDICTS],
        })
    return evidence


def targets_of_build(version: str | None, platform: str | None, matrix: Iterable[Target]) -> list[str]:
    """The TensorRT targets of the matrix with the major.minor version a file names (and its platform, when named):
    where the library's evidence speaks of the user's own build."""
    if not version:
        return []
    platforms = {"orin"} if platform and "Orin" in platform else {"x86_64"} if platform and "discrete" in platform \
        else None
    return [t.id for t in matrix if t.backend == "tensorrt" and t.version
            and version_tuple(t.version)[:2] == version_tuple(version)[:2]
            and (platforms is None or t.platform in platforms)]


def cases_of(pattern: str) -> list[type[Case]]:
    return [case for case in all_cases() if case.pattern == pattern]


def cases_read_from(kind: str) -> list[type[Case]]:
    """The cases whose pattern a file of ``kind`` (a diagnose file kind) is evidence of (``Case.evidence_files``)."""
    return [case for case in all_cases() if kind in case.evidence_files]


def cache_entry(cache: CalibrationCache, written_by_this_build: bool, context: Context) -> dict[str, Any]:
    """A calibration cache against each chosen target, with the pattern calibration caches are evidence of."""
    patterns = dict.fromkeys(case.pattern for case in cases_read_from(CALIBRATION_CACHE))
    return {"header": cache.header, "written_by_this_build": written_by_this_build,
            "pattern": ", ".join(patterns) or None, "targets": cache_checks(cache, context)}


def cache_checks(cache: CalibrationCache, context: Context) -> dict[str, dict[str, Any]]:
    """Per target: reuse, rebuild, not-supported (11.x), not-applicable or unknown, and the evidence there of the
    pattern calibration caches are evidence of (the cases that say so: ``Case.evidence_files``)."""
    evidence = {t.id: predict(Finding(case, None, []), t, context.observations)
                for case in cases_read_from(CALIBRATION_CACHE) for t in context.targets}
    checks = {}
    for target in context.targets:
        if target.backend != "tensorrt":
            decision, check = j.NOT_APPLICABLE, None
        elif not target.version:
            decision, check = "unknown", None
        elif version_tuple(target.version)[0] > NEWEST_MAJOR:
            decision, check = "not-supported", None
        else:
            check = check_cache(cache, target.version, None)
            decision = "reuse" if check.version_matches else "rebuild"
        entry = {"decision": decision, "means": CACHE_DECISIONS[decision],
                 "description": check.describe() if check else None}
        if decision == "rebuild" and target.id in evidence:
            entry["evidence"] = _verdict_dict(evidence[target.id], True)
        checks[target.id] = entry
    return checks


def removed_flags(commands: Iterable[dict[str, Any]], targets: Iterable[Target]) -> list[dict[str, Any]]:
    """The flags of ``commands`` that a target's TensorRT removed: one entry per (flag, target)."""
    found = []
    for command in commands:
        for removed in REMOVED_COMMAND_FLAGS:
            if removed.tool != command["tool"] or removed.flag not in command["flags"]:
                continue
            for target in targets:
                if target.backend == "tensorrt" and target.version and flag_removed(removed, target.version):
                    found.append({"tool": removed.tool, "flag": removed.flag, "target": target.id,
                                  "removed_in": removed.removed_in, "instead": removed.instead,
                                  "source": removed.source})
    return found


def joined_findings(findings: Sequence[Finding], verdicts: Sequence[dict[str, Verdict]],
                    nodes: Collection[str] | None = None) -> list[dict[str, Any]]:
    """The scan's findings with their verdict per target, one entry per finding: its first occurrence and how many
    places it has. Given ``nodes`` (the model's nodes a log or engine names), only occurrences holding one of them
    count, and ``nodes`` of the entry are those in common."""
    joined = []
    for finding, per_target in zip(findings, verdicts):
        places = [(o, [n for n in o.nodes if nodes is None or n in nodes]) for o in finding.occurrences]
        places = [(o, common) for o, common in places if common or nodes is None]
        if not places:
            continue
        first, common = places[0]
        joined.append({"finding": finding.label, "case": finding.case.id, "pattern": finding.case.pattern,
                       "variant": finding.variant.name if finding.variant else None, "anchor": first.anchor,
                       "nodes": common, "places": len(places),
                       "targets": {tid: _verdict_dict(v, True) for tid, v in per_target.items()}})
    return joined


def model_nodes(layer_names: Iterable[str], names: OnnxNames) -> list[str]:
    """The model's nodes the TensorRT layer names name, in the order given."""
    return list(dict.fromkeys(node for name in layer_names for node in onnx_nodes_from_layer_name(name, names)))


def _verdict_dict(verdict: Verdict, chosen: bool) -> dict[str, Any]:
    passing = [w for w in verdict.workarounds if w.verdict in j.SCAN_GOOD]
    return {"verdict": verdict.verdict, "basis": verdict.basis, "reason": verdict.reason, "chosen": chosen,
            "workarounds": [{"variant": w.variant.name, "verdict": w.verdict, "description": w.variant.description,
                             "basis": w.evidence[0].kind if w.evidence else None} for w in passing]}

