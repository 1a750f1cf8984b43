"""The check polygraphy's ``debug reduce --check`` runs on each candidate: ``python -m harness.reduction.check DIR
CANDIDATE.onnx``. It runs the candidate on the reduction's target through the harness and exits
:data:`REPRODUCED` when the candidate fails the way the whole model did, 0 otherwise (polygraphy: ``--fail-code``).

A candidate that cannot become a cell, or whose check says nothing about it (infra-error), counts as not
reproducing: the reduction then keeps more of the model, never less.
"""
from __future__ import annotations

import argparse
import shutil
import sys
import time
from pathlib import Path

import onnx

from harness.matrix import load_matrix
from harness.reduction.candidate import CandidateError, write_cell
from harness.reduction.failure import KeptFailure
from harness.reduction.session import RunnerError, open_runner
from harness.reduction.state import CHECK_RECORDS, append_step, read_session, read_steps

REPRODUCED = 10  # polygraphy --fail-code: the candidate fails the same way


def check(out_dir: Path, candidate: Path, phase: str | None = None) -> bool:
    """Run ``candidate`` as the next check of the reduction in ``out_dir``; append its step; True when it fails the
    same way as the whole model."""
    session = read_session(out_dir)
    if session is None:
        raise ValueError(f"{out_dir}: no reduction session here (session.json)")
    number = len(read_steps(out_dir)) + 1
    nodes = len(onnx.load(str(candidate), load_external_data=False).graph.node)
    started = time.perf_counter()
    step = {"check": number, "phase": phase or session.phase, "nodes": nodes}
    cases_dir = Path(out_dir) / "checks" / f"{number}"
    shutil.rmtree(cases_dir, ignore_errors=True)
    try:
        write_cell(candidate, cases_dir, f"check-{number}", f"check {number} of the reduction of {session.model}")
        target = load_matrix(Path(session.matrix))[session.target]
        runner = open_runner(target, session.timeout_s, container_per_check=session.runner == "container-per-check",
                             container_id=session.container_id, progress=lambda line: None)
        record = runner.run(cases_dir, Path(out_dir) / CHECK_RECORDS)
        reproduced = session.kept.reproduced_by(record)
        step.update(outcome=KeptFailure.observed(record, session.kept.keep).describe(), reproduced=reproduced)
    except (CandidateError, RunnerError) as err:
        reproduced = False
        step.update(outcome=f"not checked: {err}", reproduced=False)
    finally:
        shutil.rmtree(cases_dir, ignore_errors=True)
    step["seconds"] = round(time.perf_counter() - started, 3)
    append_step(out_dir, step)
    return reproduced


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m harness.reduction.check", description=__doc__)
    parser.add_argument("out_dir", type=Path, help="the reduction's directory (trt-matrix reduce --out)")
    parser.add_argument("candidate", type=Path, help="the candidate model polygraphy wrote")
    args = parser.parse_args(argv)
    return REPRODUCED if check(args.out_dir, args.candidate) else 0


if __name__ == "__main__":
    sys.exit(main())
