"""``trt-matrix doctor | classify | layers | diagnose``: what this environment can run, what TensorRT output
says, and what the case library knows about a user's files."""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from harness.commands.options import (
    EXIT_BROKEN,
    EXIT_OK,
    EXIT_REGRESSION,
    EXIT_USAGE,
    CommandError,
    add_observations_option,
    add_target_argument,
    input_file,
    output_directory,
)

EXIT_BY_OUTCOME = {"explained": EXIT_OK, "applies": EXIT_REGRESSION, "no-kind": EXIT_USAGE, "damaged": EXIT_BROKEN}
DIAGNOSE_DESCRIPTION = f"""\
For each FILE, say what it is (told from its content, not its name), the facts it states, and what the case library
knows about them:

  TensorRT build log    any logger form (trtexec, Python trt.Logger, DeepStream, custom): TensorRT version, GPU,
                        compute capability and platform where printed, the failure (category, node), the INT8
                        warnings, the trtexec command, a calibration cache header it names, its layer lines
  engine layers         inspector JSON (--exportLayerInfo, IEngineInspector; cut-short excerpts too) or a layer list
                        pasted from a verbose log: the precision each layer ran in, and those that left the requested
                        precision (from TREx's NAME.build.metadata.json beside it, else the narrowest seen)
  build metadata        TREx's NAME.build.metadata.json: the model and the precision asked for
  calibration cache     TRT-<version>-<algorithm> header: reuse, rebuild, or not supported (11.x) per target (P11)
  command line          trtexec or Polygraphy: the flags a chosen target's TensorRT removed (10.0, 11.0)
  ONNX model            its summary and, scanned, the library's patterns in it

Logs and layer lists may be fragments pasted from an issue thread (quoted, fenced, wrapped, elided, without
tags). A failure message an upstream report prints names its pattern (a known failure); in a fragment that shows no
build that stopped (no error-tagged line, no build failure tail) it names the pattern and its evidence but applies to
no target: the fragment alone cannot prove the build failed. A form (a failing node's or warnings' shape that other
models share too) names a pattern the model must confirm: with --model (or one ONNX model among the FILEs), the model
is scanned (as `scan` does) and its findings are joined to the nodes the files name.
Per pattern: the verdict of the case's reported form on every target (observed records from --results, upstream
claims with their link), where it is fixed, and the workarounds known to pass.

Output: one paragraph per file, or --json. With a model, OUT/scan.json and OUT/scan.html gain a Diagnosis section.

Exit status: {EXIT_OK} every file identified and explained; {EXIT_REGRESSION} a known failure applies to a chosen
target (a known failure's pattern, or a form the model confirms, blocked or falling back there; a cache to rebuild or
not supported; a removed flag); {EXIT_USAGE} a file is of no kind this command reads (or bad arguments);
{EXIT_BROKEN} a file is damaged (or a --results file is).
{EXIT_BROKEN} wins over {EXIT_USAGE}, {EXIT_USAGE} over {EXIT_REGRESSION}.

  trt-matrix diagnose build.log
  trt-matrix diagnose build.log layers.json calib.cache --targets trt86-orin trt103-orin \\
      --results out/results.jsonl
  trt-matrix diagnose build.log --model model.onnx --out out/diagnose/model --json
"""


def cmd_doctor(args) -> int:
    from harness.orchestration.doctor import diagnose

    report = diagnose()
    print(json.dumps(report, indent=2, sort_keys=True))
    return EXIT_OK


def cmd_classify(args) -> int:
    from cases import library_signatures
    from harness.tensorrt.classify import classify_log, not_a_log

    text = input_file(args.logfile, "a TensorRT log file").read_text(encoding="utf-8", errors="replace")
    signatures = library_signatures()
    classification = classify_log(text, signatures)
    problem = not_a_log(text, signatures, classification)
    if problem:
        raise CommandError(f"{args.logfile}: does not look like a TensorRT log: {problem}")
    print(json.dumps(classification.to_dict(), indent=2))
    return EXIT_OK


def _onnx_names(path: Path):
    """The node names of the ONNX model at ``path``; a CommandError naming it when it is not a readable model."""
    import onnx

    from harness.tensorrt.layers import OnnxNames

    input_file(path, "the ONNX model the engine was built from")
    try:
        return OnnxNames.from_model(onnx.load(path, load_external_data=False))
    except Exception as err:  # protobuf's DecodeError and friends: the file is not an ONNX model
        raise CommandError(f"--onnx {path}: not a readable ONNX model ({type(err).__name__}: {err})") from None


def cmd_layers(args) -> int:
    import dataclasses

    from harness.tensorrt.layers import read_layers_file

    input_file(args.file, "engine inspector JSON or a verbose TensorRT log")
    onnx_names = _onnx_names(args.onnx) if args.onnx is not None else None
    try:
        read = read_layers_file(args.file, onnx_names)
    except ValueError as err:  # the reader's word for a file that is not engine JSON or a log: the user's input
        as_log = _as_build_log(args.file)
        raise CommandError(f"{str(err).rstrip('.')}. {as_log}" if as_log else str(err)) from None
    print(f"{args.file}: {read.summary()}", file=sys.stderr)
    if onnx_names is not None:
        mapped = sum(bool(layer.onnx_nodes) for layer in read.layers)
        by_name = sum(bool(layer.onnx_nodes) for layer in read_layers_file(args.file).layers)
        if mapped < by_name:
            print(f"warning: {args.file}: with --onnx {args.onnx}, {mapped} of {len(read.layers)} layer(s) map to a "
                  f"node of that model, fewer than the {by_name} the layer names give alone: is {args.onnx} the "
                  "model this engine was built from?", file=sys.stderr)
    print(json.dumps([dataclasses.asdict(layer) for layer in read.layers], indent=2))
    return EXIT_OK


def _as_build_log(path: Path) -> str:
    """What a file without layers says as TensorRT output, for the error of `layers`: its failure or the known failure
    it names (or that it shows none), and the commands that read it; "" when it is not TensorRT output (the readers'
    one test, ``classify.not_a_log``)."""
    from cases import library_signatures
    from harness.tensorrt.classify import classify_log, not_a_log

    text = path.read_text(encoding="utf-8", errors="replace")
    signatures = library_signatures()
    if not_a_log(text, signatures):
        return ""
    result = classify_log(text, signatures)
    if result.category is None and result.known_failure is None:
        warned = ", ".join(f"{kind} x{count}" for kind, count in result.warnings.items() if count)
        return (f"It is TensorRT output without layer lines (no failure shown{'; ' + warned if warned else ''}): "
                f"`trt-matrix classify {path}` or `trt-matrix diagnose {path}` read it.")
    said = [result.category or "no failure shown"]
    if result.known_failure is not None:
        said.append(f"known failure {result.known_failure.id} (pattern {result.known_failure.pattern})")
    return (f"It reads as a TensorRT build log instead ({', '.join(said)}): `trt-matrix classify {path}` or "
            f"`trt-matrix diagnose {path}` read it.")


def cmd_diagnose(args) -> int:
    from harness.diagnosis.diagnose import DiagnoseOptions, diagnose_files
    from harness.diagnosis.render import diagnosis_data, diagnosis_headline, diagnosis_text
    from harness.matrix import load_matrix
    from harness.scan.loading import ModelInputError
    from harness.evidence.observations import ObservationsError

    matrix = load_matrix(args.matrix)
    for path in args.files:
        input_file(path, "a file to diagnose (a TensorRT log, engine layers, a calibration cache, a command line, "
                   "an ONNX model)")
    if args.model is not None:
        input_file(args.model, "the ONNX model the files come from")
    out_dir = output_directory(args.out or Path("out/diagnose") / (args.model or args.files[0]).stem, "--out")
    options = DiagnoseOptions(targets=[matrix[t] for t in args.targets or matrix], matrix=list(matrix.values()),
                              results=args.results or [], model=args.model, out_dir=out_dir)
    try:
        import cases  # noqa: F401  (registers the case library: the patterns and evidence matched against)

        diagnosis = diagnose_files(args.files, options)
    except (ModelInputError, ObservationsError) as err:
        raise CommandError(str(err)) from None
    status = EXIT_BY_OUTCOME[diagnosis.outcome]
    data = diagnosis_data(diagnosis, status)
    if diagnosis.scan is not None:
        from reports.scan_results import HTML_NAME, JSON_NAME, scan_data, write_results

        data["scan_results"] = [str(out_dir / name) for name in (JSON_NAME, HTML_NAME)]
        write_results({**scan_data(diagnosis.scan), "diagnosis": data}, out_dir)
    if args.json:
        print(json.dumps(data, indent=1))
    else:
        print(diagnosis_headline(diagnosis) + "\n\n" + diagnosis_text(diagnosis))
        if diagnosis.scan is not None:
            print(f"\nresults: {', '.join(data['scan_results'])}")
    return status


def add_diagnose_commands(commands) -> None:
    p = commands.add_parser("doctor", help="what this environment can run",
                            description="Print which backends import here, their versions, GPU/driver facts, and "
                            "whether a Docker engine answers. Run it first on a new GPU host or Jetson.")
    p.set_defaults(func=cmd_doctor)

    p = commands.add_parser("classify", help="classify a TensorRT build log",
                            description="Print JSON {category, node, message, warnings, known_failure, failure_shown} "
                            "for a TensorRT log file (trtexec, Python logger, DeepStream or custom-logger output), or a "
                            "fragment of one pasted from an issue thread: quote markers ('> ', '&gt; '), code fences, "
                            "inline backticks, colour codes and CRLF are removed, wrapped lines joined, lines without a "
                            "severity tag read for their message. known_failure names the upstream report and failure "
                            "pattern the message belongs to; failure_shown is false when the text carries a failure's "
                            "message but shows no build that stopped (no error-tagged line, no build failure tail): "
                            "the fragment alone cannot prove the build failed. Exit status: "
                            f"{EXIT_OK}, {EXIT_USAGE} when the file is missing or does not look like a TensorRT log "
                            "(empty, binary, no logger tag or TensorRT message).")
    p.add_argument("logfile", type=Path)
    p.set_defaults(func=cmd_classify)

    p = commands.add_parser("layers", help="per-layer precision of a TensorRT engine",
                            description="Print JSON per engine layer (precision, ONNX nodes) from engine inspector JSON "
                            "or a verbose log's 'Layer(TYPE): NAME, Tactic: ...' lines (its last 'Engine Layer "
                            "Information' block, or such lines pasted anywhere, with any logger prefix, also wrapped "
                            "by a terminal or a PDF) or the inspector's one-line records ('Name: N, LayerType: T, "
                            "Inputs: [...], ...'). Each may be pasted from a GitHub comment quote ('> ', nested "
                            "'> > ', '&gt; '), in a code fence, with colour codes, or carry line numbers, timestamps "
                            "or severities before every line. How many lines were read and skipped goes to stderr; a "
                            "build log without layer lines is refused with what it reads as instead. --onnx maps names "
                            "to the model's nodes, and "
                            "warns when it maps fewer layers than the names alone. Exit status: "
                            f"{EXIT_OK}, {EXIT_USAGE} when a file is missing or not readable as what it should be.")
    p.add_argument("file", type=Path)
    p.add_argument("--onnx", type=Path, help="the ONNX model the engine was built from")
    p.set_defaults(func=cmd_layers)

    p = commands.add_parser("diagnose", help="what a log, engine JSON, cache, command or model is, and what is known",
                            description=DIAGNOSE_DESCRIPTION, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("files", type=Path, nargs="+", metavar="FILE", help="files to diagnose, of any kind above")
    p.add_argument("--model", type=Path, metavar="MODEL.onnx", help="the ONNX model the files come from: scanned, and "
                   "its findings joined to the nodes the files name")
    add_target_argument(p, "--targets", nargs="+", metavar="ID", help="the chosen targets: where a known failure makes "
                        "the exit status 1 (default: every target of the matrix)")
    add_observations_option(p)
    p.add_argument("--json", action="store_true", help="print the diagnosis as JSON instead of text")
    p.add_argument("--out", type=Path, metavar="DIR", help="with a model: where scan.json and scan.html go (default: "
                   "out/diagnose/<model name>)")
    p.set_defaults(func=cmd_diagnose)
