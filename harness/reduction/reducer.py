"""Drive a reduction: run the whole model once to learn the failure to keep, then ``polygraphy debug reduce`` (bisect,
then linear on what bisect left) with :mod:`harness.reduction.check` as its check, then check the result once more.

Every check's line is printed as it ends (from ``DIR/steps.jsonl``); polygraphy's own log goes to
``DIR/polygraphy.log``. Each phase saves its debug replay (``DIR/replay-<phase>.json``) after every check: a
reduction interrupted mid-phase resumes from it (``--load-debug-replay``), and a finished phase is not run again.
"""
from __future__ import annotations

import dataclasses
import hashlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Callable

import onnx

import harness
from harness.exit_codes import EXIT_BROKEN, EXIT_OK
from harness.matrix import Target
from harness.reduction.candidate import write_cell
from harness.reduction.case_writer import CaseWriterError, write_case
from harness.reduction.check import REPRODUCED
from harness.reduction.failure import KeptFailure, describe_record
from harness.reduction.input_shapes import static_inputs
from harness.reduction.session import open_runner
from harness.reduction.state import (CHECK_RECORDS, PHASES, Session, read_session, read_steps, write_json,
                                     write_session)
from harness.store.results_file import read_results_file
from harness.worker.casedata import load_cells

Progress = Callable[[str], None]
POLL_S = 0.5
REDUCE_JSON = "reduce.json"
REDUCED = "reduced.onnx"


@dataclasses.dataclass(frozen=True)
class Request:
    model: Path
    target: Target
    matrix: Path
    keep: str
    out_dir: Path
    timeout_s: float = 300.0
    container_per_check: bool = False
    keep_weights: bool = False
    input_shapes: dict[str, list[int]] = dataclasses.field(default_factory=dict)  # --input-shape NAME:D1xD2...


@dataclasses.dataclass
class Outcome:
    """What a reduction produced (reduce.json's content)."""

    summary: dict
    reduced: Path
    whole_record: dict

    @property
    def exit_status(self) -> int:
        """ok when the reduced model fails the way the whole model did, else broken (the reduction lost it)."""
        return EXIT_OK if self.summary["reduced_reproduces"] else EXIT_BROKEN


def node_count(path: Path) -> int:
    return len(onnx.load(str(path), load_external_data=False).graph.node)


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as stream:
        for block in iter(lambda: stream.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def reduce_model(request: Request, progress: Progress = print) -> Outcome:
    """Reduce ``request.model`` on its target (resuming a reduction of the same model, target and --keep in
    ``out_dir``); raise :class:`~harness.reduction.failure.NothingToReduce` when the whole model does not fail. A
    model with symbolic input dimensions is reduced in a copy with static sizes (:mod:`harness.reduction.input_shapes`:
    InputShapeError for an --input-shape that does not fit)."""
    out = Path(request.out_dir)
    out.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    static = static_inputs(request.model, request.input_shapes, out)
    for note in static.notes:
        progress(note)
    user_model, request = request.model, dataclasses.replace(request, model=static.path)
    runner_kind = ("local" if request.target.runner == "local" else
                   "container-per-check" if request.container_per_check else "container")
    runner = open_runner(request.target, request.timeout_s, container_per_check=request.container_per_check,
                         progress=progress)
    try:
        session, whole = _session(request, runner, runner_kind, progress)
        inputs = {"bisect": request.model, "linear": out / "bisect.onnx"}
        outputs = {"bisect": out / "bisect.onnx", "linear": out / REDUCED}
        for phase in PHASES:
            if outputs[phase].is_file():
                progress(f"{phase}: done in an earlier run ({outputs[phase]}, {node_count(outputs[phase])} nodes)")
                continue
            session.phase = phase
            write_session(out, session)
            _polygraphy(phase, inputs[phase], outputs[phase], out, progress)
        session.phase = "final"
        write_session(out, session)
        final_cell = _final_cell(out)
        final = runner.run(final_cell, out / CHECK_RECORDS)
    finally:
        runner.close()
    steps = read_steps(out)
    before, after = node_count(request.model), node_count(out / REDUCED)
    case = _write_case(request, session, final, final_cell, before)
    summary = {
        "model": str(user_model), "input_shapes": static.shapes, "input_notes": static.notes,
        "model_run": str(request.model), "model_sha256": session.model_sha256, "target": request.target.id,
        "keep": request.keep, "failure_kept": session.kept.to_dict(), "whole_model": describe_record(whole),
        "nodes_before": before, "nodes_after": after, "ratio": round(after / before, 4) if before else None,
        "checks": len(steps), "check_seconds": round(sum(s["seconds"] for s in steps), 3),
        "wall_s": round(time.perf_counter() - started, 3), "runner": runner_kind,
        "reduced": str(out / REDUCED), "reduced_reproduces": session.kept.reproduced_by(final),
        "reduced_record": describe_record(final), "environment": final.get("environment"), "min_good": str(out / "min-good.onnx")
        if (out / "min-good.onnx").is_file() else None, **case, "steps": steps,
    }
    write_json(out / REDUCE_JSON, summary)
    return Outcome(summary, out / REDUCED, whole)


def _session(request: Request, runner, runner_kind: str, progress: Progress) -> tuple[Session, dict]:
    """The session to resume (same model, target and --keep), else a new one from a run of the whole model."""
    out = Path(request.out_dir)
    sha = file_sha256(request.model)
    earlier = read_session(out)
    container_id = getattr(runner, "container_id", None)
    whole_results = out / "whole-model.jsonl"
    if (earlier and earlier.model_sha256 == sha and earlier.target == request.target.id
            and earlier.kept.keep == request.keep and whole_results.is_file()):
        steps = read_steps(out)
        progress(f"resuming the reduction in {out}: {len(steps)} check(s) done, phase {earlier.phase}; failure kept: "
                 f"{earlier.kept.describe()}")
        earlier.container_id, earlier.runner, earlier.timeout_s = container_id, runner_kind, request.timeout_s
        write_session(out, earlier)
        return earlier, read_results_file(whole_results).records[-1]
    for stale in ("session.json", "steps.jsonl", CHECK_RECORDS, "whole-model.jsonl", "bisect.onnx", REDUCED,
                  "replay-bisect.json", "replay-linear.json", "min-good.onnx", REDUCE_JSON):
        (out / stale).unlink(missing_ok=True)
    progress(f"{request.target.id}: running the whole model ({node_count(request.model)} nodes) to learn its failure")
    started = time.perf_counter()
    cases_dir = out / "whole-model"
    write_cell(request.model, cases_dir, "whole-model", f"{request.model.name}, whole")
    whole = runner.run(cases_dir, whole_results)
    progress(f"{request.target.id}: whole model: {describe_record(whole)} ({time.perf_counter() - started:.1f} s)")
    kept = KeptFailure.of_whole_model(whole, request.keep)  # NothingToReduce when it passes
    progress(f"failure to keep: {kept.describe()}")
    session = Session(model=str(request.model), model_sha256=sha, target=request.target.id,
                      matrix=str(request.matrix), kept=kept, timeout_s=request.timeout_s, runner=runner_kind,
                      container_id=container_id)
    write_session(out, session)
    return session, whole


def _polygraphy(phase: str, model: Path, output: Path, out: Path, progress: Progress) -> None:
    """One ``polygraphy debug reduce`` run, resumed from its replay when an earlier run was interrupted."""
    replay = out / f"replay-{phase}.json"
    command = [sys.executable, "-m", "harness.reduction.polygraphy_reduce", "debug", "reduce", str(Path(model).resolve()), "-o", str(output.resolve()), "--mode", phase,
               "--iter-artifact", str((out / "candidate.onnx").resolve()),
               "--save-debug-replay", str(replay.resolve()), "--min-good", str((out / "min-good.onnx").resolve()),
               "--fail-code", str(REPRODUCED)]
    if replay.is_file():
        progress(f"{phase}: resuming from {replay} (its checks are replayed, not run again)")
        command += ["--load-debug-replay", str(replay.resolve())]
    command += ["--check", sys.executable, "-m", "harness.reduction.check", str(out.resolve()),
                str((out / "candidate.onnx").resolve())]
    project = str(Path(harness.__file__).resolve().parent.parent)  # the check must import this very harness
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [project, os.environ.get("PYTHONPATH")]))}
    shown = len(read_steps(out))
    progress(f"{phase}: polygraphy debug reduce --mode {phase} on {model.name} ({node_count(model)} nodes); its log: "
             f"{out / 'polygraphy.log'}")
    with (out / "polygraphy.log").open("a") as log:
        log.write(f"\n$ {' '.join(command)}\n")
        log.flush()
        (out / "candidate.onnx").unlink(missing_ok=True)  # an interrupted run's; polygraphy refuses to overwrite it
        # Its own process group: an interruption ends polygraphy and the check it is running, nothing else.
        process = subprocess.Popen(command, cwd=out, env=env, stdout=log, stderr=subprocess.STDOUT,
                                   start_new_session=True)
        try:
            while process.poll() is None:
                time.sleep(POLL_S)
                shown = _show_steps(out, shown, progress)
        except BaseException:
            os.killpg(process.pid, signal.SIGTERM)
            process.wait()
            raise
    _show_steps(out, shown, progress)
    if process.returncode != 0 or not output.is_file():
        raise RuntimeError(f"polygraphy debug reduce --mode {phase} exited {process.returncode} without writing "
                           f"{output}; see {out / 'polygraphy.log'}")


def _show_steps(out: Path, shown: int, progress: Progress) -> int:
    steps = read_steps(out)
    for step in steps[shown:]:
        verdict = "same failure" if step["reproduced"] else "not the same"
        progress(f"check {step['check']} ({step['phase']}): {step['nodes']} nodes -> {step['outcome']} -> {verdict} "
                 f"({step['seconds']:.1f} s)")
    return len(steps)


def _write_case(request: Request, session: Session, final: dict, final_cell: Path, before: int) -> dict:
    """The case module and its test (reduce.json's case fields); a model a case cannot rebuild says why instead."""
    out = Path(request.out_dir)
    tolerance = load_cells(final_cell)[0]["tolerance"]
    try:
        written = write_case(out / REDUCED, out, observed=KeptFailure.observed(final, session.kept.keep),
                             target=request.target.id, source_model=request.model, nodes_before=before,
                             max_abs_error=tolerance["max_abs_error"], keep_weights=request.keep_weights)
    except CaseWriterError as err:
        return {"case_id": None, "case_module": None, "case_test": None, "case_problem": str(err)}
    return {"case_id": written.case_id, "case_module": str(written.module), "case_test": str(written.test),
            "case_problem": None}


def _final_cell(out: Path) -> Path:
    cases_dir = out / "reduced-cell"
    write_cell(out / REDUCED, cases_dir, "reduced", "the reduced model, checked once more")
    return cases_dir
