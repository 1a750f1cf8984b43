"""One scan: load the model, find the library's patterns, predict per target, optionally cut the matches out and run
them, and gather everything the JSON file, the HTML page and the exit status (the command's) rest on."""
from __future__ import annotations

import dataclasses
import datetime
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, NamedTuple, Sequence

from harness import judgement as j
from harness.exit_codes import EXIT_BROKEN, EXIT_OK, EXIT_REGRESSION
from harness.matrix import Target
from harness.scan.engine_prediction.predict import quantized_requests
from harness.scan.engine_prediction.targets import TargetEngines, predict_targets
from harness.scan.loading import LoadedModel, ModelInputError, gc_paused, load_model
from harness.scan.matching import Finding, find_patterns
from harness.evidence.observations import Observation, Observations, read_observations
from harness.scan.prediction import ModelVerdict, PredictedNodes, Verdict, model_evidence, model_verdict, predict
from harness.scan.summary import model_summary
from harness.tensorrt.parser_check import read_for_parser

if TYPE_CHECKING:  # the reproducers' module (onnx-graphsurgeon's graphs) is imported by a scan with --run only
    from harness.scan.reproducers import ReproducerSet

SCAN_FORMAT = "trt-matrix/scan/1"
REPRODUCERS_DIR = "reproducers"


@dataclasses.dataclass
class ScanOptions:
    targets: Sequence[Target]  # predicted
    results: Sequence[Path] = ()  # observed records to predict from
    run_targets: Sequence[Target] = ()  # with --run: where the reproducers run (empty: no run)
    runner: Callable[..., list[Any]] | None = None  # with --run: what runs them (the command hands in the harness's)
    out_dir: Path = Path("out/scan")
    max_reproducers: int | None = None  # with --run: per pattern form, at most (None: reproducers.DEFAULT_LIMIT)
    jobs: int = 1
    timeout_s: float = 300.0
    fail_on: str = j.SCAN_FAIL_ON_DEFAULT
    # called with the predicted engine (scan.json's ``engine``, the very dict the result holds) as soon as it is
    # predicted (before the patterns are matched), and with the findings as soon as the patterns are matched (before
    # the verdicts): the scan command's page process renders their sections meanwhile
    on_engine: Callable[[dict[str, Any]], None] | None = None
    on_findings: Callable[[list[Finding]], None] | None = None


class ScanResult(NamedTuple):
    options: ScanOptions
    loaded: LoadedModel
    findings: list[Finding]
    verdicts: list[dict[str, Verdict]]  # per finding (same order), target id -> verdict
    model_verdicts: list[ModelVerdict]
    observations: Observations
    reproducers: ReproducerSet | None
    run_summaries: list[Any]
    problems: list[str]  # matchers that failed, damaged results lines: each named
    timings: dict[str, float]
    engines: TargetEngines | None = None  # the predicted engine per target (harness.scan.engine_prediction)
    engine: dict[str, Any] | None = None  # scan.json's form of ``engines``, made once

    @property
    def failing_targets(self) -> list[str]:
        """Targets whose verdict makes the scan fail under the options' --fail-on level: its gate verdict, a
        verdict resting on a claim not known to hold there read as unverified (harness.judgement.gate_verdict)."""
        return [v.target.id for v in self.model_verdicts
                if j.fails_scan_gate(v.gate_verdict, self.options.fail_on)]

    @property
    def ungated_targets(self) -> list[str]:
        """Targets whose verdict would fail --fail-on but rests on claims not known to hold there (a single report,
        another GPU, driver or form): shown, labelled, not failing the scan."""
        level = self.options.fail_on
        return [v.target.id for v in self.model_verdicts
                if j.fails_scan_gate(v.verdict, level) and not j.fails_scan_gate(v.gate_verdict, level)]

    @property
    def evidence_damaged(self) -> bool:
        """Some evidence could not be read (damaged results lines, a matcher that failed) or says nothing
        (infra-error cells of the --run): the verdicts rest on the rest."""
        return bool(self.problems) or any(summary.harness_broken for summary in self.run_summaries)

    @property
    def exit_status(self) -> int:
        """The scan's exit status (harness.exit_codes): broken when evidence was damaged, else fails when a chosen
        target fails under --fail-on, else ok."""
        return EXIT_BROKEN if self.evidence_damaged else EXIT_REGRESSION if self.failing_targets else EXIT_OK

    def to_dict(self) -> dict[str, Any]:
        reproducers = self.reproducers
        summary = model_summary(self.loaded)
        findings = []
        for finding, verdicts in zip(self.findings, self.verdicts):
            own = {id(r.occurrence): r for r in reproducers.of(finding)} if reproducers else {}
            findings.append({
                "case": finding.case.id, "pattern": finding.case.pattern, "title": finding.case.title,
                "links": list(finding.case.links), "variant": finding.variant.name if finding.variant else None,
                "role": finding.variant.role if finding.variant else None,
                "variant_description": finding.variant.description if finding.variant else None,
                "mode": finding.mode, "remedy": finding.remedy,
                "caveat": _mode_caveat(finding.mode, summary["mode"]),
                "occurrences": occurrence_dicts(finding, own),
                "verdicts": {target: verdict.to_dict() for target, verdict in verdicts.items()},
            })
        return {
            "format": SCAN_FORMAT,
            "generated_at": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            "model": summary,
            "targets": [v.to_dict() for v in self.model_verdicts],
            "fail_on": self.options.fail_on,
            "failing_targets": self.failing_targets,
            "ungated_targets": self.ungated_targets,
            "evidence_damaged": self.evidence_damaged,
            "findings": findings,
            "engine": self.engine,
            "observations": {"sources": self.observations.sources, "records": len(self.observations)},
            "run": {
                "targets": [t.id for t in self.options.run_targets],
                "cases_dir": str(reproducers.cases_dir) if reproducers else None,
                "reproducers": len(reproducers.written) if reproducers else 0,
                "summaries": [s.line() for s in self.run_summaries],
            },
            "problems": self.problems,
            "timings_s": {k: round(v, 3) for k, v in self.timings.items()},
        }


def scan(path: Path | str, options: ScanOptions, progress: Callable[[str], None] = lambda line: None,
         loaded: LoadedModel | None = None) -> ScanResult:
    """Scan the model at ``path``. Raises ``ModelInputError`` for a model that cannot be read and
    ``ObservationsError`` for a --results path that cannot be read at all. ``loaded``: the model at ``path`` already
    read by :func:`~harness.scan.loading.load_model` (by --fix for the model it wrote, by diagnose for a model among
    its files), scanned instead of reading the file again.

    onnx's checks of a large model run in their own process beside the scan: the types they infer are waited for
    where first needed, the checker's verdict only once the verdicts are made, and an invalid model raises then."""
    timings: dict[str, float] = {}
    clock = time.perf_counter()

    def lap(name: str) -> None:
        nonlocal clock
        now = time.perf_counter()
        timings[name] = now - clock
        clock = now

    try:
        observations = read_observations(options.results)
    except BaseException:
        if loaded is not None:
            loaded.stop_checks()
        raise
    lap("read_results")
    with gc_paused():  # the graph's objects all stay alive: collecting them over and over finds nothing to free
        preloaded = loaded is not None
        loaded = loaded or load_model(path, checks_in_background=True)
        try:
            lap("load")
            if preloaded:
                timings["load"] = loaded.seconds
            try:  # while a large model's checks still run: the engine needs no inferred types
                engines = predict_targets(loaded.index, options.targets)
            except Exception as err:  # a bug of the prediction must not cost the user the scan: named, as a matcher
                engines = engine = None
                engine_problem = (f"the engine prediction failed ({type(err).__name__}: {err}); please report it with "
                                  "the model")
            else:
                engine, engine_problem = engines.to_dict(), None
                if options.on_engine is not None:
                    options.on_engine(engine)
            lap("engine")
            matches = find_patterns(loaded.view)
            if options.on_findings is not None:
                options.on_findings(matches.findings)
            lap("match")
            problems = [*matches.problems, *observations.problems, *([engine_problem] if engine_problem else [])]
            reproducers, run_summaries, layer_observations = None, [], Observations([], [], {})
            if options.run_targets and matches.findings:
                from harness.scan.reproducers import DEFAULT_LIMIT, run_reproducers, write_reproducers

                reproducers = write_reproducers(loaded, matches.findings, Path(options.out_dir) / REPRODUCERS_DIR,
                                                limit=options.max_reproducers or DEFAULT_LIMIT)
                lap("extract")
                progress(f"{len(reproducers.written)} reproducer(s) of your layers in {reproducers.cases_dir}")
                layer_observations, run_summaries = run_reproducers(reproducers, options.run_targets, options.runner,
                                                                    jobs=options.jobs, timeout_s=options.timeout_s,
                                                                    progress=progress)
                problems += layer_observations.problems
                lap("run")
            verdicts, model_verdicts = _verdicts(matches.findings, options, observations, engines,
                                                 quantized_requests(loaded.index), reproducers, layer_observations,
                                                 loaded)
            lap("predict")
            # onnx's checker runs beside all of the above (on a large model, longer than any of it): its verdict is
            # awaited last, and an invalid model stops here, before any result
            loaded.checked()
            lap("checks")
        except ModelInputError:  # already what is wrong with the model (the checker's verdict among them)
            raise
        except Exception:
            loaded.checked()  # an invalid model's own error comes first: what failed may have failed because of it
            raise
        finally:
            loaded.stop_checks()
    return ScanResult(options, loaded, matches.findings, verdicts, model_verdicts, observations, reproducers,
                      run_summaries, problems, timings, engines, engine)


def occurrence_dicts(finding: Finding, reproducers: dict[int, Any] | None = None) -> list[dict[str, Any]]:
    """scan.json's places of ``finding`` (its ``occurrences``), with each one's reproducer where ``reproducers`` (by
    the ``id`` of the occurrence) holds one."""
    own = reproducers or {}
    return [{"nodes": list(o.nodes), "anchor": o.anchor, "note": o.note,
             "reproducer": own[id(o)].to_dict() if id(o) in own else None} for o in finding.occurrences]


def _verdicts(findings: list[Finding], options: ScanOptions, observations: Observations,
              engines: TargetEngines | None, asked: frozenset[str], reproducers: ReproducerSet | None,
              layer_observations: Observations,
              loaded: LoadedModel | None = None) -> tuple[list[dict[str, Verdict]], list[ModelVerdict]]:
    """Each finding's verdict per target (``asked``: the nodes the model asks a quantized precision of), and each
    target's verdict on the model: what stops the whole model there (the ONNX parser's documented refusals of
    ``loaded``'s graph, the target's facts against its quantized types) before its findings'."""
    run_ids = {t.id for t in options.run_targets} if reproducers else set()
    predicted_on: dict[str, PredictedNodes | None] = {}  # target id -> the engine prediction of the model's nodes
    shared: dict[tuple, PredictedNodes] = {}  # (prediction, ruleset) -> one PredictedNodes for the targets sharing it
    readings: dict[int, dict] = {}  # prediction -> what it says at each finding's places, whichever ruleset gave it
    for target in options.targets:
        precisions = engines.node_precisions(target.id) if engines is not None else {}
        if not precisions:
            predicted_on[target.id] = None
            continue
        entry = engines.targets[target.id]
        key = (entry["prediction"], entry["ruleset"])
        if key not in shared:
            shared[key] = PredictedNodes(precisions, asked, entry["ruleset"],
                                         readings.setdefault(entry["prediction"], {}))
        predicted_on[target.id] = shared[key]
    verdicts = []
    for finding in findings:
        per_target = {}
        for target in options.targets:
            layers = _layers(finding, target.id, reproducers, layer_observations) if target.id in run_ids else None
            per_target[target.id] = predict(finding, target, observations, layers, predicted_on[target.id],
                                            explicit=bool(asked))
        verdicts.append(per_target)
    reading = read_for_parser(loaded.index) if loaded is not None else None
    model_verdicts = [
        model_verdict(target, [(finding.label, v[target.id]) for finding, v in zip(findings, verdicts)],
                      model_evidence(target, reading, loaded.opset or None, reading.quantized, bool(asked))
                      if loaded is not None else ())
        for target in options.targets
    ]
    return verdicts, model_verdicts


def _mode_caveat(form_mode: str, model_mode: str) -> str | None:
    """When the library form was built in the other quantization mode than the model, its evidence may not carry."""
    if form_mode == model_mode:
        return None
    return (f"the library's form of this pattern is {form_mode}, your model is {model_mode}: TensorRT builds the two "
            "differently, so evidence about the form may not carry over to your model")


def _layers(finding: Finding, target: str, reproducers: ReproducerSet,
            observed: Observations) -> list[list[Observation]]:
    """Per occurrence of ``finding``, what its reproducer (own or shared) observed on ``target``."""
    return [observed.of(finding.case.id, r.name, target) if r.name else [] for r in reproducers.of(finding)]
