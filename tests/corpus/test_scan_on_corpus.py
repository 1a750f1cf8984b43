"""`python -m harness scan` on every model of the corpus (real torch.onnx exports), black-box: it exits 0 or 1 with
no internal error, and gives every finding corpus/expected names for the model, and no other (issue 28)."""
import json

import onnx
import pytest

import corpus
from tests.harness.commands.test_main import harness

WHOLE_MODEL = "(the whole model)"


@pytest.fixture(scope="module")
def scanned(tmp_path_factory):
    """``scanned(name)``: (the finished command, scan.json) of a scan of the corpus model, run once per module."""
    done = {}

    def scan(name):
        if name not in done:
            tmp = tmp_path_factory.mktemp(name)
            path = corpus.save(name, tmp)
            result = harness("scan", str(path), "--out", str(tmp / "scan"), check=False, timeout=600)
            report = tmp / "scan" / "scan.json"
            done[name] = (result, json.loads(report.read_text()) if report.is_file() else None)
        return done[name]

    return scan


def places(report) -> set[tuple]:
    return {(f["case"], f["variant"], o["anchor"]) for f in report["findings"] for o in f["occurrences"]}


@pytest.mark.parametrize("name", corpus.names())
def test_scan_gives_every_expected_finding_and_no_other(scanned, name):
    result, report = scanned(name)
    assert result.returncode in (0, 1), f"scan of {name} exited {result.returncode}:\n{result.stdout}\n{result.stderr}"
    assert "Traceback" not in result.stderr and report is not None and report["problems"] == []
    expected = {(e["case"], e["variant"], node) for e in corpus.expected(name) for node in e["nodes"]}
    found = places(report)
    assert not expected - found, f"{name}: expected findings the scan did not give: {sorted(expected - found)}"
    assert not found - expected, f"{name}: findings nobody expected: {sorted(found - expected)}"


def _computed_from_constants(model: onnx.ModelProto) -> set[str]:
    """Names of the tensors of ``model`` that only initializers and Constant nodes feed, however far."""
    constant = {t.name for t in model.graph.initializer} | {""}
    for node in model.graph.node:  # a valid graph lists producers before readers
        if node.op_type == "Constant" or (node.input and all(i in constant for i in node.input)):
            constant.update(node.output)
    return constant


@pytest.mark.parametrize("name", corpus.names(kind="qat"))
def test_no_activation_matmul_finding_has_a_constant_operand(scanned, name):
    _, report = scanned(name)
    model = onnx.load(str(corpus.MODELS / f"{name}.onnx"))
    constant, nodes = _computed_from_constants(model), {n.name: n for n in model.graph.node}
    matmuls = [o["anchor"] for f in report["findings"] if f["case"] == "p6-matmul-int8" for o in f["occurrences"]]
    assert not [m for m in matmuls if any(i in constant for i in nodes[m].input)]


def test_fake_quantized_linears_are_linears_not_attention_scores(scanned):
    """F.linear(x, fake_quant(W)) exports as MatMul(DQ(Q(x)), Transpose(DQ(Q(W)))): 48 in timm's ViT-Ti, one per
    qkv, proj, fc1 and fc2 of each of the 12 blocks; the 24 attention MatMuls stay activation x activation."""
    for name in ("timm_vit_tiny-qat-pq-ts-op17", "timm_vit_tiny-qat-pq-ts-op13", "timm_vit_tiny-qat-pq-dynamo-op18"):
        _, report = scanned(name)
        by_form = {(f["case"], f["variant"]): len(f["occurrences"]) for f in report["findings"]}
        assert by_form[("p6-linear-int8", "linear-per-channel-axis-1")] == 48
        assert by_form[("p6-matmul-int8", "act-x-act-as-reported")] == 24
        assert ("p6-matmul-int8", "act-x-act-qdq-query-only") not in by_form


@pytest.mark.parametrize("name", [n for n in corpus.names(kind="fp32") if corpus.info(n)["task"] == "transformer"])
def test_the_transformer_form_follows_the_models_layer_norm(scanned, name):
    """An FP32 ViT with opset-17 LayerNormalization is the failing form implicit-ln17, even 40 nodes from the score
    MatMul; one exported below opset 17 (LayerNorm decomposed) is implicit-decomposed-ln."""
    _, report = scanned(name)
    model = onnx.load(str(corpus.MODELS / f"{name}.onnx"))
    native = any(n.op_type == "LayerNormalization" for n in model.graph.node)
    forms = {f["variant"] for f in report["findings"] if f["case"] == "p7-transformer-block"}
    assert forms == {"implicit-ln17" if native else "implicit-decomposed-ln"}


@pytest.mark.parametrize("name", corpus.names())
def test_scan_json_fits_its_schema_and_the_sarif_fits_sarif_2_1_0(scanned, name):
    from tests.harness.scan.test_scan_formats import check_every_format

    _, report = scanned(name)
    check_every_format(report)
