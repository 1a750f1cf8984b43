"""TensorRT log and engine-layer readers that need no TensorRT: failure classification and per-layer precision."""
