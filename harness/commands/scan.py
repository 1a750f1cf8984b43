"""``python -m harness scan MODEL.onnx``: will the model build in INT8 on each target, and why."""
from __future__ import annotations

import argparse
import json
import os
import sys
import textwrap
from pathlib import Path
from typing import Any

from harness.commands.options import (
    EXIT_BROKEN,
    EXIT_OK,
    EXIT_REGRESSION,
    EXIT_USAGE,
    CommandError,
    output_directory,
    positive_int,
    positive_seconds,
)
from harness.matrix import default_target, load_matrix
from harness.store.judgement import SCAN_FAILING, SCAN_GOOD, SCAN_VERDICT_MEANINGS

EXIT_FAILS = EXIT_REGRESSION  # the gate fails: some chosen target is predicted or observed to fail (see --fail-on)
JSON_NAME, HTML_NAME = "scan.json", "scan.html"
SHOWN_NODES = 3
VERDICTS_HELP = "\n".join(textwrap.fill(meaning, 116, initial_indent=f"  {verdict:<12} ", subsequent_indent=" " * 15)
                          for verdict, meaning in SCAN_VERDICT_MEANINGS.items())

DESCRIPTION = f"""\
Find every known INT8 failure pattern of the case library in MODEL (each case's matcher, reported with your own
node names), then say per target of matrix.yaml whether the model is expected to build in INT8, and why:

{VERDICTS_HELP}

Evidence: records you point --results at (a results file, a run directory, a `merge --out` directory or a history
store; the latest record of each cell per host), the library's upstream claims (link and strength: never shown as
observed), and with --run your own layers: each match is cut out of MODEL with its shapes, weights and Q/DQ scales,
written as a reproducer (OUT/reproducers: index.json + .onnx + .npz, the layout `run` reads) and run on the
--run-on targets (default: the matrix's default target). Known workarounds of a pattern are listed per target.
Writes OUT/scan.json and OUT/scan.html (offline, self-contained).

Exit status: {EXIT_OK} nothing chosen fails, {EXIT_FAILS} some target is blocked (--fail-on: also fallback, or also
unverified), {EXIT_USAGE} bad input (not an ONNX file, a truncated file, an opset too new for the installed onnx,
missing external data, an unknown target or results path), {EXIT_BROKEN} the evidence was damaged (bad lines in a
--results file, a matcher that failed, infra-error cells in --run): the verdicts use what could be read, and
{EXIT_BROKEN} wins over {EXIT_FAILS}.

  python -m harness scan model.onnx --results out/results.jsonl
  python -m harness scan model.onnx --targets trt86-orin trt100-orin --results ~/trt-matrix/history --fail-on fallback
  python -m harness scan model.onnx --run --out out/scan/model
  python -m harness scan model.onnx --run --run-on ort-cpu trt86-orin --targets trt86-orin
"""


def cmd_scan(args) -> int:
    from harness.scan.loading import ModelInputError
    from harness.scan.observations import ObservationsError
    from harness.scan.scanner import ScanOptions, scan

    matrix = load_matrix(args.matrix)
    unknown = [t for t in (args.targets or []) + (args.run_on or []) if t not in matrix]
    if unknown:
        raise CommandError(f"target(s) {unknown} not in {args.matrix}; known: {', '.join(matrix)}")
    if args.run_on and not args.run:
        raise CommandError("--run-on names where --run runs the reproducers; add --run")
    run_targets = [matrix[t] for t in args.run_on or [default_target(matrix).id]] if args.run else []
    chosen = list(dict.fromkeys((args.targets or list(matrix)) + [t.id for t in run_targets]))
    targets = [matrix[t] for t in chosen]
    out_dir = output_directory(args.out or Path("out/scan") / args.model.stem, "--out")
    options = ScanOptions(targets=targets, results=args.results or [], run_targets=run_targets, out_dir=out_dir,
                          max_reproducers=args.max_reproducers, jobs=args.jobs, timeout_s=args.timeout,
                          fail_on=args.fail_on)
    try:
        import cases  # noqa: F401  (registers the case library: its matchers are what the scan searches)

        result = scan(args.model, options, progress=lambda line: print(line, flush=True))
    except (ModelInputError, ObservationsError) as err:
        raise CommandError(str(err)) from None
    data = scan_data(result)
    json_path, html_path = write_results(data, out_dir)
    _print_result(data)
    print(f"results: {json_path}, {html_path}")
    for problem in result.problems:
        print(f"warning: {problem}", file=sys.stderr)
    if result.failing_targets:
        print(f"expected to fail (--fail-on {args.fail_on}) on {len(result.failing_targets)} target(s): "
              f"{', '.join(result.failing_targets)}", file=sys.stderr)
    if result.evidence_damaged:
        print("some evidence was damaged or the harness broke (warnings above, infra-error cells in the run): the "
              "verdicts rest on what could be read", file=sys.stderr)
    return data["exit_code"]


def exit_status(result) -> int:
    """The scan's exit status (options.EXIT_MEANINGS): broken when evidence was damaged, else fails when a chosen
    target fails under --fail-on, else ok."""
    return EXIT_BROKEN if result.evidence_damaged else EXIT_FAILS if result.failing_targets else EXIT_OK


def scan_data(result) -> dict[str, Any]:
    """What scan.json holds and the page shows: the scan (``ScanResult.to_dict()``) and its exit status."""
    return {**result.to_dict(), "exit_code": exit_status(result)}


def write_results(data: dict[str, Any], out_dir: Path | str) -> tuple[Path, Path]:
    """Write a scan (:func:`scan_data`) to ``out_dir/scan.json`` (everything the page shows, for CI and other
    tools) and ``out_dir/scan.html``; return their paths."""
    from reports.scan_page import render_scan_page

    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    json_path = out_dir / JSON_NAME
    json_path.write_text(json.dumps(data, indent=1, sort_keys=False, allow_nan=False) + "\n")
    return json_path, render_scan_page(data, out_dir / HTML_NAME)


def _print_result(data: dict) -> None:
    model = data["model"]
    print(f"model: {model['path']} (opset {model['opset']}, {model['nodes']} nodes, {model['mode_text']})")
    for note in model["notes"]:
        print(f"  note: {note}")
    findings = data["findings"]
    if not findings:
        print("no known INT8 failure pattern of the library in this model")
    else:
        places = sum(len(f["occurrences"]) for f in findings)
        print(f"found {len(findings)} known pattern form(s) in {places} place(s):")
        for f in findings:
            anchors = [o["anchor"] for o in f["occurrences"]]
            more = f" (+{len(anchors) - SHOWN_NODES} more)" if len(anchors) > SHOWN_NODES else ""
            form = f"{f['case']}/{f['variant']}" if f["variant"] else f["case"]
            print(f"  {f['pattern']} {form} [{f['role'] or '?'}]: {len(anchors)} place(s): "
                  f"{', '.join(anchors[:SHOWN_NODES])}{more}")
            if f["caveat"]:
                print(f"    caveat: {f['caveat']}")
    print("verdict per target:")
    width = max(len(t["target"]) for t in data["targets"])
    for t in data["targets"]:
        basis = f"({t['basis']})" if t["basis"] else ""
        print(f"  {t['target']:<{width}}  {t['verdict']:<11} {basis:<10} {t['reason']}")
        if t["verdict"] in SCAN_FAILING:
            for line in _workaround_lines(findings, t["target"]):
                print(f"  {'':<{width}}  {line}")


def _workaround_lines(findings: list[dict], target: str) -> list[str]:
    """The workarounds known (observed or claimed) to pass on ``target`` for the findings that fail there."""
    lines = []
    for f in findings:
        verdict = f["verdicts"].get(target)
        for w in verdict["workarounds"] if verdict else []:
            if w["verdict"] in SCAN_GOOD:
                basis = "observed here" if w["evidence"][0]["kind"] == "observed" else "claimed upstream"
                lines.append(f"workaround for {f['case']}: {w['variant']} ({w['verdict']}, {basis}): "
                             f"{w['description']}")
    return list(dict.fromkeys(lines))  # findings of one case in several forms share its workarounds


def add_scan_commands(commands) -> None:
    p = commands.add_parser("scan", help="will MODEL build in INT8 on each target: known patterns, verdicts, evidence",
                            description=DESCRIPTION, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("model", type=Path, metavar="MODEL.onnx", help="the ONNX model (external data next to it)")
    p.add_argument("--targets", nargs="+", metavar="ID", help="targets to predict (default: every target of the "
                   "matrix)")
    p.add_argument("--results", nargs="+", type=Path, metavar="PATH", action="extend",
                   help="observed records: results files (.jsonl), run directories, merged directories or a history "
                   "store")
    p.add_argument("--run", action="store_true", help="cut each match out of MODEL and run it through the harness")
    p.add_argument("--run-on", nargs="+", metavar="ID", help="with --run: the targets to run on, local or docker "
                   "(default: the matrix's default target); they are predicted too")
    p.add_argument("--out", type=Path, metavar="DIR", help="output directory (default: out/scan/<model name>)")
    p.add_argument("--fail-on", choices=("blocked", "fallback", "unverified"), default="blocked",
                   help="the verdicts that make the exit status 1: blocked (default), also fallback, also unverified")
    p.add_argument("--max-reproducers", type=positive_int, default=8, metavar="N",
                   help="with --run: at most N reproducers per pattern form (occurrences of one shape share one; "
                   "default: %(default)s)")
    p.add_argument("--jobs", type=positive_int, default=os.cpu_count() or 1, help="with --run: cells run at once "
                   "(default: %(default)s)")
    p.add_argument("--timeout", type=positive_seconds, default=300.0, help="with --run: seconds per cell (default: "
                   "%(default)s)")
    p.set_defaults(func=cmd_scan)
