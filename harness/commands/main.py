"""The command line: ``python -m harness <command>`` (also installed as ``trt-matrix``)."""
from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from harness.commands.containers import add_container_commands
from harness.commands.diagnose import add_diagnose_commands
from harness.commands.history import add_history_commands
from harness.commands.library import add_library_commands
from harness.commands.nightly import add_nightly_commands
from harness.commands.options import (
    EXIT_BROKEN, EXIT_CODES_HELP, EXIT_INTERRUPTED, EXIT_OK, EXIT_USAGE, CommandError, check_target_arguments,
)
from harness.commands.run import add_run_commands
from harness.commands.reduce import add_reduce_commands
from harness.commands.scan import add_scan_commands
from harness.matrix import DEFAULT_MATRIX, default_target, find_matrix, load_matrix, say_on_first_read
from harness.store.results_file import RecordError
from harness.worker.errors import InputError

DESCRIPTION = """\
Which TensorRT version and platform builds your INT8 model? trt-matrix generates minimal reproducer ONNX graphs of
known INT8 failure patterns, runs each (case, variant) cell on each target of matrix.yaml, and writes one JSON record
per cell and an HTML compatibility matrix.

Typical session (ONNX Runtime on this CPU, no GPU, no Docker):
  python -m harness generate --out out/cases
  python -m harness run --target ort-cpu --cases out/cases --results out/results.jsonl
  python -m harness report --results out/results.jsonl --cases out/cases --out reports/out/index.html

Nightly, on each host, then on the host that publishes (see `python -m harness nightly --help`):
  python -m harness nightly --host-kind cpu --runs ~/trt-matrix/runs
  python -m harness merge tonight/ --out site --trend trend.html
  python -m harness history ~/trt-matrix/history --add tonight/ --out site/trend.html --junit site/regressions.xml
  python -m harness diff OLD NEW --junit regressions.xml

Your own model: will it build in INT8 on each target, and why (see `python -m harness scan --help`):
  python -m harness scan my_model.onnx --results out/results.jsonl --run

A failed build: what its log, engine JSON, calibration cache or command says, and what is known of it (see
`python -m harness diagnose --help`):
  python -m harness diagnose build.log layers.json --model my_model.onnx --results out/results.jsonl
"""


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m harness", description=DESCRIPTION, epilog=EXIT_CODES_HELP,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--matrix", type=Path, metavar="PATH", help="targets file (default: ./matrix.yaml when the "
                        f"current directory has one, else the one installed with trt-matrix: {DEFAULT_MATRIX})")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    add_library_commands(commands)
    add_run_commands(commands)
    add_diagnose_commands(commands)
    add_container_commands(commands)
    add_nightly_commands(commands)
    add_history_commands(commands)
    add_scan_commands(commands)
    add_reduce_commands(commands)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        matrix = find_matrix(args.matrix)
        args.matrix = matrix.path
        if matrix.chosen_by == "installed":  # the one choice a user may not expect: said once, when it is read
            say_on_first_read(matrix.path, f"matrix: {matrix.path} (trt-matrix's own; no --matrix given and no "
                              "matrix.yaml in the current directory)")
        check_target_arguments(args)
        if args.command == "run" and not args.target:
            args.target = [default_target(load_matrix(args.matrix)).id]
        return args.func(args)
    except CommandError as err:
        print(f"error: {err}", file=sys.stderr)
        return err.status
    except RecordError as err:  # a damaged line of a results file the tool wrote
        print(f"error: {err}", file=sys.stderr)
        return EXIT_BROKEN
    except (InputError, FileNotFoundError) as err:  # the user's input, named; a plain ValueError is a bug (below)
        print(f"error: {err}", file=sys.stderr)
        return EXIT_USAGE
    except BrokenPipeError:  # e.g. `python -m harness list | head`
        sys.stderr.close()
        return EXIT_OK
    except OSError as err:  # a path of the wrong kind, a permission: one line naming the file, never a traceback
        where = f"{err.filename}: " if err.filename else ""
        print(f"error: {where}{(err.strerror or str(err)).lower()}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print("interrupted: records written so far are kept; rerun the same command to resume", file=sys.stderr)
        return EXIT_INTERRUPTED
    except Exception as err:  # a harness bug: one line, the traceback only on request
        if os.environ.get("TRT_MATRIX_TRACEBACK"):
            raise
        print(f"error: internal error of the harness: {type(err).__name__}: {err} (set TRT_MATRIX_TRACEBACK=1 to "
              "see where; please report it)", file=sys.stderr)
        return EXIT_BROKEN
