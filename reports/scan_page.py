"""Render a scan (the JSON a ``python -m harness scan`` writes) as one self-contained HTML page in the look of the
matrix report: verdict per target, the model, and each finding with its occurrences, evidence and workarounds."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from harness import judgement as j
from reports.html import template_environment

TEMPLATE = "scan.html.j2"


def render_scan_page(scan: dict[str, Any], out_path: Path | str) -> Path:
    """Write the page of ``scan`` (the dict of :meth:`harness.scan.scanner.ScanResult.to_dict`) to ``out_path``."""
    env = template_environment()
    env.filters["json_text"] = lambda value: json.dumps(value, sort_keys=True, ensure_ascii=False)  # a variant's knobs
    env.globals.update(VERDICT_SYMBOLS=j.SCAN_VERDICT_SYMBOLS, VERDICT_MEANINGS=j.SCAN_VERDICT_MEANINGS,
                       VERDICT_COLOURS=j.SCAN_VERDICT_COLOURS, WORKAROUND_VERDICTS=j.SCAN_WORKAROUND_VERDICTS,
                       OCCURRENCE_ROWS=OCCURRENCE_ROWS)
    html = env.get_template(TEMPLATE).render(scan=scan, model=scan["model"],
                                             engine_view=engine_view(scan.get("engine"), _comparisons(scan)))
    out_path = Path(out_path)
    out_path.parent.mkdir(parents=True, exist_ok=True)
    out_path.write_text(html, encoding="utf-8")
    return out_path


ENGINE_ROWS = 2000  # predicted layers shown on the page; scan.json holds them all
OCCURRENCE_ROWS = 200  # places of one finding listed on the page; scan.json holds them all


def engine_view(engine: dict[str, Any] | None, comparisons: list[dict[str, Any]] | None = None,
                rows: int = ENGINE_ROWS) -> dict[str, Any] | None:
    """What the page's "Predicted engine" section shows of scan.json's ``engine`` (harness.scan.engine_prediction):
    one row per predicted layer, float compute layers of the Q/DQ model marked, the rulesets with their targets,
    and each comparison with an engine's observed layers that diagnose added."""
    if engine is None:
        return None
    if not engine.get("is_predicted"):
        return {"is_predicted": False, "reason": engine.get("reason"), "comparisons": _comparison_views(comparisons)}
    rules = engine.get("rules", {})
    targets_of: dict[int, list[dict[str, Any]]] = {}
    for target, entry in engine.get("targets", {}).items():
        targets_of.setdefault(entry["prediction"], []).append({"id": target, "note": entry.get("note")})
    groups = [{"rulesets": engine.get("rulesets", [engine["ruleset"]]), "targets": targets_of.get(0, []),
               "summary": engine["summary"]["text"], "differs": 0}]
    for position, other in enumerate(engine.get("other_predictions", []), start=1):
        groups.append({"rulesets": other["rulesets"], "targets": targets_of.get(position, []),
                       "summary": other["summary"]["text"], "differs": len(other["differs"])})
    shown = []
    for layer in engine["layers"][:rows]:
        rule = rules.get(layer["rule"], {})
        float_marked = layer["kind"] == "compute" and layer["float"]  # a float layer of a Q/DQ model
        shown.append({**layer, "float_marked": float_marked, "rule_link": rule.get("link"),
                      "rule_text": rule.get("text"), "rule_section": rule.get("section"),
                      "rule_remedy": rule.get("remedy")})
    return {"is_predicted": True, "summary_text": engine["summary"]["text"], "float_text": engine["float_text"],
            "groups": groups, "not_predicted": engine.get("not_predicted", {}), "rows": shown,
            "hidden": max(0, len(engine["layers"]) - rows), "float_count": sum(r["float_marked"] for r in shown),
            "comparisons": _comparison_views(comparisons)}


def _comparisons(scan: dict[str, Any]) -> list[dict[str, Any]]:
    """The predicted-beside-observed comparisons ``diagnose --model`` made, one per file of engine layers."""
    files = (scan.get("diagnosis") or {}).get("files", [])
    return [f["engine_comparison"] for f in files if f.get("engine_comparison", {}) and
            f["engine_comparison"].get("is_predicted")]


def _comparison_views(comparisons: list[dict[str, Any]] | None) -> list[dict[str, Any]]:
    views = []
    for comparison in comparisons or ():
        pairs = [{**p, "disagrees": p["precision_agrees"] is False or p["output_agrees"] is False}
                 for p in comparison["pairs"]]
        views.append({"file": comparison["file"], "text": comparison["text"], "pairs": pairs,
                      "disagree": any(p["disagrees"] for p in pairs)})
    return views
