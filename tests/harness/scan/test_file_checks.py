"""onnx's checks of a model file, in this process or in a second one beside the graph's import: the same answers, a
second process only for a large model, and a crash of onnx's C++ told in one line instead of ending the scan."""
from __future__ import annotations

import os
import subprocess
import sys
import threading

import onnx
import pytest

from harness.scan import file_checks, loading
from harness.scan.loading import ModelInputError, load_model


@pytest.fixture()
def children(monkeypatch):
    """The models whose checks processes started."""
    started = []

    def recorded(model):
        started.append(model)
        return file_checks.ChildChecks(model)

    monkeypatch.setattr(loading, "ChildChecks", recorded)
    monkeypatch.setattr(loading, "cores", lambda: 2)
    return started


def test_only_a_large_model_gets_its_checks_in_a_second_process(model_files, monkeypatch, children):
    path = model_files["plain-cnn-qdq"]
    nodes = len(onnx.load(path).graph.node)
    monkeypatch.setattr(loading, "CHECKS_APART_FROM_NODES", nodes + 1)
    small = load_model(path)
    assert children == []
    monkeypatch.setattr(loading, "CHECKS_APART_FROM_NODES", nodes)
    large = load_model(path)
    assert children == [str(path)]
    assert (large.strict_shapes, large.notes) == (small.strict_shapes, small.notes) == (True, [])
    assert large.model == small.model


def test_one_core_keeps_the_checks_in_this_process(model_files, monkeypatch, children):
    monkeypatch.setattr(loading, "CHECKS_APART_FROM_NODES", 1)
    monkeypatch.setattr(loading, "cores", lambda: 1)
    load_model(model_files["plain-cnn-qdq"])
    assert children == []


def test_the_checks_answer_the_same_in_either_process(tmp_path, model_files):
    model = onnx.load(model_files["plain-cnn-qdq"])
    model.graph.node[3].input[0] = "no_such_tensor"
    onnx.save(model, tmp_path / "broken.onnx")
    for path in (model_files["plain-cnn-qdq"], tmp_path / "broken.onnx"):
        here = file_checks.check_file(str(path))
        apart = file_checks.ChildChecks(str(path)).result()
        assert apart == here  # through the pipe and back: the same answers, types and shapes
    assert "no_such_tensor" in here.invalid
    good = file_checks.check_file(str(model_files["plain-cnn-qdq"]))
    assert good.strict and good.invalid is None and len(good.outputs()) == 1
    typed = good.value_infos()
    assert len(typed) > len(onnx.load(model_files["plain-cnn-qdq"]).graph.node) / 2
    assert all(info.type.tensor_type.elem_type for info in typed.values())


def test_a_model_over_the_protobuf_limit_is_inferred_from_its_file_with_the_same_answers(tmp_path, model_files,
                                                                                         monkeypatch):
    import tempfile

    from onnx import TensorProto, helper

    # a declared output shape that contradicts inference: strict mode fails, the permissive mode answers
    graph = helper.make_graph([helper.make_node("Relu", ["x"], ["y"], name="/act/Relu")], "g",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 5])])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), tmp_path / "odd.onnx")
    paths = [str(model_files["plain-cnn-qdq"]), str(tmp_path / "odd.onnx")]
    in_memory = [file_checks.check_file(path) for path in paths]
    monkeypatch.setattr(file_checks, "PROTOBUF_LIMIT", 0)  # every file is "over" it: inferred from the file
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    from_file = [file_checks.check_file(path) for path in paths]
    assert from_file == in_memory
    assert not in_memory[1].strict and "strict shape inference failed" in in_memory[1].notes[0]
    assert list(scratch.iterdir()) == []  # the inferred model written beside is removed


@pytest.mark.parametrize("started", ["forked", "spawned"])
def test_a_crash_of_the_checks_process_is_told_in_one_line(model_files, monkeypatch, children, started):
    class Crashing(file_checks.ChildChecks):
        @staticmethod
        def command(model, types_file):
            return [sys.executable, "-c", "import os; os.abort()"]

    def crash(*args):
        os.abort()

    if started == "forked":  # the copy runs this process's functions: onnx's C++ aborting in it, as it may
        monkeypatch.setattr(file_checks, "_answer", crash)
    else:
        monkeypatch.setattr(file_checks, "fork_is_safe", lambda: False)
        monkeypatch.setattr(loading, "ChildChecks", Crashing)
    monkeypatch.setattr(loading, "CHECKS_APART_FROM_NODES", 1)
    path = model_files["plain-cnn-qdq"]
    with pytest.raises(ModelInputError) as caught:
        load_model(path)
    assert str(caught.value) == f"{path}: onnx's checks of the model stopped in their process (exit status -6)"


def test_a_failure_in_the_forked_copy_is_told_by_its_last_line(model_files, monkeypatch):
    def failing(*args):
        raise MemoryError("onnx could not allocate the inferred graph")

    monkeypatch.setattr(file_checks, "_answer", failing)
    child = file_checks.ChildChecks(str(model_files["plain-cnn-qdq"]))
    assert isinstance(child.process, file_checks.ForkedAnswer)
    with pytest.raises(RuntimeError) as caught:
        child.types()
    assert str(caught.value) == ("onnx's checks of the model stopped in their process (MemoryError: onnx could not "
                                 "allocate the inferred graph)")
    assert child.process.returncode == 1
    with pytest.raises(RuntimeError) as again:  # asked again (a matcher asked the types, the scan then the verdict)
        child.result()
    assert str(again.value) == str(caught.value)


def test_the_checks_are_a_forked_copy_where_that_is_safe_else_the_script(model_files, monkeypatch):
    path = str(model_files["plain-cnn-qdq"])
    forked = file_checks.ChildChecks(path)
    assert file_checks.fork_is_safe() and isinstance(forked.process, file_checks.ForkedAnswer)
    monkeypatch.setattr(file_checks, "fork_is_safe", lambda: False)
    spawned = file_checks.ChildChecks(path)
    assert isinstance(spawned.process, subprocess.Popen)
    assert forked.result() == spawned.result() == file_checks.check_file(path)


def test_forking_is_not_safe_while_another_thread_runs():
    release = threading.Event()
    other = threading.Thread(target=release.wait)
    other.start()
    try:
        assert not file_checks.fork_is_safe()
    finally:
        release.set()
        other.join()
    assert file_checks.fork_is_safe()


def test_the_process_sends_the_types_before_the_checker_verdict(model_files):
    child = file_checks.ChildChecks(str(model_files["plain-cnn-qdq"]))
    assert child.types().inferred and child.types().invalid is None
    assert child.result().invalid is None and child.result().inferred == child.types().inferred


def test_nothing_of_the_checks_is_left_in_the_temporary_directory_whether_answered_or_stopped(model_files, tmp_path,
                                                                                              monkeypatch):
    import tempfile

    monkeypatch.setenv("TMPDIR", str(tmp_path))  # the checks' process's own temporary files too
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    answered = file_checks.ChildChecks(str(model_files["plain-cnn-qdq"]))
    assert answered.result().invalid is None and list(tmp_path.iterdir()) == []
    stopped = file_checks.ChildChecks(str(model_files["plain-cnn-qdq"]))
    stopped.stop()  # killed halfway: its inferred model half written
    stopped.stop()  # a second stop finds nothing left to end
    assert stopped.process.returncode is not None and list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("started", ["forked", "spawned"])
def test_checks_dropped_unanswered_end_their_process_and_leave_nothing(model_files, tmp_path, monkeypatch, started):
    """A library caller that fails between load_model and checked(): its checks do not run on, nor stay on disk."""
    import gc
    import tempfile
    import time

    monkeypatch.setenv("TMPDIR", str(tmp_path))
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    if started == "forked":  # checks that would take a minute: still running when dropped
        monkeypatch.setattr(file_checks, "_answer", lambda *args: time.sleep(60))
    else:
        monkeypatch.setattr(file_checks, "fork_is_safe", lambda: False)
        monkeypatch.setattr(file_checks.ChildChecks, "command", staticmethod(
            lambda model, types_file: [sys.executable, "-c", "import time; time.sleep(60)"]))
    checks = file_checks.ChildChecks(str(model_files["plain-cnn-qdq"]))
    process = checks.process
    assert process.poll() is None and len(list(tmp_path.iterdir())) == 1
    started_at = time.monotonic()
    del checks
    gc.collect()
    assert process.poll() is not None and time.monotonic() - started_at < 10  # ended, not waited for
    assert list(tmp_path.iterdir()) == []


def test_checks_started_before_the_model_is_read_end_when_it_cannot_be(tmp_path, monkeypatch):
    monkeypatch.setattr(file_checks, "cores", lambda: 2)
    path = tmp_path / "notes.onnx"
    path.write_text("this is a text file, not a model\n")
    started = file_checks.start_checks(str(path))
    assert started is not None
    with pytest.raises(ModelInputError, match="not an ONNX file"):
        load_model(path, checks=started)
    assert started.process.returncode is not None  # not left running behind the error


def test_no_checks_process_for_a_file_that_is_not_there_or_on_one_core(tmp_path, model_files, monkeypatch):
    monkeypatch.setattr(file_checks, "cores", lambda: 2)
    assert file_checks.start_checks(str(tmp_path / "missing.onnx")) is None
    forked = file_checks.start_checks(str(model_files["plain-cnn-qdq"]))  # a small file too, in a forked copy
    assert isinstance(forked.process, file_checks.ForkedAnswer)
    forked.stop()
    monkeypatch.setattr(file_checks, "fork_is_safe", lambda: False)  # a new interpreter: only for a large file
    assert file_checks.start_checks(str(model_files["plain-cnn-qdq"])) is None
    monkeypatch.setattr(file_checks, "SPAWNED_CHECKS_MIN_BYTES", 0)
    spawned = file_checks.start_checks(str(model_files["plain-cnn-qdq"]))
    assert not isinstance(spawned.process, file_checks.ForkedAnswer)
    spawned.stop()
    monkeypatch.setattr(file_checks, "cores", lambda: 1)
    assert file_checks.start_checks(str(model_files["plain-cnn-qdq"])) is None
