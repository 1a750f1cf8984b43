"""A diagnosis as text, one paragraph per file: what the file is, then what its kind says of it (the facts it states,
the patterns it names and what is known of them per target, the known failures that apply to the chosen targets:
``FileKind.sentences`` of harness/diagnosis/kinds)."""
from __future__ import annotations

import textwrap
from typing import Any

from harness.diagnosis.diagnose import Diagnosis, FileDiagnosis
from harness.diagnosis.kinds import KINDS
from harness.diagnosis.sentences import SHOWN, names, short

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
        where = f" at node {short(failure['node'], 100)}" if failure["node"] else ""
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
    return f"known to pass{since} ({names(list(dict.fromkeys(fixed)))})"


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
