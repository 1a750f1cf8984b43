"""An ONNX model: read through the scanner's loader (checked, shape-inferred, external data found but not loaded); its
facts are the scan's model summary."""
from __future__ import annotations

import re
from typing import Any

from harness.diagnosis.kinds import DAMAGED, NO_KIND, READ, Around, Content, FileKind, Identified, KindFacts
from harness.diagnosis.sentences import applies_sentence, library_sentences

NAME = "onnx-model"
# ModelProto's first field is ir_version (field 1, varint): the tag byte 0x08, then a small version number.
_ONNX_START = re.compile(rb"^\x08[\x01-\x20]")
# What the loader says of a model that was whole once (against one it cannot read here, e.g. an opset too new).
_ONNX_DAMAGE_WORDS = ("truncated", "corrupt", "no graph", "external data")


class OnnxModel(FileKind):
    name = NAME
    text = "an ONNX model"
    priority = 10

    def detect(self, content: Content) -> bool:
        return bool(_ONNX_START.match(content.data))

    def read(self, content: Content) -> Identified:
        from harness.scan.loading import ModelInputError, load_model

        path = content.path
        try:
            loaded = load_model(path)
        except ModelInputError as err:
            problem = str(err).removeprefix(f"{path}: ")
            if "not an ONNX file" in problem:
                return Identified(path, None, NO_KIND, problem)
            damaged = any(word in problem for word in _ONNX_DAMAGE_WORDS)
            return Identified(path, NAME, DAMAGED if damaged else NO_KIND, problem)
        return Identified(path, NAME, READ, content=loaded)

    def facts(self, item: Identified, around: Around) -> KindFacts:
        from harness.scan.summary import model_summary

        return KindFacts(model_summary(item.content))

    def sentences(self, f: Any) -> list[str]:
        facts = f.facts
        return ([f"Opset {facts['opset']}, {facts['nodes']} nodes, {facts['mode_text']}."] + library_sentences(f)
                + [applies_sentence(f)])


KIND = OnnxModel()
