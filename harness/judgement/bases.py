"""The evidence bases: how a verdict is known, in precedence order, one entry each (see the package docstring for
how one is added). Standard library only."""
from __future__ import annotations

from typing import Mapping, NamedTuple, Optional, Tuple

from harness.judgement.meaning import CLAIM_ANSWERS, MEANINGS
from harness.judgement.vocabulary import (
    BLOCKED, CANNOT_EXIST, CLAIMED, CLEAR, DOES_NOT_CONCERN, FACT, FAIL, FAILS, FALLBACK, FALLS_BACK, LIKELY,
    NOT_APPLICABLE, OBSERVED, OBSERVED_PLANNING_VERDICTS, PARSER, PASS, PREDICTED, RANGE_CLAIMED, UNAVAILABLE,
    UNDECIDED_PLANNING_VERDICTS, UNVERIFIED, VERIFIED, WORKS,
)


class Basis(NamedTuple):
    """One basis of evidence: what its evidence's words answer, the scan verdicts it may give, and how pages show
    a verdict resting on it."""

    name: str  # the word in scan.json (``basis``, an evidence's ``kind``) and the CSS class of pages
    answers: Mapping[str, Optional[str]]  # its evidence's outcome word -> the answer (vocabulary.ANSWERS) or None
    verdicts: Tuple[str, ...]  # the scan verdicts it may give (anything else is a bug: the engine raises)
    label: str  # a verdict on it, on the scan page: "observed here"
    said: str  # a verdict on it, in a command's text: "observed here"
    tag: str  # one piece of its evidence, in an evidence list: "observed"
    hatched: bool  # pages draw a verdict on it hatched: not an observation of this project
    # Evidence about the target itself (its backend, its release's facts, TensorRT's rules), not about one form of
    # the pattern: tried at its place in BASES for every scope at once (engine.TIERS), not scope by scope.
    across_scopes: bool = False
    headline: bool = True  # False: a finding judged on it is listed on the target, never the model's verdict there
    # The planning view: None where the cell is projected from the observed verdict (works, workaround, fallback,
    # fails: observation only), else the cell is this basis, with this symbol, label, meaning and colours.
    planning_symbol: Optional[str] = None
    planning_label: Optional[str] = None
    planning_meaning: Optional[str] = None
    planning_colours: Optional[Tuple[str, str]] = None  # line and fill of its cells (hatched cells show the fill)


# Precedence, first that answers wins (one documented order, tests/harness/judgement/test_engine.py pins it):
# 0. what the ONNX parser of the target's TensorRT version refuses in the model, as its documents say (before any
#    pattern: a model the parser refuses is never built there); where they are silent it answers nothing, and the
#    scan says unverified rather than a verdict that assumes the parser takes the model;
# 1. not applicable: the case says the target's backend has no analogue (nothing about it can decide otherwise);
# 2. a fact of the target that stops the form (TensorRT 11 has no calibrator: no observation can exist there);
# 3-5. scope by scope, closest to the user's layer first: observed here, claimed for exactly that target, claimed over
#      a range of versions (a claim for the target, a narrower or newer range claim, or an observation overrides it);
# 6. predicted from TensorRT's documented rules for the nodes at the finding's place (never a failure of the build);
# then nothing: unverified.
BASES = (
    Basis(PARSER, answers={FAIL: FAILS, UNVERIFIED: None}, verdicts=(BLOCKED,),
          label="refused by the target's ONNX parser, as documented, not run here",
          said="from the ONNX parser's documented facts", tag="parser fact", hatched=True, across_scopes=True),
    # (no planning cell: the planning view judges the library's forms, and the parser's facts are read from a user's
    # model only)
    Basis(NOT_APPLICABLE, answers={NOT_APPLICABLE: DOES_NOT_CONCERN}, verdicts=(CLEAR,),
          label="not applicable to this backend", said="not applicable here", tag="not applicable", hatched=True,
          across_scopes=True, headline=False, planning_symbol="n/a", planning_label="not applicable",
          planning_meaning="the case says this backend has no analogue of the pattern (its reason is given)",
          planning_colours=("#6b7280", "#f7f7f8")),
    Basis(FACT, answers={FAIL: FAILS, UNAVAILABLE: CANNOT_EXIST}, verdicts=(BLOCKED, UNAVAILABLE),
          label="from the target's facts, not run here", said="from the target's facts", tag="fact of the target",
          hatched=True, across_scopes=True, planning_symbol="!", planning_label="stopped by a fact",
          planning_meaning="not run here: the target lacks what the form needs (the fact, its source and the remedy "
                           "are given), e.g. TensorRT 11 has no INT8 calibrator",
          planning_colours=("#8a1c1c", "#fbeaea")),
    Basis(OBSERVED, answers={o: m.answer for o, m in MEANINGS.items()},
          verdicts=(BLOCKED, FALLBACK, UNAVAILABLE, LIKELY, VERIFIED),
          label="observed here", said="observed here", tag="observed", hatched=False),
    Basis(CLAIMED, answers=CLAIM_ANSWERS, verdicts=(BLOCKED, FALLBACK, LIKELY),
          label="claimed upstream, not run here", said="claimed upstream", tag="claimed upstream", hatched=True,
          planning_symbol="?", planning_label="claimed upstream only",
          planning_meaning="not run here: only what an upstream issue or write-up reported (never an observation)",
          planning_colours=("#3a4150", "#ffffff")),
    Basis(RANGE_CLAIMED, answers=CLAIM_ANSWERS, verdicts=(BLOCKED, FALLBACK, LIKELY),
          label="claimed upstream over a range of versions, not run here", said="claimed over a range",
          tag="range claim", hatched=True, planning_symbol="?…", planning_label="claimed over a range",
          planning_meaning="not run here: upstream says it holds over a range of versions that covers this target "
                           "(the range and who says it are given; never an observation)",
          planning_colours=("#3a4150", "#f4f4ff")),
    Basis(PREDICTED, answers={PASS: WORKS, FALLBACK: FALLS_BACK}, verdicts=(FALLBACK, LIKELY),
          label="predicted from TensorRT's documented rules, not observed",
          said="predicted from TensorRT's documented rules, not observed", tag="predicted", hatched=True,
          across_scopes=True, planning_symbol="~", planning_label="predicted",
          planning_meaning="not run here: the engine TensorRT's documented rules predict (never a failure, never an "
                           "observation)", planning_colours=("#5b4b8a", "#f1eefa")),
)
BASIS = {b.name: b for b in BASES}
HEADLINE = tuple(b.name for b in BASES if b.headline)  # the bases a model's verdict on a target may rest on
HATCHED = tuple(b.name for b in BASES if b.hatched)
# The planning view's verdicts, best first: what observation gives, then a cell per other basis, then no verdict.
PLANNING_BASES = tuple(b.name for b in BASES if b.planning_label)
PLANNING_VERDICTS = (*OBSERVED_PLANNING_VERDICTS, *PLANNING_BASES, *UNDECIDED_PLANNING_VERDICTS)
