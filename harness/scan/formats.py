"""``scan --format``: a scan (its scan.json dict) written for other tools.

- ``json``: scan.json itself (its schema: ``harness/scan/scan.schema.json``);
- ``markdown``: a job summary (``$GITHUB_STEP_SUMMARY``): the answer first, then a findings x targets table;
- ``sarif``: SARIF 2.1.0, a rule per pattern (case), per fact of a target and per rule of the ONNX parser
  (``parser/qdq-zero-point``), a result per finding and target whose verdict the gate counts (``--fail-on``) and per
  parser rule and target that stops the whole model there, the model file as the location and its nodes as logical
  locations;
- ``github``: GitHub Actions workflow commands (``::error file=...::``), one per finding and verdict and one per
  parser rule that stops the model, its targets listed compactly.

Standard library only: built from the scan data, never from the scanner's objects.
"""
from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, Callable

from harness.judgement import BLOCKED, FACT, FALLBACK, PARSER, SCAN_FAIL_ON_DEFAULT, SCAN_VERDICT_SYMBOLS, UNAVAILABLE, UNVERIFIED
from harness.judgement.engine import fails_scan_gate
from harness.scan.answer import answer, describe_targets, finding_key, version_free, with_versions

FORMATS = ("text", "json", "markdown", "sarif", "github")
TOOL = "trt-matrix"
SARIF_SCHEMA = "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"
SARIF_LEVELS = {BLOCKED: "error", FALLBACK: "warning", UNVERIFIED: "note"}
RULE_PREFIX = {PARSER: "parser", FACT: FACT}  # a SARIF rule id per model-wide stop: parser/qdq-zero-point, fact/fp8-qdq
GITHUB_LEVELS = {BLOCKED: "error", FALLBACK: "warning", UNVERIFIED: "notice"}



def model_uri(data: dict) -> str:
    """The model file as a path relative to the working directory where it lies under it (what a repository's
    annotations and code scanning point at), else as given; always with forward slashes."""
    path = Path(data["model"]["path"])
    try:
        path = path.resolve().relative_to(Path.cwd().resolve())
    except ValueError:
        pass
    return path.as_posix()


def _level(levels: dict[str, str], verdict: dict, default: str) -> str:
    """The level of a finding's verdict in ``levels``: its word's, but a warning, not an error, where the verdict
    rests on claims not known to hold on the target (scan.json's ``gates`` false: it does not fail the gate, and
    its reason says why)."""
    level = levels.get(verdict["verdict"], default)
    return "warning" if level == "error" and verdict.get("gates") is False else level


def _gated(data: dict) -> list[tuple[dict, dict, dict]]:
    """(finding, target, the finding's verdict there) for each finding whose verdict on a target the gate counts
    (``--fail-on``), targets in scan order."""
    level = data.get("fail_on") or SCAN_FAIL_ON_DEFAULT
    rows = []
    for f in data["findings"]:
        for t in data["targets"]:
            verdict = f["verdicts"].get(t["target"])
            if verdict and fails_scan_gate(verdict["verdict"], level):
                rows.append((f, t, verdict))
    return rows


def _fact_rule(verdict: dict) -> str | None:
    """The rule id of the fact that decides a verdict (``fact/implicit-int8``), if a fact does."""
    evidence = (verdict.get("evidence") or [{}])[0]
    if evidence.get("kind") != FACT:
        return None
    return f"fact/{evidence.get('category') or evidence['case']}"


def _model_stops(data: dict) -> list[tuple[str, dict, dict]]:
    """(rule id, target, the piece of its model evidence) for each target whose verdict the gate counts and that a
    parser rule or a fact about the whole model decides (``parser/qdq-zero-point``, ``fact/fp8-qdq``), targets in
    scan order."""
    level = data.get("fail_on") or SCAN_FAIL_ON_DEFAULT
    rows = []
    for t in data["targets"]:
        if t.get("basis") not in (PARSER, FACT) or not fails_scan_gate(t["verdict"], level):
            continue
        for e in t.get("model_evidence") or []:
            if e["kind"] == t["basis"] and e.get("verdict"):
                rows.append((f"{RULE_PREFIX.get(e['kind'], e['kind'])}/{e.get('category') or e['case']}", t, e))
    return rows


def _without_source(evidence: dict) -> str:
    """A piece's words without its document (the same on every version whose documents say it)."""
    return (evidence.get("said") or "").replace(f" [{evidence.get('source')}]", "")


def _model_rule(rule: str, evidence: dict) -> dict:
    what = "the ONNX parser refuses" if evidence["kind"] == PARSER else "a fact of the target"
    url = re.search(r"https?://\S+", evidence.get("source") or "")
    return {"id": rule, "name": rule, "shortDescription": {"text": f"{what}: {evidence.get('category')}"},
            "fullDescription": {"text": evidence["said"]},
            "help": {"text": f"what to do: {evidence['note']}" if evidence.get("note") else evidence["said"]},
            **({"helpUri": url.group(0).rstrip(".,;)")} if url else {})}


def to_json(data: dict) -> str:
    return json.dumps(data, indent=1, allow_nan=False) + "\n"


def to_sarif(data: dict) -> str:
    uri = model_uri(data)
    rules: dict[str, dict] = {}
    for f in data["findings"]:
        rules.setdefault(f["case"], {
            "id": f["case"], "name": f["pattern"],
            "shortDescription": {"text": f"{f['pattern']}: {f['title']}"},
            "fullDescription": {"text": f["variant_description"] or f["title"]},
            "help": {"text": f["remedy"] or f"Known workarounds and the evidence per target: {f['title']}; "
                     "`trt-matrix scan MODEL --fix` rewrites the model into the best-evidenced one."},
            **({"helpUri": f["links"][0]} if f["links"] else {}),
            "properties": {"pattern": f["pattern"], "links": f["links"]},
        })
    results = []
    for f, t, verdict in _gated(data):
        rule = _fact_rule(verdict)
        if rule and rule not in rules:
            evidence = verdict["evidence"][0]
            rules[rule] = {
                "id": rule, "name": rule,
                "shortDescription": {"text": f"a fact of the target: {evidence.get('category') or f['case']}"},
                "fullDescription": {"text": evidence["said"]},
                "help": {"text": evidence["said"]},
                **({"helpUri": evidence["source"]} if "://" in (evidence.get("source") or "") else {}),
            }
        anchors = [o["anchor"] for o in f["occurrences"]]
        results.append({
            "ruleId": rule or f["case"],
            "level": _level(SARIF_LEVELS, verdict, "note"),
            "message": {"text": f"{finding_key(f)} on {t['target']} ({t['title']}): {verdict['verdict']}: "
                                f"{verdict['reason']}"},
            "locations": [{
                "physicalLocation": {"artifactLocation": {"uri": uri}},
                "logicalLocations": [{"name": a, "fullyQualifiedName": f"{uri}#{a}", "kind": "element"}
                                     for a in anchors],
            }],
            "partialFingerprints": {"finding/target": f"{finding_key(f)}@{t['target']}"},
            "properties": {"target": t["target"], "verdict": verdict["verdict"], "basis": verdict.get("basis"),
                           "finding": finding_key(f)},
        })
    for rule, t, evidence in _model_stops(data):
        rules.setdefault(rule, _model_rule(rule, evidence))
        results.append({
            "ruleId": rule,
            "level": SARIF_LEVELS.get(t["verdict"], "note"),
            "message": {"text": f"the model on {t['target']} ({t['title']}): {t['verdict']}: {evidence['text']}"},
            "locations": [{
                "physicalLocation": {"artifactLocation": {"uri": uri}},
                "logicalLocations": [{"name": n, "fullyQualifiedName": f"{uri}#{n}", "kind": "element"}
                                     for n in evidence.get("nodes") or []],
            }],
            "partialFingerprints": {"finding/target": f"{rule}@{t['target']}"},
            "properties": {"target": t["target"], "verdict": t["verdict"], "basis": t["basis"], "finding": rule},
        })
    ordered = list(rules.values())
    index = {r["id"]: i for i, r in enumerate(ordered)}
    for r in results:
        r["ruleIndex"] = index[r["ruleId"]]
    log = {
        "$schema": SARIF_SCHEMA, "version": "2.1.0",
        "runs": [{
            "tool": {"driver": {"name": TOOL, "version": _version(), "rules": ordered}},
            "artifacts": [{"location": {"uri": uri}}],
            "invocations": [{"executionSuccessful": data.get("exit_code") in (0, 1), "exitCode": data["exit_code"]}],
            "results": results,
            "properties": {"headline": answer(data)["headline"], "fail_on": data.get("fail_on")},
        }],
    }
    return json.dumps(log, indent=1) + "\n"


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(TOOL)
    except PackageNotFoundError:
        return "0+unknown"


def _escape_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _escape_property(text: str) -> str:
    return _escape_data(text).replace(":", "%3A").replace(",", "%2C")


def to_github(data: dict) -> str:
    """One workflow command per finding and verdict (its targets listed compactly), then the answer as a notice."""
    uri = model_uri(data)
    grouped: dict[tuple[str, str, str], tuple[dict, list[dict], bool]] = {}
    for f, t, verdict in _gated(data):
        fact = _fact_rule(verdict)  # a fact stops the whole model there: one annotation, whichever finding says it
        key = (fact or finding_key(f), verdict["verdict"], version_free(verdict["reason"], t.get("version")),
               _level(GITHUB_LEVELS, verdict, "notice"))
        members = grouped.setdefault(key, (f, [], bool(fact)))[1]
        if t not in members:
            members.append(t)
    lines = []
    stops: dict[tuple[str, str, str], tuple[dict, list[dict]]] = {}
    for rule, t, evidence in _model_stops(data):  # the whole model stopped: one annotation per rule
        key = (rule, t["verdict"], version_free(_without_source(evidence), t.get("version")))
        stops.setdefault(key, (evidence, []))[1].append(t)
    for (rule, word, text), (evidence, targets) in stops.items():
        title = f"{rule} {word} on {len(targets)} target(s)"
        message = (f"the model: {word} on {describe_targets(targets, data['targets'])}: "
                   f"{with_versions(text, {t.get('version') for t in targets})}")
        lines.append(f"::{GITHUB_LEVELS.get(word, 'notice')} file={_escape_property(uri)},"
                     f"title={_escape_property(title)}::{_escape_data(message)}")
    for (name, word, reason, level), (f, targets, fact) in grouped.items():
        held = " (not a CI gate here)" if level != GITHUB_LEVELS.get(word, "notice") else ""
        title = f"{'a fact of the target' if fact else f['pattern']} {word} on {len(targets)} target(s){held}"
        where = "the model" if fact else f"{name} at {', '.join(o['anchor'] for o in f['occurrences'][:3])}"
        text = with_versions(reason, {t.get("version") for t in targets})
        message = f"{where}: {word} on {describe_targets(targets, data['targets'])}: {text}"
        lines.append(f"::{level} file={_escape_property(uri)},"
                     f"title={_escape_property(title)}::{_escape_data(message)}")
    a = answer(data)
    summary = "\n".join([a["headline"], *a["changes"]])
    lines.append(f"::notice file={_escape_property(uri)},title={_escape_property('trt-matrix scan')}::"
                 f"{_escape_data(summary)}")
    return "\n".join(lines) + "\n"


def _md(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def to_markdown(data: dict) -> str:
    """A job summary: the answer, then findings x targets (one symbol per cell), then how to read it."""
    a = answer(data)
    lines = [f"### trt-matrix scan: `{Path(data['model']['path']).name}`", "", a["headline"], "", a["findings"], ""]
    if data.get("failing_targets"):
        lines += [f"**Fails the gate (--fail-on {data.get('fail_on')}) on {len(data['failing_targets'])} target(s)**"
                  f": {', '.join(data['failing_targets'])}", ""]
    for change in a["changes"]:
        lines.append(f"- changes between versions on {change}")
    if a["changes"]:
        lines.append("")
    lines += ["| verdict | targets | why | fix |", "|---|---|---|---|"]
    for g in a["groups"]:
        basis = f" ({g['basis_text']})" if g["basis_text"] else ""
        lines.append(f"| **{g['verdict']}**{_md(basis)} | {_md(g['covers'])} | {_md(g['reason'])} | "
                     f"{_md('; '.join(g['fixes'])) or '—'} |")
    if a["cannot_exist"]:
        lines += ["", f"Targets that cannot exist: {', '.join(a['cannot_exist'])}."]
    available = [t for t in data["targets"] if t["verdict"] != UNAVAILABLE]
    if data["findings"]:
        lines += ["", "<details><summary>Findings x targets</summary>", "",
                  "| finding | " + " | ".join(t["target"] for t in available) + " |",
                  "|---|" + "---|" * len(available)]
        for f in data["findings"]:
            cells = [SCAN_VERDICT_SYMBOLS.get((f["verdicts"].get(t["target"]) or {}).get("verdict", ""), "")
                     for t in available]
            lines.append(f"| {finding_key(f)} | " + " | ".join(cells) + " |")
        legend = " · ".join(f"{symbol} {verdict}" for verdict, symbol in SCAN_VERDICT_SYMBOLS.items())
        lines += ["", legend, "", "</details>"]
    lines += ["", f"Exit code {data['exit_code']}."]
    return "\n".join(lines) + "\n"


RENDERERS: dict[str, Callable[[dict], str]] = {
    "json": to_json, "markdown": to_markdown, "sarif": to_sarif, "github": to_github,
}


def render(fmt: str, data: dict[str, Any]) -> str:
    """The scan in ``fmt`` (any of :data:`FORMATS` but ``text``, which the command prints itself)."""
    return RENDERERS[fmt](data)



def render_many(fmt: str, scans: list[dict[str, Any]]) -> str:
    """Several scans in ``fmt``: a JSON array of scan.json dicts, one SARIF log with a run per model, the other
    formats one after the other."""
    if len(scans) == 1:
        return render(fmt, scans[0])
    if fmt == "json":
        return json.dumps(scans, indent=1, allow_nan=False) + "\n"
    if fmt == "sarif":
        logs = [json.loads(to_sarif(data)) for data in scans]
        return json.dumps({"$schema": SARIF_SCHEMA, "version": "2.1.0",
                           "runs": [run for log in logs for run in log["runs"]]}, indent=1) + "\n"
    return "".join(RENDERERS[fmt](data) for data in scans)
