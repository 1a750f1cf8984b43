"""Cut a matched subgraph out of a user's model, as a model of its own with the user's shapes, weights and Q/DQ
scales: the matched nodes, plus the constant-only nodes that feed them (a weight's QuantizeLinear, a Constant).

Tensors the subgraph reads from the rest of the model become its inputs (a symbolic dimension is set to 1); tensors
it writes that the rest of the model (or the user) reads become its outputs. Weights kept in external data files are
read for these nodes only.
"""
from __future__ import annotations

import dataclasses
from typing import Any, Sequence

import numpy as np
import onnx
import onnx_graphsurgeon as gs
from onnx import external_data_helper, numpy_helper

from harness.scan.loading import LoadedModel
from harness.worker.errors import InputError

CONSTANT_REACH = 8  # how many constant-only nodes deep the feeding weight computations are followed
FLOAT_DTYPES = (np.float32, np.float16, np.float64)


class ExtractionError(InputError):
    """The subgraph cannot be cut into a runnable model; the message says why."""


@dataclasses.dataclass
class Extracted:
    model: onnx.ModelProto
    notes: list[str]  # what the cut had to decide (e.g. a symbolic dimension set to 1)


class Extractor:
    """Cuts subgraphs out of one loaded model (its node and initializer indexes are built once)."""

    def __init__(self, loaded: LoadedModel):
        self.loaded = loaded
        self.nodes = {node.name: node for node in loaded.graph.nodes}
        self.order = {id(node): index for index, node in enumerate(loaded.graph.nodes)}
        self.initializers = {tensor.name: tensor for tensor in loaded.model.graph.initializer}
        self.graph_outputs = {tensor.name for tensor in loaded.graph.outputs}

    def extract(self, node_names: Sequence[str]) -> Extracted:
        chosen = self._with_constant_feeders([self.nodes[name] for name in node_names])
        chosen.sort(key=lambda node: self.order[id(node)])
        ids = {id(node) for node in chosen}
        notes: list[str] = []
        clones: dict[int, Any] = {}
        inputs = self._inputs(chosen, ids, clones, notes)
        nodes = [gs.Node(node.op, name=node.name, attrs=dict(node.attrs), domain=node.domain,
                         inputs=[self._clone(t, clones) for t in node.inputs],
                         outputs=[self._clone(t, clones) for t in node.outputs]) for node in chosen]
        outputs = self._outputs(chosen, ids, clones)
        graph = gs.Graph(nodes=nodes, inputs=inputs, outputs=outputs, name="reproducer", opset=self.loaded.opset)
        return Extracted(self._export(graph), notes)

    def _with_constant_feeders(self, nodes: list[Any]) -> list[Any]:
        """``nodes`` and every node that computes one of their inputs from constants only."""
        chosen = {id(node): node for node in nodes}
        pending = list(nodes)
        while pending:
            for tensor in pending.pop().inputs:
                feeder = tensor.inputs[0] if tensor.inputs else None
                if feeder is not None and id(feeder) not in chosen and _constant_only(feeder, CONSTANT_REACH):
                    chosen[id(feeder)] = feeder
                    pending.append(feeder)
        return list(chosen.values())

    def _inputs(self, chosen: list[Any], ids: set[int], clones: dict[int, Any], notes: list[str]) -> list[Any]:
        """Tensors the subgraph reads that the rest of the model writes, with static shapes."""
        inputs = []
        for node in chosen:
            for tensor in node.inputs:
                produced_inside = tensor.inputs and id(tensor.inputs[0]) in ids
                if isinstance(tensor, gs.Constant) or produced_inside or not tensor.name or id(tensor) in clones:
                    continue
                if tensor.dtype is None or tensor.shape is None:
                    raise ExtractionError(f"the type or shape of tensor '{tensor.name}' is unknown (shape inference "
                                          "could not tell it), so no input can be drawn for it")
                if np.dtype(tensor.dtype).type not in FLOAT_DTYPES:
                    raise ExtractionError(f"tensor '{tensor.name}' is {np.dtype(tensor.dtype).name}: its value is "
                                          "computed by the rest of the model, a reproducer cannot draw it at random")
                shape = [d if isinstance(d, int) and d > 0 else 1 for d in tensor.shape]
                if shape != list(tensor.shape):
                    notes.append(f"input '{tensor.name}' has the shape {list(tensor.shape)}: symbolic dimensions set "
                                 f"to 1, {shape}")
                clones[id(tensor)] = gs.Variable(tensor.name, dtype=tensor.dtype, shape=shape)
                inputs.append(clones[id(tensor)])
        return inputs

    def _outputs(self, chosen: list[Any], ids: set[int], clones: dict[int, Any]) -> list[Any]:
        """Tensors the subgraph writes that the rest of the model, or the user, reads."""
        read_outside = [
            tensor for node in chosen for tensor in node.outputs
            if tensor.name and (tensor.name in self.graph_outputs or any(id(n) not in ids for n in tensor.outputs))
        ]
        outputs = [clones[id(t)] for t in read_outside or [t for t in chosen[-1].outputs if t.name]]
        for tensor in outputs:
            tensor.dtype = tensor.dtype or np.float32
        return outputs

    def _clone(self, tensor: Any, clones: dict[int, Any]) -> Any:
        if id(tensor) not in clones:
            if isinstance(tensor, gs.Constant):
                clones[id(tensor)] = gs.Constant(tensor.name, self._values(tensor))
            elif not tensor.name:
                clones[id(tensor)] = gs.Variable.empty()
            else:  # an inner tensor: its shape is inferred again from the reproducer's static inputs
                clones[id(tensor)] = gs.Variable(tensor.name, dtype=tensor.dtype)
        return clones[id(tensor)]

    def _values(self, constant: Any) -> np.ndarray:
        """A constant's values, read from the initializer (and its external data file, when the model keeps it
        there) rather than through the graph's constant, which would load and keep them: the user's graph stays as
        it was imported."""
        proto = self.initializers.get(constant.name)
        if proto is None:
            return constant.values
        if not external_data_helper.uses_external_data(proto):
            return numpy_helper.to_array(proto)
        proto = onnx.TensorProto.FromString(proto.SerializeToString())
        external_data_helper.load_external_data_for_tensor(proto, str(self.loaded.base_dir))
        proto.data_location = onnx.TensorProto.DEFAULT
        del proto.external_data[:]
        return numpy_helper.to_array(proto)

    def _export(self, graph: Any) -> onnx.ModelProto:
        model = gs.export_onnx(graph, do_type_check=False)
        del model.opset_import[:]
        model.opset_import.extend(self.loaded.model.opset_import)
        model.ir_version = self.loaded.model.ir_version
        model.producer_name = "trt-matrix scan"
        model.doc_string = f"Cut out of {self.loaded.path.name} by `trt-matrix scan`."
        try:
            model = onnx.shape_inference.infer_shapes(model, check_type=True, strict_mode=True, data_prop=True)
            onnx.checker.check_model(model, full_check=True)
        except (onnx.shape_inference.InferenceError, onnx.checker.ValidationError) as err:
            message = " ".join(str(err).split())[:300]
            raise ExtractionError(f"the cut subgraph is not a valid model: {message}") from None
        return model


def _constant_only(node: Any, reach: int) -> bool:
    """A node whose every input is a constant, or is computed from constants within ``reach`` nodes."""
    if node.op == "Constant":
        return True
    if reach <= 0 or not node.inputs:
        return False
    for tensor in node.inputs:
        if isinstance(tensor, gs.Constant) or not tensor.name:
            continue
        feeder = tensor.inputs[0] if tensor.inputs else None
        if feeder is None or not _constant_only(feeder, reach - 1):
            return False
    return True
