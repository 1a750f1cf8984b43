"""The command line: ``python -m harness <command>`` (also installed as ``trt-matrix``)."""
from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from harness.matrix import DEFAULT_MATRIX, MatrixError, default_target, load_matrix

EXIT_OK, EXIT_CELLS_BROKEN, EXIT_USAGE = 0, 3, 2
DEFAULT_CASES_DIR = Path("out/cases")
DEFAULT_RESULTS = Path("out/results.jsonl")

DESCRIPTION = """\
Which TensorRT version and platform builds your INT8 model? trt-matrix generates minimal reproducer ONNX graphs of
known INT8 failure patterns, runs each (case, variant) cell on each target of matrix.yaml, and writes one JSON record
per cell and an HTML compatibility matrix.

Typical session (ONNX Runtime on this CPU, no GPU, no Docker):
  python -m harness generate --out out/cases
  python -m harness run --target ort-cpu --cases out/cases --results out/results.jsonl
  python -m harness report --results out/results.jsonl --out reports/out/index.html

Nightly, on each host, then on the host that publishes (see `python -m harness nightly --help`):
  python -m harness nightly --host-kind cpu --runs ~/trt-matrix/runs
  python -m harness merge tonight/ --out site
  python -m harness history ~/trt-matrix/history --add tonight/ --out site/trend.html --junit site/regressions.xml
  python -m harness diff OLD NEW --junit regressions.xml
"""


def _matrix(args):
    return load_matrix(args.matrix)


def cmd_generate(args) -> int:
    import cases
    from cases.generate import generate

    selected = [c for c in cases.all_cases() if not args.k or args.k in c.id]
    index = generate(args.out, selected, progress=lambda name: print(f"generated {name}", flush=True))
    count = sum(len(c["variants"]) for c in index["cases"])
    print(f"{count} variant(s) of {len(index['cases'])} case(s) written to {args.out} (index: {args.out / 'index.json'})")
    return EXIT_OK


def cmd_list(args) -> int:
    import cases

    print("Cases (case/variant  [role, mode]):")
    for case in cases.all_cases():
        print(f"  {case.id}: {case.title}  [{case.pattern}]")
        for variant in case.variants:
            print(f"    {case.id}/{variant.name}  [{variant.role}, {case.mode_of(variant)}]")
    print("\nTargets (from %s):" % args.matrix)
    for target in _matrix(args).values():
        state = "available" if target.available else f"unavailable: {target.reason}"
        default = "  (default)" if target.default else ""
        print(f"  {target.id:<14} {target.backend:<12} {target.runner:<7} {target.platform:<7} {state}{default}")
    return EXIT_OK


def cmd_run(args) -> int:
    from harness.run import run_targets

    targets = _matrix(args)
    unknown = [t for t in args.target if t not in targets]
    if unknown:
        print(f"error: target(s) {unknown} not in {args.matrix}; known: {', '.join(targets)}", file=sys.stderr)
        return EXIT_USAGE
    if not (args.cases / "index.json").exists():
        print(f"error: {args.cases} has no index.json; write one with `python -m harness generate --out {args.cases}`",
              file=sys.stderr)
        return EXIT_USAGE
    summaries = run_targets([targets[t] for t in args.target], args.cases, args.results, pattern=args.k,
                            jobs=args.jobs, timeout_s=args.timeout, force=args.force,
                            progress=lambda line: print(line, flush=True))
    for summary in summaries:
        print(summary.line())
    print(f"results: {args.results}")
    if any(summary.harness_broken for summary in summaries):
        print("some cells are infra-error: the harness or environment failed them, see their records", file=sys.stderr)
        return EXIT_CELLS_BROKEN
    return EXIT_OK


def cmd_report(args) -> int:
    from reports.html import build_report

    missing = [str(p) for p in args.results if not p.exists()]
    if missing:
        print(f"error: results file(s) not found: {', '.join(missing)}", file=sys.stderr)
        return EXIT_USAGE
    build_report(args.results, args.out, matrix_path=args.matrix)
    print(f"report written to {args.out}")
    return EXIT_OK


def cmd_doctor(args) -> int:
    from harness.doctor import diagnose

    report = diagnose()
    print(json.dumps(report, indent=2, sort_keys=True))
    return EXIT_OK


def cmd_classify(args) -> int:
    from harness.worker.trt.classify import classify_log

    print(json.dumps(classify_log(args.logfile.read_text(errors="replace")).to_dict(), indent=2))
    return EXIT_OK


def cmd_layers(args) -> int:
    import dataclasses

    from harness.worker.trt.layers import OnnxNames, layers_from_file

    onnx_names = None
    if args.onnx is not None:
        import onnx

        onnx_names = OnnxNames.from_model(onnx.load(args.onnx))
    layers = layers_from_file(args.file, onnx_names)
    print(json.dumps([dataclasses.asdict(layer) for layer in layers], indent=2))
    return EXIT_OK


def add_cell_options(p: argparse.ArgumentParser) -> None:
    """-k, --jobs and --timeout: which cells run, how many at once, and for how long each."""
    p.add_argument("-k", metavar="PATTERN", help="only cells whose 'case/variant' matches PATTERN (glob or substring)")
    p.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="cells run at once (default: %(default)s)")
    p.add_argument("--timeout", type=float, default=300.0, help="seconds per cell before it is killed (default: %(default)s)")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m harness", description=DESCRIPTION,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--matrix", type=Path, default=DEFAULT_MATRIX, help="targets file (default: %(default)s)")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)

    p = commands.add_parser("generate", help="write the case library as ONNX models + data + index.json",
                            description="Write DIR/<case>/<variant>.onnx, DIR/<case>/<variant>.npz (inputs, calibration "
                            "batches, FP32 reference outputs) and DIR/index.json. Deterministic: byte-identical models.")
    p.add_argument("--out", type=Path, default=DEFAULT_CASES_DIR, help="output directory (default: %(default)s)")
    p.add_argument("-k", metavar="SUBSTRING", help="only cases whose id contains SUBSTRING")
    p.set_defaults(func=cmd_generate)

    p = commands.add_parser("list", help="list cases, variants and targets",
                            description="List every case and variant of the library and every target of the matrix.")
    p.set_defaults(func=cmd_list)

    p = commands.add_parser(
        "run", help="run cells on one target, appending one JSON record per cell",
        description="Run every cell (case/variant) of a cases directory on TARGET. Each cell runs in its own process "
        "with a timeout, so a crash or hang becomes a 'crash' or 'timeout' record and the run goes on. Records are "
        "appended to RESULTS the moment each cell ends; rerunning skips cells already recorded for TARGET, so an "
        "interrupted run resumes. Exit status: 0 when every cell has a record that speaks about its pattern "
        f"(pass, fallback, mismatch, fail, ...), {EXIT_CELLS_BROKEN} when some cell is infra-error, "
        f"{EXIT_USAGE} for bad arguments.")
    p.add_argument("--target", action="append", metavar="ID",
                   help="target id from matrix.yaml; repeat it to run several (docker targets on different engines run "
                   "at the same time). Default: the matrix's default target")
    p.add_argument("--cases", type=Path, default=DEFAULT_CASES_DIR, help="cases directory (default: %(default)s)")
    p.add_argument("--results", type=Path, default=DEFAULT_RESULTS, help="JSON Lines results file (default: %(default)s)")
    add_cell_options(p)
    p.add_argument("--force", action="store_true", help="run cells again even if RESULTS already has them")
    p.set_defaults(func=cmd_run)

    p = commands.add_parser("report", help="write the HTML compatibility matrix",
                            description="Merge one or more results files (the last record of a cell wins) into one "
                            "offline HTML file: observed cells, and upstream claims marked 'not run here'.")
    p.add_argument("--results", type=Path, nargs="+", required=True, help="JSON Lines results files")
    p.add_argument("--out", type=Path, default=Path("reports/out/index.html"), help="HTML file (default: %(default)s)")
    p.set_defaults(func=cmd_report)

    p = commands.add_parser("doctor", help="what this environment can run",
                            description="Print which backends import here, their versions, GPU/driver facts, and "
                            "whether a Docker engine answers. Run it first on a new GPU host or Jetson.")
    p.set_defaults(func=cmd_doctor)

    p = commands.add_parser("classify", help="classify a TensorRT build log",
                            description="Print JSON {category, node, message, warnings} for a TensorRT log file "
                            "(trtexec, Python logger, DeepStream or custom-logger output).")
    p.add_argument("logfile", type=Path)
    p.set_defaults(func=cmd_classify)

    p = commands.add_parser("layers", help="per-layer precision of a TensorRT engine",
                            description="Print JSON per engine layer (precision, ONNX nodes) from engine inspector JSON "
                            "or a verbose log's 'Engine Layer Information'; --onnx maps names to the model's nodes.")
    p.add_argument("file", type=Path)
    p.add_argument("--onnx", type=Path, help="the ONNX model the engine was built from")
    p.set_defaults(func=cmd_layers)

    from harness.docker.cli import add_container_commands
    from harness.nightly_cli import add_nightly_commands

    add_container_commands(commands)
    add_nightly_commands(commands)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command == "run" and not args.target:
        try:
            args.target = [default_target(load_matrix(args.matrix)).id]
        except MatrixError as err:
            print(f"error: {err}", file=sys.stderr)
            return EXIT_USAGE
    try:
        return args.func(args)
    except (MatrixError, ValueError, FileNotFoundError) as err:
        print(f"error: {err}", file=sys.stderr)
        return EXIT_USAGE
    except BrokenPipeError:  # e.g. `python -m harness list | head`
        sys.stderr.close()
        return EXIT_OK
    except KeyboardInterrupt:
        print("interrupted: records written so far are kept; rerun the same command to resume", file=sys.stderr)
        return 130
