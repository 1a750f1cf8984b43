"""``trt-matrix run | report``: run cells on targets into a results file, and write the matrix report."""
from __future__ import annotations

import sys
from pathlib import Path

from harness.commands.options import (
    DEFAULT_CASES_DIR,
    DEFAULT_RESULTS,
    EXIT_BROKEN,
    EXIT_OK,
    EXIT_REGRESSION,
    EXIT_USAGE,
    CommandError,
    add_cell_options,
    add_target_argument,
    input_file,
    no_match_error,
    output_file,
)
from harness.matrix import load_matrix
from harness.judgement import RUN_FAIL_ON_LEVELS


def selected_cells(cases_dir: Path, pattern: str | None) -> list[dict]:
    """The cells of ``cases_dir`` that ``-k pattern`` selects; a pattern that selects none is an error listing the
    closest cell names."""
    from harness.orchestration.run_targets import matches
    from harness.worker.casedata import load_cells

    cells = load_cells(cases_dir)
    chosen = [cell for cell in cells if matches(cell, pattern)]
    if not chosen and pattern:
        raise no_match_error(pattern, (f"{c['case']}/{c['variant']}" for c in cells), f"{cases_dir / 'index.json'}")
    return chosen


def cmd_run(args) -> int:
    from harness.orchestration.run_targets import run_targets

    targets = load_matrix(args.matrix)
    if not (args.cases / "index.json").exists():
        print(f"error: {args.cases} has no index.json; write one with `trt-matrix generate --out {args.cases}`",
              file=sys.stderr)
        return EXIT_USAGE
    output_file(args.results, "--results")
    chosen = selected_cells(args.cases, args.k)
    summaries = run_targets([targets[t] for t in args.target], args.cases, args.results, pattern=args.k,
                            jobs=args.jobs, timeout_s=args.timeout, force=args.force,
                            progress=lambda line: print(line, flush=True))
    for summary in summaries:
        print(summary.line())
    print(f"results: {args.results}")
    if any(summary.harness_broken for summary in summaries):
        print("some cells are infra-error: the harness or environment failed them, see their records", file=sys.stderr)
        return EXIT_BROKEN
    if args.fail_on and gate_failures(args.results, args.target, chosen, args.fail_on):
        return EXIT_REGRESSION
    return EXIT_OK


def gate_failures(results: Path, target_ids: list[str], cells: list[dict], level: str) -> list[dict]:
    """The latest records of ``cells`` on ``target_ids`` in ``results`` that fail ``--fail-on level``, each printed
    on a line of its own (the cell, its outcome, the nodes and precisions of a fallback)."""
    from harness import judgement
    from harness.store.results_file import read_results_file
    from harness.worker.shapes import variant_key

    wanted = {variant_key(cell) for cell in cells}
    failing = [r for r in read_results_file(results).latest().values()
               if r["target"] in target_ids and variant_key(r) in wanted and judgement.fails_gate(r["outcome"], level)]
    for record in failing:
        pairs = (record.get("details") or {}).get("fallback_precision") or {}
        what = ", ".join(f"{node} {p['asked']} -> {p['got']}" for node, p in pairs.items())
        category = (record.get("failure") or {}).get("category")
        print(f"--fail-on {level}: {record['case']}/{record['variant']} on {record['target']}: {record['outcome']}"
              + (f" ({what or category})" if what or category else ""), file=sys.stderr)
    if failing:
        print(f"{len(failing)} cell(s) fail --fail-on {level}", file=sys.stderr)
    return failing


def cmd_report(args) -> int:
    from reports.case_index import INDEX_FILE
    from reports.html import build_report

    missing = [str(p) for p in args.results if not p.exists()]
    if missing:
        print(f"error: results file(s) not found: {', '.join(missing)}", file=sys.stderr)
        return EXIT_USAGE
    for path in args.results:
        try:
            input_file(path, "a JSON Lines results file").read_bytes().decode("utf-8")
        except UnicodeDecodeError as err:
            raise CommandError(f"{path}: not a text file ({err.reason} at byte {err.start}): a damaged results file",
                               EXIT_BROKEN) from None
    if not (args.cases / INDEX_FILE).is_file():
        print(f"error: {args.cases / INDEX_FILE}: no such file; pass --cases DIR, the cases directory the results were "
              "run from (written by `trt-matrix generate --out DIR`)", file=sys.stderr)
        return EXIT_USAGE
    output_file(args.out, "--out")
    build_report(args.results, args.out, args.cases, matrix_path=args.matrix, trend_href=args.trend)
    print(f"report written to {args.out}")
    return EXIT_OK


def add_run_commands(commands) -> None:
    p = commands.add_parser(
        "run", help="run cells on one target, appending one JSON record per cell",
        description="Run every cell (case/variant) of a cases directory on TARGET. Each cell runs in its own process "
        "with a timeout, so a crash or hang becomes a 'crash' or 'timeout' record and the run goes on. Records are "
        "appended to RESULTS the moment each cell ends; rerunning skips cells already recorded for TARGET, so an "
        "interrupted run resumes. A line of RESULTS that is not a valid record is moved to RESULTS.rejected (a torn "
        "last line to RESULTS.torn) with a warning, and its cell runs again. Before a cell runs, its model and data "
        "are checked against the content hashes in index.json: a file changed since `generate` makes the cell "
        "infra-error, naming the file. Exit status: "
        f"{EXIT_OK} when every cell has a record that speaks about its pattern (pass, fallback, mismatch, fail, ...), "
        f"{EXIT_REGRESSION} with --fail-on LEVEL when a selected cell's latest record on a chosen target is at least "
        "that bad (fallback: a precision fallback, an INT8 one or a silent FP8/FP16 loss, or any failure; mismatch: "
        "an output outside tolerance or any failure; fail: fail, crash or timeout), "
        f"{EXIT_BROKEN} when some cell is infra-error (its reason is on its progress line; it wins over "
        f"{EXIT_REGRESSION}), {EXIT_USAGE} for bad arguments (a -k that selects no cell lists the closest names).")
    add_target_argument(p, "--target", action="append", metavar="ID",
                        help="target id from matrix.yaml; repeat it to run several (docker targets on different "
                        "engines run at the same time). Default: the matrix's default target")
    p.add_argument("--cases", type=Path, default=DEFAULT_CASES_DIR, help="cases directory (default: %(default)s)")
    p.add_argument("--results", type=Path, default=DEFAULT_RESULTS, help="JSON Lines results file (default: %(default)s)")
    add_cell_options(p)
    p.add_argument("--force", action="store_true", help="run cells again even if RESULTS already has them")
    p.add_argument("--fail-on", choices=RUN_FAIL_ON_LEVELS, metavar="{" + "|".join(RUN_FAIL_ON_LEVELS) + "}",
                   help=f"exit {EXIT_REGRESSION} when a selected cell on a chosen target ended at least this badly "
                   "(its latest record in RESULTS, so a resumed run gates the cells it skipped too); each is named "
                   "on stderr. Default: no gate, the run exits 0 whatever the outcomes")
    p.set_defaults(func=cmd_run)

    p = commands.add_parser("report", help="write the HTML compatibility matrix",
                            description="Merge one or more results files (the last record of a cell wins) into one "
                            "offline HTML file: a planning view (one verdict per pattern and target), the full "
                            "matrix of observed cells, and upstream claims marked 'not run here'. Case facts come "
                            "from the cases directory's index.json, not from the case library's code. Exit status: "
                            f"{EXIT_OK} (a torn last line is left out with a warning naming it), {EXIT_BROKEN} when any "
                            f"other line of a results file is damaged (named), {EXIT_USAGE} for bad arguments.")
    p.add_argument("--results", type=Path, nargs="+", required=True, help="JSON Lines results files")
    p.add_argument("--cases", type=Path, default=DEFAULT_CASES_DIR, help="the cases directory the results were run "
                   "from: its index.json gives rows, upstream claims, remedies and backend notes (default: "
                   "%(default)s)")
    p.add_argument("--out", type=Path, default=Path("reports/out/index.html"), help="HTML file (default: %(default)s)")
    p.add_argument("--trend", metavar="URL", help="link to the trend page (e.g. trend.html): the header links it and "
                   "each cell links its history there")
    p.set_defaults(func=cmd_report)
