"""TensorRT-facing pieces of the worker: log and layer readers (pure Python), log capture, GPU facts, doctor."""
