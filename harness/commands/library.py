"""``trt-matrix generate | list``: the case library and the matrix's targets."""
from __future__ import annotations

from pathlib import Path

import argparse
import json
import re

from harness.commands.options import (
    DEFAULT_CASES_DIR, EXIT_OK, CommandError, add_target_argument, no_match_error, output_directory,
)
from harness.matrix import load_matrix


def cmd_generate(args) -> int:
    import cases
    from cases.generate import existing_index, generate
    from harness.scan.predicted import predicted_entry

    output_directory(args.out, "--out")
    selected = [c for c in cases.all_cases() if not args.k or args.k in c.id]
    if not selected:
        raise no_match_error(args.k, (c.id for c in cases.all_cases()), "the case library")
    former = None
    if args.k:  # a part of the library: merged into DIR's index, never in place of it
        try:
            former = existing_index(args.out)
        except ValueError as err:
            raise CommandError(str(err)) from None
    index = generate(args.out, selected, progress=lambda name: print(f"generated {name}", flush=True),
                     merge_into=former, entry_extras=predicted_entry)
    written = {case.id for case in selected}
    variants = sum(len(c["variants"]) for c in index["cases"] if c["id"] in written)
    line = f"{variants} variant(s) of {len(written)} case(s) written to {args.out} (index: {args.out / 'index.json'}"
    if former is not None:
        kept = len(index["cases"]) - len(written)
        line += f", merged: it lists {len(index['cases'])} case(s), {kept} of them kept from before as they were"
    print(line + ")")
    return EXIT_OK


def cmd_list(args) -> int:
    import cases

    targets = load_matrix(args.matrix)
    print("Cases (case/variant  [role, mode]):")
    for case in cases.all_cases():
        print(f"  {case.id}: {case.title}  [{case.pattern}]")
        for variant in case.variants:
            print(f"    {case.id}/{variant.name}  [{variant.role}, {case.mode_of(variant)}]")
    print("\nTargets (from %s):" % args.matrix)
    width = max(len(target.id) for target in targets.values())
    print(f"  {'target':<{width}} {'backend':<12} {'runner':<7} {'platform':<8} {'gpu':<7} {'version':<8} "
          f"{'JetPack':<8} state")
    for target in targets.values():
        state = "available" if target.available else f"unavailable: {target.reason}"
        dla = f"DLA core {target.dla_core} (GPU fallback), " if target.dla_core is not None else ""
        default = "  (default)" if target.default else ""
        print(f"  {target.id:<{width}} {target.backend:<12} {target.runner:<7} {target.platform:<8} "
              f"{target.gpu_arch:<7} {target.version or '-':<8} {target.jetpack or '-':<8} {dla}{state}{default}")
    return EXIT_OK


# The facts a planner compares, in the order of the table: (column title, fact key).
FACT_COLUMNS = (("implicit INT8", "implicit-int8"), ("strong typing", "strong-typing"),
                ("FP8 flag", "fp8-builder-flag"), ("FP8 Q/DQ", "fp8-qdq"), ("FP4 Q/DQ", "fp4-qdq"), ("DLA", "dla"),
                ("INT64", "int64-type"))


def cmd_facts(args) -> int:
    from harness.targets import facts as target_facts

    targets = load_matrix(args.matrix)
    if args.gpu_arch and not re.fullmatch(r"sm_\d{2,3}", args.gpu_arch):
        raise CommandError(f"--gpu-arch {args.gpu_arch!r} is not a GPU architecture such as sm_89 (compute "
                           "capability 8.9) or sm_120")
    chosen = [targets[t] for t in args.targets] or [t for t in targets.values()
                                                     if t.backend == "tensorrt" and t.version and t.available]
    known = {t.id: target_facts.target_facts(t, args.gpu_arch) for t in chosen}
    if args.json:
        print(json.dumps({target: {what: fact._asdict() for what, fact in found.facts.items()}
                          for target, found in known.items()}, indent=1))
        return EXIT_OK
    words = {target_facts.PRESENT: "yes", target_facts.DEPRECATED: "deprecated", target_facts.ABSENT: "no",
             target_facts.NOT_KNOWN: "?"}
    print("What each TensorRT target can and cannot do, read from the recorded API surfaces, the quantization "
          "lifecycle and the release facts (yes, deprecated, no; ? not known" +
          ("" if args.gpu_arch else "; an x86 target's GPU facts need --gpu-arch") + "):")
    width = max(len(t.id) for t in chosen)
    print(f"  {'target':<{width}} {'JetPack':<7} {'GPU':<6} " + " ".join(f"{title:<13}" for title, _ in FACT_COLUMNS))
    for target in chosen:
        found = known[target.id]
        cells = [words[found.get(key).value] if found.get(key) else "-" for _, key in FACT_COLUMNS]
        print(f"  {target.id:<{width}} {target.jetpack or '-':<7} {args.gpu_arch or target.gpu_arch:<6} "
              + " ".join(f"{cell:<13}" for cell in cells))
    if not args.targets:
        print("\nName targets (trt-matrix facts trt107-orin trt114-orin) for each fact's source and remedy.")
        return EXIT_OK
    if len(chosen) > 1:
        differ = [(title, key) for title, key in FACT_COLUMNS
                  if len({known[t.id].get(key).value for t in chosen if known[t.id].get(key)}) > 1]
        print("\nWhere they differ: " + (", ".join(title for title, _ in differ) if differ else "nowhere"))
    for target in chosen:
        print(f"\n{target.id}: {target.title}")
        for fact in known[target.id].facts.values():
            print(f"  {fact.what}: {words.get(fact.value, fact.value)}. {fact.statement}")
            if fact.remedy:
                print(f"    what to do: {fact.remedy}")
            if fact.sources:
                print(f"    {fact.certainty}; sources: {', '.join(fact.sources)}")
    return EXIT_OK


def add_library_commands(commands) -> None:
    p = commands.add_parser("generate", help="write the case library as ONNX models + data + index.json",
                            description="Write DIR/<case>/<variant>.onnx, DIR/<case>/<variant>.npz (inputs, calibration "
                            "batches, FP32 reference outputs) and DIR/index.json. Deterministic: byte-identical models.")
    p.add_argument("--out", type=Path, default=DEFAULT_CASES_DIR, help="output directory (default: %(default)s)")
    p.add_argument("-k", metavar="SUBSTRING", help="only cases whose id contains SUBSTRING; an index.json already in "
                   "DIR keeps its other cases (the selected ones replace their entries), so a later `run --cases DIR` "
                   "still runs them all")
    p.set_defaults(func=cmd_generate)

    p = commands.add_parser(
        "facts", help="what each TensorRT target can and cannot do (implicit INT8, FP8/FP4, DLA, typing), with sources",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description="What each TensorRT target of the matrix can and cannot do before anything runs on it: implicit "
        "INT8 (a calibrator: supported, deprecated from 10.1, gone in 11.0), strong typing, the FP8 builder flag, FP8 "
        "and FP4 Q/DQ (by release and by GPU: FP8 needs SM 8.9+, FP4 a Blackwell GPU), DLA (Orin up to 10.7 and from "
        "11.4.1), INT64. Read from the recorded TensorRT API surfaces, the quantization lifecycle and the release "
        "facts; each fact with its source and how it was established.",
        epilog="Examples:\n"
        "  trt-matrix facts                                   every TensorRT target, one line each\n"
        "  trt-matrix facts trt107-orin trt1016-orin trt114-orin   JetPack 6 or 7 on Orin: where they differ, "
        "each fact's source\n"
        "  trt-matrix facts trt1016-x86 --gpu-arch sm_89      an x86 target on an L4 / RTX 40 host")
    add_target_argument(p, "targets", nargs="*", metavar="TARGET", help="targets of the matrix (default: every "
                        "TensorRT target that exists)")
    p.add_argument("--gpu-arch", metavar="sm_NN", help="the GPU of the host, for x86 targets whose GPU is any "
                   "(sm_86 Ampere, sm_89 Ada, sm_90 Hopper, sm_120 Blackwell)")
    p.add_argument("--json", action="store_true", help="print the facts as JSON")
    p.set_defaults(func=cmd_facts)

    p = commands.add_parser("list", help="list cases, variants and targets",
                            description="List every case and variant of the library and every target of the matrix.")
    p.set_defaults(func=cmd_list)
