"""A TensorRT INT8 calibration cache: its header (the TensorRT version and calibrator that wrote it) and its scales,
checked against each target's TensorRT."""
from __future__ import annotations

import re
from typing import Any

from harness.diagnosis.kinds import DAMAGED, READ, Around, Content, FileKind, Identified, KindFacts
from harness.diagnosis.library import CALIBRATION_CACHE
from harness.diagnosis.sentences import applies_sentence, library_sentences
from harness.tensorrt.calibration_cache import CalibrationCache, CalibrationCacheError, parse_cache

_CACHE_START = re.compile(r"^TRT-")


def cache_facts(cache: CalibrationCache) -> dict[str, Any]:
    return {"header": cache.header, "tensorrt_version": cache.version, "algorithm": cache.algorithm,
            "tensors": len(cache.scales)}


class CalibrationCacheKind(FileKind):
    name = CALIBRATION_CACHE
    text = "a TensorRT INT8 calibration cache"
    priority = 20

    def detect(self, content: Content) -> bool:
        return bool(_CACHE_START.match(content.text))

    def read(self, content: Content) -> Identified:
        try:
            cache = parse_cache(content.data, str(content.path))
        except CalibrationCacheError as err:
            return Identified(content.path, self.name, DAMAGED, str(err), text=content.text)
        return Identified(content.path, self.name, READ, text=content.text, content=cache)

    def facts(self, item: Identified, around: Around) -> KindFacts:
        return KindFacts(cache_facts(item.content), caches=[(item.content, False)])

    def sentences(self, f: Any) -> list[str]:
        facts = f.facts
        return ([f"Header {facts['header']}: written by TensorRT {facts['tensorrt_version']} with the "
                 f"{facts['algorithm']} algorithm, {facts['tensors']} tensor scale(s)."] + library_sentences(f)
                + [applies_sentence(f)])


KIND = CalibrationCacheKind()
