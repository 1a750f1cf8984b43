"""The worker side of the harness: runs one cell inside a container, standard library plus numpy/onnx only."""

# The packages of harness/ a worker container holds: the worker, the words it judges with and TensorRT's readers.
CONTAINER_PACKAGES = ("worker", "judgement", "tensorrt")
