"""The facts a file states, per kind, as plain data: TensorRT version and platform, GPU and compute capability, the
failure (category, node, known failure) and warnings of a log, the precision each engine layer ran in and which left
the requested precision, a calibration cache's header, a command line's tool and flags.

A fact the file does not state is None (``not stated``), never guessed; where a fact is read from somewhere other than
the obvious place, ``*_from`` says where.
"""
from __future__ import annotations

import re
import shlex
from pathlib import Path
from typing import Any

from harness.judgement import PRECISION_ORDER  # narrowest first: which of several asked to name
from harness.diagnosis.identify import Identified, command_lines, command_tool
from harness.tensorrt import classify
from harness.tensorrt.calibration_cache import CalibrationCache, headers_in_text
from harness.tensorrt.layers import EngineLayer, LayersRead, is_foreign_node
from harness.worker.record import fell_back

_PRECISION_FLAGS = {"--int8": "int8", "--best": "int8", "--fp8": "fp8", "--fp16": "fp16", "--bf16": "bf16"}
_PRECISION_WORDS = {"INT8": "int8", "FP8": "fp8", "FP16": "fp16", "BF16": "bf16", "FP32": "fp32"}
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
    classification = classify.classify_log(text)
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
                        for known, count in classify.known_forms(text, classification)],
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


def layer_facts(read: LayersRead, requested: str | None = None, requested_from: str | None = None) -> dict[str, Any]:
    """Layer counts by precision and the compute layers that left the requested precision (the narrowest the build
    asked for; when not known, the narrowest any compute layer ran in, and ``requested_from`` says so): those that
    fell back by the record's own rule (``harness.worker.record.fell_back``), wider or another format of the same
    width."""
    compute = [layer for layer in read.layers if not layer.is_boundary]
    by_precision: dict[str, int] = {}
    for layer in compute:
        by_precision[layer.precision] = by_precision.get(layer.precision, 0) + 1
    known = [layer.precision for layer in compute if layer.precision in PRECISION_ORDER]
    if requested is None and known:
        requested = min(known, key=PRECISION_ORDER.index)
        requested_from = "inferred: the narrowest precision a compute layer ran in"
    left = [_layer_dict(layer) for layer in compute if requested and fell_back(requested, layer.precision)]
    return {
        "read": read.summary(),
        "layers": len(read.layers),
        "boundaries": len(read.layers) - len(compute),
        "compute_by_precision": dict(sorted(by_precision.items())),
        "names_only": bool(read.layers) and all(layer.precision == "unknown" and layer.layer_type is None
                                                for layer in read.layers),
        "myelin_regions": sum(is_foreign_node(layer.name) for layer in read.layers),
        "requested_precision": requested,
        "requested_from": requested_from if requested else None,
        "left_requested_precision": left,
        "unknown_precision": sum(layer.precision == "unknown" for layer in compute),
    }


def engine_facts(item: Identified, metadata: dict[str, Any] | None) -> dict[str, Any]:
    """Facts of engine layers; ``metadata`` (the build metadata file beside them, if any) gives the precision asked."""
    requested = requested_from = None
    if metadata is not None:
        requested = _narrowest(metadata.get("build_options", {}).get("Precision", ""))
        requested_from = "the build metadata beside it" if requested else None
    facts = layer_facts(item.content, requested, requested_from)
    if item.content.source == "engine inspector JSON":
        facts["written_by"] = _inspector_version(item.text or "")
    return facts


def metadata_facts(data: dict[str, Any]) -> dict[str, Any]:
    """The model and the precision a build asked for, from trtexec's build options as TREx records them."""
    build, model = data.get("build_options", {}), data.get("model_options", {})
    return {"model": model.get("Model"), "format": model.get("Format"), "precision": build.get("Precision"),
            "requested_precision": _narrowest(build.get("Precision", "")), "build_options": build}


def cache_facts(cache: CalibrationCache) -> dict[str, Any]:
    return {"header": cache.header, "tensorrt_version": cache.version, "algorithm": cache.algorithm,
            "tensors": len(cache.scales)}


def command_facts(line: str) -> dict[str, Any]:
    """Tool, subcommand, model and flags of one trtexec or Polygraphy invocation."""
    arguments = shlex.split(line, posix=True)
    tool = command_tool(line) or "trtexec"
    start = next((i for i, a in enumerate(arguments) if Path(a).name.removesuffix(".exe") == tool), -1)
    rest = arguments[start + 1:]
    subcommand = rest[0] if tool == "polygraphy" and rest and not rest[0].startswith("-") else None
    flags = [a.split("=", 1)[0] for a in rest if a.startswith("--")]
    models = [a.split("=", 1)[1] for a in rest if a.startswith("--onnx=")]
    models += [a for a in rest if not a.startswith("-") and a.endswith(".onnx")]
    asked = [_PRECISION_FLAGS[flag] for flag in flags if flag in _PRECISION_FLAGS]
    requested = min(asked, key=PRECISION_ORDER.index) if asked else None
    return {"tool": tool, "subcommand": subcommand, "command": line, "flags": list(dict.fromkeys(flags)),
            "models": models, "requested_precision": requested}


def command_file_facts(item: Identified) -> dict[str, Any]:
    return {"commands": [command_facts(line) for line in command_lines(item.text or "")]}


def _requested_from_text(text: str) -> str | None:
    """The narrowest precision of trtexec's "Precision: FP32+INT8" line."""
    line = _PRECISION_LINE.search(text)
    return _narrowest(line.group("precisions")) if line else None


def _narrowest(precisions: str) -> str | None:
    found = [_PRECISION_WORDS[word] for word in re.split(r"[+ ,]+", precisions.upper()) if word in _PRECISION_WORDS]
    return min(found, key=PRECISION_ORDER.index) if found else None


def _inspector_version(text: str) -> str | None:
    """Which TensorRT wrote inspector JSON, as far as its fields tell (10.0 added Metadata, 11 split
    Format/Datatype)."""
    if '"DataType"' in text and '"Format/Datatype"' not in text:
        return "TensorRT 11 or later (tensors carry DataType, not Format/Datatype)"
    if '"Metadata"' in text:
        return "TensorRT 10.0 or later (layers carry Metadata)"
    return None


def _layer_dict(layer: EngineLayer) -> dict[str, Any]:
    return {"name": layer.name, "type": layer.layer_type, "precision": layer.precision,
            "onnx_nodes": list(layer.onnx_nodes)}
