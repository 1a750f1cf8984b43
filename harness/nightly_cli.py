"""``python -m harness nightly | merge | history | diff``: the nightly job across hosts, its history and its alerts."""
from __future__ import annotations

import argparse
import datetime
import os
import sys
from pathlib import Path

from harness.history import DEFAULT_LAST

EXIT_OK, EXIT_REGRESSION, EXIT_USAGE, EXIT_BROKEN = 0, 1, 2, 3
DEFAULT_RUNS = Path("out/runs")

NIGHTLY_DESCRIPTION = f"""\
Run this host's targets into a run directory RUNS/<date>_<host>_<revision>/ (run.json, results.jsonl, work/).
Targets: --target, else those of --host-kind in matrix.yaml (hosts:), else the matrix's default target.

Records are appended as each cell ends, so a host that dies loses no finished cell: run the same command again
(same day, host and case-library revision: the same run directory) and it resumes. Cells whose inputs did not
change since this host's previous run (the generated model's and data's content hashes, the variant's parameters,
knobs and tolerance; the target's image id or observed library versions; the harness's worker code) are not run
again but carried over, and say from which run; infra-error and timeout cells always run again. --force runs
every cell. The generated case library is kept under RUNS/.cases/ and reused while the library is unchanged.

Exit status: {EXIT_OK} when every cell has a record about its pattern, {EXIT_BROKEN} when some cell is infra-error,
{EXIT_USAGE} for bad arguments. The last line is `run directory: PATH`; with GITHUB_OUTPUT set (GitHub Actions),
run_dir=PATH and run_id=ID are also written there.

  python -m harness nightly --host-kind cpu --runs ~/trt-matrix/runs
  python -m harness nightly --target ort-cpu -k control      # a quick try on this machine
"""

MERGE_DESCRIPTION = f"""\
Merge run directories from many hosts into OUT/results.jsonl, OUT/merge.json (sources, conflicts, problems) and
OUT/index.html (the compatibility matrix). Each PATH is a run directory or a directory holding run directories
(e.g. downloaded CI artifacts). The same cell from two hosts stays two records, shown side by side, and is a
conflict when their outcomes disagree. A torn or corrupt results file is reported line by line (its bad lines are
kept in OUT/rejected.txt) and the rest still merges. Exit status: {EXIT_OK}, {EXIT_BROKEN} when some input was
damaged (merged anyway), {EXIT_USAGE} for bad arguments.
"""

HISTORY_DESCRIPTION = f"""\
The history store is a plain directory of run directories. --add copies run directories into it; then the trend
page is written: per cell and series (target @ host) the outcome over the last N runs, and the changes between the
last two runs of each series: regressions (pass -> fallback/mismatch/fail/crash, fallback -> mismatch/fail/crash),
progressions (the reverse), other changes, and cells not compared because one side is infra-error, timeout or
unavailable (never a regression). Exit status: {EXIT_REGRESSION} when some series regressed, else {EXIT_OK}.

  python -m harness history ~/trt-matrix/history --add tonight/ --out site/trend.html --junit site/regressions.xml
"""

DIFF_DESCRIPTION = f"""\
Compare two result sets cell by cell and print the changes, regressions first. OLD and NEW are each a results
file (.jsonl), a run directory, a merged directory (`merge --out`), or a directory holding run directories.
Cells pair by (case, variant, target, host); a target seen on one host on each side pairs across hosts.
--junit writes JUnit XML where each regressed cell is a failed test case. Exit status: {EXIT_REGRESSION} when
there is a regression, {EXIT_OK} otherwise, {EXIT_USAGE} for bad arguments.
"""


def _date(text: str) -> str:
    try:
        return datetime.date.fromisoformat(text).isoformat()
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a date of the form YYYY-MM-DD") from None


def cmd_nightly(args) -> int:
    from harness.matrix import default_target, load_hosts, load_matrix
    from harness.nightly import NightlyError, RunPlan, default_host, run_nightly, today

    targets = load_matrix(args.matrix)
    hosts = load_hosts(args.matrix)
    if args.host_kind and args.host_kind not in hosts:
        print(f"error: host kind {args.host_kind!r} is not in the hosts section of {args.matrix}; known: "
              f"{', '.join(hosts) or '(none)'}", file=sys.stderr)
        return EXIT_USAGE
    chosen = args.target or (list(hosts[args.host_kind].targets) if args.host_kind else [default_target(targets).id])
    unknown = [t for t in chosen if t not in targets]
    if unknown:
        print(f"error: target(s) {unknown} not in {args.matrix}; known: {', '.join(targets)}", file=sys.stderr)
        return EXIT_USAGE
    plan = RunPlan(runs_root=args.runs, host=args.host or default_host(), host_kind=args.host_kind,
                   date=args.date or today(), targets=tuple(targets[t] for t in chosen), cases_dir=args.cases,
                   pattern=args.k, force=args.force)
    try:
        result = run_nightly(plan, jobs=args.jobs, timeout_s=args.timeout, progress=lambda line: print(line, flush=True))
    except NightlyError as err:
        print(f"error: {err}", file=sys.stderr)
        return EXIT_USAGE
    for summary in result.summaries:
        counts = ", ".join(f"{k} {v}" for k, v in sorted(summary.outcomes.items()))
        print(f"{summary.target}: {summary.total} cell(s) run{f' ({counts})' if counts else ''}, "
              f"{result.carried_over.get(summary.target, 0)} carried over, "
              f"{result.resumed.get(summary.target, 0)} already in this run ({summary.wall_s:.1f} s)")
    if os.environ.get("GITHUB_OUTPUT"):
        with open(os.environ["GITHUB_OUTPUT"], "a") as outputs:
            outputs.write(f"run_dir={result.run_dir}\nrun_id={result.run_id}\n")
    print(f"run directory: {result.run_dir}")
    if result.harness_broken:
        print("some cells are infra-error: the harness or environment failed them, see their records",
              file=sys.stderr)
        return EXIT_BROKEN
    return EXIT_OK


def cmd_merge(args) -> int:
    import cases  # noqa: F401  (registers the case library: rows and upstream claims of the report)
    from cases.model import iter_variants
    from harness.matrix import load_matrix
    from harness.merge import merge_runs, write_merged
    from reports.html import render_report
    from reports.tables import rows_from_variants

    merged = merge_runs(args.paths)
    results = write_merged(merged, args.out)
    for run in merged.runs:
        print(f"{run.id}: host {run.host}, {len(run.records)} record(s)"
              + (f", {len(run.bad_lines)} bad line(s)" if run.bad_lines else "") + f"  ({run.path})")
    for conflict in merged.conflicts:
        outcomes = ", ".join(f"{host}: {outcome}" for host, outcome in conflict.outcomes.items())
        print(f"conflict: {conflict.case}/{conflict.variant} on {conflict.target}: {outcomes}")
    notes = [f"Merged from {len(merged.runs)} run(s): " + ", ".join(f"{run.id} ({run.host})" for run in merged.runs)]
    render_report(merged.records, load_matrix(args.matrix), rows_from_variants(iter_variants()),
                  args.out / "index.html", notes=notes, skipped=merged.problems)
    print(f"{len(merged.records)} record(s), {len(merged.conflicts)} conflict(s): {results}, "
          f"{args.out / 'merge.json'}, {args.out / 'index.html'}")
    if merged.problems:
        for problem in merged.problems:
            print(f"warning: {problem}", file=sys.stderr)
        print(f"some input was damaged: {len(merged.problems)} problem(s) above; the rest was merged", file=sys.stderr)
        return EXIT_BROKEN
    return EXIT_OK


def _result_set(path: Path) -> list[dict]:
    """The records of a results file, a merged directory, a run directory or a directory holding run directories."""
    from harness.merge import MERGE_MANIFEST, MERGED_RESULTS, merge_runs
    from harness.results import scan_records

    if path.is_file() or (path.is_dir() and (path / MERGE_MANIFEST).is_file()):
        good, bad = scan_records(path if path.is_file() else path / MERGED_RESULTS)
        for line in bad:
            print(f"warning: {line}", file=sys.stderr)
        return [record for _, record in good]
    merged = merge_runs([path])
    for problem in merged.problems:
        print(f"warning: {problem}", file=sys.stderr)
    return merged.records


def cmd_diff(args) -> int:
    from harness.compare import changes_table, compare_records, write_junit

    for path in (args.old, args.new):
        if not path.exists():
            print(f"error: {path}: no such file or directory", file=sys.stderr)
            return EXIT_USAGE
    comparison = compare_records(_result_set(args.old), _result_set(args.new), str(args.old), str(args.new))
    print(changes_table(comparison))
    if args.junit:
        print(f"JUnit XML: {write_junit([comparison], args.junit)}")
    return EXIT_REGRESSION if comparison.regressions else EXIT_OK


def cmd_history(args) -> int:
    from harness.compare import changes_table, write_junit
    from harness.history import add_runs, load_history
    from reports.trend import render_trend

    if args.add:
        for stored in add_runs(args.history, args.add):
            print(f"added {stored}")
    history = load_history(args.history)
    if not history.runs:
        print(f"error: {args.history} holds no run directory; add some with --add", file=sys.stderr)
        return EXIT_USAGE
    comparisons = []
    for series in history.series():
        comparison = series.last_change()
        if comparison is None:
            print(f"{series.name}: first run {series.runs[-1].id}: nothing to compare")
            continue
        comparisons.append(comparison)
        print(f"{series.name}: " + changes_table(comparison))
    out = args.out or args.history / "trend.html"
    render_trend(history, out, last=args.last)
    print(f"trend page: {out}")
    if args.junit:
        print(f"JUnit XML: {write_junit(comparisons, args.junit)}")
    for problem in history.problems():
        print(f"warning: {problem}", file=sys.stderr)
    regressions = sum(len(c.regressions) for c in comparisons)
    if regressions:
        print(f"{regressions} regression(s) between the last two runs of a series", file=sys.stderr)
        return EXIT_REGRESSION
    return EXIT_OK


def add_nightly_commands(commands) -> None:
    from harness.cli import add_cell_options

    raw = argparse.RawDescriptionHelpFormatter
    p = commands.add_parser("nightly", help="run this host's targets into a dated run directory (resumable, "
                            "incremental)", description=NIGHTLY_DESCRIPTION, formatter_class=raw)
    p.add_argument("--host-kind", metavar="KIND", help="a host kind of matrix.yaml's hosts section: run its targets")
    p.add_argument("--target", action="append", metavar="ID", help="target id; repeat for several (default: the "
                   "host kind's targets, else the matrix's default target)")
    p.add_argument("--runs", type=Path, default=DEFAULT_RUNS, help="where run directories go; keep it between "
                   "nights, it is what unchanged cells are carried over from (default: %(default)s)")
    p.add_argument("--host", metavar="NAME", help="host name in the run directory and records (default: this "
                   "machine's hostname; give a pool of identical runners one name so they form one series)")
    p.add_argument("--date", type=_date, metavar="YYYY-MM-DD", help="the run's date (default: today, UTC)")
    p.add_argument("--cases", type=Path, metavar="DIR", help="a cases directory written by `generate` instead of "
                   "the case library of this checkout")
    add_cell_options(p)
    p.add_argument("--force", action="store_true", help="run every cell, carrying nothing over")
    p.set_defaults(func=cmd_nightly)

    p = commands.add_parser("merge", help="merge run directories from many hosts into one results set and report",
                            description=MERGE_DESCRIPTION, formatter_class=raw)
    p.add_argument("paths", type=Path, nargs="+", metavar="PATH", help="run directory, or a directory holding some")
    p.add_argument("--out", type=Path, required=True, help="output directory")
    p.set_defaults(func=cmd_merge)

    p = commands.add_parser("history", help="add runs to the history store; trend page; regressions since the "
                            "previous run", description=HISTORY_DESCRIPTION, formatter_class=raw)
    p.add_argument("history", type=Path, metavar="HISTORY_DIR", help="the history store (created if missing)")
    p.add_argument("--add", type=Path, nargs="+", metavar="PATH", help="run directories (or directories holding "
                   "some) to copy into the store first")
    p.add_argument("--last", type=int, default=DEFAULT_LAST, help="runs shown per trend strip (default: %(default)s)")
    p.add_argument("--out", type=Path, help="trend page (default: HISTORY_DIR/trend.html)")
    p.add_argument("--junit", type=Path, metavar="FILE", help="also write JUnit XML of the last changes")
    p.set_defaults(func=cmd_history)

    p = commands.add_parser("diff", help="compare two result sets; exit 1 on a regression; JUnit XML",
                            description=DIFF_DESCRIPTION, formatter_class=raw)
    p.add_argument("old", type=Path, metavar="OLD")
    p.add_argument("new", type=Path, metavar="NEW")
    p.add_argument("--junit", type=Path, metavar="FILE", help="write JUnit XML: each regressed cell a failed test")
    p.set_defaults(func=cmd_diff)
