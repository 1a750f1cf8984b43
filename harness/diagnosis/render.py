"""A diagnosis as text, one paragraph per file: what the file is, then what its kind says of it (the facts it states,
the patterns it names and what is known of them per target, the known failures that apply to the chosen targets:
``FileKind.sentences`` of harness/diagnosis/kinds)."""
from __future__ import annotations

import textwrap
from typing import Any

from harness.diagnosis.diagnose import Diagnosis, FileDiagnosis
from harness.diagnosis.kinds import KINDS

WIDTH = 116


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
        return [f"{head}, DAMAGED: {f.problem}."] + (KINDS[f.kind].sentences(f) if f.facts else [])
    comparison = [f.engine_comparison["text"]] if f.engine_comparison else []
    return [f"{head}."] + KINDS[f.kind].sentences(f) + comparison
