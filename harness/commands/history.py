"""``trt-matrix merge | history | diff``: records at rest across hosts and nights, and regressions."""
from __future__ import annotations

import argparse
import collections
import os
import sys
from pathlib import Path

from harness.commands.options import (
    EXIT_BROKEN,
    EXIT_OK,
    EXIT_REGRESSION,
    EXIT_USAGE,
    CommandError,
    input_file,
    iso_date,
    output_directory,
    output_file,
    positive_int,
)
from harness.store.history import DEFAULT_FLAKY_FLIPS, DEFAULT_FLAKY_WINDOW, DEFAULT_LAST

MERGE_DESCRIPTION = f"""\
Merge the runs of ONE night from many hosts into OUT/results.jsonl, OUT/merge.json (night, sources, runs left out,
conflicts, problems) and OUT/index.html (the compatibility matrix). Each PATH is a run directory or a directory
holding run directories (e.g. downloaded CI artifacts). The night is --night DATE, else the newest night among the
runs found; of that night each host's newest run is merged. Every other run (another night, an earlier run of the
same host) is left out and named: a cell a host did not record that night is absent, never filled in from an older
night. Several runs of one host that night all stand when they are of different machines (a runner pool) or shards;
each run is named with its machine. The same cell from two hosts, or two machines, stays two records and is a
conflict when their outcomes disagree. Each sealed run (files.json) is checked: a contributed run whose files do not
match is refused, naming each file; a run of the fleet's own that does not match is reported as damaged. A
contributed run is shown as such (who, what machine). --plan FILE (the night's job matrix from
`nightly-plan`) lists every planned job with no run as not run. A torn or corrupt results file is reported line by line (its bad lines are kept in OUT/rejected.txt) and
the rest still merges. Exit status: {EXIT_OK}, {EXIT_BROKEN} when some merged input was damaged or lost records
(merged anyway, named on stderr and at the top of the page), a run was refused or a planned job did not run,
{EXIT_USAGE} for bad arguments or no run of the night.
"""

HISTORY_DESCRIPTION = f"""\
The history store is a plain directory of run directories, indexed in HISTORY_DIR/history.sqlite. --add copies run
directories into it (their records are validated and indexed once); then the trend page is written: per cell and
series (target @ host) the outcome over the last N nights, lined up by date, and the changes of each series' latest
run. Each cell's latest outcome is compared with its last comparable one (pass, fallback, mismatch, fail, crash),
skipping nights of infra-error, timeout or no record: regressions (pass -> fallback/mismatch/fail/crash, fallback
-> mismatch/fail/crash), progressions (the reverse), other changes; a cell that flipped more than K times in the
last N runs is flaky (never a regression); a cell whose latest outcome is infra-error, timeout or unavailable is
not compared. A run belongs to the series of every target its run.json names, so a night that lost its records
is compared (its cells are gone), never skipped. Exit status: {EXIT_REGRESSION} when some series regressed;
{EXIT_BROKEN} when the latest or previous run of some series is damaged (unreadable files or lines, fewer records
than run.json counts) or cells are gone from a series' latest run (said at the top of the page; {EXIT_BROKEN} wins
over {EXIT_REGRESSION}); {EXIT_OK} otherwise; {EXIT_USAGE} for bad arguments.

A history store is a cache of its durable copy (--durable or TRT_MATRIX_HISTORY_STORE: a branch of a git
repository, or a directory such as a mounted bucket): the runs it lacks are restored from the copy first, the runs
added are saved to it, so a new runner continues the same history. A contributed run (its files.json names a
contributor) whose files do not match its seal is refused, naming each file.

  trt-matrix history ~/trt-matrix/history --add tonight/ --out site/trend.html --junit site/regressions.xml
  trt-matrix history ~/trt-matrix/history --durable git:https://github.com/OWNER/REPO.git#trt-matrix-history
"""

DIFF_DESCRIPTION = f"""\
Compare two result sets cell by cell and print the changes, regressions first. OLD and NEW are each a results
file (.jsonl), a run directory, a merged directory (`merge --out`), or a directory holding run directories.
Cells pair by (case, variant, target, host); a target seen on one host on each side pairs across hosts.
--junit writes JUnit XML where each regressed cell is a failed test case. Exit status: {EXIT_REGRESSION} when
there is a regression; {EXIT_BROKEN} when a side is damaged (unreadable lines or files, fewer records than its
run.json counts) or cells of OLD are gone from NEW ({EXIT_BROKEN} wins over {EXIT_REGRESSION}); {EXIT_OK}
otherwise; {EXIT_USAGE} for bad arguments.
"""


def _case_rows(args, runs) -> tuple[list, list[str]]:
    """The report's rows: the index of --cases, else the case indexes the runs kept (the newest run's case wins);
    and a warning when there is none."""
    from harness.store.run_dirs import CASES_INDEX
    from reports.case_index import CaseIndexError, merge_rows, read_index

    if args.cases is not None:
        return read_index(args.cases), []
    found, problems = [], []
    for run in runs:
        if (run.path / CASES_INDEX).is_file():
            try:
                found.append(read_index(run.path / CASES_INDEX))
            except CaseIndexError as err:
                problems.append(str(err))
    if not found:
        problems.append("no run directory holds a cases-index.json (runs written before it was kept) and no --cases "
                        "was given: rows come from the records alone, without upstream claims, remedies or notes")
    return merge_rows(found), problems


def cmd_merge(args) -> int:
    from harness.matrix import load_matrix
    from harness.store.merge import merge_runs, write_merged
    from reports.html import render_report

    output_directory(args.out, "--out")
    targets = load_matrix(args.matrix)
    plan = None
    if args.plan is not None:
        import json

        input_file(args.plan, "the night's job matrix written by `trt-matrix nightly-plan --out`")
        try:
            plan = json.loads(args.plan.read_text())
        except json.JSONDecodeError as err:
            raise CommandError(f"{args.plan}: not valid JSON ({err})") from None
        if not isinstance(plan, dict) or not isinstance(plan.get("include"), list):
            raise CommandError(f"{args.plan}: field 'include' must be a list of jobs (nightly-plan's output)")
    merged = merge_runs(args.paths, night=args.night, plan=plan)
    for refused in merged.refused:
        print(f"error: {refused}", file=sys.stderr)
    if not merged.runs and merged.refused:
        raise CommandError("nothing to merge: every run was refused (above); a contributed run must arrive as its "
                           "contributor sealed it")
    if not merged.runs:
        raise CommandError(f"no run of {args.night} in {', '.join(map(str, args.paths))}; the runs found are of "
                           f"{', '.join(sorted({gone.run.night for gone in merged.left_out}))}")
    results = write_merged(merged, args.out)
    print(f"night {merged.night}:")
    from harness.store.merge import contribution

    for run in merged.runs:
        contributed = contribution(run)
        print(f"{run.id}: host {run.host}, machine {run.machine}" + (f" ({run.gpu_arch})" if run.gpu_arch else "")
              + (f", shard {run.shard}" if run.shard else "") + (f", {contributed}" if contributed else "")
              + f", {len(run.records)} record(s)"
              + (f", {len(run.bad_lines)} bad line(s)" if run.bad_lines else "") + f"  ({run.path})")
    for job in merged.not_run:
        print(f"not run: {job}")
    for gone in merged.left_out:
        print(f"left out: {gone}")
    for conflict in merged.conflicts:
        outcomes = ", ".join(f"{host}: {outcome}" for host, outcome in conflict.outcomes.items())
        print(f"conflict: {conflict.case}/{conflict.variant} on {conflict.target}: {outcomes}")
    notes = [f"Night {merged.night}, merged from {len(merged.runs)} run(s): "
             + ", ".join(f"{run.id} ({run.label}" + (f"; {contribution(run)}" if contribution(run) else "") + ")"
                         for run in merged.runs)]
    notes += [f"Not run: {job}" for job in merged.not_run]
    notes += [f"Refused: {refused}" for refused in merged.refused]
    if merged.left_out:
        notes.append(f"Left out (one night, each host's newest run): {len(merged.left_out)} run(s), listed in "
                     "merge.json.")
    incomplete = ([f"some input was damaged: {len(merged.problems)} problem(s) listed below; the matrix shows what "
                   "could be read"] if merged.problems else [])
    rows, index_problems = _case_rows(args, merged.runs)
    for problem in index_problems:
        print(f"warning: {problem}", file=sys.stderr)
    render_report(merged.records, targets, rows, args.out / "index.html", notes=notes,
                  skipped=[*index_problems, *merged.problems], trend_href=args.trend, incomplete=incomplete)
    print(f"{len(merged.records)} record(s), {len(merged.conflicts)} conflict(s): {results}, "
          f"{args.out / 'merge.json'}, {args.out / 'index.html'}")
    if merged.problems:
        for problem in merged.problems:
            print(f"warning: {problem}", file=sys.stderr)
        print(f"some input was damaged: {len(merged.problems)} problem(s) above; the rest was merged", file=sys.stderr)
    if merged.refused or merged.not_run:
        print(f"incomplete: {len(merged.refused)} run(s) refused, {len(merged.not_run)} planned job(s) not run",
              file=sys.stderr)
    if os.environ.get("GITHUB_OUTPUT"):
        with open(os.environ["GITHUB_OUTPUT"], "a") as outputs:
            outputs.write(f"not_run={len(merged.not_run)}\nrefused={len(merged.refused)}\n")
    return EXIT_BROKEN if merged.problems or merged.refused or merged.not_run else EXIT_OK


def _result_set(path: Path, problems: list[str]) -> list[dict]:
    """The records of a results file, a merged directory, a run directory or a directory holding run directories;
    what could not be read is added to ``problems``."""
    from harness.store.merge import read_result_set

    return [read.record for read in read_result_set(path, problems)]


def cmd_diff(args) -> int:
    from harness.store.compare import changes_table, compare_records, write_junit

    for path in (args.old, args.new):
        if not path.exists():
            print(f"error: {path}: no such file or directory", file=sys.stderr)
            return EXIT_USAGE
    problems: list[str] = []
    comparison = compare_records(_result_set(args.old, problems), _result_set(args.new, problems), str(args.old),
                                 str(args.new))
    print(changes_table(comparison))
    if args.junit:
        print(f"JUnit XML: {write_junit([comparison], args.junit)}")
    return _verdict(problems, comparison.of_kind("gone"), len(comparison.regressions))


def _verdict(problems: list[str], gone: list, regressions: int) -> int:
    """The exit status of a comparison, with its reasons on stderr (see options.EXIT_MEANINGS)."""
    for problem in problems:
        print(f"warning: {problem}", file=sys.stderr)
    if regressions:
        print(f"{regressions} regression(s): a cell's latest outcome is worse than its last comparable one",
              file=sys.stderr)
    if problems or gone:
        print("incomplete: " + "; ".join(filter(None, [
            f"{len(problems)} damaged input(s) above" if problems else "",
            f"{len(gone)} cell(s) gone: the newer side has no record of them" if gone else ""])), file=sys.stderr)
        return EXIT_BROKEN
    return EXIT_REGRESSION if regressions else EXIT_OK


def cmd_history(args) -> int:
    from harness.matrix import load_matrix
    from harness.store.compare import changes_table, write_junit
    from harness.store.history import HistoryStore
    from reports.trend import latest_changes, render_trend, series_order

    if args.flaky_window < 2 or args.flaky_flips < 1:
        print("error: --flaky-window must be >= 2 and --flaky-flips >= 1", file=sys.stderr)
        return EXIT_USAGE
    output_directory(args.history, "HISTORY_DIR")
    if args.out is not None:
        output_file(args.out, "--out")
    targets = load_matrix(args.matrix)
    durable, refused = _restore_durable(args), []
    with HistoryStore(args.history) as store:
        added = []
        if args.add:
            accepted, refused = _refuse_altered_contributions(args.add)
            added = store.add(accepted) if accepted else []
            for stored in added:
                print(f"added {stored}")
        if not store.runs():
            print(f"error: {args.history} holds no run directory; add some with --add", file=sys.stderr)
            return EXIT_USAGE
        all_series = sorted(store.series(), key=lambda s: series_order(s, targets))
        changes = latest_changes(store, all_series, flaky_window=args.flaky_window, flaky_flips=args.flaky_flips)
        for series in all_series:
            if changes[series.name] is None:
                print(f"{series.name}: first run {series.latest.run}: nothing to compare")
            else:
                print(f"{series.name}: " + changes_table(changes[series.name]))
                for change in changes[series.name].changes:
                    if change.disagreement:
                        print(f"machines disagree: {change.cell} on {series.name}: {change.disagreement} (the "
                              "newest record speaks)")
        comparisons = [c for c in changes.values() if c is not None]
        compared = {run.run for series in all_series for run in series.runs[-2:]}
        problems = [p for run in store.runs() if run.id in compared for p in run.problems]
        gone = [(c.new_label, change) for c in comparisons for change in c.of_kind("gone")]
        incomplete = [f"{len(problems)} damaged or lost input(s) in the runs compared (listed below)"] if problems else []
        incomplete += [f"{n} cell(s) gone in {label}: it has no record of them"
                       for label, n in collections.Counter(label for label, _ in gone).items()]
        out = args.out or args.history / "trend.html"
        index_href = args.index or ("index.html" if (out.parent / "index.html").is_file() else None)
        render_trend(store, out, targets=targets, last=args.last, flaky_window=args.flaky_window,
                     flaky_flips=args.flaky_flips, changes=changes, index_href=index_href, incomplete=incomplete)
        print(f"trend page: {out}")
        if args.junit:
            print(f"JUnit XML: {write_junit(comparisons, args.junit)}")
        for problem in store.problems():
            if problem not in problems:
                print(f"warning: {problem} (an older run: not compared)", file=sys.stderr)
        saved_ok = _save_durable(durable, args.history, added, store)
    status = _verdict(problems + refused, gone, sum(len(c.regressions) for c in comparisons))
    return EXIT_BROKEN if status == EXIT_OK and not saved_ok else status


def _restore_durable(args):
    """The durable copy (--durable, else TRT_MATRIX_HISTORY_STORE), with the runs the store lacks copied in."""
    from harness.store.durable import SETTING, DurableError, durable_copy

    spec = args.durable or os.environ.get(SETTING)
    if not spec:
        return None
    try:
        durable = durable_copy(spec)
        restored = durable.restore(args.history)
    except DurableError as err:
        raise CommandError(str(err)) from None
    print(f"durable copy {durable}: {len(restored)} run(s) restored into {args.history}")
    return durable


def _save_durable(durable, root: Path, added: list[Path], store) -> bool:
    """Write the runs added now, and any the durable copy lacks, to it; False (said on stderr) when it failed."""
    from harness.store.durable import DurableError

    if durable is None:
        return True
    wanted = sorted({path.name for path in added} | ({run.dir.name for run in store.runs()
                                                      if run.dir.parent == root} - set(durable.names())))
    try:
        saved = durable.save(root, wanted)
    except DurableError as err:
        print(f"error: {err}; the runs stay in {root} and are saved with the next night", file=sys.stderr)
        return False
    print(f"durable copy {durable}: {len(saved)} run(s) saved")
    return True


def _refuse_altered_contributions(paths: list[Path]) -> tuple[list[Path], list[str]]:
    """The run directories of ``paths`` to add, and one problem per contributed run whose files do not match its
    seal (not added, each file named)."""
    from harness.store.merge import contribution
    from harness.store.run_dirs import find_run_dirs, read_run
    from harness.store.seal import seal_problems

    accepted, refused = [], []
    for path in find_run_dirs(paths):
        problems = seal_problems(path)
        if problems and contribution(read_run(path)) is not None:
            refused.append(f"{path}: refused, its files do not match its seal: " + "; ".join(problems))
            print(f"error: {refused[-1]}", file=sys.stderr)
        else:
            accepted.append(path)
    return accepted, refused


def add_history_commands(commands) -> None:
    raw = argparse.RawDescriptionHelpFormatter
    p = commands.add_parser("merge", help="merge run directories from many hosts into one results set and report",
                            description=MERGE_DESCRIPTION, formatter_class=raw)
    p.add_argument("paths", type=Path, nargs="+", metavar="PATH", help="run directory, or a directory holding some")
    p.add_argument("--out", type=Path, required=True, help="output directory")
    p.add_argument("--night", type=iso_date, metavar="YYYY-MM-DD", help="the night to merge (default: the newest "
                   "night among the runs found)")
    p.add_argument("--cases", type=Path, metavar="DIR", help="a cases directory whose index.json gives the rows, "
                   "claims, remedies and notes (default: the cases-index.json each run directory keeps)")
    p.add_argument("--trend", metavar="URL", help="link to the trend page (e.g. trend.html): the header links it and "
                   "each cell links its history there")
    p.add_argument("--plan", type=Path, metavar="FILE", help="the night's job matrix (`nightly-plan --out`): each "
                   "planned job with no run is listed as not run")
    p.set_defaults(func=cmd_merge)

    p = commands.add_parser("history", help="add runs to the history store; trend page; regressions since the "
                            "previous run", description=HISTORY_DESCRIPTION, formatter_class=raw)
    p.add_argument("history", type=Path, metavar="HISTORY_DIR", help="the history store (created if missing)")
    p.add_argument("--add", type=Path, nargs="+", metavar="PATH", help="run directories (or directories holding "
                   "some) to copy into the store first")
    p.add_argument("--last", type=positive_int, default=DEFAULT_LAST,
                   help="nights shown per trend strip, 1 or more (default: %(default)s)")
    p.add_argument("--flaky-window", type=int, default=DEFAULT_FLAKY_WINDOW, metavar="N",
                   help="runs of a series looked at for flips (default: %(default)s)")
    p.add_argument("--flaky-flips", type=int, default=DEFAULT_FLAKY_FLIPS, metavar="K",
                   help="a cell whose outcome band changed more than K times in those runs is flaky, not a regression "
                   "(default: %(default)s)")
    p.add_argument("--out", type=Path, help="trend page (default: HISTORY_DIR/trend.html)")
    p.add_argument("--index", metavar="URL", help="link to the compatibility matrix (default: index.html when the "
                   "trend page's directory has one)")
    p.add_argument("--junit", type=Path, metavar="FILE", help="also write JUnit XML of the latest changes")
    p.add_argument("--durable", metavar="SPEC", help="the history's durable copy: git:<repository>#<branch> or "
                   "dir:<path>; runs the store lacks are restored from it first, runs added are saved to it "
                   "(default: $TRT_MATRIX_HISTORY_STORE; none)")
    p.set_defaults(func=cmd_history)

    p = commands.add_parser("diff", help="compare two result sets; exit 1 on a regression; JUnit XML",
                            description=DIFF_DESCRIPTION, formatter_class=raw)
    p.add_argument("old", type=Path, metavar="OLD")
    p.add_argument("new", type=Path, metavar="NEW")
    p.add_argument("--junit", type=Path, metavar="FILE", help="write JUnit XML: each regressed cell a failed test")
    p.set_defaults(func=cmd_diff)
