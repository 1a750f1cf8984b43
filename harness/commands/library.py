"""``python -m harness generate | list``: the case library and the matrix's targets."""
from __future__ import annotations

from pathlib import Path

from harness.commands.options import DEFAULT_CASES_DIR, EXIT_OK, CommandError, no_match_error, output_directory
from harness.matrix import load_matrix


def cmd_generate(args) -> int:
    import cases
    from cases.generate import existing_index, generate

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
                     merge_into=former)
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


def add_library_commands(commands) -> None:
    p = commands.add_parser("generate", help="write the case library as ONNX models + data + index.json",
                            description="Write DIR/<case>/<variant>.onnx, DIR/<case>/<variant>.npz (inputs, calibration "
                            "batches, FP32 reference outputs) and DIR/index.json. Deterministic: byte-identical models.")
    p.add_argument("--out", type=Path, default=DEFAULT_CASES_DIR, help="output directory (default: %(default)s)")
    p.add_argument("-k", metavar="SUBSTRING", help="only cases whose id contains SUBSTRING; an index.json already in "
                   "DIR keeps its other cases (the selected ones replace their entries), so a later `run --cases DIR` "
                   "still runs them all")
    p.set_defaults(func=cmd_generate)

    p = commands.add_parser("list", help="list cases, variants and targets",
                            description="List every case and variant of the library and every target of the matrix.")
    p.set_defaults(func=cmd_list)
