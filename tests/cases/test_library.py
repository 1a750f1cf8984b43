"""Checks that hold for every case and variant of the library: declarations, claims, the ONNX each variant builds."""
from __future__ import annotations

import pathlib
import re

import numpy as np
import onnx
import onnxruntime as ort
import pytest
import yaml

import cases
from cases import all_cases, iter_variants  # importing the package registers the whole library
from cases.generate import export_model

MATRIX = pathlib.Path(__file__).resolve().parents[2] / "matrix.yaml"
QDQ_OPS = {"QuantizeLinear", "DequantizeLinear"}
PAIRS = list(iter_variants())


def export(case, variant) -> onnx.ModelProto:
    model, _ = export_model(case, variant)
    return model


def pair_id(pair) -> str:
    case, variant = pair
    return f"{case.id}/{variant.name}"


@pytest.fixture(scope="module")
def targets() -> dict:
    return yaml.safe_load(MATRIX.read_text())["targets"]


def test_ids_are_unique_kebab_case_and_start_with_their_pattern():
    ids = [case.id for case in all_cases()]
    assert len(ids) == len(set(ids))
    for case in all_cases():
        assert re.fullmatch(r"[a-z0-9]+(-[a-z0-9]+)*", case.id), case.id
        assert case.id.startswith(f"{case.pattern.lower()}-"), (case.id, case.pattern)


def test_every_case_has_a_failing_or_control_variant():
    for case in all_cases():
        assert {v.role for v in case.variants} & {"failing", "control"}, case.id


def test_links_are_https():
    """Every case links its upstream report; a case `harness reduce` made from a failure seen here links nothing
    until its upstream issue is filed, and says what was seen instead (``observed``)."""
    for case in all_cases():
        assert case.links or case.observed, case.id
        assert all(link.startswith("https://") for link in case.links), case.id


def test_tolerances_are_usable():
    for case in all_cases():
        tol = case.tolerance
        assert 0.9 <= tol.min_cosine < 1 and tol.max_abs_error > 0 and tol.reason, case.id


@pytest.mark.parametrize("case", all_cases(), ids=lambda case: case.id)
def test_no_two_variants_of_a_case_are_the_same_cell(case):
    """Every variant differs from every other in its model, its knobs or its mode: a sweep point that changes nothing
    would be a duplicate cell."""
    cells = {
        (export(case, v).SerializeToString(deterministic=True), repr(v.knobs), case.mode_of(v)) for v in case.variants
    }
    assert len(cells) == len(case.variants)


@pytest.mark.parametrize("pair", PAIRS, ids=pair_id)
def test_claims_name_available_matrix_targets(pair, targets):
    _, variant = pair
    for claim in variant.claims:
        assert claim.target in targets, claim.target
        assert targets[claim.target].get("available", True), f"{claim.target} is marked unavailable"


@pytest.mark.parametrize("pair", PAIRS, ids=pair_id)
def test_model_passes_checker_and_strict_shape_inference(pair):
    case, variant = pair
    model = export(case, variant)
    assert [(o.domain, o.version) for o in model.opset_import] == [("", case.opset_of(variant))]
    onnx.checker.check_model(model, full_check=True)
    onnx.shape_inference.infer_shapes(model, strict_mode=True)


@pytest.mark.parametrize("pair", PAIRS, ids=pair_id)
def test_model_runs_in_onnxruntime_cpu(pair):
    case, variant = pair
    model = export(case, variant)
    options = ort.SessionOptions()
    options.log_severity_level = 3
    session = ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])
    rng = np.random.default_rng(0)
    shapes = variant.params.get("input_shapes", {})  # the sizes of dynamic dimensions, where a variant has them
    feeds = {i.name: rng.standard_normal(shapes.get(i.name, i.shape)).astype(np.float32) for i in session.get_inputs()}
    outputs = session.run(None, feeds)
    declared = [[d.dim_param or d.dim_value for d in o.type.tensor_type.shape.dim] for o in model.graph.output]
    for output, dims in zip(outputs, declared):
        assert len(output.shape) == len(dims)
        assert all(size == dim for size, dim in zip(output.shape, dims) if isinstance(dim, int))
    assert all(np.isfinite(o).all() for o in outputs)


@pytest.mark.parametrize("pair", PAIRS, ids=pair_id)
def test_building_twice_gives_identical_bytes(pair):
    case, variant = pair
    first, second = export(case, variant), export(case, variant)
    assert first.SerializeToString(deterministic=True) == second.SerializeToString(deterministic=True)


@pytest.mark.parametrize("pair", PAIRS, ids=pair_id)
def test_node_names_are_unique_and_expected_nodes_exist(pair):
    """Every variant asks some nodes for a precision (INT8, FP8, FP16 ...), and they are nodes of its graph."""
    case, variant = pair
    built = case.build(variant)
    names = [node.name for node in built.graph.nodes]
    assert all(names) and len(names) == len(set(names))
    assert built.requested and set(built.requested) <= set(names)


@pytest.mark.parametrize("pair", PAIRS, ids=pair_id)
def test_mode_matches_the_graph(pair):
    """Explicit Q/DQ variants carry Q/DQ nodes; implicit INT8 ones none (any Q/DQ would switch TensorRT to explicit)."""
    case, variant = pair
    ops = {node.op for node in case.build(variant).graph.nodes}
    assert bool(ops & QDQ_OPS) == (case.mode_of(variant) == "explicit-qdq")


@pytest.mark.parametrize("pair", PAIRS, ids=pair_id)
def test_knobs_name_tensors_and_nodes_of_the_graph(pair):
    case, variant = pair
    graph = case.build(variant).graph
    outputs = {t.name for t in graph.outputs}
    assert set(variant.knobs.extra_outputs) <= outputs
    nodes = {node.name for node in graph.nodes}
    assert {name for name, _ in variant.knobs.layer_precisions} <= nodes


def test_every_case_module_registers_a_case_and_is_found_without_a_hand_list():
    registered_modules = {case.__module__ for case in cases.all_cases()}
    for name in cases.case_module_names():
        assert f"cases.{name}" in registered_modules, f"cases/{name}.py defines no Case subclass"


def test_a_module_dropped_into_the_folder_is_discovered(tmp_path):
    import subprocess
    import sys
    from pathlib import Path

    package = tmp_path / "cases"
    import shutil
    shutil.copytree(Path(cases.__file__).parent, package, ignore=shutil.ignore_patterns("__pycache__"))
    (package / "zz_new_case.py").write_text(
        "from cases.control import QdqConvRelu\n"
        "class NewCase(QdqConvRelu):\n    id = 'zz-new'\n")
    import os

    repo = Path(__file__).resolve().parents[2]  # the harness the copied cases import, this checkout's
    out = subprocess.run([sys.executable, "-c", "import cases; print([c.id for c in cases.all_cases()])"],
                         cwd=tmp_path, capture_output=True, text=True, check=True,
                         env={**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), str(repo)])}).stdout
    assert "'zz-new'" in out


@pytest.mark.parametrize("pair", PAIRS, ids=pair_id)
def test_a_variant_claims_at_most_once_per_target(pair):
    """The report and the record read the first claim for a target: a second one would never show."""
    _, variant = pair
    targets = [claim.target for claim in variant.claims]
    assert len(targets) == len(set(targets)), targets


MATCHING_CASES = [case for case in all_cases() if case.find.__func__ is not cases.Case.find.__func__]


@pytest.mark.parametrize("case", MATCHING_CASES, ids=lambda case: case.id)
def test_a_matcher_finds_its_cases_failing_form_and_nothing_in_a_plain_fp32_conv_relu(case, user_graph,
                                                                                      fp32_conv_relu_graph):
    failing = [v for v in case.variants if v.role == "failing"]
    found_by_variant = {v.name: case.find(user_graph(case, v, rename=True)) for v in failing}
    # Every failing form a matcher can tell from a healthy graph; a case documents a form it cannot (P12's Add form).
    unmatched = [name for name, found in found_by_variant.items() if name not in {m.variant for m in found}]
    assert unmatched == list(getattr(case, "unmatchable_forms", ())), (unmatched, found_by_variant)
    for found in found_by_variant.values():
        assert all(match.case == case.id and bool(match.nodes) != case.whole_model and match.note for match in found)
    if case.whole_model:  # a pattern of the model as a whole (P10: no Q/DQ at all) is in every FP32 model
        assert [m.nodes for m in case.find(fp32_conv_relu_graph)] == [()]
    else:
        assert case.find(fp32_conv_relu_graph) == []


# ---- variant links: which form a variant varies, and whether that form's evidence stands for it --------------------


def structure(case, variant) -> tuple:
    """A variant's graph as structure only: each node's op and where each of its inputs comes from (a graph input by
    position, a constant, or an output slot of an earlier node), and where the graph outputs come from. Sizes, scale
    values and attributes are not in it; ops, edges and Q/DQ placement are."""
    graph = export(case, variant).graph
    sources = {value.name: ("input", k) for k, value in enumerate(graph.input)}
    sources.update({init.name: ("constant",) for init in graph.initializer})
    nodes = []
    for index, node in enumerate(graph.node):
        nodes.append((node.op_type, tuple(sources[name] if name else ("none",) for name in node.input)))
        sources.update({name: ("node", index, slot) for slot, name in enumerate(node.output)})
    return tuple(nodes), tuple(sources[value.name] for value in graph.output)


def failing_form(case, variant):
    return case.variant(variant.varies)


INHERITING = [(case, v) for case, v in PAIRS if v.inherits]


def test_the_library_has_inheriting_sweeps_and_forms_of_their_own():
    assert len(INHERITING) >= 10
    assert any(v.varies and not v.inherits for _, v in PAIRS if v.role == "sweep")


@pytest.mark.parametrize("pair", INHERITING, ids=pair_id)
def test_a_sweep_that_inherits_builds_the_structure_of_the_form_it_varies(pair):
    """Its evidence may stand in for the failing form's only when the graphs differ in sizes, scales or batch."""
    case, variant = pair
    reported = failing_form(case, variant)
    assert variant.role == "sweep" and reported.role == "failing"
    assert case.mode_of(variant) == case.mode_of(reported)
    assert structure(case, variant) == structure(case, reported)


@pytest.mark.parametrize(("case_id", "name", "reported"), [
    ("p6-linear-int8", "linear-weight-only", "linear-per-channel-axis-1"),  # a Q/DQ fewer
    ("p6-linear-int8", "gemm-per-channel", "linear-per-channel-axis-1"),  # another op
    ("p1-dwconv-swish-last-node", "relu", "as-reported"),  # another activation
    ("s3-depthwise-qdq", "depthwise-c32-int8-dq-per-channel", "depthwise-c32-float-qdq-per-channel"),  # no weight Q
    ("p3-residual-add-qdq", "every-tensor-qdq", "identity-float"),  # other Q/DQ placement
])
def test_the_structure_check_tells_a_form_of_its_own_from_the_form_it_varies(case_id, name, reported):
    case = cases.get_case(case_id)
    variant = case.variant(name)
    assert variant.varies == reported and not variant.inherits
    assert structure(case, variant) != structure(case, case.variant(reported))


def test_no_variant_inherits_across_the_two_p6_forms():
    linear, act = cases.get_case("p6-linear-int8"), cases.get_case("p6-matmul-int8")
    assert {v.varies for v in act.variants} == {None, "act-x-act-as-reported"}
    assert {v.varies for v in linear.variants} == {None, "linear-per-channel-axis-1"}
    assert linear.pattern == act.pattern == "P6" and not any(v.claims for v in linear.variants)

