"""``python -m harness``: the trt-matrix command line."""
import sys

from harness.cli import main

sys.exit(main())
