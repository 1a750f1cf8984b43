"""``python -m harness doctor | classify | layers``: what this environment can run, and what TensorRT output says."""
from __future__ import annotations

import json
import sys
from pathlib import Path

from harness.commands.options import EXIT_OK, EXIT_USAGE, CommandError, input_file


def cmd_doctor(args) -> int:
    from harness.orchestration.doctor import diagnose

    report = diagnose()
    print(json.dumps(report, indent=2, sort_keys=True))
    return EXIT_OK


def cmd_classify(args) -> int:
    from harness.worker.backends.tensorrt.classify import classify_log, not_a_log

    text = input_file(args.logfile, "a TensorRT log file").read_text(encoding="utf-8", errors="replace")
    problem = not_a_log(text)
    if problem:
        raise CommandError(f"{args.logfile}: does not look like a TensorRT log: {problem}")
    print(json.dumps(classify_log(text).to_dict(), indent=2))
    return EXIT_OK


def _onnx_names(path: Path):
    """The node names of the ONNX model at ``path``; a CommandError naming it when it is not a readable model."""
    import onnx

    from harness.worker.backends.tensorrt.layers import OnnxNames

    input_file(path, "the ONNX model the engine was built from")
    try:
        return OnnxNames.from_model(onnx.load(path, load_external_data=False))
    except Exception as err:  # protobuf's DecodeError and friends: the file is not an ONNX model
        raise CommandError(f"--onnx {path}: not a readable ONNX model ({type(err).__name__}: {err})") from None


def cmd_layers(args) -> int:
    import dataclasses

    from harness.worker.backends.tensorrt.layers import read_layers_file

    input_file(args.file, "engine inspector JSON or a verbose TensorRT log")
    onnx_names = _onnx_names(args.onnx) if args.onnx is not None else None
    read = read_layers_file(args.file, onnx_names)
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


def add_diagnose_commands(commands) -> None:
    p = commands.add_parser("doctor", help="what this environment can run",
                            description="Print which backends import here, their versions, GPU/driver facts, and "
                            "whether a Docker engine answers. Run it first on a new GPU host or Jetson.")
    p.set_defaults(func=cmd_doctor)

    p = commands.add_parser("classify", help="classify a TensorRT build log",
                            description="Print JSON {category, node, message, warnings} for a TensorRT log file "
                            "(trtexec, Python logger, DeepStream or custom-logger output). Exit status: "
                            f"{EXIT_OK}, {EXIT_USAGE} when the file is missing or does not look like a TensorRT log "
                            "(empty, binary, no logger tag or TensorRT message).")
    p.add_argument("logfile", type=Path)
    p.set_defaults(func=cmd_classify)

    p = commands.add_parser("layers", help="per-layer precision of a TensorRT engine",
                            description="Print JSON per engine layer (precision, ONNX nodes) from engine inspector JSON "
                            "or a verbose log's 'Layer(TYPE): NAME, Tactic: ...' lines (its last 'Engine Layer "
                            "Information' block, or such lines pasted anywhere, with any logger prefix). Either may be "
                            "pasted from a GitHub comment quote ('> ', nested '> > ') or carry line numbers, "
                            "timestamps or severities before every line. How many lines were read and skipped goes "
                            "to stderr. --onnx maps names to the model's nodes, and "
                            "warns when it maps fewer layers than the names alone. Exit status: "
                            f"{EXIT_OK}, {EXIT_USAGE} when a file is missing or not readable as what it should be.")
    p.add_argument("file", type=Path)
    p.add_argument("--onnx", type=Path, help="the ONNX model the engine was built from")
    p.set_defaults(func=cmd_layers)
