"""torchvision's ResNet-18 in the five forms whose engines TensorRT described in reference/engine-layers (NVIDIA's
TREx examples, examples/pytorch/resnet): FP32 and FP16 (eval export, BatchNorm folded) and three QAT forms exported
through pytorch-quantization (BatchNorm kept): ``qat`` (Q/DQ on the inputs and weights of Conv and Linear only),
``qat-residual`` (plus a quantizer on each residual branch) and ``qat-residual-qgap`` (plus one before the global
average pool).

The reference engines are of ResNet-18 (BasicBlocks, layer4.1.conv2 last), not ResNet-50. Their layer names carry the
node names of torch 1.x's exporter (``Conv_34``, ``QuantizeLinear_32``): the nodes here are numbered the same way, so
each engine layer names the nodes of this graph. The numbering follows from the names in the engines: an activation
quantizer is two Constants (scale, zero point), Q and DQ; a weight quantizer three Constants, Q and DQ; a residual or
pooling quantizer four Constants, Q and DQ. Weights are zeros of torchvision's shapes: the prediction reads none of
their values. torch is not installed here; these are built with onnx-graphsurgeon.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import onnx_graphsurgeon as gs

from tests.conftest import REFERENCE

FORMS = ("fp32", "fp16", "qat", "qat-residual", "qat-residual-qgap")
ENGINES = REFERENCE / "engine-layers"
STAGES = ((1, 64, 1), (2, 128, 2), (3, 256, 2), (4, 512, 2))


def engine_json(form: str) -> Path:
    return ENGINES / f"a100-resnet-{form}.graph.json"


class _Builder:
    def __init__(self, qat: bool) -> None:
        self.qat, self.count, self.nodes = qat, 0, []

    def node(self, op: str, inputs: list, attrs: dict | None = None, dtype=np.float32) -> gs.Variable:
        name = f"{op}_{self.count}"
        self.count += 1
        out = gs.Variable(f"{name}_out", dtype=dtype)
        self.nodes.append(gs.Node(op, name, attrs or {}, inputs, [out]))
        return out

    def constant(self, value: np.ndarray) -> gs.Variable:
        return self.node("Constant", [], {"value": gs.Constant(f"c{self.count}", value)}, dtype=value.dtype)

    def quantizer(self, x: gs.Tensor, constants: int, channels: int | None = None) -> gs.Variable:
        shape = (channels,) if channels else ()
        scale = [self.constant(np.full(shape, 0.02, np.float32)), self.constant(np.zeros(shape, np.int8))]
        for _ in range(constants - 2):  # the DQ's own copies, as the exporter wrote them
            scale.append(self.constant(np.full(shape, 0.02, np.float32)) if len(scale) == 2 and constants >= 4 else
                         self.constant(np.zeros(shape, np.int8)))  # a weight DQ's own zero point: INT8, as exported
        attrs = {"axis": 0} if channels else {}
        q = self.node("QuantizeLinear", [x, scale[0], scale[1]], attrs, dtype=np.int8)
        dq_scale = scale[2:4] if constants >= 4 else scale[:2]
        if constants == 3:
            dq_scale = [scale[0], scale[2]]
        return self.node("DequantizeLinear", [q, *dq_scale], attrs)

    def conv(self, x, param: str, cin: int, cout: int, k: int = 3, stride: int = 1) -> gs.Variable:
        weight = gs.Constant(f"{param}.weight", np.zeros((cout, cin, k, k), np.float32))
        attrs = {"kernel_shape": [k, k], "strides": [stride, stride], "pads": [k // 2] * 4}
        if not self.qat:  # eval export: BatchNorm folded into the conv's weights and bias
            return self.node("Conv", [x, weight, gs.Constant(f"{param}.bias", np.zeros(cout, np.float32))], attrs)
        x = self.quantizer(x, 2)
        w = self.quantizer(weight, 3, channels=cout)
        y = self.node("Conv", [x, w], attrs)
        bn = [gs.Constant(f"{param.replace('conv', 'bn').replace('downsample.0', 'downsample.1')}.{p}",
                          np.ones(cout, np.float32)) for p in ("weight", "bias", "running_mean", "running_var")]
        return self.node("BatchNormalization", [y, *bn])


def build(form: str) -> onnx.ModelProto:
    """The ``form`` (one of FORMS) as an ONNX model, opset 13."""
    qat = form.startswith("qat")
    residual_q = form in ("qat-residual", "qat-residual-qgap")
    b = _Builder(qat)
    image = gs.Variable("input.1", np.float32, (32, 3, 224, 224))
    x = b.node("Relu", [b.conv(image, "conv1", 3, 64, k=7, stride=2)])
    x = b.node("MaxPool", [x], {"kernel_shape": [3, 3], "pads": [1, 1, 1, 1], "strides": [2, 2]})
    channels = 64
    for layer, width, stride in STAGES:
        for block in range(2):
            param, s = f"layer{layer}.{block}", stride if block == 0 else 1
            y = b.node("Relu", [b.conv(x, f"{param}.conv1", channels, width, stride=s)])
            y = b.conv(y, f"{param}.conv2", width, width)
            identity = x
            if s != 1 or channels != width:
                identity = b.conv(x, f"{param}.downsample.0", channels, width, k=1, stride=s)
            if residual_q:
                identity = b.quantizer(identity, 4)
            x = b.node("Relu", [b.node("Add", [y, identity])])
            channels = width
    if form == "qat-residual-qgap":
        x = b.quantizer(x, 4)
    x = b.node("Flatten", [b.node("GlobalAveragePool", [x])], {"axis": 1})
    weight = gs.Constant("fc.weight", np.zeros((1000, 512), np.float32))
    if qat:
        x, weight = b.quantizer(x, 2), b.quantizer(weight, 3, channels=1000)
    out = b.node("Gemm", [x, weight, gs.Constant("fc.bias", np.zeros(1000, np.float32))], {"transB": 1})
    out.shape = (32, 1000)
    graph = gs.Graph(b.nodes, [image], [out], opset=13, name=f"resnet18-{form}")
    model = gs.export_onnx(graph)
    model.ir_version = 8
    return model


def write(form: str, directory: Path) -> Path:
    path = Path(directory) / f"resnet18-{form}.onnx"
    onnx.save(build(form), path)
    return path


# The same networks as torch 2's TorchScript exporter writes them: the real-exporter corpus (corpus/models, written by
# scripts/export_torch_corpus.py; large initializers stored empty, which no prediction reads): model form -> file.
TORCH_EXPORTS = Path(__file__).resolve().parents[2] / "corpus" / "models"
TORCH_FORMS = {"fp32": "resnet18-fp32-ts-op17.onnx", "fp16": "resnet18-fp32-ts-op17.onnx",
               "qat": "resnet18-qat-pq-ts-op13.onnx", "qat-residual": "resnet18-qat-pq-residual-ts-op13-dynbatch.onnx",
               "qat-residual-qgap": "resnet18-qat-pq-residual-gap-ts-op13-dynbatch.onnx"}
_UNPAIRED = ("Constant", "Identity")  # folded constants: each exporter writes its own


def torch_export(form: str) -> onnx.ModelProto:
    return onnx.load(TORCH_EXPORTS / TORCH_FORMS[form], load_external_data=False)


def pair_nodes(ours: onnx.ModelProto, theirs: onnx.ModelProto) -> dict[str, str]:
    """Node of ``ours`` -> the node of ``theirs`` at the same place, found by walking both graphs from their inputs
    and outputs at once: readers of paired tensors pair by op and input slot (in graph order where several match),
    producers of paired nodes' inputs by slot. Constants and Identities pair with nothing."""
    graphs = []
    for model in (ours, theirs):
        nodes = [n for n in model.graph.node]
        producer = {t: i for i, n in enumerate(nodes) for t in n.output}
        readers: dict[str, list[tuple[int, int]]] = {}
        for i, n in enumerate(nodes):
            for slot, t in enumerate(n.input):
                readers.setdefault(t, []).append((i, slot))
        graphs.append((nodes, producer, readers))
    (a_nodes, a_producer, a_readers), (b_nodes, b_producer, b_readers) = graphs
    pairs: dict[int, int] = {}
    queue = [(ours.graph.input[0].name, theirs.graph.input[0].name)]
    queue += [(x.name, y.name) for x, y in zip(ours.graph.output, theirs.graph.output)]
    seen = set()
    while queue:
        ta, tb = queue.pop()
        if (ta, tb) in seen:
            continue
        seen.add((ta, tb))
        found = []
        group_a: dict[tuple[str, int], list[int]] = {}
        group_b: dict[tuple[str, int], list[int]] = {}
        for i, slot in a_readers.get(ta, ()):
            group_a.setdefault((a_nodes[i].op_type, slot), []).append(i)
        for i, slot in b_readers.get(tb, ()):
            group_b.setdefault((b_nodes[i].op_type, slot), []).append(i)
        for key, members in group_a.items():
            found += list(zip(sorted(members), sorted(group_b.get(key, []))))
        if ta in a_producer and tb in b_producer:
            found.append((a_producer[ta], b_producer[tb]))
        for i, j in found:
            if a_nodes[i].op_type != b_nodes[j].op_type or a_nodes[i].op_type in _UNPAIRED or i in pairs:
                continue
            pairs[i] = j
            queue += list(zip(a_nodes[i].output, b_nodes[j].output))
            queue += [(x, y) for x, y in zip(a_nodes[i].input, b_nodes[j].input) if x and y]
    return {a_nodes[i].name: b_nodes[j].name for i, j in pairs.items()}


def renamed_engine(info: dict, names: dict[str, str]) -> dict:
    """Engine inspector JSON with the node names in its layer names replaced by ``names`` (weights keep theirs)."""
    layers = []
    for layer in info["Layers"]:
        prefix, rest = "", layer["Name"]
        for marker in (" to ",):
            if rest.startswith("Reformatting CopyNode") and marker in rest:
                prefix, rest = rest.split(marker, 1)[0] + marker, rest.split(marker, 1)[1]
        parts = [names.get(part, part) for part in rest.split(" + ")]
        layers.append({**layer, "Name": prefix + " + ".join(parts)})
    return {**info, "Layers": layers}
