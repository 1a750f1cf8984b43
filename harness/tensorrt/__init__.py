"""TensorRT's facts and readers (standard library only)."""
