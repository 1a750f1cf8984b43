"""Sentences the file kinds share (harness/diagnosis/kinds): the patterns a file names and their evidence per target,
the known failures that apply, engine layers, a TensorRT version, a GPU, a command line."""
from __future__ import annotations

from typing import Any

from harness import judgement as j
from harness.diagnosis.library import APPLYING_VERDICTS, CACHE_DECISIONS, STRENGTHS

SHOWN = 3  # layers, nodes, targets named before "and N more"


def library_sentences(f: Any) -> list[str]:
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
            sentences.append(case_sentence(case))
    if f.model_nodes:
        sentences.append(f"In the model: {names(f.model_nodes)}.")
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
                sentences.append(f"{cache['pattern']} on {tid}: {check['evidence']['reason']}.")
    targets_per_flag: dict[tuple[str, str], list[str]] = {}
    for flag in f.removed_flags:
        targets_per_flag.setdefault((flag["tool"], flag["flag"]), []).append(flag["target"])
    for (tool, name), targets in targets_per_flag.items():
        flag = next(entry for entry in f.removed_flags if (entry["tool"], entry["flag"]) == (tool, name))
        sentences.append(f"{tool} {name} is removed in TensorRT {flag['removed_in']} ({', '.join(targets)}): use "
                         f"{flag['instead']} [{flag['source']}].")
    return sentences


def case_sentence(case: dict[str, Any]) -> str:
    text = f"Case {case['case']} ({case['title']})"
    text += f": fixed (passes, observed or claimed) on {names(case['fixed_on'])}" if case["fixed_on"] else \
        ": no target known to pass"
    text += f"; fails or falls back on {names(case['fails_on'])}" if case["fails_on"] else ""
    chosen = [(tid, v) for tid, v in case["targets"].items() if v["chosen"] and v["verdict"] in APPLYING_VERDICTS]
    for tid, verdict in chosen:
        text += f"; {tid}: {verdict['reason']}"
        for workaround in verdict["workarounds"]:
            basis = j.BASIS[workaround["basis"]].said
            text += f"; workaround there: {workaround['variant']} ({workaround['verdict']}, {basis})"
    if case["remedy"]:
        text += f". Remedy: {case['remedy'].rstrip('.')}"
    return text + "."


def applies_sentence(f: Any) -> str:
    if not f.applies:
        return "No known failure applies to the chosen targets."
    return "A known failure applies to " + "; ".join(f"{tid} ({', '.join(reasons)})"
                                                     for tid, reasons in f.applies.items()) + "."


def layer_sentences(facts: dict[str, Any]) -> list[str]:
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


def version_sentence(facts: dict[str, Any]) -> str:
    if facts["tensorrt_version"] is None:
        return "TensorRT version not stated."
    return f"TensorRT {facts['tensorrt_version']} (from {facts['tensorrt_version_from']})."


def gpu_sentence(facts: dict[str, Any]) -> str:
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


def command_sentence(command: dict[str, Any]) -> str:
    tool = command["tool"] + (f" {command['subcommand']}" if command["subcommand"] else "")
    text = f"Command: {tool} with {' '.join(command['flags']) or 'no flags'}"
    if command["requested_precision"]:
        text += f" (asks for {command['requested_precision']})"
    return text + "."


def names(items: list[str]) -> str:
    more = f" and {len(items) - SHOWN} more" if len(items) > SHOWN else ""
    return ", ".join(items[:SHOWN]) + more


def short(text: str | None, limit: int) -> str:
    text = text or ""
    return text if len(text) <= limit else text[:limit - 3] + "..."
