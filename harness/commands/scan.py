"""``trt-matrix scan MODEL.onnx``: will the model build in INT8 on each target, and why."""
from __future__ import annotations

import argparse
import gc
import os
import sys
import textwrap
from pathlib import Path

from harness.commands.options import (
    EXIT_BROKEN,
    EXIT_OK,
    EXIT_PARTIAL,
    EXIT_REGRESSION,
    EXIT_USAGE,
    CommandError,
    add_observations_option,
    add_target_argument,
    output_directory,
    positive_int,
    positive_seconds,
)
from harness.matrix import default_target, load_matrix
from harness.scan.formats import FORMATS
from harness.judgement import (
    BASIS, SCAN_FAIL_ON_DEFAULT, SCAN_FAIL_ON_LEVELS, SCAN_FAILING, SCAN_GOOD, SCAN_VERDICT_MEANINGS,
)
from reports.scan_results import scan_data, send_engine, send_places, start_page, write_results

EXIT_FAILS = EXIT_REGRESSION  # the gate fails: some chosen target is predicted or observed to fail (see --fail-on)
SHOWN_NODES = 3
VERDICTS_HELP = "\n".join(textwrap.fill(meaning, 116, initial_indent=f"  {verdict:<12} ", subsequent_indent=" " * 15)
                          for verdict, meaning in SCAN_VERDICT_MEANINGS.items())

DESCRIPTION = f"""\
Find every known INT8 failure pattern of the case library in MODEL (each case's matcher, reported with your own
node names), then say per target of matrix.yaml whether the model is expected to build in INT8, and why:

{VERDICTS_HELP}

Evidence: records you point --results at (a results file, a run directory, a `merge --out` directory or a history
store; the latest record of each cell per host), the library's upstream claims (link and strength: never shown as
observed), and with --run your own layers: each match is cut out of MODEL with its shapes, weights and Q/DQ scales,
written as a reproducer (OUT/reproducers: index.json + .onnx + .npz, the layout `run` reads) and run on the
--run-on targets (default: the matrix's default target). Known workarounds of a pattern are listed per target.
Writes OUT/scan.json and OUT/scan.html (offline, self-contained).

It prints the answer first: the model, its quantization and predicted engine in one line; the patterns found; where
the verdict changes between the versions of a platform; then each distinct verdict once, with its reason, basis and
fix, and the targets it covers (`TensorRT 8.5-11.4 on Orin, Orin DLA, Thor and x86, 22 targets`). --verbose prints
a line per target instead. --format json|markdown|sarif|github writes scan.json, a job summary, SARIF 2.1.0 or GitHub
annotations to stdout instead; --report FORMAT=FILE writes one beside (repeatable). Several models may be given.

--fix rewrites the model into the workaround forms with the best evidence on the chosen targets (observed pass, then
claimed pass; never one that fails or is unverified there) with each case's own rewrite, checks the result (checker
and strict shapes, same inputs and outputs, the same FP32 outputs on ONNX Runtime, a second scan) and writes
OUT/fixed.onnx, one per group of targets that need different fixes (weights kept in external data files go to
OUT/fixed.onnx.data). It never changes your weights or scales.
--to-explicit first quantizes an implicit-INT8 model to explicit Q/DQ for TensorRT 11 (OUT/explicit.onnx).

Exit status: {EXIT_OK} nothing chosen fails, {EXIT_FAILS} some target is blocked (--fail-on: also fallback, or also
unverified), {EXIT_USAGE} bad input (not an ONNX file, a truncated file, an opset too new for the installed onnx,
missing external data, an unknown target or results path), {EXIT_BROKEN} the evidence was damaged (bad lines in a
--results file, a matcher that failed, infra-error cells in --run): the verdicts use what could be read, and
{EXIT_BROKEN} wins over {EXIT_FAILS}. With --fix the status is computed on the fixed models; {EXIT_PARTIAL} when the
fix is partial: a place none of the workarounds can be rewritten into (e.g. an act x act MatMul with no quantizer
of the model to take a scale from), or whose rewrite makes the fixed model fail a check (found by bisection; the
check's figures are named), is left as it is and listed with its reason, the rest is written and checked
({EXIT_PARTIAL} wins over {EXIT_FAILS} and {EXIT_OK}, {EXIT_BROKEN} over {EXIT_PARTIAL}); {EXIT_USAGE} when a
--workaround cannot be applied to its case's form (nothing is written). --to-explicit: {EXIT_USAGE} when
ONNX Runtime's quantization cannot process the model (the library, the step and what to try are named; when its
symbolic shape inference fails, it is retried without it first, and the notes say so).

  trt-matrix scan model.onnx --results out/results.jsonl
  trt-matrix scan model.onnx --targets trt86-orin trt100-orin --results ~/trt-matrix/history --fail-on fallback
  trt-matrix scan model.onnx --run --out out/scan/model
  trt-matrix scan model.onnx --run --run-on ort-cpu trt86-orin --targets trt86-orin
  trt-matrix scan model.onnx --fix --targets trt86-orin trt100-x86 --inputs sample.npz
  trt-matrix scan fp32_model.onnx --to-explicit --calibration-data calib/ --targets trt103-orin
"""


MULTI_MODEL_WORST = (EXIT_OK, EXIT_FAILS, EXIT_USAGE, EXIT_BROKEN)  # a scan of several models exits with its worst


def cmd_scan(args) -> int:
    models, reports = args.model, _reports(args.report or [])
    if len(models) > 1 and (args.fix or args.to_explicit):
        raise CommandError("--fix and --to-explicit take one model; scan the others apart")
    statuses, names, collected = [], set(), []
    for model in models:
        name = model.stem if model.stem not in names else f"{model.stem}-{len(names)}"
        names.add(name)
        out = args.out if len(models) == 1 else (args.out or Path("out/scan")) / name
        one = argparse.Namespace(**{**vars(args), "model": model, "out": out, "collected": collected})
        if args.format == "text" and len(models) > 1:
            print(f"== {model}")
        try:
            statuses.append(_scan_model(one))
        except CommandError as err:
            if len(models) == 1:
                raise
            print(f"error: {err}", file=sys.stderr)  # one bad file does not stop the others: named, exit 2
            statuses.append(err.status)
    if collected:
        from harness.scan.formats import render_many

        if args.format != "text":
            sys.stdout.write(render_many(args.format, collected))
        for fmt, path in reports:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(render_many(fmt, collected), encoding="utf-8")
    return max(statuses, key=lambda s: MULTI_MODEL_WORST.index(s) if s in MULTI_MODEL_WORST else len(
        MULTI_MODEL_WORST))


def _reports(specs: list[str]) -> list[tuple[str, Path]]:
    """``--report FORMAT=FILE`` arguments, checked before anything is scanned."""
    reports = []
    for spec in specs:
        fmt, _, path = spec.partition("=")
        if fmt not in FORMATS or fmt == "text" or not path:
            raise CommandError(f"--report {spec!r}: expected FORMAT=FILE with FORMAT one of "
                               f"{', '.join(f for f in FORMATS if f != 'text')}")
        reports.append((fmt, Path(path)))
    return reports


def _scan_model(args) -> int:
    from harness.scan.file_checks import start_checks

    # The collector is off to the end: onnx's import and the library's make long-lived objects that each collection
    # would walk again (7 ms of a small scan), and the graph's million objects stay alive to the end: collecting them
    # over and over frees nothing, and so would one last collection of them all when the collector is back on. They
    # are left to the process's exit instead. (The processes forked below start with it off too: they end soon.)
    enabled = gc.isenabled()
    gc.disable()
    page = checks = None
    try:
        # The page's process gets ready (Jinja, the template) while this one imports the library and scans.
        page = start_page()
        # onnx's checks of a large model take longer than any other step: they start first, in their own process,
        # and run while this one imports the library and reads the model (an --to-explicit scan checks the model it
        # writes)
        checks = None if args.to_explicit else start_checks(os.fspath(args.model))
        return _scan_command(args, checks, page)
    finally:
        if page is not None:
            page.cancel()  # a scan that stopped before its results (bad input): its page's process is not left waiting
        if checks is not None:
            checks.stop()  # a scan that stopped early (bad input) does not leave them running
        gc.freeze()
        if enabled:
            gc.enable()


def _scan_command(args, checks, page) -> int:
    from harness.scan.loading import ModelInputError, load_model

    matrix = load_matrix(args.matrix)
    if args.run_on and not args.run:
        raise CommandError("--run-on names where --run runs the reproducers; add --run")
    run_targets = [matrix[t] for t in args.run_on or [default_target(matrix).id]] if args.run else []
    chosen = list(dict.fromkeys((args.targets or list(matrix)) + [t.id for t in run_targets]))
    targets = [matrix[t] for t in chosen]
    out_dir = output_directory(args.out or Path("out/scan") / args.model.stem, "--out")
    fixing = args.fix or args.to_explicit
    if (args.inputs or args.workaround) and not fixing:
        raise CommandError("--inputs and --workaround belong to --fix; add --fix")
    if args.calibration_data and not args.to_explicit:
        raise CommandError("--calibration-data belongs to --to-explicit; add --to-explicit")
    try:
        loaded = None if args.to_explicit else load_model(args.model, checks_in_background=True, checks=checks)
    except ModelInputError as err:
        raise CommandError(str(err)) from None
    from harness.evidence.observations import ObservationsError
    from harness.scan.scanner import ScanOptions, occurrence_dicts, scan

    sent: list[tuple[dict, bytes] | None] = []  # the engine as sent to the page's process (send_engine)
    runner = None
    if run_targets:  # --run: the reproducers run through the harness
        from harness.orchestration.run_targets import run_targets as runner
    options = ScanOptions(targets=targets, results=args.results or [], run_targets=run_targets, runner=runner,
                          out_dir=out_dir, max_reproducers=args.max_reproducers, jobs=args.jobs, timeout_s=args.timeout,
                          fail_on=args.fail_on, on_engine=lambda engine: sent.append(send_engine(page, engine)),
                          on_findings=None if run_targets else lambda findings: send_places(
                              page, [occurrence_dicts(finding) for finding in findings]))
    if fixing:  # --fix's and --to-explicit's modules (ONNX Runtime's runs, the rewrites) only where they are used
        from harness.scan.explicit import ExplicitInputError, QuantizerError, to_explicit
        from harness.scan.fix_checks import ComparisonInputs, InputsError
        from harness.scan.fixing import WorkaroundChoiceError, fix_scanned, workaround_choices
    else:
        ExplicitInputError = QuantizerError = InputsError = WorkaroundChoiceError = _NeverRaised  # noqa: N806
    try:
        overrides = workaround_choices(args.workaround or []) if fixing else {}
    except WorkaroundChoiceError as err:
        raise CommandError(str(err)) from None
    report = sys.stdout if args.format == "text" else sys.stderr  # stdout holds only the format asked for
    progress = lambda line: print(line, file=report, flush=True)  # noqa: E731
    warn = lambda line: print(line, file=sys.stderr, flush=True)  # noqa: E731
    try:
        import cases  # noqa: F401  (registers the case library: its matchers are what the scan searches)

        explicit = to_explicit(args.model, out_dir, args.calibration_data, args.seed, progress,
                               warn) if args.to_explicit else None
        result = scan(explicit.path if explicit else args.model, options, progress=progress, loaded=loaded)
    except (ModelInputError, ObservationsError, ExplicitInputError, QuantizerError) as err:
        raise CommandError(str(err)) from None
    data = scan_data(result)
    try:
        outcome = fix_scanned(result, overrides, ComparisonInputs(args.inputs, args.seed), out_dir, progress,
                              migrating=args.to_explicit) if fixing else None
    except InputsError as err:
        raise CommandError(f"--inputs {err}") from None
    if outcome is not None:
        data["fix"] = outcome.to_dict(result.findings)
        data["exit_code"] = outcome.exit_status(result)
    if explicit is not None:
        data["explicit"] = explicit.report([out_dir / name for name in outcome.written])
    def print_answer() -> None:  # while the page's process renders the page
        if args.verbose:
            _print_result(data)
        else:
            from harness.scan.answer import answer_lines

            print("\n".join(answer_lines(data)))
        if outcome is not None:
            _print_fix(data["fix"], out_dir, explicit.path if explicit else None)
        if explicit is not None:
            _print_explicit(data["explicit"])

    json_path, html_path = write_results(data, out_dir, page, print_answer if args.format == "text" else None,
                                         sent[-1] if sent else None)
    args.collected.append(data)  # the other formats: written by cmd_scan once every model is scanned
    print(f"results: {json_path}, {html_path}", file=sys.stdout if args.format == "text" else sys.stderr)
    for problem in result.problems:
        print(f"warning: {problem}", file=sys.stderr)
    if result.failing_targets:
        fixed = " before the fix" if outcome is not None and outcome.written else ""
        print(f"expected to fail (--fail-on {args.fail_on}) on {len(result.failing_targets)} target(s){fixed}: "
              f"{', '.join(result.failing_targets)}", file=sys.stderr)
    if result.ungated_targets:
        print(f"not failing (--fail-on {args.fail_on}) on {len(result.ungated_targets)} target(s) whose verdict rests "
              f"on upstream claims not known to hold there (one report, another GPU, driver or form; their reasons "
              f"say which; --fail-on unverified stops at them): {', '.join(result.ungated_targets)}", file=sys.stderr)
    if result.evidence_damaged:
        print("some evidence was damaged or the harness broke (warnings above, infra-error cells in the run): the "
              "verdicts rest on what could be read", file=sys.stderr)
    if outcome is not None and outcome.failure is not None:
        print(f"error: --fix could not be made safely, no fixed model written: {outcome.failure}", file=sys.stderr)
    if outcome is not None and outcome.status == "partial":
        rest = (f"the rest is written and checked: {', '.join(outcome.written)}" if outcome.written else
                "nothing else could be fixed: " + _no_fixed_model(explicit.path if explicit else None))
        print(f"--fix is partial (exit {EXIT_PARTIAL}): {_places_left(data['fix'])} place(s) could not be fixed "
              f"and are left as they are (listed above with their reasons); {rest}", file=sys.stderr)
    return data["exit_code"]


class _NeverRaised(Exception):
    """Stands for the errors of --fix's modules in a scan that does not import them."""


def exit_status(result) -> int:
    """The scan's exit status (ScanResult.exit_status)."""
    return result.exit_status


def _print_explicit(explicit: dict) -> None:
    calibration = explicit["calibration"]
    print(f"explicit: {explicit['model']} from {explicit['from']} by {explicit['quantizer']}, calibrated on "
          f"{calibration['calibration_batches']} batch(es) of {calibration['source']}")
    for model, outputs in explicit["accuracy"].items():
        for name, f in outputs.items():
            sqnr = "exact" if f["sqnr_db"] is None else f"{f['sqnr_db']} dB"
            print(f"  accuracy of {model} vs FP32 on {calibration['held_out_batches']} held-out batch(es), output "
                  f"{name}: cosine {f['cosine']}, SQNR {sqnr}, max abs error {f['max_abs_error']:.4g}")
    for note in explicit["notes"]:
        print(f"  note: {note}")
    if calibration["warning"]:
        print(calibration["warning"], file=sys.stderr)


def _places_left(fix: dict) -> int:
    """How many places --fix had to leave as they are (the not-fixed entries that name a place)."""
    return sum(1 for g in fix["groups"] for item in g["not_fixed"] if item.get("place"))


def _no_fixed_model(explicit: Path | None) -> str:
    """What to use when --fix wrote no fixed model: the model as it is, or with --to-explicit the explicit one."""
    if explicit is None:
        return "no model written"
    return f"no fixed model written; {explicit} (the explicit model) is written: use it as it is"


def _print_fix(fix: dict, out_dir: Path, explicit: Path | None) -> None:
    """The fix per group of targets; ``explicit``: the model --to-explicit wrote, which is the one to use as it is
    where no fixed model is written."""
    as_is = "the model as it is" if explicit is None else f"{explicit} (the explicit model) as it is"
    inputs = fix["inputs"]
    source = inputs["source"] + (f", seed {inputs['seed']}" if "seed" in inputs else "")
    if fix["status"] == "nothing-to-fix":
        print(f"fix: nothing to fix on the chosen targets: {_no_fixed_model(explicit)}")
    for group in fix["groups"]:
        targets = ", ".join(group["targets"])
        if group["model"] is None:
            print(f"fix: no model for {targets}: use {as_is}")
            for item in group["not_fixed"]:
                print(f"    {item['finding']}: {item['reason']}")
            for item in group["already_in_form"]:
                print(f"    {item['finding']}: {item['reason']}")
            continue
        state = "NOT written" if fix["failure"] else "written"
        weights = f", its weights in {group['weights_file']} beside it" if group["weights_file"] else ""
        print(f"fix: {out_dir / group['model']} ({state}{weights}) for {targets}:")
        for item in group["fixes"]:
            print(f"    {item['finding']} -> {', then '.join(w['reason'] for w in item['workarounds'])}")
        for place in group["places"]:
            did = [f"{k.replace('_', ' ')} {', '.join(place[k])}" for k in ("nodes_added", "nodes_removed",
                                                                           "outputs_added") if place[k]]
            print(f"    at {place['place']}: {'; '.join(did) or 'nothing in the file'}")
            if place["build_time"]:
                print(f"      apply at build time: {place['build_time']}")
        for item in group["not_fixed"]:
            print(f"    not fixed: {item['finding']}: {item['reason']}")
        for item in group["already_in_form"]:
            print(f"    left as it is: {item['finding']}: {item['reason']}")
        for check in group["checks"]:
            print(f"    check {check['check']}: passed{_check_figures(check)}")
        for verdict in group["verdicts"] or []:
            print(f"    fixed model on {verdict['target']}: {verdict['verdict']}: {verdict['reason']}")
    if fix["failure"]:
        f = fix["failure"]
        print(f"fix FAILED at {f['place']}, check {f['check']}: {f['message']}")
    print(f"fix: compared on {source}")


def _check_figures(check: dict) -> str:
    if check["check"] == "fp32-function":
        worst = max((o.get("max_abs_error", 0.0) for o in check["outputs"].values()), default=0.0)
        return f" ({check['wanted']} on {len(check['outputs'])} output(s), max abs error {worst:.3g})"
    if check["check"] == "interface":
        added = [o["name"] for o in check["outputs_added"]]
        return f" (same inputs and outputs{'; added ' + ', '.join(added) if added else ''})"
    if check["check"] == "rescan":
        text = "".join(f"; {p['place']}: {p['state']}" for p in check["places"][:3])
        if len(check["places"]) > 3:
            text += f" (+{len(check['places']) - 3} more)"
        text += "".join(f"; {c['place']}: {c['from']} is now {c['to']}" for c in check["changed_forms"])
        return text + "".join(f"; {g['place']}: {g['was']} {g['state']}" for g in check["gone"])
    return ""


def _print_engine(engine: dict | None) -> None:
    """One line on the predicted engine (harness.scan.engine_prediction): its summary, or why there is none."""
    if engine is None:
        return
    if not engine["is_predicted"]:
        print(f"predicted engine: none: {engine['reason']}")
        return
    more = f" ({len(engine['other_predictions'])} other ruleset(s) differ, see scan.html)" \
        if engine["other_predictions"] else ""
    print(f"predicted engine (TensorRT's documented rules, not a build): {engine['summary']['text']}; float layers "
          f"{engine['float_text']}{more}")


def _print_result(data: dict) -> None:
    model = data["model"]
    print(f"model: {model['path']} (opset {model['opset']}, {model['nodes']} nodes, {model['mode_text']})")
    for note in model["notes"]:
        print(f"  note: {note}")
    _print_engine(data.get("engine"))
    findings = data["findings"]
    if not findings:
        print("no known INT8 failure pattern of the library in this model")
    else:
        places = sum(len(f["occurrences"]) for f in findings)
        print(f"found {len(findings)} known pattern form(s) in {places} place(s):")
        for f in findings:
            anchors = [o["anchor"] for o in f["occurrences"]]
            more = f" (+{len(anchors) - SHOWN_NODES} more)" if len(anchors) > SHOWN_NODES else ""
            form = f"{f['case']}/{f['variant']}" if f["variant"] else f["case"]
            print(f"  {f['pattern']} {form} [{f['role'] or '?'}]: {len(anchors)} place(s): "
                  f"{', '.join(anchors[:SHOWN_NODES])}{more}")
            if f["caveat"]:
                print(f"    caveat: {f['caveat']}")
    print("verdict per target:")
    width = max(len(t["target"]) for t in data["targets"])
    for t in data["targets"]:
        basis = f"({t['basis']})" if t["basis"] else ""
        print(f"  {t['target']:<{width}}  {t['verdict']:<11} {basis:<10} {t['reason']}")
        if t["verdict"] in SCAN_FAILING:
            for line in _workaround_lines(findings, t["target"]):
                print(f"  {'':<{width}}  {line}")


def _workaround_lines(findings: list[dict], target: str) -> list[str]:
    """The workarounds known (observed or claimed) to pass on ``target`` for the findings that fail there."""
    lines = []
    for f in findings:
        verdict = f["verdicts"].get(target)
        for w in verdict["workarounds"] if verdict else []:
            if w["verdict"] in SCAN_GOOD:
                basis = BASIS[w["evidence"][0]["kind"]].said
                lines.append(f"workaround for {f['case']}: {w['variant']} ({w['verdict']}, {basis}): "
                             f"{w['description']}")
    return list(dict.fromkeys(lines))  # findings of one case in several forms share its workarounds


def add_scan_commands(commands) -> None:
    p = commands.add_parser("scan", help="will MODEL build in INT8 on each target: known patterns, verdicts, evidence",
                            description=DESCRIPTION, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("model", type=Path, nargs="+", metavar="MODEL.onnx", help="the ONNX model (external data next "
                   "to it); several (a pre-commit hook, a CI job) are scanned one after the other, each into "
                   "OUT/<model name>, and the exit status is the worst of theirs")
    add_target_argument(p, "--targets", nargs="+", metavar="ID", help="targets to predict (default: every target of "
                        "the matrix)")
    add_observations_option(p)
    p.add_argument("--run", action="store_true", help="cut each match out of MODEL and run it through the harness")
    add_target_argument(p, "--run-on", nargs="+", metavar="ID", help="with --run: the targets to run on, local or "
                        "docker (default: the matrix's default target); they are predicted too")
    p.add_argument("--out", type=Path, metavar="DIR", help="output directory (default: out/scan/<model name>)")
    p.add_argument("--format", choices=FORMATS, default="text", help="what stdout gets: text (the answer: "
                   "targets grouped by verdict, where it changes between versions), json (scan.json), markdown "
                   "(a job summary), sarif (SARIF 2.1.0, for code scanning), github (workflow annotations); "
                   "default: %(default)s; scan.json and scan.html are written to --out either way")
    p.add_argument("--report", action="append", metavar="FORMAT=FILE", help="also write the scan in FORMAT (json, "
                   "markdown, sarif, github) to FILE; repeatable (a CI job: --format github --report "
                   "markdown=$GITHUB_STEP_SUMMARY --report sarif=trt-matrix.sarif)")
    p.add_argument("-v", "--verbose", action="store_true", help="with --format text: every target on its own "
                   "line, with its reason and the workarounds of what fails there, and every finding's places")
    p.add_argument("--fail-on", choices=SCAN_FAIL_ON_LEVELS, default=SCAN_FAIL_ON_DEFAULT,
                   help="the verdicts that make the exit status 1: " + ", also ".join(
                       f"{level} (default)" if level == SCAN_FAIL_ON_DEFAULT else level
                       for level in SCAN_FAIL_ON_LEVELS))
    p.add_argument("--max-reproducers", type=positive_int, default=8, metavar="N",
                   help="with --run: at most N reproducers per pattern form (occurrences of one shape share one; "
                   "default: %(default)s)")
    p.add_argument("--jobs", type=positive_int, default=os.cpu_count() or 1, help="with --run: cells run at once "
                   "(default: %(default)s)")
    p.add_argument("--timeout", type=positive_seconds, default=300.0, help="with --run: seconds per cell (default: "
                   "%(default)s)")
    fix = p.add_argument_group("fixing (--fix)")
    fix.add_argument("--fix", action="store_true", help="rewrite the model into the workaround form with the best "
                     "evidence on the chosen targets, check it (onnx.checker, strict shapes, same inputs and outputs, "
                     "the same FP32 outputs on ONNX Runtime, a second scan) and write OUT/fixed.onnx (one per group "
                     "of targets that need different fixes); nothing is written when any check fails (exit 2); a "
                     "place no workaround can be rewritten into is left as it is and listed with its reason, and the "
                     f"exit status is {EXIT_PARTIAL} (partial)")
    fix.add_argument("--workaround", nargs="+", action="extend", metavar="CASE=VARIANT",
                     help="with --fix: apply this workaround of the case wherever it is found, whatever the evidence "
                     "(e.g. p3-residual-add-qdq=identity-qdq after you tried it yourself); several for one case are "
                     "tried in the order given at each place")
    fix.add_argument("--inputs", type=Path, metavar="FILE.npz", help="with --fix: the inputs original and fixed model "
                     "are compared on (one array per model input, named after it); default: N(0, 1) draws")
    fix.add_argument("--seed", type=int, default=0, help="with --fix: the seed of the N(0, 1) draws (default: "
                     "%(default)s)")
    fix.add_argument("--to-explicit", action="store_true", help="TensorRT 11 migration: quantize an implicit-INT8 "
                     "model (no Q/DQ) to explicit Q/DQ (ONNX Runtime's quantize_static, settings chosen for TensorRT, "
                     "listed in scan.json) into OUT/explicit.onnx, then scan it and --fix it, and report the accuracy "
                     "against FP32 per output (cosine, SQNR, max abs error) on held-out batches")
    fix.add_argument("--calibration-data", type=Path, metavar="DIR", help="with --to-explicit: .npz files, one "
                     "batch each, arrays named after the model's inputs; the last fifth is held out for accuracy "
                     "(default: N(0, 1) draws, for build testing only)")
    p.set_defaults(func=cmd_scan)
