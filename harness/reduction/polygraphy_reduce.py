"""``python -m harness.reduction.polygraphy_reduce ARGS``: polygraphy's command line (``debug reduce ...``), with one
change: the values of the tensors polygraphy freezes to cut a branchy graph come from ONNX's reference evaluator.

Polygraphy computes them by running the whole model in ONNX Runtime on this host ("fallback inference"). A model
being reduced is one that fails, and the backend it fails on may well be that very ONNX Runtime (a missing kernel,
a crash), so fallback inference fails with it and the reduction stops at its first branch. ``onnx.reference``
(the evaluator the case library computes reference outputs with) runs any valid model, independently of every
backend under test.
"""
from __future__ import annotations

import sys

import numpy as np
import onnx

SEED = 0


def reference_values(model: onnx.ModelProto) -> dict[str, np.ndarray]:
    """Every tensor the model computes, with its inputs, for standard-normal inputs of a fixed seed."""
    import onnx.reference

    from cases.generate import reference_model

    rng = np.random.default_rng(SEED)
    initializers = {i.name for i in model.graph.initializer}
    feeds = {}
    for value in model.graph.input:
        if value.name in initializers:
            continue
        dims = [d.dim_value if d.HasField("dim_value") else 1 for d in value.type.tensor_type.shape.dim]
        dtype = onnx.helper.tensor_dtype_to_np_dtype(value.type.tensor_type.elem_type)
        feeds[value.name] = rng.standard_normal(dims).astype(dtype)
    evaluator = onnx.reference.ReferenceEvaluator(reference_model(model))
    values = evaluator.run(None, feeds, intermediate=True)
    computed = {name: np.asarray(v) for name, v in values.items() if name not in initializers}
    return {**computed, **feeds}


def _fallback_inference(self, onnx_model, outputs=None):
    from polygraphy.common import TensorMetadata
    from polygraphy.comparator import IterationResult

    values = reference_values(onnx_model)
    return IterationResult(values), TensorMetadata.from_feed_dict(values)


def main(argv: list[str] | None = None) -> int:
    from polygraphy.tools import main as polygraphy_main
    from polygraphy.tools.args import OnnxInferShapesArgs

    OnnxInferShapesArgs.fallback_inference = _fallback_inference
    sys.argv = ["polygraphy"] + list(sys.argv[1:] if argv is None else argv)
    return polygraphy_main()


if __name__ == "__main__":
    sys.exit(main())
