"""The reduced model as a case module of the library (``case_reduced_<hash>.py``) and a test of its structure.

The module rebuilds the reduced graph with onnx-graphsurgeon: every node with its op, name and attributes, every
tensor with its name, shape and dtype. Q/DQ scales and zero points, and every other constant that is not a weight
(shapes, axes, small tensors), are written as they are in the model. Weights are drawn with a fixed seed in the same
shape and dtype, with the original's mean and spread (floats) or range (integers), unless ``keep_weights``.

What the case records is an observation of this project (:class:`cases.model.Observation`: the target, outcome,
category and error kind the reduction kept), never a :class:`cases.model.Claim`: a claim is what upstream reported,
with a source link, and nobody upstream has reported this yet.
"""
from __future__ import annotations

import base64
import collections
import dataclasses
import hashlib
import textwrap
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import onnx_graphsurgeon as gs

from cases.generate import IR_VERSION_FOR_OPSET
from cases.matching import QDQ_OPS
from harness.reduction.candidate import build_mode
from harness.scan.loading import default_opset
from harness.reduction.failure import KeptFailure
from harness.scan.reproducers import COMPUTE_OPS

SMALL = 16  # constants of at most this many elements are written as they are, weights or not
SEED = 0


class CaseWriterError(ValueError):
    """The reduced model has something a case module cannot rebuild (a subgraph attribute, an unsupported opset)."""


@dataclasses.dataclass(frozen=True)
class WrittenCase:
    case_id: str
    module: Path
    test: Path


def case_id_of(model_bytes: bytes) -> str:
    return f"reduced-{hashlib.sha256(model_bytes).hexdigest()[:8]}"


def write_case(reduced: Path, out_dir: Path, *, observed: KeptFailure, target: str, source_model: Path,
               nodes_before: int, max_abs_error: float, keep_weights: bool = False) -> WrittenCase:
    """Write ``case_<id>.py`` and ``test_case_<id>.py`` for the reduced model into ``out_dir``."""
    model = onnx.load(str(reduced))
    opset = default_opset(model)
    if opset not in IR_VERSION_FOR_OPSET:
        raise CaseWriterError(f"{reduced}: opset {opset}; the case library exports opsets "
                              f"{min(IR_VERSION_FOR_OPSET)} to {max(IR_VERSION_FOR_OPSET)}")
    case_id = case_id_of(model.SerializeToString(deterministic=True))
    module_name = "case_" + case_id.replace("-", "_")
    class_name = "Reduced" + case_id.split("-", 1)[1].upper()
    graph = gs.import_onnx(model)
    source = _module_source(graph, case_id, class_name, build_mode(model), opset, observed=observed, target=target,
                            source_model=source_model, nodes_before=nodes_before, max_abs_error=max_abs_error,
                            keep_weights=keep_weights)
    module = Path(out_dir) / f"{module_name}.py"
    module.write_text(source)
    test = Path(out_dir) / f"test_{module_name}.py"
    test.write_text(_test_source(graph, case_id, module_name, class_name, target))
    return WrittenCase(case_id, module, test)


def _module_source(graph: gs.Graph, case_id: str, class_name: str, mode: str, opset: int, *, observed: KeptFailure,
                   target: str, source_model: Path, nodes_before: int, max_abs_error: float,
                   keep_weights: bool) -> str:
    ops = collections.Counter(n.op for n in graph.nodes)
    op_list = ", ".join(f"{op} x{count}" if count > 1 else op for op, count in sorted(ops.items()))
    failure = observed.describe()
    weights = ("Weights are the model's own (--keep-weights)." if keep_weights else
               "Weights are drawn with a fixed seed in the model's shapes and dtypes, with its mean and spread "
               "(floats) or range (integers); Q/DQ scales and zero points, shapes and other small constants are as "
               "written in the model.")
    doc = textwrap.fill(
        f"{case_id}: {len(graph.nodes)} of the {nodes_before} nodes of {source_model.name} ({op_list}), the smallest "
        f"subgraph `trt-matrix reduce` (polygraphy debug reduce) found that fails on {target} the way the whole model "
        f"does: {failure}. Observed here, not reported upstream: OBSERVED is what {target} did, and nothing in this "
        "module is an upstream claim, so it has no Claim and no links until its upstream issue is filed (then add "
        f"the link to `links`). {weights}", 116)
    lines = [f'"""{doc}\n"""', "from __future__ import annotations", "", "import base64", "", "import numpy as np",
             "import onnx_graphsurgeon as gs", "",
             "from cases.model import Built, Case, Observation, Tolerance, Variant", "",
             f"OBSERVED = Observation(target={target!r}, outcome={observed.outcome!r}, category={observed.category!r},",
             f"                       error_kind={observed.error_kind!r}, node={observed.node!r},",
             f"                       message={observed.message[:300]!r})", f"SEED = {SEED}", "", "",
             "def _written(dtype: str, shape: tuple, data: str) -> np.ndarray:",
             '    """A constant exactly as the model holds it (its raw bytes)."""',
             "    return np.frombuffer(base64.b64decode(data), dtype=dtype).reshape(shape).copy()", "", "",
             "def _drawn(rng, dtype: str, shape: tuple, low: float, high: float, mean: float = 0.0, std: float = 1.0):",
             '    """A weight drawn in the model\'s shape and dtype: normal(mean, std) for floats, integers in [low, high]."""',
             "    if np.dtype(dtype).kind == 'f':",
             "        return np.clip(rng.normal(mean, std, shape), low, high).astype(dtype)",
             "    return rng.integers(int(low), int(high) + 1, shape).astype(dtype)", "", "",
             f"class {class_name}(Case):",
             f"    id = {case_id!r}",
             f"    title = {('Reduced from ' + source_model.name + ': ' + op_list + ' failing on ' + target)!r}",
             "    pattern = 'reduced'", "    links = ()  # none until the upstream issue is filed",
             "    observed = OBSERVED", f"    mode = {mode!r}", f"    opset = {opset}",
             "    tolerance = Tolerance(", "        min_cosine=0.99,", f"        max_abs_error={max_abs_error!r},",
             "        reason=\"The scan's reproducer rule on the reduced model's reference outputs; the case keeps a \"",
             f"        \"{observed.outcome}, so the bound matters only should {target} stop failing.\",", "    )",
             "    variants = (",
             f"        Variant(name='as-reduced', role='failing', description={('The reduced graph of ' + source_model.name + '.')!r}),",
             "    )", "", "    @staticmethod", "    def build(variant: Variant) -> Built:",
             "        rng = np.random.default_rng(SEED)",
             f"        graph = gs.Graph(name={case_id!r}, opset={opset})", "        t = {}  # tensor name -> tensor"]
    for tensor in _tensors(graph):
        lines.append(f"        t[{tensor.name!r}] = {_tensor_code(graph, tensor, keep_weights)}")
    for node in graph.nodes:
        attrs = "{" + ", ".join(f"{k!r}: {_attr_code(node, k, v)}" for k, v in node.attrs.items()) + "}"
        inputs = ", ".join(_ref(t) for t in node.inputs)
        outputs = ", ".join(_ref(t) for t in node.outputs)
        lines.append(f"        graph.nodes.append(gs.Node({node.op!r}, {node.name!r}, attrs={attrs},")
        lines.append(f"                                   inputs=[{inputs}], outputs=[{outputs}]))")
    lines.append(f"        graph.inputs = [{', '.join(_ref(t) for t in graph.inputs)}]")
    lines.append(f"        graph.outputs = [{', '.join(_ref(t) for t in graph.outputs)}]")
    expected = tuple(n.name for n in graph.nodes if n.op in COMPUTE_OPS)
    lines.append(f"        return Built(graph, expected_int8={expected!r})")
    return "\n".join(lines) + "\n"


def _tensors(graph: gs.Graph) -> list[gs.Tensor]:
    """Every named tensor, graph inputs first, then in the order nodes use or make them."""
    seen: dict[str, gs.Tensor] = {t.name: t for t in graph.inputs}
    for node in graph.nodes:
        for tensor in list(node.inputs) + list(node.outputs):
            if tensor.name:
                seen.setdefault(tensor.name, tensor)
    for tensor in graph.outputs:
        seen.setdefault(tensor.name, tensor)
    return list(seen.values())


def _ref(tensor: gs.Tensor) -> str:
    return f"t[{tensor.name!r}]" if tensor.name else "gs.Variable.empty()"


def _dtype_name(dtype: Any) -> str | None:
    if dtype is None:
        return None
    if isinstance(dtype, int):
        return onnx.helper.tensor_dtype_to_np_dtype(dtype).name
    return np.dtype(dtype).name


def _tensor_code(graph: gs.Graph, tensor: gs.Tensor, keep_weights: bool) -> str:
    if isinstance(tensor, gs.Constant):
        values = np.asarray(tensor.values)
        kept = keep_weights or _written_as_is(tensor, values)
        return f"gs.Constant({tensor.name!r}, {_array_code(values) if kept else _drawn_code(values)})"
    dtype = _dtype_name(tensor.dtype)
    shape = None if tensor.shape is None else [d if isinstance(d, (int, str)) else None for d in tensor.shape]
    return f"gs.Variable({tensor.name!r}, dtype={'None' if dtype is None else 'np.dtype(%r)' % dtype}, shape={shape!r})"


def _written_as_is(tensor: gs.Constant, values: np.ndarray) -> bool:
    """Scales and zero points of Q/DQ, small constants, and integer constants other than quantized weights."""
    for consumer in tensor.outputs:
        index = next(i for i, t in enumerate(consumer.inputs) if t is tensor)
        if consumer.op in QDQ_OPS and index >= 1:
            return True
    if values.size <= SMALL or values.dtype.kind not in "fiu":
        return True
    quantized_weight = any(c.op == "DequantizeLinear" and c.inputs[0] is tensor for c in tensor.outputs)
    return values.dtype.kind != "f" and not quantized_weight


def _array_code(values: np.ndarray) -> str:
    if values.size <= SMALL and values.dtype.kind in "fiub" and np.all(np.isfinite(values.astype(np.float64))):
        return f"np.array({values.tolist()!r}, dtype={values.dtype.name!r})"
    data = base64.b64encode(np.ascontiguousarray(values).tobytes()).decode()
    return f"_written({values.dtype.name!r}, {tuple(values.shape)!r}, {data!r})"


def _drawn_code(values: np.ndarray) -> str:
    low, high = float(values.min()), float(values.max())
    if values.dtype.kind == "f":
        mean, std = float(values.astype(np.float64).mean()), float(values.astype(np.float64).std())
        return (f"_drawn(rng, {values.dtype.name!r}, {tuple(values.shape)!r}, {low:.6g}, {high:.6g}, {mean:.6g}, "
                f"{std:.6g})")
    return f"_drawn(rng, {values.dtype.name!r}, {tuple(values.shape)!r}, {int(low)}, {int(high)})"


def _attr_code(node: gs.Node, name: str, value: Any) -> str:
    if isinstance(value, gs.Graph):
        raise CaseWriterError(f"node {node.name!r} ({node.op}): attribute {name!r} is a subgraph; a case module "
                              "cannot rebuild control flow")
    if isinstance(value, gs.Constant):
        return f"gs.Constant({value.name!r}, {_array_code(np.asarray(value.values))})"
    if isinstance(value, np.ndarray):
        return _array_code(value)
    if isinstance(value, (int, float, str, bytes, list, tuple, bool)) or value is None:
        return repr(value)
    raise CaseWriterError(f"node {node.name!r} ({node.op}): attribute {name!r} of type {type(value).__name__} is "
                          "not one a case module can write")


def _test_source(graph: gs.Graph, case_id: str, module_name: str, class_name: str, target: str) -> str:
    nodes = sorted((n.op, n.name) for n in graph.nodes)
    inputs = {t.name: (_dtype_name(t.dtype), list(t.shape or [])) for t in graph.inputs}
    doc = textwrap.fill(
        f"Structure of {case_id}, written by `trt-matrix reduce`: the case builds the reduced graph (ops, node names, "
        f"inputs), and what it records is an observation of {target}, not an upstream claim. Put it in tests/cases/ "
        f"with {module_name}.py in cases/; `trt-matrix generate` then `trt-matrix run --target {target}` reproduce the failure.", 116)
    return "\n".join([
        f'"""{doc}\n"""', "from cases.generate import export_model",
        f"from cases.{module_name} import OBSERVED, {class_name}", "",
        f"NODES = {nodes!r}  # (op, name), sorted", f"INPUTS = {inputs!r}  # name -> (dtype, shape)", "", "",
        "def test_it_builds_the_reduced_graph():",
        f"    model, _ = export_model({class_name}, {class_name}.variants[0])",
        "    assert sorted((n.op_type, n.name) for n in model.graph.node) == [tuple(n) for n in NODES]",
        "    initializers = {i.name for i in model.graph.initializer}",
        "    assert [i.name for i in model.graph.input if i.name not in initializers] == list(INPUTS)", "", "",
        "def test_what_it_records_was_observed_here_and_claims_nothing_upstream():",
        f"    assert {class_name}.observed is OBSERVED and OBSERVED.target == {target!r}",
        f"    assert not {class_name}.links and not any(v.claims for v in {class_name}.variants)", ""])
