"""``trt-matrix reduce MODEL.onnx --target T``: the smallest subgraph of MODEL that fails on T the same way,
as a model, a report and a new case module."""
from __future__ import annotations

import argparse
from pathlib import Path

from harness.commands.options import (EXIT_BROKEN, EXIT_OK, EXIT_USAGE, CommandError, add_target_argument, input_file,
                                      input_shape, output_directory, positive_seconds)
from harness.matrix import load_matrix

DESCRIPTION = f"""\
Shrink MODEL, which fails on target T, to the smallest subgraph that fails there the same way: the minimal
reproducer an upstream maintainer asks for, made into a case of the library.

0. A cell needs static input sizes: each symbolic dimension of MODEL's inputs (an exported model's dynamic batch)
   is set to 1, as `scan --run` does for its reproducers, unless --input-shape NAME:D1xD2... gives the input's
   shape; the model with those sizes is written to DIR/static-inputs.onnx and reduced, and each decision is printed
   and kept in reduce.json (input_shapes, input_notes).
1. The whole model runs once on T through the harness (in T's container for a docker target, as `run` and
   `scan --run` do) to learn the failure to keep: its outcome, failure category and error kind (the exception or
   status its message starts with), and with --keep node the node it names. A model that passes says so (exit 0).
2. `polygraphy debug reduce` cuts the model down, bisect first, then linear on what bisect left. Its check runs
   each candidate on T through the same worker and counts it as failing only when it fails the same way. A docker
   target keeps one container alive for every check (its worker stays up, the backend imported once, and serves
   one check after another); --container-per-check starts a fresh one each time instead. Each check's time and result are printed as it ends.
3. The reduced model is checked once more, and DIR gets reduced.onnx, reduce.json (failure kept, every check,
   nodes before and after, time) and case_<id>.py, a case module that rebuilds the reduced graph with
   onnx-graphsurgeon, with a test of its structure beside it (test_case_<id>.py).

Interrupted (Ctrl-C, a lost connection)? Run the same command again: the reduction resumes from DIR's debug replays
(polygraphy --load-debug-replay) without re-running the checks it already did.

Exit status: {EXIT_OK} reduced (or nothing to reduce: the model passes on T), {EXIT_USAGE} bad input (not a model,
an unknown or unavailable target, an --input-shape that names no input or does not fit it, a model whose inputs or
reference outputs cannot be made, --keep node for a failure that names no node, a model the target reports
unavailable), {EXIT_BROKEN} the harness or the reduction broke (infra-error on the whole model, the target's engine
or container, polygraphy failed, or the reduced model no longer fails the same way).

  trt-matrix reduce model.onnx --target ort-cpu --out out/reduce/model
  trt-matrix reduce model.onnx --target ort1.15-cpu --keep node
  trt-matrix reduce model.onnx --target trt86-orin --input-shape input:8x3x224x224
"""


def cmd_reduce(args) -> int:
    from harness.reduction.candidate import CandidateError
    from harness.reduction.failure import NothingToReduce
    from harness.reduction.input_shapes import InputShapeError
    from harness.reduction.reducer import Request, reduce_model
    from harness.reduction.session import RunnerError
    from harness.reduction.state import SessionFileError

    from harness.scan.loading import load_model

    model = input_file(args.model, "an ONNX model")
    load_model(model)  # a file that is no model, truncated, or too new says so here (ModelInputError: exit 2)
    matrix = load_matrix(args.matrix)
    out_dir = output_directory(args.out or Path("out/reduce") / model.stem, "--out")
    request = Request(model=model, target=matrix[args.target], matrix=args.matrix, keep=args.keep, out_dir=out_dir,
                      timeout_s=args.timeout, container_per_check=args.container_per_check,
                      keep_weights=args.keep_weights, input_shapes=_input_shapes(args.input_shape or []))
    progress = lambda line: print(line, flush=True)  # noqa: E731
    try:
        result = reduce_model(request, progress)
    except NothingToReduce as err:
        if err.exit_status == EXIT_OK:
            print(f"{model}: {err}", flush=True)
            return EXIT_OK
        raise CommandError(f"{model}: {err}", err.exit_status) from None
    except (InputShapeError, CandidateError) as err:
        raise CommandError(str(err)) from None
    except RunnerError as err:
        raise CommandError(f"{args.target}: {err}", EXIT_BROKEN) from None
    except SessionFileError as err:
        raise CommandError(str(err), EXIT_BROKEN) from None
    except RuntimeError as err:
        raise CommandError(str(err), EXIT_BROKEN) from None
    summary = result.summary
    print(f"reduced {summary['nodes_before']} -> {summary['nodes_after']} nodes ({summary['ratio']:.1%}) in "
          f"{summary['checks']} checks, {summary['wall_s']:.1f} s; the reduced model: {summary['reduced_record']}")
    print(f"written: {result.reduced}, {out_dir / 'reduce.json'}")
    if summary["case_module"]:
        print(f"case {summary['case_id']}: {summary['case_module']} (copy it into cases/) and its test "
              f"{summary['case_test']} (into tests/cases/)")
    else:
        print(f"warning: no case module: {summary['case_problem']}", flush=True)
    if not summary["reduced_reproduces"]:
        print(f"error: the reduced model no longer fails the same way ({summary['reduced_record']}); see "
              f"{out_dir / 'reduce.json'}", flush=True)
    return result.exit_status


def _input_shapes(pairs: list[tuple[str, list[int]]]) -> dict[str, list[int]]:
    """--input-shape NAME:D1xD2... pairs as input name -> shape; one input named twice is refused."""
    shapes: dict[str, list[int]] = {}
    for name, shape in pairs:
        if name in shapes and shapes[name] != shape:
            raise CommandError(f"--input-shape names input {name!r} twice, {shapes[name]} and {shape}: give one")
        shapes[name] = shape
    return shapes


def add_reduce_commands(commands) -> None:
    p = commands.add_parser("reduce", help="shrink a model failing on a target to a minimal reproducer and a case",
                            description=DESCRIPTION, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("model", type=Path, metavar="MODEL.onnx", help="the failing ONNX model")
    add_target_argument(p, "--target", required=True, metavar="ID",
                        help="the matrix.yaml target it fails on (local or docker)")
    p.add_argument("--keep", choices=("category", "node"), default="category",
                   help="what must stay the same: outcome, category and error kind (category, the default), and "
                   "also the failing node's name (node)")
    p.add_argument("--out", type=Path, metavar="DIR", help="output directory (default: out/reduce/<model name>); "
                   "rerunning into it resumes")
    p.add_argument("--timeout", type=positive_seconds, default=300.0, help="seconds per check before it is killed "
                   "(default: %(default)s)")
    p.add_argument("--container-per-check", action="store_true",
                   help="docker targets: a fresh container for every check instead of one kept alive")
    p.add_argument("--input-shape", nargs="+", action="extend", type=input_shape, metavar="NAME:D1xD2...",
                   help="the shape input NAME runs with, every dimension given (e.g. input:8x3x224x224), as "
                   "polygraphy names one; inputs not named have each symbolic dimension set to 1")
    p.add_argument("--keep-weights", action="store_true",
                   help="the case module carries the model's own weights (default: drawn with a fixed seed in the "
                   "same shapes and dtypes; Q/DQ scales, shapes and small constants are always as written)")
    p.set_defaults(func=cmd_reduce)
