"""The user's layers written in the harness's cases layout, shared by shape, limited per form, and run."""
from __future__ import annotations

import json

import numpy as np
import pytest

import cases  # noqa: F401  (registers the library)
from harness.matrix import load_matrix
from harness.orchestration.run_targets import run_targets
from harness.scan.loading import load_model
from harness.scan.matching import find_patterns
from harness.scan.reproducers import run_reproducers, write_reproducers
from harness.store.results_file import validate_record
from harness.worker.casedata import load_arrays, load_cells


def reproducers_of(path, out, **options):
    loaded = load_model(path)
    return write_reproducers(loaded, find_patterns(loaded.graph).findings, out, **options)


@pytest.fixture(scope="module")
def qdq_backbone(model_files, tmp_path_factory):
    return reproducers_of(model_files["backbone-silu-qdq"], tmp_path_factory.mktemp("reproducers") / "cases")


def test_the_cases_directory_is_one_the_harness_reads(qdq_backbone):
    cells = {(c["case"], c["variant"]): c for c in load_cells(qdq_backbone.cases_dir)}
    s_cells = {key for key in cells if key[0] in ("s3-depthwise-qdq", "s5-qdq-resnet-block")}
    assert s_cells == {("s3-depthwise-qdq", "backbone-dw-conv-Conv"),
                       ("s5-qdq-resnet-block", "backbone-layer1-layer1.0-Add"),
                       ("s5-qdq-resnet-block", "backbone-layer2-layer2.0-Add")}
    block = cells[("s5-qdq-resnet-block", "backbone-layer2-layer2.0-Add")]
    assert block["mode"] == "explicit-qdq" and block["calibration_batches"] == 0 and block["role"] == "sweep"
    assert sorted(block["expected_int8"]) == sorted(f"/backbone/layer2/layer2.0/{c}/Conv" for c in
                                                    ("conv1", "conv2", "downsample/downsample.0"))
    assert block["params"]["nodes"][0] == "/backbone/layer2/layer2.0/Add"
    arrays = load_arrays(block)
    assert set(arrays["inputs"]) == set(block["inputs"]) and set(arrays["reference"]) == set(block["outputs"])
    assert np.isfinite(next(iter(arrays["reference"].values()))).all()


def test_occurrences_of_one_shape_share_one_reproducer(qdq_backbone):
    identity = [r for r in qdq_backbone.reproducers if r.finding.label.endswith("identity-shortcut-residual-quantizer")]
    assert [(r.occurrence.anchor, r.name, r.shared_with) for r in identity] == [
        ("/backbone/layer1/layer1.0/Add", "backbone-layer1-layer1.0-Add", None),
        ("/backbone/layer1/layer1.1/Add", "backbone-layer1-layer1.0-Add", "/backbone/layer1/layer1.0/Add"),
    ]


def test_implicit_forms_carry_calibration_batches_and_a_tolerance_scaled_to_the_layer(model_files, tmp_path):
    reproducers = reproducers_of(model_files["backbone-silu"], tmp_path / "cases")
    index = json.loads((reproducers.cases_dir / "index.json").read_text())
    (s1,) = [c for c in index["cases"] if c["id"] == "s1-conv-silu"]
    variants = {v["name"]: v for v in s1["variants"]}
    assert sorted(variants) == ["backbone-dw-conv-Conv", "backbone-pw-conv-Conv", "backbone-stem-conv-Conv"]
    stem = variants["backbone-stem-conv-Conv"]
    assert (stem["mode"], stem["calibration_batches"], stem["opset"]) == ("implicit-int8", 8, 17)
    assert stem["inputs"] == {"images": {"dtype": "float32", "shape": [1, 3, 64, 64]}}
    assert stem["tolerance"]["min_cosine"] == 0.99 and "largest reference output" in stem["tolerance"]["reason"]
    arrays = load_arrays({**stem, "data": str(reproducers.cases_dir / stem["data"])})
    assert len(arrays["calibration"]) == 8
    peak = float(np.abs(next(iter(arrays["reference"].values()))).max())
    assert stem["tolerance"]["max_abs_error"] == pytest.approx(max(1.5, 0.25 * peak), rel=1e-5)


def test_at_most_the_limit_per_form_and_the_others_say_why(model_files, tmp_path):
    every = reproducers_of(model_files["unet"], tmp_path / "cases", limit=2).reproducers
    whole_model = [r for r in every if not r.occurrence.nodes]  # P10 in an FP32 model: nothing to cut out
    assert [r.problem.split(":")[0] for r in whole_model] == ["not extracted"]
    subgraphs = [r for r in every if r.occurrence.nodes]
    assert [r.name for r in subgraphs][:2] == ["enc1.0-norm-InstanceNormalization",
                                                             "enc1.1-norm-InstanceNormalization"]
    skipped = subgraphs[2:]
    assert len(skipped) == 4 and all(r.name is None and "--max-reproducers" in r.problem for r in skipped)


def test_reproducers_run_on_ort_cpu_and_name_the_users_nodes(qdq_backbone):
    observations, summaries = run_reproducers(qdq_backbone, [load_matrix()["ort-cpu"]], run_targets, jobs=2,
                                              timeout_s=120, progress=lambda line: None)
    assert [s.total for s in summaries] == [len(qdq_backbone.written)]
    (dw,) = observations.of("s3-depthwise-qdq", "backbone-dw-conv-Conv", "ort-cpu")
    validate_record(dw.record)
    assert dw.record["outcome"] in ("pass", "fallback")
    assert set(dw.record["precision"]) >= {"/backbone/dw/conv/Conv"}
