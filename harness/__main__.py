"""``python -m harness``: the trt-matrix command line (the same as the installed ``trt-matrix`` command)."""
import sys

from harness.commands.main import main

sys.exit(main())
