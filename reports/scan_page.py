"""Render a scan (the JSON a ``trt-matrix scan`` writes) as one self-contained HTML page in the look of the matrix
report. The answer first (the same as the command's text: harness.scan.answer), then a findings x targets grid
(targets grouped by platform, one coloured cell each, linked to its evidence), each finding's evidence once (its
targets grouped by what they share), the predicted engine (per-layer table collapsed), the verdict per target
(collapsed) and the model."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from markupsafe import Markup

from harness import judgement as j
from harness.scan.answer import answer, describe_targets, finding_key, platform_of, short_version, version_free, \
    with_versions
from reports.templating import page_environment

TEMPLATE, ENGINE_TEMPLATE, PLACES_TEMPLATE = "scan.html.j2", "scan_engine.html.j2", "scan_places.html.j2"


def scan_page_template() -> Any:
    """The page's Jinja template in its environment, loaded (from Jinja's cache of compiled templates, or compiled):
    ready for :func:`render_scan_page`."""
    env = page_environment()
    env.filters["json_text"] = lambda value: json.dumps(value, sort_keys=True, ensure_ascii=False)  # a variant's knobs
    env.globals.update(VERDICT_SYMBOLS=j.SCAN_VERDICT_SYMBOLS, VERDICT_MEANINGS=j.SCAN_VERDICT_MEANINGS,
                       VERDICT_COLOURS=j.SCAN_VERDICT_COLOURS, WORKAROUND_VERDICTS=j.SCAN_WORKAROUND_VERDICTS,
                       OCCURRENCE_ROWS=OCCURRENCE_ROWS)
    return env.get_template(TEMPLATE)


def render_scan_page(scan: dict[str, Any], out_path: Path | str, template: Any = None,
                     engine_html: str | None = None, places_html: list[str] | None = None) -> Path:
    """Write the page of ``scan`` (the dict of :meth:`harness.scan.scanner.ScanResult.to_dict`) to ``out_path``;
    ``template``: :func:`scan_page_template`'s, loaded beforehand (None: loaded now); ``engine_html``: the engine's
    section of ``scan["engine"]`` rendered beforehand (:func:`render_engine_section`; not taken where the scan holds
    diagnose's comparisons, which the section shows too); ``places_html``: each finding's places rendered beforehand
    (:func:`render_places`)."""
    template = template or scan_page_template()
    comparisons = _comparisons(scan)
    if engine_html is None or comparisons:
        engine_html = render_engine_section(template, scan.get("engine"), comparisons)
    html = template.render(scan=scan, model=scan["model"], answer=answer(scan), grid=grid_view(scan),
                           evidence=evidence_view(scan), engine_html=engine_html, places_html=places_html)
    out_path = Path(out_path)
    out_path.parent.mkdir(parents=True, exist_ok=True)
    out_path.write_text(html, encoding="utf-8")
    return out_path


def render_engine_section(template: Any, engine: dict[str, Any] | None,
                          comparisons: list[dict[str, Any]] | None = None) -> str:
    """The page's "Predicted engine" section of ``engine`` (scan.json's ``engine``) and diagnose's ``comparisons``,
    rendered with ``template``'s environment; "" where there is nothing to show."""
    view = engine_view(engine, comparisons or [])
    if not view:
        return ""
    return Markup(template.environment.get_template(ENGINE_TEMPLATE).render(ev=view))


def render_places(template: Any, places: list[list[dict[str, Any]]], run_targets: list[str]) -> list[str]:
    """The page's table of each finding's places (``places``: per finding, scan.json's ``occurrences``; with a
    reproducer column where ``run_targets`` ran them), rendered with ``template``'s environment."""
    macro = template.environment.get_template(PLACES_TEMPLATE).module.places
    return [macro(occurrences, run_targets) for occurrences in places]


def grid_view(scan: dict[str, Any]) -> dict[str, Any]:
    """The findings x targets grid: the available targets as columns grouped by platform (targets that name no
    version first), the model's verdict as the first row, then one row per finding; a cell is the finding's verdict
    on the target with its reason (hover) and the anchor of its evidence (link)."""
    targets = [t for t in scan["targets"] if t["available"]]
    order = {t["target"]: i for i, t in enumerate(targets)}
    platforms: dict[str, list[dict[str, Any]]] = {}
    for t in sorted(targets, key=lambda t: (platform_of(t) != "", t["backend"], platform_of(t), _version_key(t),
                                            order[t["target"]])):
        platforms.setdefault(platform_of(t) or "as installed", []).append(t)
    columns = [{"target": t["target"], "title": t["title"],
                "label": short_version(t["version"]) if platform_of(t) else t["target"]}
               for members in platforms.values() for t in members]
    rows = [{"name": "the model", "pattern": "", "anchor": "targets",
             "cells": [_cell(t["verdict"], t["basis"], t["reason"], "targets") for t in
                       (next(x for x in targets if x["target"] == c["target"]) for c in columns)]}]
    for i, f in enumerate(scan["findings"]):
        cells = []
        for c in columns:
            v = f["verdicts"].get(c["target"])
            cells.append(_cell(v["verdict"], v["basis"], v["reason"], f"finding-{i}") if v else None)
        rows.append({"name": finding_key(f), "pattern": f["pattern"], "anchor": f"finding-{i}", "cells": cells})
    return {"platforms": [{"name": name, "span": len(members)} for name, members in platforms.items()],
            "columns": columns, "rows": rows}


def _cell(verdict: str, basis: str | None, reason: str, anchor: str) -> dict[str, Any]:
    return {"verdict": verdict, "basis": basis, "reason": reason, "anchor": anchor,
            "hatched": basis in j.HATCHED}


def _version_key(target: dict[str, Any]) -> tuple:
    return tuple(int(p) if p.isdigit() else 0 for p in str(target.get("version") or "0").split("."))


def evidence_view(scan: dict[str, Any]) -> list[list[dict[str, Any]]]:
    """Per finding, its verdicts grouped by what their targets share (verdict, basis, reason, workarounds): each
    piece of evidence once, with the targets it covers written compactly."""
    views = []
    for f in scan["findings"]:
        grouped: dict[tuple, list[tuple[dict, dict]]] = {}
        by_id = {t["target"]: t for t in scan["targets"]}
        for target, v in f["verdicts"].items():
            t = by_id.get(target, {"target": target, "version": None})
            workarounds = tuple((w["variant"], w["verdict"]) for w in v["workarounds"])
            key = (v["verdict"], v["basis"], version_free(v["reason"], t.get("version")), workarounds)
            grouped.setdefault(key, []).append((t, v))
        groups = []
        for (verdict, basis, reason, _), members in grouped.items():
            ts = [t for t, _ in members]
            described = ts if all("backend" in t for t in ts) else []
            groups.append({"verdict": verdict, "basis": basis, "targets": [t["target"] for t in ts],
                           "covers": describe_targets(described, scan["targets"]) if described else
                           ", ".join(t["target"] for t in ts),
                           "reason": with_versions(reason, {t.get("version") for t in ts}),
                           "evidence": members[0][1]["evidence"], "workarounds": members[0][1]["workarounds"]})
        groups.sort(key=lambda g: j.SCAN_VERDICTS.index(g["verdict"]))
        views.append(groups)
    return views


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
