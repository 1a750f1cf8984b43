"""Contract stand-ins for the ``tensorrt`` module, generated from the recorded API surface of each TensorRT version."""
