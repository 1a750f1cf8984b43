"""A case's graph inside a larger user model: a stem layer before every input, a head after every output, and every
node renamed the way an exporter of a bigger network names it, so a matcher meets the pattern as a user's model holds
it (not as the library's small graph, whose names and borders it must not depend on)."""
from __future__ import annotations

import numpy as np
import onnx
import onnx_graphsurgeon as gs

from cases import _graphs as g
from cases.generate import export_model


def build(case, variant) -> onnx.ModelProto:
    """The exported variant with a float stem in front of each input (Conv 3x3 + Relu for images, MatMul + Relu for
    token sequences) and a Sigmoid head after each output; node names ``/model/<part>/<Op>_<n>``."""
    model, _ = export_model(case, variant)
    graph = gs.import_onnx(model)
    for index, node in enumerate(graph.nodes):
        node.name = f"/model/blocks.{index // 8}/{node.op}_{index}"
    inputs = []
    for index, inner in enumerate(graph.inputs):
        outer = gs.Variable(f"input_{index}", dtype=np.float32, shape=inner.shape)
        inputs.append(outer)
        stem = f"/model/stem.{index}"
        if len(inner.shape) == 4:
            channels = inner.shape[1]
            weight = g.conv_weight(f"model.stem.{index}.weight", (channels, channels, 3, 3))
            y = g.node(graph, "Conv", f"{stem}/Conv", [outer, weight], f"{stem}/Conv_output_0", g.conv_attrs(3, pad=1))
        else:
            features = inner.shape[-1]
            weight = g.dense_weight(f"model.stem.{index}.weight", (features, features), features)
            y = g.node(graph, "MatMul", f"{stem}/MatMul", [outer, weight], f"{stem}/MatMul_output_0")
        relu = gs.Node("Relu", name=f"{stem}/Relu", inputs=[y], outputs=[inner])
        inner.dtype = np.float32
        graph.nodes.append(relu)
    outputs = []
    for index, inner in enumerate(graph.outputs):
        head = g.node(graph, "Sigmoid", f"/model/head.{index}/Sigmoid", [inner], f"output_{index}")
        head.dtype, head.shape = np.float32, inner.shape
        outputs.append(head)
    graph.inputs, graph.outputs = inputs, outputs
    embedded = gs.export_onnx(graph.cleanup().toposort())
    embedded.ir_version = model.ir_version
    del embedded.opset_import[:]
    embedded.opset_import.extend(model.opset_import)
    onnx.checker.check_model(embedded, full_check=True)
    return embedded


def renamed(case, variant, node: str) -> str:
    """The name ``build`` gives the case's node ``node``."""
    model, _ = export_model(case, variant)
    for index, original in enumerate(model.graph.node):
        if original.name == node:
            return f"/model/blocks.{index // 8}/{original.op_type}_{index}"
    raise KeyError(f"{case.id}/{variant.name} has no node {node!r}")
