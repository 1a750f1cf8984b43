"""The command line: ``trt-matrix <command>`` (also run as ``python -m harness <command>``)."""
from __future__ import annotations

import argparse
import atexit
import importlib
import os
import sys
import threading
from pathlib import Path

from harness.commands.options import (
    EXIT_BROKEN, EXIT_CODES_HELP, EXIT_INTERRUPTED, EXIT_OK, EXIT_USAGE, CommandError, check_target_arguments,
)
from harness.matrix import DEFAULT_MATRIX, default_target, find_matrix, load_matrix, say_on_first_read
from harness.worker.errors import InputError, RecordError

# Each module of harness/commands/ that adds commands, the function that adds them, and their names, in the order
# `--help` lists them. A command line imports only its own command's module (the others can pull in Docker's,
# history's or the log classifier's modules, which a `scan` in a pre-commit hook would pay for at every start).
COMMAND_MODULES = (
    ("library", "add_library_commands", ("generate", "facts", "list")),
    ("run", "add_run_commands", ("run", "report")),
    ("diagnose", "add_diagnose_commands", ("doctor", "classify", "layers", "diagnose")),
    ("containers", "add_container_commands", ("containers",)),
    ("nightly", "add_nightly_commands", ("nightly", "nightly-plan")),
    ("history", "add_history_commands", ("merge", "history", "diff")),
    ("scan", "add_scan_commands", ("scan",)),
    ("reduce", "add_reduce_commands", ("reduce",)),
)

DESCRIPTION = """\
Which TensorRT version and platform builds your INT8 model? trt-matrix generates minimal reproducer ONNX graphs of
known INT8 failure patterns, runs each (case, variant) cell on each target of matrix.yaml, and writes one JSON record
per cell and an HTML compatibility matrix.

Typical session (ONNX Runtime on this CPU, no GPU, no Docker):
  trt-matrix generate --out out/cases
  trt-matrix run --target ort-cpu --cases out/cases --results out/results.jsonl
  trt-matrix report --results out/results.jsonl --cases out/cases --out reports/out/index.html

Nightly, on each host, then on the host that publishes (see `trt-matrix nightly --help`):
  trt-matrix nightly --host-kind cpu --runs ~/trt-matrix/runs
  trt-matrix merge tonight/ --out site --trend trend.html
  trt-matrix history ~/trt-matrix/history --add tonight/ --out site/trend.html --junit site/regressions.xml
  trt-matrix diff OLD NEW --junit regressions.xml

Your own model: will it build in INT8 on each target, and why (see `trt-matrix scan --help`):
  trt-matrix scan my_model.onnx --results out/results.jsonl --run

A failed build: what its log, engine JSON, calibration cache or command says, and what is known of it (see
`trt-matrix diagnose --help`):
  trt-matrix diagnose build.log layers.json --model my_model.onnx --results out/results.jsonl
"""


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The command line's parser: with every command, or, given ``command``, with that one's module's commands only
    (the same parser for that command line)."""
    parser = argparse.ArgumentParser(prog="trt-matrix", description=DESCRIPTION, epilog=EXIT_CODES_HELP,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--matrix", type=Path, metavar="PATH", help="targets file (default: ./matrix.yaml when the "
                        f"current directory has one, else the one installed with trt-matrix: {DEFAULT_MATRIX})")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for module, add_commands, names in COMMAND_MODULES:
        if command is None or command in names:
            getattr(importlib.import_module(f"harness.commands.{module}"), add_commands)(commands)
    return parser


def _command_named(argv: list[str] | None) -> str | None:
    """The command a command line names, when it names one of :data:`COMMAND_MODULES`' and asks for no help (else
    None: the whole parser then reads it, lists every command or says what is wrong)."""
    before = argparse.ArgumentParser(add_help=False, exit_on_error=False)
    before.add_argument("-h", "--help", action="store_true")
    before.add_argument("--matrix")
    before.add_argument("command", nargs="?")
    try:
        known, _ = before.parse_known_args(argv)
    except argparse.ArgumentError:
        return None
    names = {name for _, _, names in COMMAND_MODULES for name in names}
    return known.command if known.command in names and not known.help else None


def main(argv: list[str] | None = None) -> int:
    parser = build_parser(_command_named(sys.argv[1:] if argv is None else argv))
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
    except BrokenPipeError:  # e.g. `trt-matrix list | head`
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


def run() -> None:
    """The installed ``trt-matrix`` command and ``python -m harness``: :func:`main`, then the process ends without
    freeing the imported libraries' objects one by one (onnx's, numpy's, the case library's: about 20 ms of a small
    scan, spent on memory the system takes back at once). Its output is flushed and its exit handlers run first, as
    at any exit; where another thread still runs, or the output cannot be flushed (a closed pipe), it exits the
    usual way."""
    status = main()
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except (OSError, ValueError):  # a closed pipe or stream: the usual exit says what it says of it
        sys.exit(status)
    if threading.active_count() > 1:  # the usual exit waits for it
        sys.exit(status)
    atexit._run_exitfuncs()  # noqa: SLF001  (what the usual exit runs: temporary directories, processes to end)
    os._exit(status)
