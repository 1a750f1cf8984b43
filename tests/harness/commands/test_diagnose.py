"""`classify`, `layers` and `diagnose` through the real command: one error line naming the file and the problem, never
a traceback, warnings where the output would otherwise mislead, and diagnose's exit status for each outcome."""
import json

import pytest

from tests.harness.commands.test_main import harness
from tests.harness.diagnosis.conftest import NO_KIND, write
from tests.harness.diagnosis.conftest import backbone_model, damaged, kinds, reference  # noqa: F401 (fixtures)
from tests.harness.tensorrt.conftest import existing_reference_dir
from tests.models.fixtures import library_results  # noqa: F401 (fixture)


@pytest.fixture(scope="module")
def reference_dir():
    return existing_reference_dir()


def assert_one_error_line(result, *parts):
    assert result.returncode == 2, result.stdout + result.stderr
    assert "Traceback" not in result.stderr
    assert result.stderr.startswith("error: ") and result.stderr.count("\n") == 1, result.stderr
    for part in parts:
        assert str(part) in result.stderr


@pytest.mark.parametrize(
    ("content", "problem"),
    [(b"", "it is empty"), (bytes(range(256)) * 4, "binary data"), (b"dear diary\n", "no line carries")],
    ids=["empty", "binary", "prose"],
)
def test_classify_refuses_what_is_not_a_tensorrt_log(tmp_path, content, problem):
    log = tmp_path / "build.log"
    log.write_bytes(content)
    assert_one_error_line(harness("classify", str(log), check=False), log, "does not look like a TensorRT log",
                          problem)


def test_classify_keeps_an_internal_error_apart_from_a_plain_runtime_error(tmp_path):
    log = tmp_path / "build.log"
    log.write_text("[E] Error[9]: [shapeMachine.cpp::eval::771] Error Code 9: Internal Error (Unexpected shape.)\n")
    assert json.loads(harness("classify", str(log)).stdout)["category"] == "internal-assert"
    log.write_text("[E] Something went wrong.\n")
    assert json.loads(harness("classify", str(log)).stdout)["category"] == "runtime-error"


@pytest.mark.parametrize("command", ["classify", "layers", "diagnose"])
def test_a_directory_or_a_missing_file_is_one_error_line(tmp_path, command):
    assert_one_error_line(harness(command, str(tmp_path), check=False), tmp_path, "is a directory")
    assert_one_error_line(harness(command, str(tmp_path / "nope"), check=False), tmp_path / "nope", "no such file")


@pytest.mark.parametrize(
    ("content", "problem"),
    [("[1, 2, 3]", "engine layer #0 is neither a layer name nor a layer dict"),
     ('{"foo": 1}', "engine inspector JSON must be {'Layers': [...]}"),
     ('{"Layers": [{"Name": 12, "LayerType": "Reformat"}]}', "engine layer #0: field 'Name' must be str, found int")],
    ids=["list-of-numbers", "other-object", "number-name"],
)
def test_layers_names_the_file_and_what_is_wrong_with_its_json(tmp_path, content, problem):
    engine = tmp_path / "engine.json"
    engine.write_text(content)
    assert_one_error_line(harness("layers", str(engine), check=False), f"{engine}: JSON, but not engine inspector",
                          problem)


def test_layers_reads_pasted_lines_and_says_how_many_it_read_and_skipped(tmp_path, reference_dir):
    lines = [l for l in (reference_dir / "trt-logs" / "F36.log").read_text().splitlines() if "Layer(" in l]
    paste = tmp_path / "paste.txt"
    paste.write_text("From my DeepStream app:\n" + "\n".join("INFO: [TRT]: " + l.split("] ", 1)[-1] for l in lines))
    result = harness("layers", str(paste))
    assert [layer["precision"] for layer in json.loads(result.stdout)] == ["int8"] * 4
    assert f"{paste}: 4 layer line(s) read, 1 other line(s) skipped" in result.stderr


def test_layers_with_an_unreadable_onnx_model_is_one_error_line(tmp_path, reference_dir, control_cases_dir):
    model = tmp_path / "cut.onnx"
    model.write_bytes((control_cases_dir / "control-qdq-conv-relu" / "conv-relu.onnx").read_bytes()[:50])
    engine = reference_dir / "engine-layers" / "a100-resnet-qat.graph.json"
    assert_one_error_line(harness("layers", str(engine), "--onnx", str(model), check=False),
                          f"--onnx {model}: not a readable ONNX model")


def test_layers_warns_when_the_onnx_model_maps_fewer_layers_than_their_names(reference_dir, control_cases_dir):
    unrelated = control_cases_dir / "control-qdq-conv-relu" / "conv-relu.onnx"
    engine = reference_dir / "engine-layers" / "a100-resnet-qat.graph.json"
    result = harness("layers", str(engine), "--onnx", str(unrelated))
    alone = sum(bool(layer["onnx_nodes"]) for layer in json.loads(harness("layers", str(engine)).stdout))
    assert alone > 0 and all(not layer["onnx_nodes"] for layer in json.loads(result.stdout))
    assert (f"warning: {engine}: with --onnx {unrelated}, 0 of 37 layer(s) map to a node of that model, fewer than "
            f"the {alone} the layer names give alone") in result.stderr


# ---- diagnose ----------------------------------------------------------------------------------------------------

S1_LOG = """\
&&&& RUNNING TensorRT.trtexec [TensorRT v8602] # trtexec --onnx=backbone.onnx --int8 --saveEngine=b.plan
[11/20/2026-10:00:01] [I] Selected Device: Orin
[11/20/2026-10:00:01] [I] Compute Capability: 8.7
[11/20/2026-10:00:09] [E] Error[10]: [optimizer.cpp::computeCosts::3869] Error Code 10: Internal Error (Could not find \
any implementation for node /backbone/stem/conv/Conv + PWN(PWN(/backbone/stem/act/Sigmoid), /backbone/stem/act/Mul).)
"""


def diagnose(*args, check=False):
    result = harness("diagnose", *map(str, args), check=check)
    assert "Traceback" not in result.stderr
    return result


def diagnose_json(*args, status):
    result = diagnose(*args, "--json")
    assert result.returncode == status, result.stdout + result.stderr
    data = json.loads(result.stdout)
    assert data["exit_code"] == status
    return data


def test_diagnose_reads_every_kind_and_says_what_each_is(tmp_path, kinds):
    paths = [write(tmp_path, content, f"file-{i}") for i, content in enumerate(kinds.values())]
    data = diagnose_json(*paths, "--targets", "trt86-orin", "--out", tmp_path / "out", status=1)
    assert [f["kind"] for f in data["files"]] == list(kinds) and {f["status"] for f in data["files"]} == {"read"}
    log, engine, metadata, cache, command, model = data["files"]
    assert log["applies"] == {"trt86-orin": ["P1 (p1-dwconv-swish-last-node): blocked"]}
    assert engine["facts"]["requested_precision"] == "int8" and metadata["facts"]["requested_precision"] == "int8"
    assert cache["caches"][0]["targets"]["trt86-orin"]["decision"] == "rebuild"  # 8.6.1's cache on 8.6.2
    assert command["facts"]["commands"][0]["flags"] == ["--onnx", "--int8", "--workspace", "--saveEngine"]
    assert data["model"]["path"] == str(paths[-1]) and "s1-conv-silu/size-64" in data["model"]["findings"]
    assert any(j["pattern"] == "S1" and j["targets"]["trt86-orin"]["verdict"] == "blocked" for j in model["joined"])


def test_a_damaged_file_of_any_kind_is_exit_3_and_named(tmp_path, damaged):
    paths = [write(tmp_path, content, f"file-{i}") for i, content in enumerate(damaged.values())]
    data = diagnose_json(*paths, "--targets", "trt86-orin", status=3)
    assert [(f["kind"], f["status"]) for f in data["files"]] == [(kind, "damaged") for kind in damaged]
    assert all(f["problem"] for f in data["files"])
    assert data["files"][0]["facts"]["failure"]["category"] == "no-implementation"  # what remains of the log is read
    text = diagnose(paths[2]).stdout
    assert f"{paths[2]}: engine build metadata" in text and "DAMAGED: it starts as engine build metadata" in text


def test_a_file_of_no_kind_is_exit_2_and_damage_wins(tmp_path, damaged):
    paths = [write(tmp_path, content, name) for name, content in NO_KIND.items()]
    data = diagnose_json(*paths, status=2)
    assert all(f["kind"] is None and f["status"] == "no-kind" and f["problem"] for f in data["files"])
    assert "of no kind this command reads (it is empty)" in diagnose(paths[0]).stdout
    diagnose_json(paths[1], write(tmp_path, damaged["calibration-cache"], "cache"), status=3)


def test_a_known_failure_applies_where_the_library_knows_it_fails_not_where_it_is_fixed(reference):
    log = reference / "trt-logs" / "F04.log"
    failing = diagnose(log, "--targets", "trt86-orin")
    assert failing.returncode == 1 and "A known failure applies to trt86-orin (S1 (s1-conv-silu): blocked)" in \
        failing.stdout.replace("\n  ", " ")
    fixed = diagnose(log, "--targets", "trt100-x86")
    text = fixed.stdout.replace("\n  ", " ")
    assert fixed.returncode == 0 and "No known failure applies to the chosen targets." in text
    assert "fixed (passes, observed or claimed) on trt92-x86, trt100-x86, trt100-orin" in text
    assert "workaround there: conv-output-marked (likely, claimed upstream)" in failing.stdout.replace("\n  ", " ")


def test_observed_records_are_evidence_beside_the_claims(reference, library_results):
    data = diagnose_json(reference / "trt-logs" / "F04.log", "--targets", "ort-cpu", "--results", library_results,
                         status=0)
    (case,) = data["files"][0]["patterns"][0]["cases"]
    assert case["targets"]["ort-cpu"]["basis"] == "observed" and "ort-cpu" in case["fixed_on"]
    assert str(library_results) in case["targets"]["ort-cpu"]["reason"]


def test_a_damaged_results_file_is_exit_3(reference, tmp_path):
    results = write(tmp_path, b"this is no record\n", "results.jsonl")
    data = diagnose_json(reference / "trt-logs" / "F04.log", "--targets", "trt100-x86", "--results", results, status=3)
    assert data["problems"] and "results.jsonl" in data["problems"][0]


def test_with_the_model_the_log_node_is_joined_to_the_scan_finding_and_the_page_shows_it(tmp_path, backbone_model):
    log = write(tmp_path, S1_LOG.encode(), "build.txt")
    out = tmp_path / "out"
    data = diagnose_json(log, "--model", backbone_model, "--targets", "trt86-orin", "trt100-orin", "--out", out,
                         status=1)
    (f,) = data["files"]
    assert f["facts"]["gpu"] == "Orin" and f["facts"]["platform"] == "Jetson AGX Orin (sm_87)"
    assert f["facts"]["targets_of_this_build"] == ["trt86-orin"]
    assert f["model_nodes"] == ["/backbone/stem/conv/Conv", "/backbone/stem/act/Sigmoid", "/backbone/stem/act/Mul"]
    (joined,) = f["joined"]
    assert (joined["finding"], joined["anchor"]) == ("s1-conv-silu/size-64", "/backbone/stem/conv/Conv")
    assert {t: v["verdict"] for t, v in joined["targets"].items()} == {"trt86-orin": "blocked", "trt100-orin": "likely"}
    assert f["patterns"][0]["confirmed_by_model"] is True
    page = (out / "scan.html").read_text()
    assert 'id="diagnosis"' in page and f'data-file="{log}"' in page and "the model confirms it" in page
    assert json.loads((out / "scan.json").read_text())["diagnosis"]["files"][0]["joined"] == f["joined"]


def test_a_form_is_decided_by_the_model(tmp_path, reference, backbone_model):
    """F03's node has S3's form: the S3 reproducer graph (onnx-graphsurgeon names, as in the report) confirms it, the
    backbone, which has none of its nodes, does not."""
    import onnx
    import onnx_graphsurgeon as gs

    import cases
    case = cases.model.get_case("s3-depthwise-qdq")
    variant = case.variant("depthwise-c32-float-qdq-per-channel")
    s3_model = tmp_path / "s3.onnx"
    onnx.save(gs.export_onnx(case.build(variant).graph), s3_model)
    log = reference / "trt-logs" / "F03.log"
    confirmed = diagnose_json(log, "--model", s3_model, "--targets", "trt86-x86", "--out", tmp_path / "a", status=1)
    assert confirmed["files"][0]["patterns"][0]["confirmed_by_model"] is True
    assert confirmed["files"][0]["model_nodes"] == ["node_of_weights_quantized", "node_of_output"]
    other = diagnose(log, "--model", backbone_model, "--targets", "trt86-x86", "--out", tmp_path / "b")
    text = other.stdout.replace("\n  ", " ")
    assert other.returncode == 0 and "the model does not confirm it" in text
    assert "The model has none of the nodes this file names" in text


def test_a_calibration_cache_is_reused_rebuilt_or_unsupported_per_target(tmp_path, kinds):
    matrix = _matrix_with_tensorrt_11(tmp_path)
    cache = write(tmp_path, kinds["calibration-cache"], "calib.bin")
    result = harness("--matrix", str(matrix), "diagnose", str(cache), "--json", "--targets", "trt86-x86",
                     "trt103-orin", "trt114-x86", "ort-cpu", check=False)
    data = json.loads(result.stdout)
    targets = data["files"][0]["caches"][0]["targets"]
    assert {t: c["decision"] for t, c in targets.items()} == {
        "trt86-x86": "reuse", "trt103-orin": "rebuild", "trt114-x86": "not-supported", "ort-cpu": "not-applicable"}
    assert targets["trt103-orin"]["evidence"]["verdict"] == "blocked"  # P11's claim: a 10.3.0 build given only a cache
    assert result.returncode == 1 and set(data["files"][0]["applies"]) == {"trt103-orin", "trt114-x86"}
    assert diagnose(cache, "--targets", "trt86-x86").returncode == 0


def test_a_command_uses_flags_the_targets_removed(tmp_path):
    matrix = _matrix_with_tensorrt_11(tmp_path)
    command = write(tmp_path, b"trtexec --onnx=model.onnx --int8 --workspace=1024 --saveEngine=m.plan\n", "run.sh")
    result = harness("--matrix", str(matrix), "diagnose", str(command), "--targets", "trt86-x86", "trt102-x86",
                     "trt114-x86", check=False)
    text = result.stdout.replace("\n  ", " ")
    assert result.returncode == 1
    assert "trtexec --workspace is removed in TensorRT 10.0 (trt102-x86, trt114-x86): use --memPoolSize" in text
    assert "trtexec --int8 is removed in TensorRT 11.0 (trt114-x86)" in text
    assert "trt86-x86" not in text.split("A known failure applies to", 1)[1]


def _matrix_with_tensorrt_11(tmp_path):
    """matrix.yaml with a TensorRT 11.4 x86 target (the matrix of this branch has none yet)."""
    import yaml

    from tests.conftest import REPO

    data = yaml.safe_load((REPO / "matrix.yaml").read_text())
    data["targets"]["trt114-x86"] = {**data["targets"]["trt102-x86"], "title": "TensorRT 11.4.0 (test)",
                                     "version": "11.4.0"}
    data["hosts"]["x86-gpu"]["targets"].append("trt114-x86")
    path = tmp_path / "matrix.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def test_engine_layers_and_tensors_without_scales_are_joined_to_the_model_too(tmp_path, backbone_model):
    """Engine JSON (hand-written in the inspector's format: no TensorRT here) whose stem layer ran in fp32 while the
    next conv ran in int8, and a warning naming the stem's output tensor: both lead to the scan's S1 finding."""
    stem = "/backbone/stem/conv/Conv + PWN(PWN(/backbone/stem/act/Sigmoid), /backbone/stem/act/Mul)"
    layers = {"Layers": [
        {"Name": stem, "LayerType": "CaskConvolution", "Weights": {"Type": "Float", "Count": 864},
         "Inputs": [{"Name": "input", "Format/Datatype": "Row major linear FP32"}],
         "Outputs": [{"Name": "/backbone/stem/act/Mul_output_0", "Format/Datatype": "Row major linear FP32"}]},
        {"Name": "/backbone/layer1/layer1.0/conv1/Conv", "LayerType": "CaskConvolution",
         "Weights": {"Type": "Int8", "Count": 9216},
         "Inputs": [{"Name": "/backbone/stem/act/Mul_output_0", "Format/Datatype": "Row major linear Int8"}],
         "Outputs": [{"Name": "x", "Format/Datatype": "Row major linear Int8"}]}]}
    engine = write(tmp_path, json.dumps(layers).encode(), "engine.txt")
    log = write(tmp_path, b"[11/20/2026-10:00:05] [W] [TRT] Missing scale and zero-point for tensor "
                          b"/backbone/stem/act/Mul_output_0, expect fall back to non-int8 implementation for any layer "
                          b"consuming or producing given tensor\n", "warn.txt")
    data = diagnose_json(engine, log, "--model", backbone_model, "--targets", "trt86-orin", "--out", tmp_path / "o",
                         status=1)
    engine_file, log_file = data["files"]
    assert [layer["name"] for layer in engine_file["facts"]["left_requested_precision"]] == [stem]
    assert log_file["model_nodes"] == ["/backbone/stem/act/Mul"]
    for f in (engine_file, log_file):
        assert [(j["finding"], j["targets"]["trt86-orin"]["verdict"]) for j in f["joined"]] == [
            ("s1-conv-silu/size-64", "blocked")]
        assert f["applies"] == {"trt86-orin": ["S1 (s1-conv-silu/size-64 at /backbone/stem/conv/Conv): blocked"]}


def _quoted(text: str, depth: int = 1) -> str:
    """``text`` as GitHub quotes it in a reply: "> " before every line, ">" alone on blank ones, once per level."""
    for _ in range(depth):
        text = "\n".join(f"> {line}" if line.strip() else ">" for line in text.splitlines())
    return text + "\n"


@pytest.mark.parametrize("depth", [1, 2], ids=["quote", "quote-of-a-quote"])
def test_layers_reads_a_log_block_quoted_in_a_github_comment(tmp_path, reference_dir, depth):
    """A verbose log's 'Engine Layer Information' block quoted in a reply (blank lines inside it quoted as '>')
    reads as the log itself: the block does not end at the first quoted blank line."""
    log = reference_dir / "trt-logs" / "F36.log"
    lines = log.read_text().splitlines()
    paste = tmp_path / "comment.md"
    paste.write_text(_quoted("\n\n".join(lines), depth))
    expected = json.loads(harness("layers", str(log)).stdout)
    result = harness("layers", str(paste))
    assert json.loads(result.stdout) == expected and len(expected) == 4
    assert "4 layer line(s) read" in result.stderr


@pytest.mark.parametrize(
    "prefix",
    [lambda n: f"{n + 1:>4} | ", lambda n: f"{n + 1}: ", lambda n: "[11/24/2026-10:00:00] [I] ",
     lambda n: f"2026-11-24T10:00:{n % 60:02d}.1234567Z ", lambda n: "> "],
    ids=["line-numbers", "line-numbers-colon", "trtexec-timestamp-severity", "ci-timestamp", "quote"],
)
def test_layers_reads_inspector_json_whatever_prefix_every_line_carries(tmp_path, reference_dir, prefix):
    engine = reference_dir / "engine-layers" / "a100-resnet-qat.graph.json"
    paste = tmp_path / "paste.txt"
    paste.write_text("\n".join(prefix(n) + line for n, line in enumerate(engine.read_text().splitlines())))
    expected = json.loads(harness("layers", str(engine)).stdout)
    result = harness("layers", str(paste))
    assert json.loads(result.stdout) == expected and len(expected) == 37
    assert "37 layer(s) read from engine inspector JSON" in result.stderr


def test_layers_reads_inspector_json_printed_inside_a_quoted_trtexec_log(tmp_path, reference_dir):
    """trtexec --dumpLayerInfo prints the JSON among other log lines: read from its {"Layers": on, to its end."""
    engine = reference_dir / "engine-layers" / "a100-resnet-qat.graph.json"
    log = ["[11/24/2026-10:00:00] [I] Engine built in 41.2 sec.", "[11/24/2026-10:00:00] [I] Layer Information:"]
    log += ["[11/24/2026-10:00:00] [I] " + line for line in engine.read_text().splitlines()]
    log += ["[11/24/2026-10:00:01] [I] Starting inference", "&&&& PASSED TensorRT.trtexec [TensorRT v100300]"]
    paste = tmp_path / "comment.md"
    paste.write_text(_quoted("\n".join(log)))
    assert json.loads(harness("layers", str(paste)).stdout) == json.loads(harness("layers", str(engine)).stdout)


def test_a_log_states_a_version_whose_trtexec_has_removed_a_pasted_flag(tmp_path):
    # the command pasted in a fence above the output, continued with a backslash; the banner states 10.3
    log = write(tmp_path, (b"```\n$ trtexec --onnx=model.onnx \\\n    --explicitBatch --int8\n```\n"
                           b"&&&& RUNNING TensorRT.trtexec [TensorRT v100300] # trtexec --onnx=model.onnx --int8\n"
                           b"[E] Error[10]: Could not find any implementation for node a.\n"), "build.log")
    result = harness("diagnose", str(log), "--targets", "trt86-x86", "--json", check=False)
    entry = json.loads(result.stdout)["files"][0]
    assert [(f["flag"], f["stated_version"]) for f in entry["facts"]["flags_removed_in_stated_version"]] == [
        ("--explicitBatch", "10.3.0")]
    text = entry["text"].replace("\n  ", " ")
    assert "trtexec --explicitBatch is removed in TensorRT 10.0, and this text states TensorRT 10.3.0" in text
    # the same command against a target of 8.6, where the flag still exists: no finding there
    assert "trt86-x86" not in entry["applies"]


def test_a_jetson_user_reads_which_layers_left_the_dla_and_p20s_remedy(tmp_path):
    log = write(tmp_path, "\n".join([
        "[12/04/2024-11:57:45] [TRT] [W] /model.23/Concat_4: DLA only supports concatenation on the C dimension.",
        "[12/04/2024-11:57:45] [TRT] [W] Layer '/model.23/Concat_4' (CONCATENATION): Unsupported on DLA. Switching "
        "this layer's device type to GPU.",
        "JetPack 6.0",
    ]).encode(), "build.log")
    result = harness("diagnose", str(log), "--targets", "trt103-orin", check=False)
    text = result.stdout.replace("\n  ", " ")
    assert result.returncode == 0, result.stderr
    assert ("1 layer(s) left the DLA for the GPU (GPU fallback; P20): /model.23/Concat_4 (CONCATENATION: DLA only "
            "supports concatenation on the C dimension)") in text
    assert "Pattern P20" in text and "Remedy: " in text and "JetPack 6.0" in text
