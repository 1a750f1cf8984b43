"""How pages and commands show the verdicts: symbols, labels, meanings (the README's tables and the pages' legends)
and the outcome colour each scan verdict borrows. Templates and report.js are handed these tables; they spell no
verdict of their own. Standard library only."""
from __future__ import annotations

from harness.judgement import vocabulary
from harness.judgement.bases import BASES, PLANNING_VERDICTS
from harness.judgement.vocabulary import (
    BLOCKED, CANNOT_EXIST_HERE, CLEAR, CRASH, FAIL, FAILS_AS_REPORTED, FALLBACK, INFRA_ERROR, LIKELY, MISMATCH, NOT_RUN,
    OUTCOMES, PASS, PRECISION_FALLBACK, PRECISION_UNVERIFIED, REPORTED_FORM, SCAN_VERDICTS, TIMEOUT, UNAVAILABLE,
    UNVERIFIED, VARIANT, VERIFIED, WORKAROUND, WORKS_AS_REPORTED, YOUR_LAYER,
)

# Every word by its constant's name, for a page's script (report.js reads it from the page: J.PASS, J.CLAIMED, ...).
WORDS = {name: value for name, value in vars(vocabulary).items() if name.isupper() and isinstance(value, str)}

# Colours (line, fill) of the outcomes (Okabe-Ito-like hues, light fills; the outcome is always written out as well)
# and of the planning view's cells: the pages' .o-<outcome> and .v-<verdict> classes.
OUTCOME_COLOURS = {PASS: ("#17753a", "#dcf1e2"), FALLBACK: ("#9a6200", "#fcefc4"), MISMATCH: ("#c0440a", "#fddcc8"),
                   FAIL: ("#b3261e", "#f7d2cf"), CRASH: ("#7a1f7a", "#eed6ee"), TIMEOUT: ("#3f3bbf", "#e1e0fa"),
                   UNAVAILABLE: ("#6b7280", "#ececee"), UNVERIFIED: ("#5b6270", "#f1f2f4"),
                   INFRA_ERROR: ("#3a4150", "#dfe2e7")}
PLANNING_COLOURS = {WORKS_AS_REPORTED: ("#17753a", "#dcf1e2"), WORKAROUND: ("#0b57d0", "#dde8fb"),
                    PRECISION_FALLBACK: ("#9a6200", "#fcefc4"), FAILS_AS_REPORTED: ("#b3261e", "#f7d2cf"),
                    **{b.name: b.planning_colours for b in BASES if b.planning_label}, PRECISION_UNVERIFIED: ("#5b6270", "#f1f2f4"),
                    NOT_RUN: ("#9aa0a8", "#ffffff"), CANNOT_EXIST_HERE: ("#4b5563", "#e3e3e3")}

# What a piece of evidence is about, in the scan's reasons ("observed pass on the library variant ...").
SCOPE_LABELS = {YOUR_LAYER: "your layer", VARIANT: "the library variant", REPORTED_FORM: "the reported form"}

# The scan's verdicts: symbol, the outcome whose colour it borrows (layout.html.j2's .o-* classes), meaning.
SCAN_VERDICT_SYMBOLS = {BLOCKED: "✗", FALLBACK: "↓", UNAVAILABLE: "⊘", UNVERIFIED: "?", LIKELY: "✓", VERIFIED: "✔",
                        CLEAR: "○"}
SCAN_VERDICT_COLOURS = {BLOCKED: FAIL, FALLBACK: FALLBACK, UNAVAILABLE: UNAVAILABLE, UNVERIFIED: UNVERIFIED,
                        LIKELY: PASS, VERIFIED: PASS, CLEAR: PASS}
SCAN_VERDICT_MEANINGS = {
    BLOCKED: "observed or claimed upstream to fail (the category is given), mismatch, crash or time out, or stopped by "
             "a fact of the target (TensorRT 11 has no calibrator: the fact, its source and the remedy are given)",
    FALLBACK: "builds, but nodes run wider than asked: INT8, FP8 or FP16 requested, another precision ran (named), or "
              "claimed or predicted to",
    UNAVAILABLE: "the target cannot run it at all (the reason is given)",
    UNVERIFIED: "no observation, no upstream claim, no fact and no prediction either way (infra-error records are "
                "none, and unverified ones: ran, but the backend did not show an expected node's precision)",
    LIKELY: "passed on the library's minimal graph, or claimed upstream (for the target or over a range of versions) "
            "to pass, or predicted from TensorRT's documented rules in the precision asked",
    VERIFIED: "your own layer, cut out of the model, passed on that target (--run)",
    CLEAR: "no known pattern of the library in the model, or none that concerns the target's backend (listed as not "
           "applicable; no guarantee that it builds)",
}

# The planning view's verdicts: label, symbol and meaning; a basis's own cell (claimed) from its entry in BASES.
_BASIS_CELLS = [b for b in BASES if b.planning_label]
PLANNING_LABELS = {
    WORKS_AS_REPORTED: "works as reported", WORKAROUND: "works with workaround", PRECISION_FALLBACK:
    "precision fallback", FAILS_AS_REPORTED: "fails", **{b.name: b.planning_label for b in _BASIS_CELLS},
    PRECISION_UNVERIFIED: "precision unverified", NOT_RUN: "not run", CANNOT_EXIST_HERE: "cannot exist",
}
PLANNING_SYMBOLS = {WORKS_AS_REPORTED: "✓", WORKAROUND: "W", PRECISION_FALLBACK: "↓", FAILS_AS_REPORTED: "✗",
                    **{b.name: b.planning_symbol for b in _BASIS_CELLS}, PRECISION_UNVERIFIED: "◌", NOT_RUN: "–",
                    CANNOT_EXIST_HERE: "⊘"}
PLANNING_MEANINGS = {
    WORKS_AS_REPORTED: "the failing form as upstream reported it ran within tolerance with every expected node in the "
                       "precision asked",
    WORKAROUND: "the failing form does not work here, the named workaround variant does",
    PRECISION_FALLBACK: "it runs within tolerance, but the named expected nodes ran wider than asked (the asked -> got "
                        "precisions are shown where they are not INT8 -> a float)",
    FAILS_AS_REPORTED: "the backend refused it, crashed, timed out or its output is outside tolerance (category and "
                       "node)",
    **{b.name: b.planning_meaning for b in _BASIS_CELLS},
    PRECISION_UNVERIFIED: "it ran within tolerance, but the backend did not show the precision of an expected node, "
                          "and no upstream claim either way: no verdict (never a pass)",
    NOT_RUN: "nothing known: no record, claim, fact or prediction (or only infra-errors: the harness failed, not the "
             "pattern)",
    CANNOT_EXIST_HERE: "the target, or this pattern's API on it, does not exist",
}
# Each table in its vocabulary's order; a word without an entry fails here, at import.
OUTCOME_COLOURS = {o: OUTCOME_COLOURS[o] for o in OUTCOMES}
PLANNING_COLOURS = {kind: PLANNING_COLOURS[kind] for kind in PLANNING_VERDICTS}
PLANNING_LABELS = {kind: PLANNING_LABELS[kind] for kind in PLANNING_VERDICTS}
PLANNING_SYMBOLS = {kind: PLANNING_SYMBOLS[kind] for kind in PLANNING_VERDICTS}
PLANNING_MEANINGS = {kind: PLANNING_MEANINGS[kind] for kind in PLANNING_VERDICTS}
SCAN_VERDICT_SYMBOLS = {v: SCAN_VERDICT_SYMBOLS[v] for v in SCAN_VERDICTS}
SCAN_VERDICT_COLOURS = {v: SCAN_VERDICT_COLOURS[v] for v in SCAN_VERDICTS}
SCAN_VERDICT_MEANINGS = {v: SCAN_VERDICT_MEANINGS[v] for v in SCAN_VERDICTS}
