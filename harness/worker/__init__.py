"""The worker side of the harness: runs one cell inside a container, standard library plus numpy/onnx only."""
