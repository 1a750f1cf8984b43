"""What is known of a target before anything runs on it: the facts of each matrix target (what its TensorRT and GPU
can and cannot do, each with its source) in :mod:`harness.targets.facts`, and the scope of a claim that holds over a
range of versions, platforms or GPU architectures in :mod:`harness.targets.ranges`."""
