"""corpus/: the loader others test on (names, load with re-drawn weights, save, info, expected), and the models the
other issues need being there."""
import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import numpy_helper

import corpus


def test_names_split_into_fp32_and_qat():
    every, fp32, qat = corpus.names(), corpus.names(kind="fp32"), corpus.names(kind="qat")
    assert sorted(fp32 + qat) == every and not set(fp32) & set(qat)
    assert len(fp32) >= 10 and len(qat) >= 10
    with pytest.raises(corpus.CorpusError, match="fp32, qat"):
        corpus.names(kind="int8")


def test_the_corpus_covers_both_exporters_several_opsets_and_the_tasks_asked_for():
    infos = [corpus.info(n) for n in corpus.names()]
    assert {i["exporter"] for i in infos} == {"torchscript", "dynamo"}
    assert len({i["opset"] for i in infos}) >= 3
    assert {"classification", "detection", "segmentation", "transformer", "video"} <= {i["task"] for i in infos}
    assert {"none", "pq", "pq-residual", "ort-static"} <= {i["quantization"] for i in infos}
    assert all(i["versions"]["torch"].startswith("2.11") and i["call"].startswith("torch.onnx.export") for i in infos)


def test_load_redraws_the_emptied_weights_the_same_way_every_time():
    name = "resnet18-qat-pq-ts-op13"
    stored = onnx.load(str(corpus.MODELS / f"{name}.onnx"))
    emptied = {e["name"]: e for e in corpus.info(name)["redrawn"]}
    assert emptied and all(not t.raw_data for t in stored.graph.initializer if t.name in emptied)
    first, second = corpus.load(name), corpus.load(name)
    onnx.checker.check_model(first, full_check=True)
    for a, b in zip(first.graph.initializer, second.graph.initializer):
        assert np.array_equal(numpy_helper.to_array(a), numpy_helper.to_array(b))
    weight = numpy_helper.to_array(next(t for t in first.graph.initializer if t.name == "layer1.0.conv1.weight"))
    entry = emptied["layer1.0.conv1.weight"]
    assert list(weight.shape) == entry["dims"] and entry["min"] <= weight.min() and weight.max() <= entry["max"]
    assert abs(weight.std() - entry["std"]) < 0.2 * entry["std"]


def test_a_loaded_qat_model_runs_on_onnx_runtime():
    session = ort.InferenceSession(corpus.load("efficientnet_b0-qat-pq-ts-op13").SerializeToString(),
                                   providers=["CPUExecutionProvider"])
    (out,) = session.run(None, {"input": np.random.default_rng(0).standard_normal((1, 3, 224, 224), np.float32)})
    assert out.shape == (1, 1000) and np.isfinite(out).all()


def test_save_writes_the_loaded_model(tmp_path):
    path = corpus.save("resnet18-fp32-ts-op17", tmp_path)
    assert path == tmp_path / "resnet18-fp32-ts-op17.onnx"
    assert onnx.load(str(path)) == corpus.load("resnet18-fp32-ts-op17")


def test_an_unknown_name_says_where_the_names_are():
    with pytest.raises(corpus.CorpusError, match=r"corpus.names\(\)"):
        corpus.load("resnet1000")


def _quantized_conv_inputs_and_weights(model) -> bool:
    producers = {o: n for n in model.graph.node for o in n.output}
    convs = [n for n in model.graph.node if n.op_type == "Conv"]
    return bool(convs) and all(producers.get(c.input[0]) is not None and producers[c.input[0]].op_type ==
                               "DequantizeLinear" and producers[c.input[1]].op_type == "DequantizeLinear"
                               for c in convs)


@pytest.mark.parametrize("name", ["resnet18-qat-pq-ts-op13", "efficientnet_b0-qat-pq-ts-op13"])
def test_issue_29s_models_have_qdq_on_every_conv_and_none_on_the_residual_identity(name):
    model = corpus.load(name)
    assert _quantized_conv_inputs_and_weights(model)
    producers = {o: n for n in model.graph.node for o in n.output}
    residual = [n for n in model.graph.node if n.op_type == "Add" and all(i in producers for i in n.input)
                and not any(producers[i].op_type == "Constant" for i in n.input)]
    assert residual and all(producers[i].op_type != "DequantizeLinear" for a in residual for i in a.input)


def test_a_dynamic_batch_model_is_there_for_reduce():
    dynamic = [n for n in corpus.names() if corpus.info(n)["dynamic_axes"]]
    assert "resnet18-fp32-ts-op13-dynbatch" in dynamic
    model = corpus.load("resnet18-fp32-ts-op13-dynbatch")
    assert model.graph.input[0].type.tensor_type.shape.dim[0].dim_param == "batch_size"


def test_the_engine_layer_models_follow_the_trex_resnet_example():
    """Issue 30: TensorRT's TREx ResNet example (reference/engine-layers): ResNet-18, input "input.1", opset 13, a
    dynamic batch; Q/DQ on Conv/Linear only, plus residual quantizers, plus one before the global average pool."""
    names = [n for n in corpus.names() if n.endswith("-ts-op13-dynbatch")]
    assert sorted(names) == sorted(["resnet18-fp32-ts-op13-dynbatch", "resnet18-qat-pq-ts-op13-dynbatch",
                                    "resnet18-qat-pq-residual-ts-op13-dynbatch",
                                    "resnet18-qat-pq-residual-gap-ts-op13-dynbatch"])
    for name in names:
        model = corpus.load(name)
        assert [i.name for i in model.graph.input] == ["input.1"]
        assert model.opset_import[0].version == 13
    fp32, pq = corpus.load("resnet18-fp32-ts-op13-dynbatch"), corpus.load("resnet18-qat-pq-ts-op13-dynbatch")
    assert not any(n.op_type == "QuantizeLinear" for n in fp32.graph.node)
    assert _quantized_conv_inputs_and_weights(pq)
    assert _residual_identities_dequantized(pq) == [False] * 8
    for name in ("resnet18-qat-pq-residual-ts-op13-dynbatch", "resnet18-qat-pq-residual-gap-ts-op13-dynbatch"):
        # the exporter merges layer1.0's residual quantizer with conv1's input quantizer (same tensor, same scale):
        # its Add reads that one DQ
        assert _residual_identities_dequantized(corpus.load(name)) == [True] * 8
    gap = corpus.load("resnet18-qat-pq-residual-gap-ts-op13-dynbatch")
    producers = {o: n for n in gap.graph.node for o in n.output}
    (pool,) = [n for n in gap.graph.node if n.op_type == "GlobalAveragePool"]
    assert producers[pool.input[0]].op_type == "DequantizeLinear"


def _residual_identities_dequantized(model) -> list[bool]:
    """Per residual Add (ResNet's eight), whether one of its inputs comes out of a DequantizeLinear."""
    producers = {o: n for n in model.graph.node for o in n.output}
    adds = [n for n in model.graph.node if n.op_type == "Add" and "/layer" in n.name]
    return [any(producers[i].op_type == "DequantizeLinear" for i in add.input) for add in adds]
