"""The exit codes of every command, one meaning per code (README, "Exit codes"; the end of ``--help``). Here, below
every layer, so that the packages that decide a status (``harness.scan``: a scan's, a fix's) and the commands that
return it name the same codes."""
from __future__ import annotations

EXIT_OK, EXIT_REGRESSION, EXIT_USAGE, EXIT_BROKEN, EXIT_PARTIAL, EXIT_INTERRUPTED = 0, 1, 2, 3, 4, 130
EXIT_MEANINGS = {
    EXIT_OK: "done: nothing damaged, nothing lost, no regression",
    EXIT_REGRESSION: "a cell regressed since the previous run (history, diff); a chosen target is expected to fail "
                     "(scan: a verdict resting on a claim not known to hold there gates only with --fail-on "
                     "unverified); a cell ended at least as badly as --fail-on asks, e.g. a precision fallback (run); "
                     "a known failure applies to a chosen target (diagnose)",
    EXIT_USAGE: "usage or bad input: an argument out of range, a path that is missing or of the wrong kind, a "
                "file that is not what the command reads (not a TensorRT log, not engine JSON, not a cases "
                "directory, a matrix.yaml that breaks its rules); nothing was run; or a --workaround (scan --fix) "
                "that cannot be applied to its case's form: no fixed model written; or a model a third-party "
                "library could not process (scan --to-explicit: the library, the step and what to try are named)",
    EXIT_BROKEN: "damaged or infra: something the tool wrote is damaged (results lines, run.json, a model or data "
                 "file that fails its index.json hash), records were lost (cells gone since the run before, fewer "
                 "records than run.json counts), or some cell is infra-error; the damage is named and what could "
                 "be read was used. It wins over 1: a comparison with damaged or lost input is incomplete. "
                 "diagnose: a file given is damaged (a calibration cache cut short, engine JSON with a broken field, "
                 "a log overwritten with binary data, a truncated model); it wins over 2",
    EXIT_PARTIAL: "partial fix (scan --fix): the fixed model is written and checked, but some places could not be "
                  "fixed (no workaround applies there, or its rewrite failed a check of the fixed model, or made a "
                  "target's verdict worse, which then keeps the model as it is); each is listed with its reason. It "
                  "wins over 1 and 0; 3 wins over it",
    EXIT_INTERRUPTED: "interrupted (Ctrl-C, 128 + SIGINT): records written so far are kept; rerun the same command to "
                      "resume",
}
