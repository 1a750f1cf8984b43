"""``python -m harness``: the trt-matrix command line."""
from harness.commands.main import run

run()
