"""One target-selection group (harness/commands/options.py): every argument that names targets or host kinds of the
matrix is checked by main before its command runs, and a bad one reads the same in every command: exit 2, one line
naming the id, the matrix file read and the nearest valid names."""
from __future__ import annotations

import argparse

import pytest

from harness.commands.main import build_parser
from harness.commands.options import TARGET_OPTIONS
from tests.conftest import REPO
from tests.harness.commands.test_main import harness

MATRIX = REPO / "matrix.yaml"

# (command line with a near-miss id, the label the error gives it, what it is not, a valid name it must suggest)
NEAR_MISSES = [
    (["run", "--target", "trt86-orn"], "--target 'trt86-orn'", "a target", "trt86-orin"),
    (["nightly", "--target", "trt86-orn"], "--target 'trt86-orn'", "a target", "trt86-orin"),
    (["nightly", "--host-kind", "x86-gpus"], "--host-kind 'x86-gpus'", "a host kind", "x86-gpu"),
    (["scan", "m.onnx", "--targets", "trt86-orin", "trt86-orn"], "--targets 'trt86-orn'", "a target", "trt86-orin"),
    (["scan", "m.onnx", "--run", "--run-on", "ort-cpus"], "--run-on 'ort-cpus'", "a target", "ort-cpu"),
    (["diagnose", "build.log", "--targets", "trt86-orn"], "--targets 'trt86-orn'", "a target", "trt86-orin"),
    (["reduce", "m.onnx", "--target", "trt86-orn"], "--target 'trt86-orn'", "a target", "trt86-orin"),
    (["facts", "trt86-orn"], "TARGET 'trt86-orn'", "a target", "trt86-orin"),
    (["containers", "build", "ort-cpu"], "TARGET 'ort-cpu'", "a docker target", "ort1.15-cpu"),
    (["containers", "wheelhouse", "--target", "ort-cpu"], "--target 'ort-cpu'", "a docker target", "ort1.15-cpu"),
    (["containers", "wheelhouse", "--host-kind", "x86-gpus"], "--host-kind 'x86-gpus'", "a host kind", "x86-gpu"),
]


@pytest.mark.parametrize("argv, label, kind, suggested", NEAR_MISSES, ids=[" ".join(n[0][:2]) + f" {n[1].split()[0]}"
                                                                           for n in NEAR_MISSES])
def test_a_bad_id_stops_every_command_the_same_way_before_it_reads_anything_else(argv, label, kind, suggested,
                                                                               tmp_path):
    # The files the commands name do not exist: the ids are checked first, so the id is what the error is about.
    result = harness("--matrix", str(MATRIX), *argv, check=False, cwd=tmp_path)
    assert result.returncode == 2, result.stdout + result.stderr
    (line,) = result.stderr.splitlines()
    assert line.startswith(f"error: {label}: not {kind} of {MATRIX}")
    nearest = line.split("; nearest: ", 1)[1].split(", ")
    assert suggested in nearest and len(nearest) <= 5
    assert not list(tmp_path.iterdir())  # nothing written


def test_every_bad_id_of_a_list_is_named(tmp_path):
    result = harness("--matrix", str(MATRIX), "scan", "m.onnx", "--targets", "trt86-orin", "mars", "venus",
                     check=False, cwd=tmp_path)
    assert result.returncode == 2 and "--targets 'mars' (and 'venus'): not a target of" in result.stderr


def test_ids_are_checked_against_the_matrix_the_command_reads(tmp_path):
    matrix = tmp_path / "mine.yaml"
    matrix.write_text("targets:\n  my-cpu:\n    title: mine\n    backend: onnxruntime\n    runner: local\n"
                      "    platform: any\n")
    result = harness("--matrix", str(matrix), "facts", "ort-cpu", check=False, cwd=tmp_path)
    assert result.returncode == 2
    assert f"TARGET 'ort-cpu': not a target of {matrix}; nearest: my-cpu" in result.stderr


def target_like(action: argparse.Action) -> bool:
    return action.dest in {"target", "targets", "run_on", "host_kind"} or action.metavar in {"ID", "TARGET", "KIND"}


def test_every_argument_that_names_targets_is_in_the_group():
    """A new command's target argument added with p.add_argument (not add_target_argument) would go unchecked."""
    def commands(parser: argparse.ArgumentParser, path: tuple[str, ...] = ()):
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for name, sub in action.choices.items():
                    yield from commands(sub, (*path, name))
        yield path, parser

    seen = 0
    for path, parser in commands(build_parser()):
        registered = {dest for dest, _, _ in parser.get_default(TARGET_OPTIONS) or ()}
        for action in parser._actions:
            if target_like(action):
                seen += 1
                assert action.dest in registered, f"`{' '.join(path)}` {action.dest}: use add_target_argument"
    assert seen >= len(NEAR_MISSES)
