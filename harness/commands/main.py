"""The command line: ``python -m harness <command>`` (also installed as ``trt-matrix``)."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from harness.commands.containers import add_container_commands
from harness.commands.diagnose import add_diagnose_commands
from harness.commands.history import add_history_commands
from harness.commands.library import add_library_commands
from harness.commands.nightly import add_nightly_commands
from harness.commands.options import EXIT_OK, EXIT_USAGE
from harness.commands.run import add_run_commands
from harness.matrix import DEFAULT_MATRIX, MatrixError, default_target, load_matrix

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


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m harness", description=DESCRIPTION,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--matrix", type=Path, default=DEFAULT_MATRIX, help="targets file (default: %(default)s)")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    add_library_commands(commands)
    add_run_commands(commands)
    add_diagnose_commands(commands)
    add_container_commands(commands)
    add_nightly_commands(commands)
    add_history_commands(commands)
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
