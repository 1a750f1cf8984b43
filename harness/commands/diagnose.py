"""``python -m harness doctor | classify | layers``: what this environment can run, and what TensorRT output says."""
from __future__ import annotations

import json
from pathlib import Path

from harness.commands.options import EXIT_OK


def cmd_doctor(args) -> int:
    from harness.orchestration.doctor import diagnose

    report = diagnose()
    print(json.dumps(report, indent=2, sort_keys=True))
    return EXIT_OK


def cmd_classify(args) -> int:
    from harness.worker.backends.tensorrt.classify import classify_log

    print(json.dumps(classify_log(args.logfile.read_text(errors="replace")).to_dict(), indent=2))
    return EXIT_OK


def cmd_layers(args) -> int:
    import dataclasses

    from harness.worker.backends.tensorrt.layers import OnnxNames, layers_from_file

    onnx_names = None
    if args.onnx is not None:
        import onnx

        onnx_names = OnnxNames.from_model(onnx.load(args.onnx))
    layers = layers_from_file(args.file, onnx_names)
    print(json.dumps([dataclasses.asdict(layer) for layer in layers], indent=2))
    return EXIT_OK


def add_diagnose_commands(commands) -> None:
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
