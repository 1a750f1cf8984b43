"""Which kernel of ONNX Runtime's optimized model ran each ONNX node, and in which precision.

ORT rewrites the model it is given before running it (QDQ groups become QLinear*/QGemm kernels, a MatMul and its bias
Add become ``<MatMul>/MatMulAddFusion``, a Sigmoid and a Mul become QuickGelu, a function op is inlined into unnamed
nodes, a DequantizeLinear -> Resize -> QuantizeLinear becomes a Resize on INT8 data, NCHWc reorders appear at higher
levels) and saves the result (``SessionOptions.optimized_model_filepath``). Both graphs are read here:

* Mapping. A tensor that exists under the same name in both graphs is an anchor. Nodes of either graph joined by a
  tensor that is not an anchor (nor an initializer nor a graph input), nodes that produce the same anchor, and a
  node and a kernel of the same name form one region: the ONNX nodes of a region ran in its kernels. Inside a
  region an ONNX node ran in the kernel of its own name, else in kernels named ``<its name>/...`` (ORT's fusion
  names). A node without one was fused away: when its region still reads every tensor it read (else ORT merged it
  with an identical node elsewhere), it ran in the kernel of a neighbouring node of its region, else in the
  region's unnamed kernels that no node claims (a function op inlined) when they agree on a precision.
* Precision. A kernel's precision is read from the element types of the tensors it reads at run time (not its
  initializers), as ORT itself infers them: any 8-bit integer input makes it INT8; otherwise its float inputs give
  its precision (the widest when they differ); a kernel that reads neither is ``unknown``. A kernel reading float
  activations is float even when its weights are 8-bit (MatMulNBits: weight-only quantization).
* ``unknown`` (unverified) whenever one of these steps cannot be done; the reason is kept per node.

Standard library, onnx and onnxruntime only: this module runs inside worker containers.
"""
from __future__ import annotations

import dataclasses
from typing import Any

from harness.judgement.vocabulary import FLOAT_PRECISIONS, PRECISION_ORDER

BOUNDARY_OPS = {"QuantizeLinear", "DequantizeLinear", "DynamicQuantizeLinear"}  # convert between float and INT8
EIGHT_BIT_TYPES = {"tensor(int8)", "tensor(uint8)"}
FLOAT_TYPES = {"tensor(float)": "fp32", "tensor(double)": "fp32", "tensor(float16)": "fp16",
               "tensor(bfloat16)": "bf16", "tensor(float8e4m3fn)": "fp8", "tensor(float8e4m3fnuz)": "fp8",
               "tensor(float8e5m2)": "fp8", "tensor(float8e5m2fnuz)": "fp8"}


@dataclasses.dataclass
class KernelMap:
    """Per ONNX node (Q/DQ boundaries left out): its precision, the kernels it ran in, why it is unknown."""

    precision: dict[str, str]
    kernels: dict[str, list[str]]  # ONNX node -> labels of the optimized model's kernels (see kernel_label)
    unknown_because: dict[str, str]


def kernel_label(node: Any, index: int) -> str:
    """How a kernel of the optimized model is named in records: its name, or ``<op>#<index>`` when it has none."""
    return node.name or f"{node.op_type}#{index}"


def tensor_types(optimized: Any) -> dict[str, str]:
    """The type ORT infers for every tensor of its optimized model (e.g. ``tensor(int8)``), read by loading that model
    again, unoptimized, with every tensor made a graph output."""
    import onnx
    import onnxruntime

    exposed = onnx.ModelProto()
    exposed.CopyFrom(optimized)
    listed = {v.name for v in exposed.graph.output}
    for node in exposed.graph.node:
        for name in node.output:
            if name and name not in listed:
                exposed.graph.output.append(onnx.ValueInfoProto(name=name))
                listed.add(name)
    options = onnxruntime.SessionOptions()
    options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_DISABLE_ALL
    options.log_severity_level = 3
    session = onnxruntime.InferenceSession(exposed.SerializeToString(), options, providers=["CPUExecutionProvider"])
    types = {i.name: i.type for i in session.get_inputs()}
    types.update({o.name: o.type for o in session.get_outputs()})
    return types


def kernel_precision(node: Any, types: dict[str, str], initializers: set[str]) -> tuple[str, str | None]:
    """The precision of one kernel from the types of the tensors it reads at run time, and why when ``unknown``."""
    read = [name for name in node.input if name and name not in initializers]
    untyped = [name for name in read if name not in types]
    if untyped:
        return "unknown", f"ORT reports no type for {', '.join(untyped)}, read by {node.op_type} {node.name!r}"
    kinds = [types[name] for name in read]
    if any(kind in EIGHT_BIT_TYPES for kind in kinds):
        return "int8", None
    floats = [FLOAT_TYPES[kind] for kind in kinds if kind in FLOAT_TYPES]
    if floats:
        return max(floats, key=PRECISION_ORDER.index), None
    return "unknown", f"{node.op_type} {node.name!r} reads no float or 8-bit integer tensor ({', '.join(kinds) or 'none'})"


def combined(precisions: list[str]) -> str:
    """One precision for a node run by several kernels: INT8 only when all are; a float part makes it float."""
    floats = [p for p in precisions if p in FLOAT_PRECISIONS]
    if floats:
        return max(floats, key=PRECISION_ORDER.index)
    if precisions and all(p == "int8" for p in precisions):
        return "int8"
    return "unknown"


class _Regions:
    """Union-find over the nodes of both graphs: ("o", i) for the model ORT was given, ("k", j) for its kernels."""

    def __init__(self):
        self.parent: dict[tuple[str, int], tuple[str, int]] = {}

    def find(self, item):
        self.parent.setdefault(item, item)
        while self.parent[item] != item:
            self.parent[item] = self.parent[self.parent[item]]
            item = self.parent[item]
        return item

    def join(self, a, b):
        self.parent[self.find(a)] = self.find(b)


def _outside(graph: Any) -> set[str]:
    """Tensors that join nothing: initializers, graph inputs, Constant outputs and the empty name of a skipped input."""
    names = {i.name for i in graph.initializer} | {i.name for i in graph.input} | {""}
    return names | {out for n in graph.node if n.op_type == "Constant" for out in n.output}


def _join_within(regions: _Regions, side: str, graph: Any, anchors: set[str]) -> None:
    skip = anchors | _outside(graph)
    first_touch: dict[str, tuple[str, int]] = {}
    for index, node in enumerate(graph.node):
        for name in (*node.input, *node.output):
            if name in skip:
                continue
            if name in first_touch:
                regions.join(first_touch[name], (side, index))
            else:
                first_touch[name] = (side, index)


def map_kernels(original: Any, optimized: Any, types: dict[str, str]) -> KernelMap:
    """Map every node of ``original`` (the model ORT was given) onto the kernels of ``optimized`` (the model it ran),
    with ``types`` the tensor types ORT inferred for ``optimized`` (:func:`tensor_types`)."""
    nodes, kernels = list(original.graph.node), list(optimized.graph.node)
    produced = {out for n in nodes for out in n.output if out}
    anchors = produced & {out for k in kernels for out in k.output if out}
    regions = _Regions()
    _join_within(regions, "o", original.graph, anchors)
    _join_within(regions, "k", optimized.graph, anchors)
    producer_kernel = {out: j for j, k in enumerate(kernels) for out in k.output if out in anchors}
    kernel_by_name = {k.name: j for j, k in enumerate(kernels) if k.name}
    for i, node in enumerate(nodes):
        for out in node.output:
            if out in producer_kernel:
                regions.join(("o", i), ("k", producer_kernel[out]))
        if node.name in kernel_by_name and node.op_type not in BOUNDARY_OPS:
            regions.join(("o", i), ("k", kernel_by_name[node.name]))

    initializers = {i.name for i in optimized.graph.initializer}
    kernel_precisions = [kernel_precision(k, types, initializers) for k in kernels]
    labels = [kernel_label(k, j) for j, k in enumerate(kernels)]
    compute = {}  # region -> its kernels that are not Q/DQ boundaries
    for j, k in enumerate(kernels):
        if k.op_type not in BOUNDARY_OPS:
            compute.setdefault(regions.find(("k", j)), []).append(j)

    def named_after(i: int) -> list[int]:
        """The kernels of node ``i``'s region that carry its name, or a name ORT gives a fusion it heads."""
        name = nodes[i].name
        in_region = compute.get(regions.find(("o", i)), []) if name else []
        return [j for j in in_region if kernels[j].name == name] or [
            j for j in in_region if kernels[j].name.startswith(name + "/")]

    ran_in = {i: named_after(i) for i, n in enumerate(nodes) if n.op_type not in BOUNDARY_OPS}
    claimed = {j for chosen in ran_in.values() for j in chosen}
    live = anchors | {i.name for i in optimized.graph.input}  # tensors of the given model that ORT still has
    reads = {side: _region_reads(regions, side, graph, live)
             for side, graph in (("o", original.graph), ("k", optimized.graph))}
    neighbours = _neighbours(nodes)
    result = KernelMap({}, {}, {})
    for i, node in enumerate(nodes):
        if node.op_type in BOUNDARY_OPS:
            continue
        region = regions.find(("o", i))
        chosen, how = ran_in[i], None
        # Fused away, it ran in its region, whose kernels must read from outside it what its nodes read (else
        # ORT merged a node of it with an identical node elsewhere): in the kernel of a neighbour it was fused
        # with, else in unnamed kernels nobody else claims (a function op inlined) when they agree on a precision.
        absorbed = reads["o"].get(region, set()) == reads["k"].get(region, set())
        if not chosen and absorbed:
            chosen = sorted({j for other in neighbours[i] if regions.find(("o", other)) == region
                             for j in ran_in.get(other, [])})
        if not chosen and absorbed:
            candidates = [j for j in compute.get(region, []) if j not in claimed]
            if len({kernel_precisions[j][0] for j in candidates}) == 1:
                chosen = candidates
            elif candidates:
                how = (f"ran in one of {', '.join(labels[j] for j in candidates)}, which do not agree on a "
                       f"precision, and none is named after it")
        if not chosen:
            result.precision[node.name] = "unknown"
            result.kernels[node.name] = []
            result.unknown_because[node.name] = how or (
                "no kernel of ORT's optimized model ran it: ORT removed it (folded, eliminated, or merged with an "
                "identical node)")
            continue
        precision = combined([kernel_precisions[j][0] for j in chosen])
        result.precision[node.name] = precision
        result.kernels[node.name] = [labels[j] for j in chosen]
        if precision == "unknown":
            result.unknown_because[node.name] = "; ".join(
                kernel_precisions[j][1] or labels[j] for j in chosen if kernel_precisions[j][0] == "unknown")
    return result


def _region_reads(regions: _Regions, side: str, graph: Any, live: set[str]) -> dict[Any, set[str]]:
    """Per region: the tensors both graphs still have that its nodes on ``side`` read from outside the region."""
    made_in: dict[Any, set[str]] = {}
    read_by: dict[Any, set[str]] = {}
    for index, node in enumerate(graph.node):
        region = regions.find((side, index))
        made_in.setdefault(region, set()).update(node.output)
        read_by.setdefault(region, set()).update(name for name in node.input if name in live)
    return {region: read - made_in[region] for region, read in read_by.items()}


def _neighbours(nodes: list[Any]) -> list[set[int]]:
    """For each node, the nodes that read a tensor it writes or write a tensor it reads."""
    producer = {out: i for i, n in enumerate(nodes) for out in n.output if out}
    found: list[set[int]] = [set() for _ in nodes]
    for i, node in enumerate(nodes):
        for name in node.input:
            if name in producer:
                found[i].add(producer[name])
                found[producer[name]].add(i)
    return found
