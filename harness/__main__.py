"""``python -m harness``: the trt-matrix command line."""
import sys

from harness.commands.main import main

sys.exit(main())
