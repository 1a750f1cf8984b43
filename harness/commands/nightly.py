"""``trt-matrix nightly``: run this host's targets into a dated, resumable, incremental run directory."""
from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from harness.commands.options import (
    EXIT_BROKEN,
    EXIT_OK,
    EXIT_USAGE,
    CommandError,
    add_cell_options,
    add_host_kind_argument,
    add_target_argument,
    input_file,
    iso_date,
    no_match_error,
    output_directory,
    read_input,
)

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

Inputs are checked before anything is created: a cases directory whose index.json is damaged, or a -k that selects
no cell (the closest names are listed), stops the nightly with no run directory made. A run directory whose
run.json is damaged is never overwritten. Each cell's model and data are checked against index.json's content
hashes before it runs (a damaged cached library under RUNS/.cases/ is generated again).

Fleets: --host names the series (in the workflow, the host kind: any runner of a pool continues the same line);
the machine is recorded apart from it (--machine, in the workflow the runner's name; else --host, else the hostname),
with its GPUs and architecture, in run.json and each record, and in the run directory's name when it is not the
host. --gpu-arch sm_89 stops the nightly when the machine's GPU is another architecture (a mislabelled runner).
--shard K/N runs a deterministic 1/N of the cells (balanced by --durations, written by `nightly-plan`, else by
count): the N shards of a night, on any machines, cover every cell once. A finished run is sealed: files.json
lists its files' SHA-256 and the machine's facts, which `merge` checks; --contributor NAME marks a run made on a
machine the maintainers do not own (docs/contributing-results.md).

Exit status: {EXIT_OK} when every cell has a record about its pattern, {EXIT_BROKEN} when some cell is infra-error
or the run directory to resume has a damaged run.json, {EXIT_USAGE} for bad arguments. The last line is `run directory: PATH`; with GITHUB_OUTPUT set (GitHub Actions),
run_dir=PATH and run_id=ID are also written there.

  trt-matrix nightly --host-kind cpu --runs ~/trt-matrix/runs
  trt-matrix nightly --target ort-cpu -k control      # a quick try on this machine
  trt-matrix nightly --host-kind x86-gpu --host x86-gpu --gpu-arch sm_89 --shard 2/3 --durations d.json
"""


def cmd_nightly(args) -> int:
    from harness.matrix import default_target, load_hosts, load_matrix
    from harness.commands.run import selected_cells
    from harness.orchestration.nightly import (
        DamagedRunError,
        NightlyError,
        RunPlan,
        default_host,
        run_nightly,
        today,
    )
    from harness.orchestration.machine import machine_facts, machine_name
    from harness.orchestration.run_targets import matches
    from harness.orchestration.shards import parse_shard, read_durations
    from harness.scan.predicted import predicted_entry

    targets = load_matrix(args.matrix)
    hosts = load_hosts(args.matrix)
    chosen = args.target or (list(hosts[args.host_kind].targets) if args.host_kind else [default_target(targets).id])
    output_directory(args.runs, "--runs")
    if args.cases is not None:
        input_file(args.cases / "index.json", "a cases directory written by `trt-matrix generate`")
        selected_cells(args.cases, args.k)
    elif args.k:
        import cases

        names = [f"{case.id}/{variant.name}" for case in cases.all_cases() for variant in case.variants]
        if not any(matches(dict(zip(("case", "variant"), name.split("/", 1))), args.k) for name in names):
            raise no_match_error(args.k, names, "the case library")
    try:
        shard = parse_shard(args.shard) if args.shard else None
    except ValueError as err:
        raise CommandError(f"--shard: {err}") from None
    durations = None if args.durations is None else read_input(
        args.durations, "a durations file written by `trt-matrix nightly-plan --durations-out`", read_durations,
        "--durations")
    host = args.host or default_host()
    machine = machine_facts(machine_name(args.machine, host), args.host_kind)
    if args.gpu_arch and machine["gpu_arch"] != args.gpu_arch:
        gpus = ", ".join(g["name"] for g in machine["gpus"]) or "no GPU found (nvidia-smi, /proc/device-tree/model)"
        raise CommandError(f"--gpu-arch {args.gpu_arch}: machine {machine['name']} has {gpus}, architecture "
                           f"{machine['gpu_arch'] or 'none'}; correct the runner's architecture label (docs/fleet.md) "
                           f"so that the {args.gpu_arch} job goes to a {args.gpu_arch} machine")
    plan = RunPlan(runs_root=args.runs, host=host, host_kind=args.host_kind,
                   date=args.date or today(), targets=tuple(targets[t] for t in chosen), cases_dir=args.cases,
                   pattern=args.k, force=args.force, entry_extras=predicted_entry, machine=machine, shard=shard,
                   durations=durations, contributor=args.contributor)
    try:
        result = run_nightly(plan, jobs=args.jobs, timeout_s=args.timeout, progress=lambda line: print(line, flush=True))
    except DamagedRunError as err:
        raise CommandError(str(err), EXIT_BROKEN) from None
    except NightlyError as err:
        raise CommandError(str(err)) from None
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


PLAN_DESCRIPTION = f"""\
The night's job matrix for GitHub Actions, from matrix.yaml's hosts section: one job per host kind, per GPU
architecture it lists under `architectures:` (the job also asks for a runner labelled with it, e.g. sm_89) and per
shard (`shards: N`: jobs run `nightly --shard K/N`). Writes the plan (jobs and jobs not run) to --out as JSON and,
under GitHub Actions, matrix=, jobs= and not_run= to GITHUB_OUTPUT; prints one line per job.

--runners FILE (GitHub's answer to GET /repos/OWNER/REPO/actions/runners) leaves out every job no online runner
can take and lists it as not run: `merge --plan` then reports it, so a kind whose runners are all offline never
shows as passed. --durations-from PATH (the history store, or run directories) with --durations-out FILE writes
each cell's last duration, which every shard reads (`nightly --durations`) so that all shards split the cells the
same way. Exit status: {EXIT_OK}; {EXIT_USAGE} for bad arguments or an unreadable file.

  trt-matrix nightly-plan --out plan.json
  trt-matrix nightly-plan --runners runners.json --durations-from ~/trt-matrix/history --durations-out d.json
"""


def cmd_nightly_plan(args) -> int:
    import json

    from harness.matrix import load_hosts
    from harness.orchestration.fleet_plan import durations_from, plan_jobs, read_runners
    from harness.orchestration.shards import write_durations

    hosts = load_hosts(args.matrix)
    if not hosts:
        raise CommandError(f"{args.matrix} has no hosts section: nothing to plan")
    runners = None if args.runners is None else read_input(
        args.runners, "GitHub's answer to GET /repos/OWNER/REPO/actions/runners", read_runners, "--runners")
    plan = plan_jobs(hosts, runners)
    for job in plan["include"]:
        print(f"job {job['slot']}: runs-on {', '.join(job['labels'])}; targets {job['targets']}")
    for job in plan["not_run"]:
        print(f"not run: {job['slot']}: {job['reason']}")
    if runners is not None:
        print(f"{len(runners)} online runner(s): {', '.join(name for name, _ in runners) or 'none'}")
    if args.durations_out is not None:
        durations = durations_from(args.durations_from or [])
        write_durations(durations, args.durations_out)
        print(f"durations of {len(durations)} cell(s): {args.durations_out}")
    text = json.dumps(plan, indent=1)
    if args.out is not None:
        args.out.write_text(text + "\n")
        print(f"plan: {args.out}")
    if os.environ.get("GITHUB_OUTPUT"):
        with open(os.environ["GITHUB_OUTPUT"], "a") as outputs:
            outputs.write(f"matrix={json.dumps({'include': plan['include']})}\njobs={len(plan['include'])}\n"
                          f"not_run={len(plan['not_run'])}\n")
    return EXIT_OK


def add_nightly_commands(commands) -> None:
    raw = argparse.RawDescriptionHelpFormatter
    p = commands.add_parser("nightly", help="run this host's targets into a dated run directory (resumable, "
                            "incremental)", description=NIGHTLY_DESCRIPTION, formatter_class=raw)
    add_host_kind_argument(p, help="a host kind of matrix.yaml's hosts section: run its targets")
    add_target_argument(p, "--target", action="append", metavar="ID", help="target id; repeat for several (default: "
                        "the host kind's targets, else the matrix's default target)")
    p.add_argument("--runs", type=Path, default=DEFAULT_RUNS, help="where run directories go; keep it between "
                   "nights, it is what unchanged cells are carried over from (default: %(default)s)")
    p.add_argument("--host", metavar="NAME", help="host name in the run directory and records (default: this "
                   "machine's hostname; give a pool of identical runners one name so they form one series)")
    p.add_argument("--machine", metavar="NAME", help="this machine's name, recorded apart from --host (default: "
                   "--host, else the hostname; the workflow gives the runner's name)")
    p.add_argument("--gpu-arch", metavar="sm_XY", help="the GPU architecture this runner is labelled with: stop "
                   "if the machine's GPU is another")
    p.add_argument("--shard", metavar="K/N", help="run shard K of N of the cells (every shard of a night, given "
                   "the same --durations, covers each cell once)")
    p.add_argument("--durations", type=Path, metavar="FILE", help="the cells' durations that balance the shards "
                   "(`nightly-plan --durations-out`; default: balance by count)")
    p.add_argument("--contributor", metavar="NAME", help="who ran this, for results contributed from a machine "
                   "the maintainers do not own (e.g. 'Jane Doe (github: @jane)')")
    p.add_argument("--date", type=iso_date, metavar="YYYY-MM-DD", help="the run's date (default: today, UTC)")
    p.add_argument("--cases", type=Path, metavar="DIR", help="a cases directory written by `generate` instead of "
                   "the case library of this checkout")
    add_cell_options(p)
    p.add_argument("--force", action="store_true", help="run every cell, carrying nothing over")
    p.set_defaults(func=cmd_nightly)

    p = commands.add_parser("nightly-plan", help="the night's job matrix for a fleet of runners (kinds x "
                            "architectures x shards), from matrix.yaml's hosts", description=PLAN_DESCRIPTION,
                            formatter_class=raw)
    p.add_argument("--out", type=Path, metavar="FILE", help="write the plan (jobs and jobs not run) as JSON here")
    p.add_argument("--runners", type=Path, metavar="FILE", help="GitHub's runners API answer: jobs no online runner "
                   "can take are listed as not run instead of queued")
    p.add_argument("--durations-from", type=Path, nargs="+", metavar="PATH", help="history store or run directories "
                   "whose records' durations balance the shards")
    p.add_argument("--durations-out", type=Path, metavar="FILE", help="write the cells' durations here (for "
                   "`nightly --durations`); with no --durations-from, an empty file: shards balance by count")
    p.set_defaults(func=cmd_nightly_plan)
