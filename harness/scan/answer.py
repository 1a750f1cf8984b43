"""The scan's answer first: what a scan (the ``scan.json`` dict) says, grouped by what its targets share.

Built from the scan data alone (never from the scanner's objects), so that every surface that reads scan.json (the
text answer, the page, Markdown, SARIF) can say the same thing:

- ``headline``: the model, its quantization and the predicted engine, in one line;
- ``groups``: each distinct verdict with its basis, reason and fix stated once, and the targets it covers written
  compactly (``TensorRT 8.5-11.4 on Orin, Thor and x86, 25 targets``);
- ``changes``: per platform where the verdict changes between its versions
  (``Orin: unverified on 8.5, blocked on 8.6 by S1, likely on 10.0, ...``);
- ``cannot_exist``: the targets that cannot exist, in one line.

Standard library only: the scan's text path imports it before anything heavy.
"""
from __future__ import annotations

import re
from typing import Any

from harness.judgement import BASIS, PARSER, SCAN_FAILING, SCAN_GOOD, SCAN_VERDICTS, UNAVAILABLE

PLATFORM_NAMES = {"x86_64": "x86", "orin": "Orin", "thor": "Thor", "aarch64": "aarch64"}
BACKEND_NAMES = {"tensorrt": "TensorRT", "onnxruntime": "ONNX Runtime"}
SHOWN_PLACES = 2
VERSION = re.compile(r"TensorRT (\d+(?:\.\d+)*)")
URL = re.compile(r"https?://[^\s,;)\"]+")


def platform_of(target: dict) -> str:
    """The platform a target is shown under: ``Orin``, ``Orin DLA``, ``x86``, ``CPU``; ``""`` when the target
    names no version (``trt-local``, ``ort-cpu``: whatever is installed where it runs)."""
    if target.get("version") in (None, "") or target.get("platform") in (None, "any"):
        return ""
    if target.get("backend") == "onnxruntime":
        return "CPU"
    name = PLATFORM_NAMES.get(target["platform"], target["platform"])
    return f"{name} DLA" if target["target"].endswith("-dla") else name


def short_version(version: str | None) -> str:
    """``8.6.1`` -> ``8.6``; ``11`` stays ``11``."""
    return ".".join(str(version).split(".")[:2]) if version else ""


def _version_key(version: str | None) -> tuple:
    return tuple(int(p) if p.isdigit() else 0 for p in str(version or "0").split("."))


def _and(words: list[str]) -> str:
    return words[0] if len(words) == 1 else f"{', '.join(words[:-1])} and {words[-1]}"


def finding_key(finding: dict) -> str:
    """A finding's name in scan.json's target lists and reasons: ``case/variant`` (``case`` for a form-less one)."""
    return f"{finding['case']}/{finding['variant']}" if finding.get("variant") else finding["case"]


def _deciding_finding(target: dict, findings: dict[str, dict]) -> dict | None:
    """The finding a target's reason starts with (the one that decided its verdict), if any."""
    head = (target.get("reason") or "").split(":", 1)[0]
    return findings.get(head)


def version_free(reason: str, version: str | None) -> str:
    """``reason`` with the target's own TensorRT version written as ``TensorRT {version}``: a fact that names the
    target's release ("TensorRT 11.4.1 has no implicit quantization") reads the same on every release it covers."""
    version = str(version or "")
    spellings = {version, short_version(version), version.split(".")[0]} - {""}
    return VERSION.sub(lambda m: "TensorRT {version}" if m.group(1) in spellings else m.group(0), reason or "")


def with_versions(reason: str, versions: set) -> str:
    """A :func:`version_free` reason written back for the targets it covers."""
    if "{version}" not in reason:
        return reason
    return reason.replace("{version}", short_version(next(iter(versions))) if len(versions) == 1 else
                          "of these targets")


def _versions(scanned: list[dict], backend: str, platform: str, mine: list[str]) -> list[str]:
    """The versions of a platform the scan holds (available ones, and ``mine`` whatever they are), oldest first."""
    every = {short_version(s["version"]) for s in scanned if s.get("available") and s["backend"] == backend and
             platform_of(s) == platform}
    return sorted(every | set(mine), key=_version_key)


def describe_targets(targets: list[dict], scanned: list[dict]) -> str:
    """The targets compactly: ``TensorRT 8.5-11.4 on Orin, Thor and x86, 25 targets``. A platform's versions are a
    range only where the group holds every available version of that platform between its ends (``scanned``: every
    target of the scan); otherwise they are listed (``TensorRT 8.6 and 11.4 on Orin``)."""
    parts, loose = [], []
    by_backend: dict[str, dict[str, list[dict]]] = {}
    for t in targets:
        platform = platform_of(t)
        if not platform:
            loose.append(t["target"])
            continue
        by_backend.setdefault(t["backend"], {}).setdefault(platform, []).append(t)
    for backend, platforms in by_backend.items():
        name = BACKEND_NAMES.get(backend, backend)
        runs, whole = {}, True
        for platform, members in platforms.items():
            runs[platform] = sorted({short_version(m["version"]) for m in members}, key=_version_key)
            every = _versions(scanned, backend, platform, runs[platform])
            whole &= every == runs[platform]
        if whole:  # every version of each of these platforms: one span over them all
            versions = sorted({v for mine in runs.values() for v in mine}, key=_version_key)
            span = versions[0] if len(versions) == 1 else f"{versions[0]}-{versions[-1]}"
            parts.append(f"{name} {span} on {_and(sorted(platforms))}")
            continue
        by_text: dict[str, list[str]] = {}
        for platform, mine in runs.items():
            every = _versions(scanned, backend, platform, mine)
            start, end = every.index(mine[0]), every.index(mine[-1])
            text = (f"{mine[0]}-{mine[-1]}" if every[start:end + 1] == mine and len(mine) > 2 else _and(mine))
            by_text.setdefault(text, []).append(platform)
        parts.append("; ".join(f"{name} {text} on {_and(sorted(p))}" for text, p in by_text.items()))
    if loose:
        parts.append(_and(loose))
    count = len(targets)
    return f"{'; '.join(parts)}, {count} target{'s' if count != 1 else ''}"


def _fixes(targets: list[dict], findings: list[dict]) -> list[str]:
    """The workarounds known (observed or claimed) to pass for the findings that fail on these targets, once each."""
    lines = []
    for f in findings:
        for t in targets:
            verdict = f["verdicts"].get(t["target"])
            if not verdict or verdict["verdict"] not in SCAN_FAILING:
                continue
            for w in verdict.get("workarounds") or []:
                if w["verdict"] in SCAN_GOOD:
                    basis = BASIS[w["evidence"][0]["kind"]].said if w.get("evidence") else w["verdict"]
                    lines.append(f"{f['case']} -> {w['variant']} ({w['verdict']}, {basis}): {w['description']}")
    return list(dict.fromkeys(lines))


def _model_remedies(targets: list[dict]) -> list[str]:
    """What to do about what stops the whole model on these targets (the parser's refusals, a fact about its
    types), each rule once: ``qdq-zero-point: re-quantize symmetric ...``."""
    lines = []
    for t in targets:
        for e in t.get("model_evidence") or []:
            if e["kind"] == t.get("basis") and e.get("verdict") and e.get("note"):
                lines.append(f"{e.get('category')}: {e['note']}")
    return list(dict.fromkeys(lines))


def _model_sources(targets: list[dict]) -> str | None:
    """The documents of what stops the whole model on these targets, each address once (scan.json's evidence
    carries what each one says)."""
    found = [address.rstrip(".") for t in targets for e in t.get("model_evidence") or []
             if e["kind"] == t.get("basis") and e.get("verdict") for address in URL.findall(e.get("source") or "")]
    return " ".join(dict.fromkeys(found)) or None


def _groups(targets: list[dict], findings: list[dict], scanned: list[dict]) -> list[dict]:
    grouped: dict[tuple, list[dict]] = {}
    for t in targets:
        grouped.setdefault((t["verdict"], t.get("basis"), version_free(t.get("reason"), t.get("version"))),
                           []).append(t)
    groups = []
    for (verdict, basis, reason), members in grouped.items():
        text = with_versions(reason, {m.get("version") for m in members})
        source = next((e.get("source") for f in findings for m in members[:1]
                       for e in (f["verdicts"].get(m["target"]) or {}).get("evidence", [])[:1]
                       if text.startswith(finding_key(f) + ":")), None)
        stopped = basis == PARSER  # the whole model: its remedies, not the patterns' workarounds
        groups.append({
            "verdict": verdict, "basis": basis, "basis_text": BASIS[basis].said if basis in BASIS else None,
            "reason": text, "source": _model_sources(members) if stopped else source,
            "targets": [m["target"] for m in members], "covers": describe_targets(members, scanned),
            "fixes": _model_remedies(members) if stopped else _fixes(members, findings),
        })
    groups.sort(key=lambda g: (SCAN_VERDICTS.index(g["verdict"]) if g["verdict"] in SCAN_VERDICTS else 99,
                               -len(g["targets"])))
    return groups


def _changes(targets: list[dict], by_key: dict[str, dict]) -> list[str]:
    """Per platform with more than one verdict across its versions: the verdict of each run of versions, in order."""
    platforms: dict[tuple[str, str], list[dict]] = {}
    for t in targets:
        if platform_of(t):
            platforms.setdefault((t["backend"], platform_of(t)), []).append(t)
    lines = []
    for (backend, platform), members in platforms.items():
        members.sort(key=lambda t: _version_key(t["version"]))
        if len({t["verdict"] for t in members}) < 2:
            continue
        runs: list[list[dict]] = []
        for t in members:
            if runs and runs[-1][-1]["verdict"] == t["verdict"] and _cause(runs[-1][-1], by_key) == _cause(t, by_key):
                runs[-1].append(t)
            else:
                runs.append([t])
        words = []
        for i, run in enumerate(runs):
            first, last = short_version(run[0]["version"]), short_version(run[-1]["version"])
            where = f"from {first}" if i and i == len(runs) - 1 else f"on {first}" if first == last else \
                f"on {first}-{last}"
            cause = _cause(run[0], by_key)
            words.append(f"{run[0]['verdict']} {where}{f' by {cause}' if cause else ''}")
        label = platform if backend == "tensorrt" else f"{BACKEND_NAMES.get(backend, backend)} {platform}"
        lines.append(f"{label}: {', '.join(words)}")
    return lines


def _cause(target: dict, by_key: dict[str, dict]) -> str:
    """The pattern that makes a failing verdict (``S1``), else ``""``."""
    if target["verdict"] not in SCAN_FAILING:
        return ""
    finding = _deciding_finding(target, by_key)
    return finding["pattern"] if finding else ""


def headline(data: dict) -> str:
    """The model, its quantization and the predicted engine, in one line."""
    model = data["model"]
    name = str(model["path"]).replace("\\", "/").rsplit("/", 1)[-1]
    quantization = {"explicit-qdq": "explicit INT8 (Q/DQ)", "implicit-int8": "no Q/DQ (implicit INT8, calibrator)"}
    text = f"{name}: {model['nodes']} nodes, opset {model['opset']}, {quantization.get(model['mode'], model['mode'])}"
    engine = data.get("engine")
    if engine and engine.get("is_predicted"):
        text += (f"; predicted engine (TensorRT's documented rules, not a build): "
                 f"{engine['summary']['text'].split(';')[0]}")
    elif engine:
        text += f"; predicted engine: none: {engine['reason'].split(':')[0]}"
    return text


def findings_line(findings: list[dict]) -> str:
    """The patterns found, each once: ``P3 identity-float (8 places: /layer1/layer1.0/Add, ...)``."""
    if not findings:
        return "found: no known INT8 failure pattern of the library in this model"
    words = []
    for f in findings:
        anchors = [o["anchor"] for o in f["occurrences"]]
        shown = ", ".join(anchors[:SHOWN_PLACES]) + (", ..." if len(anchors) > SHOWN_PLACES else "")
        places = f"{len(anchors)} place{'s' if len(anchors) != 1 else ''}"
        words.append(f"{f['pattern']} {f['variant'] or f['case']} ({places}: {shown})")
    return "found: " + "; ".join(words)


def answer(data: dict) -> dict[str, Any]:
    """The answer of a scan (its scan.json dict): headline, findings, groups, changes, unavailable targets."""
    targets = data["targets"]
    findings = data["findings"]
    by_key = {finding_key(f): f for f in findings}
    available = [t for t in targets if t["verdict"] != UNAVAILABLE]
    missing = [t for t in targets if t["verdict"] == UNAVAILABLE]
    return {
        "headline": headline(data),
        "findings": findings_line(findings),
        "groups": _groups(available, findings, targets),
        "changes": _changes(available, by_key),
        "cannot_exist": [t["target"] for t in missing],
        "failing": list(data.get("failing_targets") or []),
        "fail_on": data.get("fail_on"),
        "exit_code": data.get("exit_code"),
    }


def answer_lines(data: dict, width: int = 0) -> list[str]:
    """The answer as text lines (the default output of ``scan``)."""
    a = answer(data)
    lines, said = [a["headline"], a["findings"]], set()
    lines.extend(f"changes between versions on {change}" for change in a["changes"])
    for g in a["groups"]:
        basis = f", {g['basis_text']}" if g["basis_text"] else ""
        lines.append(f"{g['verdict'].upper()} on {g['covers']}{basis}")
        lines.append(f"  why: {g['reason']}")
        if g["basis"] == PARSER and g["source"]:
            lines.append(f"  documents: {g['source']}")
        for fix in g["fixes"]:
            lines.append(f"  fix: {fix.split(':', 1)[0]} (as above)" if fix in said else f"  fix: {fix}")
            said.add(fix)
    if any(g["fixes"] for g in a["groups"] if g["basis"] != PARSER):
        lines.append(f"to rewrite the model into these fixes and check it: trt-matrix scan {data['model']['path']} "
                     "--fix --targets ID ...")
    if a["cannot_exist"]:
        lines.append(f"cannot exist (not scanned, --verbose says why): {', '.join(a['cannot_exist'])}")
    return [_clip(line, width) for line in lines] if width else lines


def _clip(line: str, width: int) -> str:
    return line if len(line) <= width else line[:width - 3] + "..."

