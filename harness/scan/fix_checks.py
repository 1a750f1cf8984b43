"""The checks a fixed model passes before ``scan --fix`` writes it, each one named in the report with its figures.

1. ``onnx.checker``: the checker on the file, and strict shape inference with types checked (the two together are
   what ``check_model(full_check=True)`` does; the scan of the fixed model runs them once, as it loads it).
2. ``interface``: the same inputs and outputs as the original (names, dtypes, shapes), outputs a rewrite declared it
   adds listed as added, nothing else.
3. ``fp32-function``: original and fixed run on ONNX Runtime (CPU, graph optimizations off: the ops as written) on
   the same inputs; every original output bit-equal, or within the tolerance the rewrites declare. The original's run
   starts in a thread as soon as there is something to fix.
4. ``rescan``: a scan of the fixed model finds each fixed place in its workaround form (or, when the case's matcher
   does not report that form, no longer in a failing one) and no finding the original model lacked; a finding the
   rewrites of other places changed into another form, or out of every form the library knows, is listed.
"""
from __future__ import annotations

import concurrent.futures
import dataclasses
import os
import time
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np

from cases.model import FixTolerance
from harness.scan.fix_places import FixFailed, PlaceFix
from harness import judgement as j
from harness.worker.metrics import compare_output

WHOLE = "(the whole model)"
DEFAULT_SEED = 0
NUDGE = 1e-6  # the relative change of the inputs that tells whether the original resolves an output (Original.nudged)


class InputsError(ValueError):
    """Comparison or calibration inputs that do not fit the model; the message names the file and the input."""


@dataclasses.dataclass
class ComparisonInputs:
    """The inputs original and fixed run on: the user's ``--inputs`` .npz, or N(0, 1) draws from ``seed``."""

    path: Path | None = None
    seed: int = DEFAULT_SEED

    def describe(self) -> dict[str, Any]:
        if self.path is not None:
            return {"source": str(self.path)}
        return {"source": "N(0, 1) draws", "seed": self.seed}

    def text(self) -> str:
        return f"inputs from {self.path}" if self.path else f"inputs: N(0, 1) draws with seed {self.seed} (--seed)"

    def arrays(self, graph_inputs: Sequence[Any]) -> dict[str, np.ndarray]:
        """One array per model input (a gs tensor); InputsError when the file's names, dtypes or shapes do not fit."""
        if self.path is None:
            rng = np.random.default_rng(self.seed)
            return {t.name: draw(rng, t) for t in graph_inputs}
        return read_npz(self.path, graph_inputs)


def static_shape(tensor: Any) -> tuple[int, ...]:
    """The tensor's shape with every unknown or symbolic dimension taken as 1."""
    return tuple(d if isinstance(d, int) and d > 0 else 1 for d in (tensor.shape or ()))


def draw(rng: np.random.Generator, tensor: Any) -> np.ndarray:
    """N(0, 1) values for a float input; zeros for an integer or boolean one (an index or a mask)."""
    dtype = np.dtype(tensor.dtype)
    shape = static_shape(tensor)
    if np.issubdtype(dtype, np.floating):
        return rng.standard_normal(shape).astype(dtype)
    return np.zeros(shape, dtype=dtype)


def read_npz(path: Path, graph_inputs: Sequence[Any]) -> dict[str, np.ndarray]:
    """The arrays of an .npz file named after the model's inputs, checked against their dtypes and static shapes
    (a dynamic dimension takes any size)."""
    try:
        with np.load(path) as data:
            arrays = {name: data[name] for name in data.files}
    except (OSError, ValueError) as err:
        raise InputsError(f"{path}: not a readable .npz file ({err})") from None
    expected = {t.name: t for t in graph_inputs}
    missing = sorted(set(expected) - set(arrays))
    unknown = sorted(set(arrays) - set(expected))
    if missing or unknown:
        raise InputsError(f"{path}: its arrays {sorted(arrays)} do not match the model's inputs {sorted(expected)}"
                          + (f"; missing {missing}" if missing else "")
                          + (f"; not inputs: {unknown}" if unknown else ""))
    for name, tensor in expected.items():
        array, shape = arrays[name], tensor.shape or ()
        fits = array.ndim == len(shape) and all(not isinstance(d, int) or d <= 0 or d == n
                                                for d, n in zip(shape, array.shape))
        if not fits:
            raise InputsError(f"{path}: array {name!r} has shape {list(array.shape)}, the model's input {name!r} "
                              f"takes {[d if isinstance(d, int) else str(d) for d in shape]}")
        if np.dtype(tensor.dtype) != array.dtype:
            raise InputsError(f"{path}: array {name!r} is {array.dtype}, the model's input {name!r} is "
                              f"{np.dtype(tensor.dtype)}")
    return arrays


def save(model: Any, path: Path, external_data: bool) -> list[str]:
    """Write a fixed model to ``path``; with ``external_data`` (the user's model kept its weights in files of their
    own) its tensors over 1 KiB go to one file beside it, ``<name>.data``. The names of the files written."""
    import onnx

    if not external_data:
        onnx.save(model, os.fspath(path))
        return [path.name]
    location = f"{path.name}.data"
    onnx.save(model, os.fspath(path), save_as_external_data=True, all_tensors_to_one_file=True, location=location,
              size_threshold=1024)
    return [path.name, location]


@dataclasses.dataclass
class Run:
    """The outputs of one ONNX Runtime run and the CPU seconds of its thread (session included: with one intra-op
    thread, ONNX Runtime works in the calling thread), which other threads beside it do not inflate."""

    outputs: list[np.ndarray]
    cpu_seconds: float


def run_onnxruntime(path: Path, feeds: dict[str, np.ndarray], outputs: Sequence[str]) -> Run:
    """``outputs`` of the model at ``path`` on ONNX Runtime's CPU provider with graph optimizations off."""
    import onnxruntime

    started = time.thread_time()
    options = onnxruntime.SessionOptions()
    options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_DISABLE_ALL
    options.log_severity_level = 3
    options.intra_op_num_threads = 1  # one thread: its CPU time is its wall time, comparable with a scan's
    session = onnxruntime.InferenceSession(os.fspath(path), options, providers=["CPUExecutionProvider"])
    return Run(session.run(list(outputs), feeds), time.thread_time() - started)


def compare(reference: np.ndarray, fixed: np.ndarray, tolerance: FixTolerance | None) -> dict[str, Any]:
    """Figures of one output: bit-equal, max abs error, cosine, and whether it is within ``tolerance``."""
    figures: dict[str, Any] = {"bit_equal": bool(reference.shape == fixed.shape and reference.dtype == fixed.dtype
                                                 and np.array_equal(reference, fixed, equal_nan=
                                                                    np.issubdtype(reference.dtype, np.floating)))}
    if reference.shape != fixed.shape:
        return {**figures, "within": False, "why": f"shape {list(fixed.shape)}, was {list(reference.shape)}"}
    found = compare_output(fixed, reference)
    error, cosine = found["max_abs_error"], found["cosine"]
    peak = float(np.max(np.abs(reference.astype(np.float64)))) if reference.size else 0.0
    figures.update(max_abs_error=error, cosine=round(cosine, 9), max_abs_reference=peak)
    if tolerance is None:
        figures["within"] = figures["bit_equal"]
    else:
        figures["within"] = bool(cosine >= tolerance.min_cosine and error <= tolerance.max_relative_error * peak)
    return figures


@dataclasses.dataclass
class Original:
    """What the checks need of the original model, taken before any rewrite (the last group rewrites the scan's own
    graph in place): its file, its interface, the comparison inputs and its outputs on them (run once).

    :meth:`start_reference` runs the original on ONNX Runtime in a thread while the rewrite goes on: ONNX Runtime
    lets go of the interpreter, so on a large model its seconds overlap the rewrite's and the fixed model's checks.
    """

    path: Path
    inputs: list[tuple[str, str | None, list | None]]
    outputs: list[tuple[str, str | None, list | None]]
    feeds: dict[str, np.ndarray]
    _reference: concurrent.futures.Future | None = None
    _nudged: list[np.ndarray] | None = None

    @classmethod
    def of(cls, loaded: Any, inputs: ComparisonInputs) -> "Original":
        graph, proto = loaded.graph, loaded.model.graph
        names = {t.name for t in graph.inputs}  # not the initializers an old IR also lists as inputs
        return cls(loaded.path, [_file_signature(v) for v in proto.input if v.name in names],
                   [_file_signature(v) for v in proto.output], inputs.arrays(graph.inputs))

    @property
    def output_names(self) -> list[str]:
        return [name for name, _, _ in self.outputs]

    def start_reference(self) -> None:
        if self._reference is None:
            background = concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix="fix-reference")
            self._reference = background.submit(run_onnxruntime, self.path, self.feeds, self.output_names)
            background.shutdown(wait=False)  # the thread ends with its one run

    def reference(self) -> Run:
        self.start_reference()
        return self._reference.result()

    def nudged(self) -> list[np.ndarray]:
        """The original's outputs on its float inputs scaled by ``1 + NUDGE`` (run once, when first asked): how far
        the original moves by itself when its inputs change by one part in a million."""
        if self._nudged is None:
            feeds = {name: (array * array.dtype.type(1 + NUDGE)).astype(array.dtype)
                     if np.issubdtype(array.dtype, np.floating) else array for name, array in self.feeds.items()}
            self._nudged = run_onnxruntime(self.path, feeds, self.output_names).outputs
        return self._nudged


def check_fixed(result: Any, original: Original, staged: Path, places: Sequence[PlaceFix],
                tolerance: FixTolerance | None, inputs: ComparisonInputs,
                rescan: Callable[[Path], Any]) -> tuple[Any, list[dict[str, Any]]]:
    """Run the four checks on the fixed model at ``staged``; its scan and the checks passed (name, figures).
    Raises FixFailed naming the place and the check at the first failure."""
    from harness.scan.loading import ModelInputError

    checks = []
    started = time.perf_counter()
    try:
        fixed = rescan(staged)
    except ModelInputError as err:
        raise FixFailed(WHOLE, "onnx.checker", str(err).replace(str(staged), "the fixed model")) from None
    if not fixed.loaded.strict_shapes:
        raise FixFailed(WHOLE, "onnx.checker", "strict shape inference failed on the fixed model: "
                        + "; ".join(fixed.loaded.notes))
    loading = time.perf_counter() - started - fixed.timings["match"] - fixed.timings["predict"]
    checks.append({"check": "onnx.checker", "passed": True, "seconds": round(loading, 3),
                   "detail": "onnx.checker on the file and strict shape inference with types checked"})
    checks.append(_interface(original, fixed.loaded.model.graph, places))
    started = time.perf_counter()
    checks.append({**_function(original, staged, places, tolerance, inputs),
                   "seconds": round(time.perf_counter() - started, 3)})
    checks.append({**_rescan(result, fixed, places), "seconds": round(fixed.timings["match"] +
                                                                      fixed.timings["predict"], 3)})
    return fixed, checks


def _file_signature(value: Any) -> tuple[str, str | None, list | None]:
    """(name, dtype, shape) of a graph input or output of a file as shape inference left it (an
    onnx.ValueInfoProto); a dimension without a value is its symbolic name, or "?"."""
    from onnx import helper

    tensor = value.type.tensor_type
    dtype = np.dtype(helper.tensor_dtype_to_np_dtype(tensor.elem_type)).name if tensor.elem_type else None
    shape = [d.dim_value if d.HasField("dim_value") else (d.dim_param or "?") for d in tensor.shape.dim] \
        if tensor.HasField("shape") else None
    return value.name, dtype, shape


def _interface(original: Original, fixed: Any, places: Sequence[PlaceFix]) -> dict[str, Any]:
    """The fixed file's inputs and outputs (``fixed``: its onnx.GraphProto after shape inference) against the
    original's."""
    before_in, after_in = original.inputs, [_file_signature(v) for v in fixed.input]
    if before_in != after_in:
        raise FixFailed(WHOLE, "interface", f"inputs changed: {before_in} -> {after_in}")
    before, after = original.outputs, [_file_signature(v) for v in fixed.output]
    declared = [name for p in places for name in p.result.outputs_added]
    kept = [s for s in after if s[0] not in declared]
    if kept != before:
        raise FixFailed(WHOLE, "interface", f"outputs changed: {before} -> {kept} (besides the added {declared})")
    added = [s for s in after if s[0] in declared]
    if sorted(s[0] for s in added) != sorted(declared):
        raise FixFailed(WHOLE, "interface", f"declared added outputs {declared}, the fixed model has "
                        f"{[s[0] for s in added]}")
    return {"check": "interface", "passed": True, "inputs": len(after_in), "outputs": len(before),
            "outputs_added": [{"name": n, "dtype": d, "shape": s} for n, d, s in added]}


def _function(original: Original, staged: Path, places: Sequence[PlaceFix], tolerance: FixTolerance | None,
              inputs: ComparisonInputs) -> dict[str, Any]:
    names = original.output_names
    fixed = run_onnxruntime(staged, original.feeds, names)
    reference = original.reference()
    figures = {name: compare(r, f, tolerance) for name, r, f in zip(names, reference.outputs, fixed.outputs)}
    bad = [name for name, f in figures.items() if not f["within"]]
    wanted = "bit-equal" if tolerance is None else (
        f"cosine >= {tolerance.min_cosine} and max abs error <= {tolerance.max_relative_error:g} x the output's "
        "largest magnitude")
    if bad:
        if tolerance is not None:  # does the original itself hold the outputs within the tolerance?
            for name, held, nudged in zip(names, reference.outputs, original.nudged()):
                if name in bad:
                    figures[name]["original_nudged"] = compare(held, nudged, tolerance)
        shown = ", ".join(f"{n} (max abs error {figures[n].get('max_abs_error')}, cosine {figures[n].get('cosine')})"
                          for n in bad)
        places_text = ", ".join(f"{p.occurrence.anchor} ({p.workaround.name})" for p in places)
        raise FixFailed(WHOLE, "fp32-function", f"output(s) {shown} not {wanted} after rewriting {places_text}",
                        detail="; ".join(_shortfall(n, figures[n], tolerance) for n in bad),
                        figures={n: figures[n] for n in bad})
    return {"check": "fp32-function", "passed": True, "wanted": wanted, "inputs": inputs.describe(),
            "onnxruntime_cpu_seconds": {"original": round(reference.cpu_seconds, 3),
                                        "fixed": round(fixed.cpu_seconds, 3)},
            "tolerance_reason": tolerance.reason if tolerance else "the rewrites only add outputs or Identity nodes, "
            "or compute offline what a node computed", "outputs": figures}


def _shortfall(name: str, figures: dict[str, Any], tolerance: FixTolerance | None) -> str:
    """How output ``name`` missed ``tolerance``, in its figures (:func:`compare`)."""
    if "why" in figures:
        return f"output {name}: {figures['why']}"
    if tolerance is None:
        text = (f"output {name} is not bit-equal: max abs error {figures['max_abs_error']:.3g}, cosine "
                f"{figures['cosine']:.6f}")
    else:
        text = (f"output {name}: cosine {figures['cosine']:.6f} (wanted >= {tolerance.min_cosine}), max abs error "
                f"{figures['max_abs_error']:.3g} (wanted <= {tolerance.max_relative_error:g} x the output's largest "
                f"magnitude {figures['max_abs_reference']:.3g})")
    nudged = figures.get("original_nudged")
    if nudged is None or nudged["within"]:
        return text
    return (f"{text}; this output is below the original model's own resolution: with its inputs scaled by "
            f"1 + {NUDGE:g} the original itself gives cosine {nudged['cosine']:.6f}, max abs error "
            f"{nudged['max_abs_error']:.3g}, so no rewrite can be checked on it")


def _rescan(result: Any, fixed: Any, places: Sequence[PlaceFix]) -> dict[str, Any]:
    found = {(f.case.id, o.anchor): f for f in fixed.findings for o in f.occurrences}
    status = []
    expected = set()
    for place in places:
        case, anchor = place.finding.case.id, place.occurrence.anchor
        now = found.get((case, anchor))
        form = now.variant.name if now is not None and now.variant is not None else None
        if place.result.build_time and not (place.result.nodes_added or place.result.outputs_added
                                            or place.result.nodes_removed):
            state = "unchanged in the file: the workaround is a build setting"
        elif now is None:
            state = "no longer found (the case's matcher does not report this workaround form)"
        elif form == place.workaround.name:
            state = f"found in the workaround form {form}"
        else:
            raise FixFailed(anchor, "rescan", f"{case} is still found here as {now.label}, not in the workaround form "
                            f"{place.workaround.name}")
        expected.add((case, form, anchor))
        status.append({"place": anchor, "case": case, "form": form, "state": state})
    changed = []
    original = {(f.case.id, o.anchor): (i, f) for i, f in enumerate(result.findings) for o in f.occurrences}
    for index, finding in enumerate(fixed.findings):
        form = finding.variant.name if finding.variant else None
        for occurrence in finding.occurrences:
            key = (finding.case.id, occurrence.anchor)
            before = original.get(key)
            if (finding.case.id, form, occurrence.anchor) in expected or (
                    before is not None and before[1].variant is finding.variant):
                continue
            if before is None:
                raise FixFailed(occurrence.anchor, "rescan", f"the fixed model has a finding the original lacked: "
                                f"{finding.label} at {occurrence.anchor}")
            worse = {target: f"{target} {verdict.verdict} (was {result.verdicts[before[0]][target].verdict})"
                     for target, verdict in fixed.verdicts[index].items()
                     if _rank(verdict.verdict) < _rank(result.verdicts[before[0]][target].verdict)}
            if worse:
                raise FixFailed(occurrence.anchor, "rescan", f"{finding.case.id} changed form here from "
                                f"{before[1].label} to {finding.label}, which is worse on {', '.join(worse.values())}",
                                targets=tuple(worse))
            changed.append({"place": occurrence.anchor, "case": finding.case.id, "from": before[1].label,
                            "to": finding.label, "state": "another form of a case found here before, no worse on "
                            "these targets"})
    rewritten = {(p.finding.case.id, p.occurrence.anchor) for p in places}
    gone = [{"place": o.anchor, "case": f.case.id, "was": f.label, "state": "no longer found here: a rewrite changed "
             "this place into a form the case's matcher does not report, so the evidence about its old form no "
             "longer applies"}
            for f in result.findings for o in f.occurrences
            if (f.case.id, o.anchor) not in found and (f.case.id, o.anchor) not in rewritten]
    findings = sum(len(f.occurrences) for f in fixed.findings)
    return {"check": "rescan", "passed": True, "places": status, "changed_forms": changed, "gone": gone,
            "findings": findings}


def _rank(verdict: str) -> int:
    """Where ``verdict`` stands among the scan's verdicts, worst first: a changed form may not move a target up."""
    return j.SCAN_VERDICTS.index(verdict)
