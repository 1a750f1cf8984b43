"""``python -m harness``: the trt-matrix command line (the same as the installed ``trt-matrix`` command)."""
from harness.commands.main import run

run()
