"""A diagnosis as text, one paragraph per file: what the file is, the facts it states, the patterns it names and
what is known of them per target, and the known failures that apply to the chosen targets."""
from __future__ import annotations

import textwrap
from typing import Any

from harness.diagnosis.diagnose import Diagnosis, FileDiagnosis
from harness.diagnosis.library import APPLYING_VERDICTS, CACHE_DECISIONS, STRENGTHS
from harness import judgement as j

WIDTH = 116
SHOWN = 3  # layers, nodes, targets named before "and N more"


def diagnosis_text(diagnosis: Diagnosis) -> str:
    """One wrapped paragraph per file, then the model's line and the problems, if any."""
    paragraphs = [textwrap.fill(" ".join(file_sentences(f)), WIDTH, subsequent_indent="  ", break_on_hyphens=False,
                                break_long_words=False) for f in diagnosis.files]
    if diagnosis.model is not None:
        model = diagnosis.model
        paragraphs.append(f"model: {model['path']} ({model['nodes']} nodes) scanned on {', '.join(diagnosis.targets)}; "
                          f"findings: {', '.join(model['findings']) or 'none'}")
    paragraphs += [f"warning: {problem}" for problem in diagnosis.problems]
    return "\n\n".join(paragraphs)


def diagnosis_headline(diagnosis: Diagnosis) -> str:
    """The answer first, one line per file read: a build log's failure and what the library knows of its pattern
    ("failed: no-implementation at node ...: S1, known to pass from 9.2"), or an engine's precisions ("built: 21 of
    24 compute layers INT8; 3 fell back: ...")."""
    return "\n".join(_file_headline(f) for f in diagnosis.files)


def _file_headline(f: FileDiagnosis) -> str:
    if f.status != "read":
        return f"{f.path.name}: {'damaged' if f.status == 'damaged' else 'not read'}: {f.problem}"
    facts, applies = f.facts, "; ".join(f"{tid}: {', '.join(r)}" for tid, r in list(f.applies.items())[:SHOWN])
    applies += f" and {len(f.applies) - SHOWN} more target(s)" if len(f.applies) > SHOWN else ""
    if f.kind == "tensorrt-log" and facts["failure"]["category"]:
        failure = facts["failure"]
        where = f" at node {_short(failure['node'], 100)}" if failure["node"] else ""
        known = "; ".join(f"{p['pattern']}, {_fixed_from(p)}" for p in f.patterns) or \
            "no pattern of the library has this signature"
        word = "failed" if failure["failure_shown"] else "failure message (no line shows the build stopped)"
        return f"{f.path.name}: {word}: {failure['category']}{where}: {known}" + \
            (f"; applies to {applies}" if applies else "")
    if f.kind in ("tensorrt-log", "engine-layers") and facts.get("compute_by_precision"):
        counts = facts["compute_by_precision"]
        total, asked = sum(counts.values()), facts.get("requested_precision")
        if asked and not facts["names_only"]:
            left = facts["left_requested_precision"]
            shown = ", ".join(f"{layer['name']} ({layer['precision']})" for layer in left[:SHOWN])
            more = f" and {len(left) - SHOWN} more" if len(left) > SHOWN else ""
            fell = f"; {len(left)} fell back: {shown}{more}" if left else ""
            return (f"{f.path.name}: built: {total - len(left)} of {total} compute layers "
                    f"{asked.upper()}{fell}" + (f"; known failures: {applies}" if applies else ""))
        text = ", ".join(f"{count} {precision.upper()}" for precision, count in counts.items())
        return f"{f.path.name}: built: {text} compute layers (no requested precision known)"
    return f"{f.path.name}: {f.kind_text}: " + (f"known failures: {applies}" if applies else
                                               "no known failure applies to the chosen targets")


def _fixed_from(pattern: dict[str, Any]) -> str:
    """Where a pattern's cases are known to pass: ``known to pass from 9.2 (trt92-x86, ...)`` or that none is."""
    fixed = [t for case in pattern["cases"] for t in case["fixed_on"]]
    if not fixed:
        return "no target known to pass"
    from harness.matrix import load_matrix  # the versions of the targets named

    matrix = load_matrix()
    versions = sorted({matrix[t].version for t in fixed if t in matrix and matrix[t].version},
                      key=lambda v: tuple(int(p) if p.isdigit() else 0 for p in v.split(".")))
    since = f" from {'.'.join(versions[0].split('.')[:2])}" if versions else ""
    return f"known to pass{since} ({_names(list(dict.fromkeys(fixed)))})"


def diagnosis_data(diagnosis: Diagnosis, exit_code: int) -> dict[str, Any]:
    """The diagnosis as JSON-ready data, each file with its paragraph (``text``), and the command's exit status."""
    data = {**diagnosis.to_dict(), "exit_code": exit_code}
    for entry, f in zip(data["files"], diagnosis.files):
        entry["text"] = " ".join(file_sentences(f))
    return data


def file_sentences(f: FileDiagnosis) -> list[str]:
    if f.status == "no-kind" and f.kind:  # e.g. a model whose opset the installed onnx does not know
        return [f"{f.path}: {f.kind_text} that cannot be read here ({f.problem})."]
    if f.status == "no-kind":
        return [f"{f.path}: of no kind this command reads ({f.problem})."]
    head = f"{f.path}: {f.kind_text}"
    if f.status == "damaged":
        return [f"{head}, DAMAGED: {f.problem}."] + (_KIND_SENTENCES[f.kind](f) if f.facts else [])
    comparison = [f.engine_comparison["text"]] if f.engine_comparison else []
    return [f"{head}."] + _KIND_SENTENCES[f.kind](f) + comparison


def _log(f: FileDiagnosis) -> list[str]:
    facts = f.facts
    sentences = [_version(facts), _gpu(facts)]
    if facts["targets_of_this_build"]:
        sentences.append(f"Targets of this build in the matrix: {', '.join(facts['targets_of_this_build'])}.")
    failure = facts["failure"]
    where = f" at node \"{failure['node']}\"" if failure["node"] else \
        f" (\"{_short(failure['message'], 160)}\")" if failure["category"] else ""
    if failure["category"] is None and failure["known_failure"]:
        sentences.append(f"No failure shown in its text, but it carries the signature of known failure "
                         f"{failure['known_failure']['id']} (a tactic skipped for that reason): recognised, though "
                         "the text alone cannot prove the build failed.")
    elif failure["category"] is None:
        sentences.append("No failure in its text (that alone does not prove the build succeeded).")
    elif failure.get("stage") == "run":
        shown = "" if failure["failure_shown"] else (" (its message only: no line shows the run stopped, a fragment "
                                                     "that alone cannot prove it)")
        sentences.append(f"The engine failed at run time, not at build (loading it or running inference): "
                         f"{failure['category']}{where}{shown}.")
    elif failure["failure_shown"]:
        sentences.append(f"The build failed: {failure['category']}{where}.")
    else:
        sentences.append(f"The message of a {failure['category']} failure{where}; no line shows that the build "
                         "stopped (no error tag, no build failure tail): a fragment that alone cannot prove the build "
                         "failed.")
    if facts["warnings"]:
        counts = ", ".join(f"{kind} x{count}" for kind, count in facts["warnings"].items())
        sentences.append(f"Warnings: {counts}.")
    for command in facts["commands"]:
        sentences.append(_command(command))
    for flag in facts.get("flags_removed_in_stated_version", []):
        sentences.append(f"{flag['tool']} {flag['flag']} is removed in TensorRT {flag['removed_in']}, and this text "
                         f"states TensorRT {flag['stated_version']}: the command cannot run there as pasted; use "
                         f"{flag['instead']} [{flag['source']}].")
    if facts.get("dla_fallbacks"):
        sentences.append(_dla_fallbacks(facts["dla_fallbacks"]))
    if facts["fusions"]:
        last = facts["fusions"][-1]
        sentences.append(f"{len(facts['fusions'])} fusion line(s); the last: {last['fusion']} of "
                         f"\"{last['layers'][0]}\" with \"{last['layers'][1]}\".")
    for cache in facts["calibration_caches"]:
        sentences.append(f"It names the calibration cache {cache['header']} (TensorRT {cache['tensorrt_version']}, "
                         f"{cache['algorithm']}).")
    if facts["layers"]:
        sentences += _layers(facts["layers"])
    sentences += _library(f)
    if failure["category"] and not f.patterns:
        sentences.append("No pattern of the library has this signature: a candidate for a new case (a minimal "
                         "reproducer is what upstream asks for).")
    return sentences + [_applies(f)]


def _engine(f: FileDiagnosis) -> list[str]:
    sentences = _layers(f.facts)
    if f.facts.get("written_by"):
        sentences.append(f"Written by {f.facts['written_by']}.")
    return sentences + _library(f) + [_applies(f)]


def _metadata(f: FileDiagnosis) -> list[str]:
    facts = f.facts
    return [f"Model {facts['model']} ({facts['format']}), precision {facts['precision']} (the narrowest asked: "
            f"{facts['requested_precision']}); the engine's layers are in NAME.graph.json beside it."]


def _cache(f: FileDiagnosis) -> list[str]:
    facts = f.facts
    return [f"Header {facts['header']}: written by TensorRT {facts['tensorrt_version']} with the {facts['algorithm']} "
            f"algorithm, {facts['tensors']} tensor scale(s)."] + _library(f) + [_applies(f)]


def _command_file(f: FileDiagnosis) -> list[str]:
    return [_command(command) for command in f.facts["commands"]] + _library(f) + [_applies(f)]


def _model(f: FileDiagnosis) -> list[str]:
    facts = f.facts
    return [f"Opset {facts['opset']}, {facts['nodes']} nodes, {facts['mode_text']}."] + _library(f) + [_applies(f)]


def _library(f: FileDiagnosis) -> list[str]:
    sentences = []
    for pattern in f.patterns:
        signature = pattern["signatures"][0]
        text = (f"Pattern {pattern['pattern']}: {STRENGTHS[signature['strength']]} ({signature['signature']}, "
                f"{signature['source']})")
        if pattern["confirmed_by_model"] is True:
            text += "; the model confirms it"
        elif pattern["confirmed_by_model"] is False:
            text += "; the model does not confirm it (no finding of this pattern holds the nodes this file names)"
        elif not pattern["decisive"] and signature["strength"] == "known-message":
            text += f"; recognised, not applied to the targets: {signature['note']}"
        elif not pattern["decisive"]:
            text += f"; not decided without the model: {signature['note']}"
        sentences.append(text + ".")
        for case in pattern["cases"]:
            sentences.append(_case(case))
    if f.model_nodes:
        sentences.append(f"In the model: {_names(f.model_nodes)}.")
    elif f.names_checked:
        sentences.append("The model has none of the nodes this file names: is it the model of this build?")
    for joined in f.joined:
        verdicts = ", ".join(f"{tid} {v['verdict']}" for tid, v in joined["targets"].items())
        more = f" and {joined['places'] - 1} more place(s)" if joined["places"] > 1 else ""
        sentences.append(f"Scan finding {joined['finding']} ({joined['pattern']}) at {joined['anchor']}{more}: "
                         f"{verdicts}.")
    for cache in f.caches:
        decisions = ", ".join(f"{tid} {c['decision']}" for tid, c in cache["targets"].items())
        whose = " (written by this build)" if cache["written_by_this_build"] else ""
        sentences.append(f"Cache {cache['header']}{whose} on each target: {decisions}.")
        for decision in dict.fromkeys(c["decision"] for c in cache["targets"].values()):
            sentences.append(f"{decision}: {CACHE_DECISIONS[decision]}.")
        for tid, check in cache["targets"].items():
            if check.get("evidence") and check["evidence"]["verdict"] != j.UNVERIFIED:
                sentences.append(f"P11 on {tid}: {check['evidence']['reason']}.")
    targets_per_flag: dict[tuple[str, str], list[str]] = {}
    for flag in f.removed_flags:
        targets_per_flag.setdefault((flag["tool"], flag["flag"]), []).append(flag["target"])
    for (tool, name), targets in targets_per_flag.items():
        flag = next(entry for entry in f.removed_flags if (entry["tool"], entry["flag"]) == (tool, name))
        sentences.append(f"{tool} {name} is removed in TensorRT {flag['removed_in']} ({', '.join(targets)}): use "
                         f"{flag['instead']} [{flag['source']}].")
    return sentences


def _dla_fallbacks(fallbacks: list[dict[str, Any]]) -> str:
    """Which layers left the DLA for the GPU and why, as the log says (P20)."""
    shown = []
    for fallback in fallbacks[:SHOWN]:
        why = ": ".join(part for part in (fallback["layer_type"], fallback["reason"]) if part)
        shown.append(f"{fallback['layer']} ({why})" if why else fallback["layer"])
    more = f" and {len(fallbacks) - SHOWN} more" if len(fallbacks) > SHOWN else ""
    return (f"{len(fallbacks)} layer(s) left the DLA for the GPU (GPU fallback; P20): {', '.join(shown)}{more}. The "
            "engine builds split between DLA and GPU, each switch a copy; without --allowGPUFallback these layers "
            "fail the build.")


def _case(case: dict[str, Any]) -> str:
    text = f"Case {case['case']} ({case['title']})"
    text += f": fixed (passes, observed or claimed) on {_names(case['fixed_on'])}" if case["fixed_on"] else \
        ": no target known to pass"
    text += f"; fails or falls back on {_names(case['fails_on'])}" if case["fails_on"] else ""
    chosen = [(tid, v) for tid, v in case["targets"].items() if v["chosen"] and v["verdict"] in APPLYING_VERDICTS]
    for tid, verdict in chosen:
        text += f"; {tid}: {verdict['reason']}"
        for workaround in verdict["workarounds"]:
            basis = j.BASIS[workaround["basis"]].said
            text += f"; workaround there: {workaround['variant']} ({workaround['verdict']}, {basis})"
    if case["remedy"]:
        text += f". Remedy: {case['remedy'].rstrip('.')}"
    return text + "."


def _applies(f: FileDiagnosis) -> str:
    if not f.applies:
        return "No known failure applies to the chosen targets."
    return "A known failure applies to " + "; ".join(f"{tid} ({', '.join(reasons)})"
                                                     for tid, reasons in f.applies.items()) + "."


def _layers(facts: dict[str, Any]) -> list[str]:
    counts = ", ".join(f"{count} {precision}" for precision, count in facts["compute_by_precision"].items())
    sentences = [f"{facts['read']}: {counts or 'no'} compute layer(s), {facts['boundaries']} boundary layer(s)"
                 + (f", {facts['myelin_regions']} Myelin region(s)" if facts["myelin_regions"] else "") + "."]
    if facts.get("devices"):
        sentences.append("Placement: " + ", ".join(f"{count} on {device}" for device, count in facts["devices"].items())
                         + ".")
    if facts["names_only"]:
        sentences.append("Layer names only: no layer's precision can be read (build with "
                         "--profilingVerbosity=detailed / ProfilingVerbosity.DETAILED).")
    elif facts["requested_precision"]:
        left = facts["left_requested_precision"]
        shown = ", ".join(f"{layer['name']} ({layer['precision']})" for layer in left[:SHOWN])
        more = f" and {len(left) - SHOWN} more" if len(left) > SHOWN else ""
        sentences.append(f"Requested precision {facts['requested_precision']} ({facts['requested_from']}): "
                         + (f"{len(left)} compute layer(s) left it: {shown}{more}." if left else "every compute "
                            "layer with a known precision ran in it."))
    return sentences


def _version(facts: dict[str, Any]) -> str:
    if facts["tensorrt_version"] is None:
        return "TensorRT version not stated."
    return f"TensorRT {facts['tensorrt_version']} (from {facts['tensorrt_version_from']})."


def _gpu(facts: dict[str, Any]) -> str:
    parts = [f"GPU {facts['gpu']}" if facts["gpu"] else None,
             f"compute capability {facts['compute_capability']}" if facts["compute_capability"] else None,
             f"platform {facts['platform']}" if facts["platform"] else None]
    stated = [part for part in parts if part]
    if facts.get("jetpack"):
        jetpack = facts["jetpack"]
        stated.append(jetpack if jetpack.startswith("L4T") else f"JetPack {jetpack}")
    if not stated:
        return "GPU and platform not stated."
    text = ", ".join(stated)
    return text[0].upper() + text[1:] + "."


def _command(command: dict[str, Any]) -> str:
    tool = command["tool"] + (f" {command['subcommand']}" if command["subcommand"] else "")
    text = f"Command: {tool} with {' '.join(command['flags']) or 'no flags'}"
    if command["requested_precision"]:
        text += f" (asks for {command['requested_precision']})"
    return text + "."


def _names(names: list[str]) -> str:
    more = f" and {len(names) - SHOWN} more" if len(names) > SHOWN else ""
    return ", ".join(names[:SHOWN]) + more


def _short(text: str | None, limit: int) -> str:
    text = text or ""
    return text if len(text) <= limit else text[:limit - 3] + "..."


_KIND_SENTENCES = {"tensorrt-log": _log, "engine-layers": _engine, "engine-build-metadata": _metadata,
                   "calibration-cache": _cache, "command-line": _command_file, "onnx-model": _model}
