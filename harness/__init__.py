"""trt-matrix: which TensorRT version and platform builds an INT8 model, with evidence."""
__version__ = "0.1.0"
