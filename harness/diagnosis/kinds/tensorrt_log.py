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
from harness.diagnosis.sentences import (applies_sentence, command_sentence, gpu_sentence, layer_sentences,
                                         library_sentences, short, version_sentence)
from harness.tensorrt import classify
from harness.tensorrt.calibration_cache import headers_in_text
from harness.tensorrt.layers import LayersRead

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
    commands = [command_facts(match.group("command")) for match in _TRTEXEC_RUN_LINE.finditer(text)]
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
        "commands": commands[:1],
        "requested_precision": requested,
        "layers": layer_facts(item.content, requested) if isinstance(item.content, LayersRead) else None,
    }
    return facts


def gpu_facts(text: str) -> dict[str, Any]:
    """GPU name, compute capability and platform where a log prints them; None where it does not."""
    device = _SELECTED_DEVICE.search(text)
    gpu = (device.group("gpu") or device.group("quoted")).strip() if device else None
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
