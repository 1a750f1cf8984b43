"""A test-only case whose parameters decide its outcome on the real ONNX Runtime target, for nightly tests.

A Q/DQ Conv, with or without a QuantizeLinear on its output (``quantize_output``). ONNX Runtime's CPU provider turns
DQ -> Conv -> Q into an INT8 QLinearConv only when that output quantizer is there (see cases/control.py): with it the
conv runs in INT8 (pass), without it in FP32 (fallback). Swapping the two variants' parameters between two nightly
runs gives one regression (pass -> fallback) and one progression (fallback -> pass).

Run as a script, in a process of its own, so the case never enters the test session's case registry:
``python -m tests.harness.param_probe_case OUT_DIR first=yes second=no`` (yes: quantized output).
"""
from __future__ import annotations

import sys

CASE_ID = "probe-conv-output-quantizer"
CHANNELS, SIZE = 8, 8


def write_cases(out_dir: str, quantize_output: dict[str, bool]) -> None:
    """Register the probe case, one variant per name of ``quantize_output``, and generate it into ``out_dir``."""
    import onnx_graphsurgeon as gs

    from cases import _graphs as g
    from cases.generate import generate
    from cases.model import Built, Case, Tolerance, Variant

    class Probe(Case):
        id = CASE_ID
        title = "Probe: Q/DQ Conv with or without an output quantizer"
        pattern = "probe"
        links = ("https://onnxruntime.ai/docs/performance/model-optimizations/quantization.html",)
        mode = "explicit-qdq"
        opset = 13
        tolerance = Tolerance(min_cosine=0.999, max_abs_error=1.5 * g.UNIT_ACTIVATION_SCALE,
                              reason="as the Q/DQ control: one output step for a rounding tie, plus slack")
        variants = tuple(Variant(name=name, role="sweep", description=f"output quantizer: {quantized}",
                                 params={"quantize_output": quantized}) for name, quantized in quantize_output.items())

        @staticmethod
        def build(variant: Variant) -> Built:
            graph = gs.Graph(name=CASE_ID, opset=13)
            x = g.graph_input("input", (1, CHANNELS, SIZE, SIZE))
            graph.inputs.append(x)
            x_dq = g.torch_fake_quantize(graph, x, "/conv/_input_quantizer", g.UNIT_ACTIVATION_SCALE)
            weight = g.conv_weight("conv.weight", (CHANNELS, CHANNELS, 3, 3))
            w_dq = g.torch_fake_quantize(graph, weight, "/conv/_weight_quantizer", g.per_channel_scale(weight.values),
                                         axis=0)
            y = g.torch_node(graph, "Conv", "/conv", [x_dq, w_dq, g.bias("conv.bias", CHANNELS)],
                             g.conv_attrs(3, pad=1))
            if variant.params["quantize_output"]:
                y = g.torch_fake_quantize(graph, y, "/out/_quantizer", g.UNIT_ACTIVATION_SCALE)
            g.mark_output(graph, y, (1, CHANNELS, SIZE, SIZE))
            return Built(graph, expected_int8=("/conv/Conv",))

    generate(out_dir, [Probe])


if __name__ == "__main__":
    write_cases(sys.argv[1], {name: value == "yes" for name, value in (a.split("=", 1) for a in sys.argv[2:])})
