"""A TensorRT build log (or a fragment of one pasted from an issue thread): the TensorRT version, GPU and platform it
names, the failure and warnings the classifier reads (with the library's log signatures), the known forms, the
calibration caches and trtexec command it names, and the layers a verbose build lists. The kind of last resort: text
no other kind detects is read here, and what the classifier does not take for TensorRT output is of no kind."""
from __future__ import annotations

import re
from typing import Any

from cases import library_signatures
from harness.diagnosis.kinds import DAMAGED, NO_KIND, READ, Around, Content, FileKind, Identified, KindFacts
from harness.diagnosis.kinds.calibration_cache import cache_facts
from harness.diagnosis.kinds.command_line import command_facts
from harness.diagnosis.kinds.engine_build_metadata import narrowest_precision
from harness.diagnosis.kinds.engine_layers import layer_facts, log_reading
from harness.diagnosis.library import targets_of_build
from harness.diagnosis.sentences import (SHOWN, applies_sentence, command_sentence, gpu_sentence, layer_sentences,
                                         library_sentences, short, version_sentence)
from harness.tensorrt import classify
from harness.tensorrt.calibration_cache import headers_in_text
from harness.tensorrt.layers import LayersRead
from harness.tensorrt.release_facts import REMOVED_COMMAND_FLAGS, flag_removed

NAME = "tensorrt-log"
_BINARY_CHARACTERS = re.compile("[\x00-\x08\x0e-\x1a\x1c-\x1f\ufffd]")
# trtexec prints its command after "&&&& RUNNING|PASSED|FAILED TensorRT.trtexec [TensorRT v8502] # ".
_TRTEXEC_RUN_LINE = re.compile(r"&&&& \w+ TensorRT\.trtexec \[TensorRT v\d+\] # (?P<command>.+)$", re.MULTILINE)
_PRECISION_LINE = re.compile(r"\bPrecision: (?P<precisions>[A-Z0-9+]+)\s*$", re.MULTILINE)
_SELECTED_DEVICE = re.compile(r"Selected Device: (?P<gpu>[^\r\n]+?)\s*$|Device \d+: \"(?P<quoted>[^\"]+)\"",
                              re.MULTILINE)
_COMPUTE_CAPABILITY = re.compile(r"Compute Capability: (?P<major>\d+)\.(?P<minor>\d+)|\bsm_?(?P<sm>\d{2,3})\b",
                                 re.IGNORECASE)
# Compute capabilities of the Jetson modules (platforms.md: Orin sm_87; platforms-2026.md: Thor sm_110).
_JETSON_BY_CAPABILITY = {"8.7": "Jetson AGX Orin (sm_87)", "11.0": "Jetson Thor (sm_110)",
                         "7.2": "Jetson Xavier (sm_72)"}
_JETSON_WORDS = re.compile(r"\b(?:Jetson|Orin|Thor|Xavier|L4T|tegra|JetPack)\b", re.IGNORECASE)
_WINDOWS = re.compile(r"trtexec\.exe|\b[A-Z]:\\")
# A verbose build's fusion lines ("ConvEltwiseSumFusion: Fusing A with B"): the layers the failure may be inside.
_FUSION = re.compile(r"\b(?P<fusion>\w+Fusion): Fusing (?P<first>.+?) with (?P<second>.+?)\s*$", re.MULTILINE)
_FUSIONS_KEPT = 50
# The GPU as the tools around TensorRT print it: Ultralytics' "CUDA:0 (NVIDIA GeForce RTX 2080 Ti, 10822MiB)",
# mmdeploy's environment dump "GPU 0: Xavier".
_TOOL_DEVICE = re.compile(r"\bCUDA:\d+ \((?P<ultralytics>[^,()\n]+), \d+MiB\)|\bGPU \d+: (?P<listed>[^\n,]+?)\s*$",
                          re.MULTILINE)
# "JetPack 6.0", "Jetpack 4.6.1", "JetPack: 5.1.2", "L4T R36.4.0" / "R35 (release), REVISION: 4.1" (nv_tegra_release).
_JETPACK = re.compile(r"\bJet[Pp]ack[ :]*(?P<version>\d+(?:\.\d+){0,2})|\bL4T R?(?P<l4t>\d{2}\.\d+(?:\.\d+)?)"
                      r"|^# R(?P<major>\d{2}) \(release\), REVISION: (?P<revision>\d+\.\d+)", re.MULTILINE)
_COMMANDS_KEPT = 5
_MISSING_SCALE = re.compile(r"(?:Missing scale and zero-point|Missing dynamic range) for tensor (?P<tensor>.+?)"
                            r"(?:, expect fall back|,? ?$)", re.MULTILINE)


def log_facts(item: Identified) -> dict[str, Any]:
    """Version, platform, GPU, failure, warnings, known forms, caches, the trtexec command and the layers of a log."""
    text = item.text or ""
    signatures = library_signatures()
    classification = classify.classify_log(text, signatures)
    caches = headers_in_text(text)
    version, version_from = classify.version_from_log(text), "the log's banner or 'TensorRT version:' line"
    if version is None and caches:
        version, version_from = caches[0].version, f"the calibration cache header {caches[0].header} it names"
    commands = [command_facts(match.group("command")) for match in _TRTEXEC_RUN_LINE.finditer(text)][:1]
    commands += [command_facts(line) for line in classify.pasted_commands(text)]
    requested = _requested_from_text(text) or next((c["requested_precision"] for c in commands
                                                    if c["requested_precision"]), None)
    facts: dict[str, Any] = {
        "tensorrt_version": version,
        "tensorrt_version_from": version_from if version else None,
        **gpu_facts(text),
        "failure": classification.to_dict(),
        "warnings": {kind: count for kind, count in classification.warnings.items() if count},
        "fusions": [{"fusion": m.group("fusion"), "layers": [m.group("first"), m.group("second")]}
                    for m in _FUSION.finditer(text)][:_FUSIONS_KEPT],
        "missing_scale_tensors": list(dict.fromkeys(m.group("tensor") for m in _MISSING_SCALE.finditer(text))),
        "known_forms": [{"id": known.id, "pattern": known.pattern, "kind": known.kind, "lines": count,
                         "source": known.source, "note": known.note}
                        for known, count in classify.known_forms(text, signatures, classification)],
        "calibration_caches": [cache_facts(cache) for cache in caches],
        "commands": _distinct(commands)[:_COMMANDS_KEPT],
        "flags_removed_in_stated_version": _flags_removed_in(commands, version),
        "jetpack": _stated(_JETPACK, text),
        "dla_fallbacks": [{"layer": f.layer, "layer_type": f.layer_type, "reason": f.reason}
                          for f in classify.dla_fallbacks(text)],
        "requested_precision": requested,
        "layers": layer_facts(item.content, requested) if isinstance(item.content, LayersRead) else None,
    }
    return facts


def gpu_facts(text: str) -> dict[str, Any]:
    """GPU name, compute capability and platform where a log prints them; None where it does not."""
    device = _SELECTED_DEVICE.search(text) or _TOOL_DEVICE.search(text)
    gpu = next(name for name in device.groups() if name).strip() if device else None
    capability = _COMPUTE_CAPABILITY.search(text)
    if capability is None:
        cc = None
    elif capability.group("sm"):
        sm = capability.group("sm")
        cc = f"{int(sm[:-1])}.{sm[-1]}"
    else:
        cc = f"{int(capability.group('major'))}.{int(capability.group('minor'))}"
    platform = _JETSON_BY_CAPABILITY.get(cc or "")
    if platform is None and _JETSON_WORDS.search(text):
        platform = f"Jetson ({_JETSON_WORDS.search(text).group(0)} is named)"
    if platform is None and _WINDOWS.search(text):
        platform = "Windows"
    if platform is None and cc is not None:
        platform = f"a discrete GPU (sm_{cc.replace('.', '')}: x86_64 or an SBSA server)"
    return {"gpu": gpu, "compute_capability": cc, "platform": platform}


def _stated(pattern: re.Pattern, text: str) -> str | None:
    """JetPack "6.0", or "L4T 36.4.0" where only the L4T release is printed."""
    found = pattern.search(text)
    if found is None:
        return None
    if found.group("version"):
        return found.group("version")
    return f"L4T {found.group('l4t') or found.group('major') + '.' + found.group('revision')}"


def _distinct(commands: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``commands`` without repeats of the same tool and flags (trtexec's banner and the command pasted above it)."""
    seen, kept = set(), []
    for command in commands:
        key = (command["tool"], tuple(command["flags"]))
        if key not in seen:
            seen.add(key)
            kept.append(command)
    return kept


def _flags_removed_in(commands: list[dict[str, Any]], version: str | None) -> list[dict[str, Any]]:
    """The flags of ``commands`` that the TensorRT version the text states has removed: the command cannot have run
    there as pasted (or the version line belongs to another run)."""
    if version is None:
        return []
    found = []
    for command in commands:
        for removed in REMOVED_COMMAND_FLAGS:
            if removed.tool == command["tool"] and removed.flag in command["flags"] and flag_removed(removed, version):
                found.append({"tool": removed.tool, "flag": removed.flag, "removed_in": removed.removed_in,
                              "instead": removed.instead, "source": removed.source, "stated_version": version})
    return found


def _dla_fallbacks_sentence(fallbacks: list[dict[str, Any]]) -> str:
    """Which layers left the DLA for the GPU and why, as the log says (P20)."""
    shown = []
    for fallback in fallbacks[:SHOWN]:
        why = ": ".join(part for part in (fallback["layer_type"], fallback["reason"]) if part)
        shown.append(f"{fallback['layer']} ({why})" if why else fallback["layer"])
    more = f" and {len(fallbacks) - SHOWN} more" if len(fallbacks) > SHOWN else ""
    return (f"{len(fallbacks)} layer(s) left the DLA for the GPU (GPU fallback; P20): {', '.join(shown)}{more}. The "
            "engine builds split between DLA and GPU, each switch a copy; without --allowGPUFallback these layers "
            "fail the build.")


def _requested_from_text(text: str) -> str | None:
    """The narrowest precision of trtexec's "Precision: FP32+INT8" line."""
    line = _PRECISION_LINE.search(text)
    return narrowest_precision(line.group("precisions")) if line else None


class TensorRTLog(FileKind):
    name = NAME
    text = "a TensorRT build log"
    priority = 60
    facts_when_damaged = True  # a log mixed with binary data keeps the lines that remain readable

    def detect(self, content: Content) -> bool:
        return True  # the last kind: read() says when the text is no TensorRT output either

    def read(self, content: Content) -> Identified:
        path, text = content.path, content.pasted
        problem, listed, _ = log_reading(content)
        if problem is not None and "binary data" in problem:
            readable = _BINARY_CHARACTERS.sub("", text)
            if readable.strip() and classify.not_a_log(readable, library_signatures()) is None:
                dropped = len(text) - len(readable)
                return Identified(path, NAME, DAMAGED, f"TensorRT log lines mixed with binary data ({dropped} of its "
                                  f"{len(text)} characters are not text): the file was overwritten or cut while it "
                                  "was written; what remains was read", text=readable)
        if problem is not None:
            return Identified(path, None, NO_KIND, problem)
        return Identified(path, NAME, READ, text=text, content=listed)

    def facts(self, item: Identified, around: Around) -> KindFacts:
        facts = log_facts(item)
        facts["targets_of_this_build"] = targets_of_build(facts["tensorrt_version"], facts["platform"], around.matrix)
        node = facts["failure"]["node"]
        layer_names = [node] if node else []
        if facts["layers"]:
            layer_names += [layer["name"] for layer in facts["layers"]["left_requested_precision"]]
        return KindFacts(facts, layer_names=layer_names, tensors=facts["missing_scale_tensors"],
                         caches=[(cache, True) for cache in headers_in_text(item.text or "")],
                         commands=facts["commands"])

    def sentences(self, f: Any) -> list[str]:
        facts = f.facts
        sentences = [version_sentence(facts), gpu_sentence(facts)]
        if facts["targets_of_this_build"]:
            sentences.append(f"Targets of this build in the matrix: {', '.join(facts['targets_of_this_build'])}.")
        failure = facts["failure"]
        where = f" at node \"{failure['node']}\"" if failure["node"] else \
            f" (\"{short(failure['message'], 160)}\")" if failure["category"] else ""
        if failure["category"] is None and failure["known_failure"]:
            sentences.append(f"No failure shown in its text, but it carries the signature of known failure "
                             f"{failure['known_failure']['id']} (a tactic skipped for that reason): recognised, though "
                             "the text alone cannot prove the build failed.")
        elif failure["category"] is None:
            sentences.append("No failure in its text (that alone does not prove the build succeeded).")
        elif failure.get("stage") == "run":
            shown = "" if failure["failure_shown"] else (" (its message only: no line shows the run stopped, a "
                                                         "fragment that alone cannot prove it)")
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
            sentences.append(command_sentence(command))
        for flag in facts.get("flags_removed_in_stated_version", []):
            sentences.append(f"{flag['tool']} {flag['flag']} is removed in TensorRT {flag['removed_in']}, and this "
                             f"text states TensorRT {flag['stated_version']}: the command cannot run there as pasted; "
                             f"use {flag['instead']} [{flag['source']}].")
        if facts.get("dla_fallbacks"):
            sentences.append(_dla_fallbacks_sentence(facts["dla_fallbacks"]))
        if facts["fusions"]:
            last = facts["fusions"][-1]
            sentences.append(f"{len(facts['fusions'])} fusion line(s); the last: {last['fusion']} of "
                             f"\"{last['layers'][0]}\" with \"{last['layers'][1]}\".")
        for cache in facts["calibration_caches"]:
            sentences.append(f"It names the calibration cache {cache['header']} (TensorRT {cache['tensorrt_version']}, "
                             f"{cache['algorithm']}).")
        if facts["layers"]:
            sentences += layer_sentences(facts["layers"])
        sentences += library_sentences(f)
        if failure["category"] and not f.patterns:
            sentences.append("No pattern of the library has this signature: a candidate for a new case (a minimal "
                             "reproducer is what upstream asks for).")
        return sentences + [applies_sentence(f)]


KIND = TensorRTLog()
