"""Engine layers: engine inspector JSON, or a layer list pasted from a verbose build log with no failure in it; the
precision each layer ran in, and the compute layers that left the precision the build asked for."""
from __future__ import annotations

import re
from typing import Any

from harness.diagnosis.kinds import DAMAGED, NO_KIND, READ, Around, Content, FileKind, Identified, KindFacts
from harness.diagnosis.kinds.engine_build_metadata import JSON_START, json_of, narrowest_precision
from harness.diagnosis.kinds.engine_build_metadata import NAME as BUILD_METADATA
from harness.diagnosis.sentences import applies_sentence, layer_sentences, library_sentences
from harness.judgement import PRECISION_ORDER  # narrowest first: which of several asked to name
from harness.tensorrt import layers
from harness.tensorrt.layers import EngineLayer, LayersRead, is_foreign_node
from harness.worker.record import fell_back

NAME = "engine-layers"
_ENGINE_JSON_KEYS = re.compile(r'^\s*(?:\{\s*"(?:Layers|Bindings|Name|I/O Tensors)"|\[\s*[{"])')


def log_reading(content: Content) -> tuple[str | None, LayersRead | None, Any]:
    """Why the text is not a TensorRT log (None when it is one), the layers it lists (None when it lists none that
    read) and its classification: worked out once per file, for this kind and the log's."""
    from cases import library_signatures
    from harness.tensorrt import classify

    def read():
        signatures = library_signatures()
        problem = classify.not_a_log(content.pasted, signatures)
        if problem is not None:
            return problem, None, None
        try:
            listed = layers.read_log_layers(content.pasted)
        except ValueError:
            listed = None
        return problem, listed, classify.classify_log(content.pasted, signatures)
    return content.once("log", read)


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
        "devices": _device_counts(read.layers),
        "names_only": bool(read.layers) and all(layer.precision == "unknown" and layer.layer_type is None
                                                for layer in read.layers),
        "myelin_regions": sum(is_foreign_node(layer.name) for layer in read.layers),
        "requested_precision": requested,
        "requested_from": requested_from if requested else None,
        "left_requested_precision": left,
        "unknown_precision": sum(layer.precision == "unknown" for layer in compute),
    }


def _device_counts(layers: list[EngineLayer]) -> dict[str, int]:
    """Layers per device ("GPU", "DLA") where a placement list says; empty where nothing does."""
    counts: dict[str, int] = {}
    for layer in layers:
        if layer.device:
            counts[layer.device] = counts.get(layer.device, 0) + 1
    return dict(sorted(counts.items()))


def engine_facts(item: Identified, metadata: dict[str, Any] | None) -> dict[str, Any]:
    """Facts of engine layers; ``metadata`` (the build metadata file beside them, if any) gives the precision asked."""
    requested = requested_from = None
    if metadata is not None:
        requested = narrowest_precision(metadata.get("build_options", {}).get("Precision", ""))
        requested_from = "the build metadata beside it" if requested else None
    facts = layer_facts(item.content, requested, requested_from)
    if item.content.source == "engine inspector JSON":
        facts["written_by"] = _inspector_version(item.text or "")
    return facts


def metadata_beside(item: Identified, identified: list[Identified]) -> dict[str, Any] | None:
    """The build metadata TREx writes beside an engine's layer JSON (NAME.graph.json, NAME.build.metadata.json):
    among the files given, else on disk, when its content is build metadata."""
    from harness.diagnosis.identify import identify

    if not item.path.name.endswith(".graph.json"):
        return None
    sibling = item.path.with_name(item.path.name.removesuffix(".graph.json") + ".build.metadata.json")
    given = next((other for other in identified if other.path == sibling), None)
    other = given or (identify(sibling) if sibling.is_file() else None)
    return other.content if other is not None and other.kind == BUILD_METADATA else None


class EngineLayers(FileKind):
    name = NAME
    text = "engine layers (engine inspector JSON or a layer list)"
    priority = 40

    def detect(self, content: Content) -> bool:
        if JSON_START.match(content.pasted):
            return True  # the last kind of JSON: what is not engine JSON either is of no kind
        problem, listed, classification = log_reading(content)
        return (problem is None and listed is not None and classification.category is None
                and classification.known_failure is None and not any(classification.warnings.values()))

    def read(self, content: Content) -> Identified:
        path, text = content.path, content.pasted
        if not JSON_START.match(text):
            return Identified(path, NAME, READ, text=text, content=log_reading(content)[1])
        try:
            read = layers.read_layers_file(path)
        except ValueError as err:
            data = json_of(content)
            if _ENGINE_JSON_KEYS.match(text) or (isinstance(data, dict) and "Layers" in data):
                return Identified(path, NAME, DAMAGED, str(err), text=text)
            return Identified(path, None, NO_KIND, f"it is JSON, but not engine inspector JSON or build metadata "
                              f"({err})", text=text)
        return Identified(path, NAME, READ, text=text, content=read)

    def facts(self, item: Identified, around: Around) -> KindFacts:
        facts = engine_facts(item, metadata_beside(item, list(around.identified)))
        return KindFacts(facts, layer_names=[layer["name"] for layer in facts["left_requested_precision"]])

    def sentences(self, f: Any) -> list[str]:
        sentences = layer_sentences(f.facts)
        if f.facts.get("written_by"):
            sentences.append(f"Written by {f.facts['written_by']}.")
        return sentences + library_sentences(f) + [applies_sentence(f)]


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


KIND = EngineLayers()
