"""Backend notes shared by several cases: what a backend does with a graph form, measured, in one sentence or two."""

# Measured with onnxruntime 1.32.0 (CPU EP): at the extended optimization level the harness runs, ONNX Runtime removes
# a Relu that feeds an FP8 (FLOAT8E4M3FN) QuantizeLinear. Its Relu + QuantizeLinear fusion is right for INT8 with zero
# point -128 (the clamp is then in the quantization), wrong for FP8, whose zero point 0 is no lower bound: negative
# values pass. The INT16/UINT16 form of the same transformer was fixed in
# https://github.com/microsoft/onnxruntime/pull/20187.
ORT_DROPS_RELU_BEFORE_FP8_Q = (
    "ONNX Runtime 1.32 (measured) drops a Relu that feeds an FP8 QuantizeLinear at its extended optimization level "
    "(its Relu + Q fusion assumes the zero point is the type's minimum, true for INT8 -128, not for FP8 0), so a cell "
    "with that form can read mismatch on ort-cpu: an ONNX Runtime defect, not the pattern."
)
