"""The evidence bases: how a verdict is known, in precedence order, one entry each (see the package docstring for
how one is added). Standard library only."""
from __future__ import annotations

import dataclasses
from typing import Mapping, Optional, Tuple

from harness.judgement.meaning import CLAIM_ANSWERS, MEANINGS
from harness.judgement.vocabulary import (
    BLOCKED, CLAIMED, FALLBACK, LIKELY, OBSERVED, OBSERVED_PLANNING_VERDICTS, UNAVAILABLE, UNDECIDED_PLANNING_VERDICTS,
    VERIFIED,
)


@dataclasses.dataclass(frozen=True)
class Basis:
    """One basis of evidence: what its evidence's words answer, the scan verdicts it may give, and how pages show
    a verdict resting on it."""

    name: str  # the word in scan.json (``basis``, an evidence's ``kind``) and the CSS class of pages
    answers: Mapping[str, Optional[str]]  # its evidence's outcome word -> the answer (vocabulary.ANSWERS) or None
    verdicts: Tuple[str, ...]  # the scan verdicts it may give (anything else is a bug: the engine raises)
    label: str  # a verdict on it, on the scan page: "observed here"
    said: str  # a verdict on it, in a command's text: "observed here"
    tag: str  # one piece of its evidence, in an evidence list: "observed"
    hatched: bool  # pages draw a verdict on it hatched: not an observation of this project
    # The planning view: None where the cell is projected from the observed verdict (works, workaround, fallback,
    # fails: observation only), else the cell is this basis, with this symbol, label, meaning and colours.
    planning_symbol: Optional[str] = None
    planning_label: Optional[str] = None
    planning_meaning: Optional[str] = None
    planning_colours: Optional[Tuple[str, str]] = None  # line and fill of its cells (hatched cells show the fill)


BASES = (  # precedence order: observation first
    Basis(OBSERVED, answers={o: m.answer for o, m in MEANINGS.items()},
          verdicts=(BLOCKED, FALLBACK, UNAVAILABLE, LIKELY, VERIFIED),
          label="observed here", said="observed here", tag="observed", hatched=False),
    Basis(CLAIMED, answers=CLAIM_ANSWERS, verdicts=(BLOCKED, FALLBACK, LIKELY),
          label="claimed upstream, not run here", said="claimed upstream", tag="claimed upstream", hatched=True,
          planning_symbol="?", planning_label="claimed upstream only",
          planning_meaning="not run here: only what an upstream issue or write-up reported (never an observation)",
          planning_colours=("#3a4150", "#ffffff")),
)
BASIS = {b.name: b for b in BASES}
HATCHED = tuple(b.name for b in BASES if b.hatched)
# The planning view's verdicts, best first: what observation gives, then a cell per other basis, then no verdict.
PLANNING_BASES = tuple(b.name for b in BASES if b.planning_label)
PLANNING_VERDICTS = (*OBSERVED_PLANNING_VERDICTS, *PLANNING_BASES, *UNDECIDED_PLANNING_VERDICTS)
