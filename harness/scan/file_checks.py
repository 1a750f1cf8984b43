"""onnx's own checks of a model file: strict shape inference (type-checked; permissive when strict fails) and
``onnx.checker``, in C++ (the checker on the file itself: no 2 GB protobuf limit; shape inference on the file's bytes,
or on the file where it is over that limit), and the types and shapes inferred, handed back as one serialized
``onnx.GraphProto`` (its value infos and outputs).

Standard library and onnx only, so a large model's checks can run in a second process while the scanner reads the
same file: onnx's calls keep the interpreter's lock, so only a second process puts both on two cores at once. That
process is a forked copy of the scanner's, where forking is plainly safe (:func:`fork_is_safe`): it starts with onnx
imported and no interpreter to start, 0.1 CPU s less, which the scan's own process, sharing the machine's memory and
caches with it, feels too. Elsewhere it is this module run as a script (``python file_checks.py MODEL TYPES_FILE``).
Either answers in two parts, the inferred types first, so the scanner can match the graph while the checker still
runs. onnx is imported where it is used: importing this module costs nothing.
"""
from __future__ import annotations

import ctypes
import dataclasses
import functools
import json
import os
import selectors
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import traceback
import weakref
from pathlib import Path
from typing import IO, TYPE_CHECKING, Callable, Iterable

if TYPE_CHECKING:
    import onnx


@dataclasses.dataclass
class FileChecks:
    """What onnx's checks said of a model file, and the types and shapes shape inference gave its tensors."""

    strict: bool  # strict shape inference passed: with the checker, a full check
    notes: list[str]  # the shape inference fallbacks, for the report
    invalid: str | None = None  # what the checker says, in one line, when the model is not valid ONNX
    # the inferred value infos, in an onnx.GraphProto serialized without its nodes, initializers and outputs (empty:
    # nothing inferred)
    inferred: bytes = b""
    # the graph outputs as inferred, apart: every scan reads them, only some matchers the value infos (a large
    # model's tens of thousands, megabytes to parse)
    inferred_outputs: bytes = b""

    def value_infos(self) -> dict[str, onnx.ValueInfoProto]:
        """Each tensor's inferred value info by name: the value infos, and the graph outputs not among them (an
        entry may be untyped: its ``type`` empty)."""
        import onnx

        found = {info.name: info for info in self.outputs()}
        found.update((info.name, info) for info in onnx.GraphProto.FromString(self.inferred).value_info)
        return found

    def outputs(self) -> list[onnx.ValueInfoProto]:
        """The graph outputs as shape inference typed them."""
        return list(self._outputs_graph.output)

    @functools.cached_property
    def _outputs_graph(self) -> onnx.GraphProto:
        import onnx

        return onnx.GraphProto.FromString(self.inferred_outputs)


OUTPUTS_SUFFIX = ".outputs"  # beside the types file: the graph outputs as inferred (FileChecks.inferred_outputs)
# The largest serialized protobuf message: a model file above it is inferred from the file, the inferred model written
# to a file beside (onnx's bytes API cannot take it); one below, from its bytes, the inferred model handed back in
# memory, without writing and reading back a copy of the weights.
PROTOBUF_LIMIT = 2**31 - 1


def infer_types(model: str, directory: str | None = None) -> FileChecks:
    """Infer ``model``'s shapes (strict, then permissive) and keep them; the checker has not run yet. A model over
    :data:`PROTOBUF_LIMIT` is inferred from its file into ``directory`` (default: a temporary one of its own, removed
    after)."""
    in_memory = os.path.getsize(model) <= PROTOBUF_LIMIT
    if not in_memory and directory is None:
        with tempfile.TemporaryDirectory(prefix="trt-matrix-checks-") as tmp:
            return infer_types(model, tmp)
    import onnx

    notes: list[str] = []
    checks = FileChecks(strict=False, notes=notes)
    data = Path(model).read_bytes() if in_memory else None
    for strict_mode in (True, False):
        # onnx's C++ raises ValueError where a type it meets is no type at all ("Invalid tensor data type 0.": a
        # tensor read but written by nobody, which the checker then names)
        try:
            graph = _inferred_graph(model, data, directory, strict_mode)
        except (onnx.shape_inference.InferenceError, onnx.checker.ValidationError, RuntimeError, ValueError) as err:
            message = _one_line(err)
            notes.append(f"strict shape inference failed ({message}); scanned with the shapes the permissive "
                         "mode infers, some may be unknown" if strict_mode else
                         f"shape inference failed ({message}); scanned without inferred shapes")
            continue
        checks.strict = strict_mode
        checks.inferred_outputs = onnx.GraphProto(output=graph.output).SerializeToString()
        del graph.node[:], graph.initializer[:], graph.output[:]  # the rest is the types: cleared, not copied out
        checks.inferred = graph.SerializeToString()
        break
    return checks


def _inferred_graph(model: str, data: bytes | None, directory: str | None, strict_mode: bool) -> onnx.GraphProto:
    """The graph shape inference (types checked, data propagated) makes of ``model``: from its bytes ``data``, or,
    without them, from its file, into a file of ``directory``."""
    import onnx

    options = {"check_type": True, "strict_mode": strict_mode, "data_prop": True}
    if data is not None:
        return onnx.shape_inference.infer_shapes(data, **options).graph
    inferred = os.path.join(directory, "inferred.onnx")
    onnx.shape_inference.infer_shapes_path(model, inferred, **options)
    return onnx.load(inferred, load_external_data=False).graph


def checker_verdict(model: str) -> str | None:
    """What the checker says of ``model`` (:func:`_one_line`), None when it is valid (not full_check: shape inference
    has run)."""
    import onnx

    try:
        onnx.checker.check_model(model)
    except onnx.checker.ValidationError as err:
        return _one_line(err) or type(err).__name__
    return None


def _one_line(err: Exception) -> str:
    """onnx's message in one line, its whitespace collapsed, at most 300 characters: the checker's may break a line
    before the node it names ("input 'x' of node: \nname: Identity_151 OpType: Identity\n is not output of any
    previous nodes")."""
    return " ".join(str(err).split())[:300]


def check_file(model: str) -> FileChecks:
    """Both checks of ``model``, in this process."""
    checks = infer_types(model)
    checks.invalid = checker_verdict(model)
    return checks


class ChildChecks:
    """:func:`check_file` running in a second process (a forked copy of this one where :func:`fork_is_safe`, else
    this module as a script): :meth:`types` waits for the inferred types, :meth:`result` for the checker too.

    The process says how shape inference went, then the checker's verdict, one JSON line each; the types themselves
    (megabytes on a large model) go into a file of a directory this object owns and removes. Through the pipe they
    would come a pipe's buffer at a time, each waiting for the scan's thread to let go of the interpreter, and hold
    the checker back until the scan asked for them."""

    def __init__(self, model: str):
        self._directory = tempfile.mkdtemp(prefix="trt-matrix-checks-")
        self._types_file = os.path.join(self._directory, "inferred-types.pb")
        if fork_is_safe():
            self.process: subprocess.Popen | ForkedAnswer = ForkedAnswer(model, self._types_file)
        else:  # PYTHONSAFEPATH (Python 3.11+): the script's directory, this package's, is not put before the libraries
            self.process = subprocess.Popen(self.command(model, self._types_file), stdout=subprocess.PIPE,
                                            stderr=subprocess.PIPE, env={**os.environ, "PYTHONSAFEPATH": "1"})
        self._types: FileChecks | None = None
        self._result: FileChecks | None = None
        self._failure: str | None = None  # why the process ended before its answers, once it has
        # ended by stop(), or, for checks nobody answered or stopped (a caller of the library that failed before
        # LoadedModel.checked), when this object goes or at the interpreter's exit
        self._stopping = weakref.finalize(self, _stop, self.process, self._directory, os.getpid())

    @staticmethod
    def command(model: str, types_file: str) -> list[str]:
        """This module run as a script on ``model``, writing the inferred types to ``types_file``."""
        return [sys.executable, os.fspath(Path(__file__)), model, types_file]

    def types(self) -> FileChecks:
        """What shape inference said (``invalid`` not known yet)."""
        if self._types is None:
            header = self._line()
            with open(self._types_file, "rb") as types, open(self._types_file + OUTPUTS_SUFFIX, "rb") as outputs:
                self._types = FileChecks(**header, inferred=types.read(), inferred_outputs=outputs.read())
        return self._types

    def result(self) -> FileChecks:
        if self._result is None:
            types, verdict = self.types(), self._line()
            self._end()
            self._result = dataclasses.replace(types, invalid=verdict["invalid"])
        return self._result

    def stop(self) -> None:
        """End the process if it still runs and remove the types' directory (nothing to do once they have ended)."""
        self._stopping()

    def _line(self) -> dict:
        if self._failure is None:
            line = self.process.stdout.readline()
            if line:
                return json.loads(line)
            err = self._end().decode(errors="replace")  # the process ended before its answer
            last = (err.strip().splitlines() or [f"exit status {self.process.returncode}"])[-1]
            self._failure = f"onnx's checks of the model stopped in their process ({last})"
        raise RuntimeError(self._failure)  # asked again (the types, then the verdict): the same answer

    def _end(self) -> bytes:
        """Wait for the process, remove the types' directory; what the process wrote to stderr."""
        self._stopping.detach()
        return _wait_and_remove(self.process, self._directory)


def _stop(process: subprocess.Popen | ForkedAnswer, directory: str, owner: int) -> None:
    """End the checks' ``process`` if it still runs and remove their ``directory``, in the process that started them
    only (a forked copy of it that exits normally must leave them be)."""
    if os.getpid() != owner:
        return
    if process.poll() is None:
        process.kill()
    _wait_and_remove(process, directory)


def _wait_and_remove(process: subprocess.Popen | ForkedAnswer, directory: str) -> bytes:
    """Wait for the checks' ``process`` (reading what it still says), remove their ``directory``; what the process
    wrote to stderr."""
    err = b""
    if not process.stdout.closed:
        _, err = process.communicate()
    shutil.rmtree(directory, ignore_errors=True)
    return err


class ForkedAnswer:
    """The checks' answers (:func:`_answer`) from a forked copy of this process, with what :class:`ChildChecks`
    uses of a :class:`subprocess.Popen`: the answers on ``stdout``, ``poll``, ``kill``, ``communicate`` (its
    standard error: onnx's C++ messages, a traceback) and ``returncode`` (negative: the signal that ended it)."""

    def __init__(self, model: str, types_file: str) -> None:
        import onnx  # noqa: F401  (imported here, once: the copy starts with it, as does what reads the model here)

        out_read, out_write = os.pipe()
        err_read, err_write = os.pipe()

        def answer() -> None:
            os.dup2(err_write, 2)  # onnx's C++ messages too
            with open(out_write, "w") as answers:
                _answer(model, types_file, answers)

        self.pid, self.returncode = run_forked(answer, err_write, (out_read, err_read)), None
        os.close(out_write)
        os.close(err_write)
        self.stdout: IO[bytes] = open(out_read, "rb")
        self._stderr: IO[bytes] = open(err_read, "rb")

    def poll(self) -> int | None:
        if self.returncode is None:
            pid, status = os.waitpid(self.pid, os.WNOHANG)
            if pid:
                self.returncode = os.waitstatus_to_exitcode(status)
        return self.returncode

    def kill(self) -> None:
        if self.poll() is None:
            os.kill(self.pid, signal.SIGKILL)

    def communicate(self) -> tuple[bytes, bytes]:
        """Read both pipes to their end (both at once: neither fills and stops the process), then wait for it."""
        read: dict[int, list[bytes]] = {self.stdout.fileno(): [], self._stderr.fileno(): []}
        with selectors.DefaultSelector() as selector:
            for descriptor in read:
                selector.register(descriptor, selectors.EVENT_READ)
            while selector.get_map():
                for key, _ in selector.select():
                    chunk = os.read(key.fd, 65536)
                    if chunk:
                        read[key.fd].append(chunk)
                    else:
                        selector.unregister(key.fd)
        out, err = (b"".join(read[stream.fileno()]) for stream in (self.stdout, self._stderr))
        self.stdout.close()
        self._stderr.close()
        if self.returncode is None:
            self.returncode = os.waitstatus_to_exitcode(os.waitpid(self.pid, 0)[1])
        return out, err


def cores() -> int:
    """The CPU cores this process may run on."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def fork_is_safe() -> bool:
    """Whether a forked copy of this process can do work safely: on Linux (Windows has no fork; on macOS system
    frameworks may not survive one), with no other thread running (a lock one of them holds would stay held in the
    copy)."""
    return sys.platform.startswith("linux") and threading.active_count() == 1


def run_forked(work: Callable[[], None], report: int, close: Iterable[int] = ()) -> int:
    """Fork, and in the copy close the descriptors ``close`` (the ends this process reads), run ``work``, write its
    traceback to the descriptor ``report`` when it fails (to the descriptor itself: ``sys.stderr`` may be another
    stream there), and end, exit status 0 or 1, without this process's exit handlers or buffered output. Returns the
    copy's process id."""
    pid = os.fork()
    if pid == 0:
        status = 1
        try:
            for descriptor in close:
                os.close(descriptor)
            work()
            status = 0
        except BaseException:
            os.write(report, traceback.format_exc().encode(errors="replace"))
        finally:
            os._exit(status)
    return pid


# Where no copy of this process can be forked, the checks' process is a new interpreter that imports onnx again: a
# model file this small is checked in the scan's own process instead (its checks take less than that start).
SPAWNED_CHECKS_MIN_BYTES = 8 << 20


def start_checks(model: str) -> ChildChecks | None:
    """The checks of the file ``model`` started in their process, when there is a second core to run them on and the
    file exists (None: :func:`~harness.scan.loading.load_model` checks it in this process, or says what is wrong).
    A forked copy runs them beside the scan's imports whatever the file's size (a 150 kB model's shape inference
    and checker, the first in a process, take 15 to 25 ms); a new interpreter only for a file of
    :data:`SPAWNED_CHECKS_MIN_BYTES` or more."""
    if cores() < 2 or not os.path.isfile(model):
        return None
    if not fork_is_safe() and os.path.getsize(model) < SPAWNED_CHECKS_MIN_BYTES:
        return None
    return ChildChecks(model)


M_MXFAST = 1  # glibc's mallopt(3) parameter: the largest request its fast bins serve (0: none)


def _without_fast_bins() -> None:
    """glibc's malloc without its fast bins, in this process: shape inference frees a model's hundreds of thousands
    of protobuf objects into them, and the next large allocation (parsing what it inferred, the checker reading the
    model) first merges them all, 0.1 s of the 0.65 s both checks take on a 50,000-node model. Without fast bins a
    freed block merges with its neighbours at once. Another C library, or none to load, is left as it is."""
    if not sys.platform.startswith("linux"):
        return
    try:
        ctypes.CDLL(None).mallopt(M_MXFAST, 0)
    except (OSError, AttributeError):  # no mallopt: not glibc
        pass


def _answer(model: str, types_file: str, answers: IO[str] | None = None) -> None:
    """The checks of ``model`` (in their own process: its malloc is tuned for onnx's C++), the types written to
    ``types_file``, then two JSON lines to ``answers`` (default: standard output), how shape inference went and the
    checker's verdict."""
    _without_fast_bins()
    answers = answers or sys.stdout
    # a model over protobuf's limit is inferred into a file beside the types, in the directory the scan owns: killed
    # halfway, nothing is left
    types = infer_types(model, os.path.dirname(types_file))
    with open(types_file, "wb") as stream:
        stream.write(types.inferred)
    with open(types_file + OUTPUTS_SUFFIX, "wb") as stream:
        stream.write(types.inferred_outputs)
    print(json.dumps({"strict": types.strict, "notes": types.notes}), file=answers, flush=True)
    print(json.dumps({"invalid": checker_verdict(model)}), file=answers, flush=True)


if __name__ == "__main__":
    _answer(sys.argv[1], sys.argv[2])
