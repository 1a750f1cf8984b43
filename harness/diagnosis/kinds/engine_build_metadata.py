"""Engine build metadata: trtexec's build options as TREx records them (NAME.build.metadata.json beside the engine's
layer JSON): the model and the precision the build asked for."""
from __future__ import annotations

import json
import re
from typing import Any

from harness.diagnosis.kinds import DAMAGED, READ, Around, Content, FileKind, Identified, KindFacts
from harness.judgement import PRECISION_ORDER  # narrowest first: which of several asked to name

NAME = "engine-build-metadata"
JSON_START = re.compile(r'^\s*(?:\{|\[\s*[{"\]])')  # "[10/14/2023-15:37:16] [E] ..." is a log line
_BUILD_METADATA_KEYS = ("model_options", "build_options")
_BUILD_METADATA_START = re.compile(r'^\s*\{\s*"(?:model_options|build_options)"')
_PRECISION_WORDS = {"INT8": "int8", "FP8": "fp8", "FP16": "fp16", "BF16": "bf16", "FP32": "fp32"}


def json_of(content: Content) -> Any:
    """The file's JSON (None when it is not readable JSON), parsed once for every kind that asks."""
    def parse():
        try:
            return json.loads(content.pasted)
        except ValueError:
            return None
    return content.once("json", parse)


def narrowest_precision(precisions: str) -> str | None:
    """The narrowest precision of "FP32+INT8" (trtexec's Precision line, TREx's build options)."""
    found = [_PRECISION_WORDS[word] for word in re.split(r"[+ ,]+", precisions.upper()) if word in _PRECISION_WORDS]
    return min(found, key=PRECISION_ORDER.index) if found else None


def metadata_facts(data: dict[str, Any]) -> dict[str, Any]:
    """The model and the precision a build asked for, from trtexec's build options as TREx records them."""
    build, model = data.get("build_options", {}), data.get("model_options", {})
    return {"model": model.get("Model"), "format": model.get("Format"), "precision": build.get("Precision"),
            "requested_precision": narrowest_precision(build.get("Precision", "")), "build_options": build}


class EngineBuildMetadata(FileKind):
    name = NAME
    text = "engine build metadata (trtexec's build options as TREx records them)"
    priority = 30

    def detect(self, content: Content) -> bool:
        if not JSON_START.match(content.pasted):
            return False
        data = json_of(content)
        return (isinstance(data, dict) and all(key in data for key in _BUILD_METADATA_KEYS)) or bool(
            _BUILD_METADATA_START.match(content.pasted))

    def read(self, content: Content) -> Identified:
        data, text = json_of(content), content.pasted
        if isinstance(data, dict) and all(key in data for key in _BUILD_METADATA_KEYS):
            return Identified(content.path, NAME, READ, text=text, content=data)
        missing = [key for key in _BUILD_METADATA_KEYS if not isinstance(data, dict) or key not in data]
        why = "it is not readable JSON (cut short?)" if data is None else f"it has no {' and no '.join(missing)}"
        return Identified(content.path, NAME, DAMAGED, f"it starts as engine build metadata, but {why}", text=text)

    def facts(self, item: Identified, around: Around) -> KindFacts:
        return KindFacts(metadata_facts(item.content))

    def sentences(self, f: Any) -> list[str]:
        facts = f.facts
        return [f"Model {facts['model']} ({facts['format']}), precision {facts['precision']} (the narrowest asked: "
                f"{facts['requested_precision']}); the engine's layers are in NAME.graph.json beside it."]


KIND = EngineBuildMetadata()
