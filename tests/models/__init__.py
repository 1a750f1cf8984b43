"""Real, non-trivial models the scanner is tested on, built here with onnx-graphsurgeon (no torch on this machine):
each module builds one network, with and without pytorch-quantization style Q/DQ, and says which library patterns it
holds, where, and in which form (``expected``)."""
