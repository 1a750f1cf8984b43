"""scan.json against its published schema, and `scan --format` for other tools: SARIF against the official SARIF
2.1.0 schema (reference/sarif), GitHub workflow annotations, a Markdown job summary, on every model tests/models
builds (the corpus's models: tests/corpus/test_scan_on_corpus.py)."""
from __future__ import annotations

import json
from importlib import resources
from pathlib import Path

import jsonschema
import onnx
import pytest

import cases  # noqa: F401  (registers the library)
from harness.commands.scan import scan_data
from harness.matrix import load_matrix
from harness.scan.formats import render
from harness.scan.scanner import ScanOptions, scan
from tests.harness.commands.test_main import harness
from tests.models.fixtures import resnet18_qdq  # noqa: F401
from tests.models import (backbone, efficientnet, f64_gelu, plain_cnn, resnet, resnet18, resnet18_trex,
                          style_transfer, transformer, unet, vit)

SARIF_SCHEMA = Path(__file__).resolve().parents[3] / "reference" / "sarif" / "sarif-schema-2.1.0.json"
MODELS = {
    "backbone-silu": lambda: backbone.build(False), "backbone-silu-qdq": lambda: backbone.build(True),
    "backbone-mish": lambda: backbone.build(False, "mish"), "backbone-mish-qdq": lambda: backbone.build(True, "mish"),
    "backbone-mish-native": lambda: backbone.build(False, "mish", opset=18),
    "unet": lambda: unet.build(False), "unet-qdq": lambda: unet.build(True),
    "transformer": lambda: transformer.build(False), "transformer-qdq": lambda: transformer.build(True),
    "plain-cnn-qdq": plain_cnn.build, "resnet-qdq": resnet.build, "resnet": lambda: resnet.build(False),
    "resnet18-fp32": resnet18.build, "resnet18-trex-qat": lambda: resnet18_trex.build("qat"),
    "resnet18-trex-fp32": lambda: resnet18_trex.build("fp32"), "efficientnet-qdq": efficientnet.build,
    "efficientnet": lambda: efficientnet.build(False), "f64-gelu-qdq": f64_gelu.build,
    "style-transfer": style_transfer.build, "vit": vit.build,
}


def scan_schema() -> jsonschema.Validator:
    """The published schema of scan.json, read as the installed package ships it."""
    schema = json.loads(resources.files("harness.scan").joinpath("scan.schema.json").read_text())
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema, format_checker=jsonschema.FormatChecker())


def sarif_schema() -> jsonschema.Validator:
    schema = json.loads(SARIF_SCHEMA.read_text())
    return jsonschema.Draft4Validator(schema)


def errors(validator: jsonschema.Validator, data) -> list[str]:
    return [f"{'/'.join(map(str, e.absolute_path))}: {e.message[:300]}" for e in validator.iter_errors(data)]


def check_every_format(data: dict) -> None:
    """scan.json fits its schema; the SARIF of it fits SARIF 2.1.0's, with a result per gated finding and target."""
    assert errors(scan_schema(), data) == []
    sarif = json.loads(render("sarif", data))
    assert errors(sarif_schema(), sarif) == []
    gated = {(f"{f['case']}/{f['variant']}" if f["variant"] else f["case"], t)
             for f in data["findings"] for t, v in f["verdicts"].items() if v["verdict"] == "blocked"}
    results = sarif["runs"][0]["results"]
    assert {(r["properties"]["finding"], r["properties"]["target"]) for r in results} >= gated
    assert json.loads(render("json", data)) == data
    assert render("markdown", data).startswith("### trt-matrix scan")


@pytest.mark.parametrize("name", MODELS)
def test_every_test_models_scan_fits_the_schema_and_its_sarif_fits_sarif_2_1_0(name, tmp_path):
    path = tmp_path / f"{name}.onnx"
    onnx.save(MODELS[name](), path)
    result = scan(path, ScanOptions(targets=list(load_matrix().values()), out_dir=tmp_path))
    check_every_format(json.loads(json.dumps(scan_data(result))))


def test_a_quantized_resnet18_by_onnxruntime_fits_the_schema(resnet18_qdq, tmp_path):
    result = scan(resnet18_qdq, ScanOptions(targets=list(load_matrix().values()), out_dir=tmp_path))
    check_every_format(json.loads(json.dumps(scan_data(result))))


def test_the_schema_refuses_what_scan_json_never_holds(model_files, tmp_path):
    result = scan(model_files["backbone-silu"], ScanOptions(targets=[load_matrix()["trt86-orin"]], out_dir=tmp_path))
    data = json.loads(json.dumps(scan_data(result)))
    validator = scan_schema()
    assert errors(validator, {**data, "format": "trt-matrix/scan/2"})
    assert errors(validator, {**data, "targets": [{**data["targets"][0], "verdict": "maybe"}]})
    assert errors(validator, {k: v for k, v in data.items() if k != "findings"})


def test_format_sarif_names_rules_per_pattern_and_fact_and_the_users_nodes(model_files, tmp_path):
    result = harness("scan", str(model_files["backbone-silu"]), "--out", str(tmp_path), "--format", "sarif",
                     check=False)
    assert result.returncode == 1, result.stderr
    sarif = json.loads(result.stdout)  # stdout holds the SARIF only
    assert errors(sarif_schema(), sarif) == []
    run = sarif["runs"][0]
    rules = {r["id"]: r for r in run["tool"]["driver"]["rules"]}
    assert rules["s1-conv-silu"]["helpUri"].startswith("https://") and rules["s1-conv-silu"]["help"]["text"]
    assert "fact/implicit-int8" in rules and "no implicit quantization" in rules["fact/implicit-int8"]["help"]["text"]
    s1 = next(r for r in run["results"] if r["properties"] == {
        "target": "trt86-orin", "verdict": "blocked", "basis": "claimed", "finding": "s1-conv-silu/size-64"})
    # S1's claim on 8.6 is a sibling report's, not known to hold for this model: a warning, as it does not fail the
    # gate (the exit status is 1 for TensorRT 11's refusal of calibrators, an error)
    assert s1["level"] == "warning" and run["tool"]["driver"]["rules"][s1["ruleIndex"]]["id"] == "s1-conv-silu"
    location = s1["locations"][0]
    assert location["physicalLocation"]["artifactLocation"]["uri"].endswith("backbone-silu.onnx")
    assert [loc["name"] for loc in location["logicalLocations"]] == [backbone.STEM]
    p10 = [r for r in run["results"] if r["ruleId"] == "fact/implicit-int8"]
    assert {r["properties"]["target"] for r in p10} == {"trt11-x86", "trt114-orin", "trt114-orin-dla", "trt114-thor"}
    assert {r["level"] for r in p10} == {"error"}


def test_format_github_writes_one_annotation_per_finding_and_verdict(model_files, tmp_path):
    result = harness("scan", str(model_files["backbone-silu"]), "--out", str(tmp_path), "--format", "github",
                     check=False)
    lines = result.stdout.splitlines()
    errors_ = [line for line in lines if line.startswith("::error file=")]
    warnings = [line for line in lines if line.startswith("::warning file=")]
    # errors: TensorRT 11's refusal of calibrators for the model, once per wording of the fact (11.4's names one more
    # source); warnings: S1's claim on 8.6 for each of its three forms, a sibling report's, which does not gate
    assert len(errors_) == 2 and len(warnings) == 3, result.stdout
    assert all(line.split(",", 1)[0].endswith("backbone-silu.onnx") for line in errors_ + warnings)
    s1 = next(line for line in warnings if "s1-conv-silu/size-64" in line)
    assert "title=S1 blocked on 1 target(s) (not a CI gate here)::" in s1 and "TensorRT 8.6 on Orin, 1 target" in s1
    facts = [line for line in errors_ if "a fact of the target" in line]
    assert "title=a fact of the target blocked on 3 target(s)::the model: blocked on TensorRT 11.4 on Orin, " \
           "Orin DLA and Thor, 3 targets: from the target's facts: TensorRT 11.4 has no implicit quantization" in facts[1]
    assert lines[-1].startswith("::notice ") and "%0Aorin" not in lines[-1] and "Orin: unverified on 8.5" in lines[-1]


def test_format_markdown_is_a_job_summary_and_json_is_scan_json(model_files, tmp_path):
    md = harness("scan", str(model_files["backbone-silu"]), "--out", str(tmp_path), "--format", "markdown",
                 check=False).stdout
    assert md.startswith("### trt-matrix scan: `backbone-silu.onnx`")
    assert "| **blocked** (claimed upstream) | TensorRT 8.6 on Orin, 1 target |" in md
    assert "- changes between versions on Orin: unverified on 8.5, blocked on 8.6 by S1" in md
    assert "| s1-conv-silu/size-64 |" in md and "Exit code 1." in md
    printed = json.loads(harness("scan", str(model_files["backbone-silu"]), "--out", str(tmp_path), "--format",
                                 "json", check=False).stdout)
    written = json.loads((tmp_path / "scan.json").read_text())
    assert printed == written
