"""Judgement: what every outcome, claim and verdict means, decided once for every page and command (the scan, the
planning view, the matrix, history, diff, the nightly, ``run --fail-on``, ``--fix`` and ``diagnose``), and the one
engine that turns evidence into a verdict. Standard library only and no import of the rest of the project: the worker
imports its words and the precision order inside containers (harness/orchestration/docker/containers.py puts the
package in every worker container).

- :mod:`~harness.judgement.vocabulary`: every word (outcomes, answers, bases, the scan's and the planning view's
  verdicts), their orders and groups, the precision order, the gates and their defaults.
- :mod:`~harness.judgement.meaning`: what each outcome and each claim means; which claim holds; agreement.
- :mod:`~harness.judgement.claims`: :class:`~harness.judgement.claims.Claim`, the one claim type (for one target, or
  over a range of targets with a scope), as cases declare it and index.json carries it.
- :mod:`~harness.judgement.bases`: the ordered table of evidence bases (not applicable, a target's fact, observed,
  claimed for the target, claimed over a range, predicted from TensorRT's rules), their precedence documented there.
- :mod:`~harness.judgement.engine`: :func:`judge` (evidence for one form on one target -> verdict, basis, the deciding
  evidence), :func:`planning_verdict` (the planning cell, a projection of judgements), the gates and orders.
- :mod:`~harness.judgement.presentation`: symbols, labels, meanings and colours that pages and the README show.
Reading claims from a cases directory's ``index.json`` is :mod:`harness.store.claims`'s (it reports bad input as the
CLI's usage errors).

Timeouts, decided once: a ``timeout`` is evidence about the pattern and a failure for a deployment. A minimal
reproducer that builds and runs in seconds elsewhere and is still running at the cell's time limit would hang a
deployment's build too, so the scan says ``blocked``, the planning view ``fails`` and the record's claim check
judges it. The limit is the harness's, though, and a loaded host can reach it: a timeout is run again every night
and never counted as a regression or a progression (history and diff list it as not compared).

Fallback, decided once for every precision: a cell asks each expected node for a precision (INT8, FP8, FP4, FP16,
BF16: Q/DQ nodes, a builder flag, the graph's own types); a node that ran in another precision and not a narrower
one (:data:`~harness.judgement.vocabulary.PRECISION_BITS`) fell back, so an FP8 request built FP32 without a word
(P15, P18) is a ``fallback`` like an INT8 one, its asked/got pairs in the record.

Unverified, decided once: a cell that ran within tolerance while the backend did not show the precision of an
expected node is ``unverified``. It ran (``ran``), but it answers nothing about the pattern (``answer`` None, no
severity, not evidence, no claim is judged against it): a pass needs every expected node seen in its precision, and
a node not seen is not a fallback either. Nothing broke, so it is not ``broken`` (a run with one exits 0), and the
backend will hide the same node tomorrow, so it is not ``retried``; a move to or from it is no regression
(``compared`` False). The scan and the planning view say ``unverified`` for it where nothing decisive is known.

Adding a kind of evidence (a basis: a target's fact, a claim over a range of versions, a finding not applicable to a
backend, a prediction from TensorRT's documented rules) is one entry of :data:`~harness.judgement.bases.BASES`, placed
at its precedence (the engine tries the bases of each scope in that order, observation first):

1. its word in :mod:`~harness.judgement.vocabulary`, beside ``OBSERVED`` and ``CLAIMED`` (``PREDICTED =
   "rule-predicted"``: a word no other vocabulary of the project spells, or the guard flags its homonyms);
2. its ``Basis`` entry: ``answers`` (what each word of its evidence answers: ``{LIKELY_WORD: WORKS, ...}``, None for a
   word that answers nothing, such as a finding not applicable here), ``verdicts`` (the scan verdicts it may give:
   a prediction ``(FALLBACK, LIKELY)``, never ``BLOCKED``; the engine raises on any other), ``label``, ``said`` and
   ``tag`` (how the scan page, a command's text and an evidence list name it: "predicted from TensorRT's rules, not
   observed"), ``hatched`` (pages hatch a verdict on it), and its planning cell's ``planning_symbol``,
   ``planning_label``, ``planning_meaning`` and ``planning_colours`` (a basis without them would be projected like
   observation into works/fails: only observation may be); ``across_scopes`` when its evidence is about the target
   rather than one form (tried for every scope at its place: not applicable, fact, predicted) and ``headline`` False
   when a finding judged on it is only listed on the target (not applicable).

From the table follow: the engine's tiers (:data:`~harness.judgement.engine.TIERS`); the planning view's verdicts
(the basis's cell after ``claimed``, before ``unverified``) with their labels, symbols, meanings and colours; the
hatching, labels and legends of the scan page and the report (the templates loop over ``J.HATCHED`` and read
``J.BASIS``); the scan's reasons (``<tag> (<strength>), not observed here: ...``); ``--fix``'s ranking
(:func:`~harness.judgement.engine.fix_rank`: verified, then the bases by precedence); the text of ``scan`` and
``diagnose`` (``BASIS[...].said``); the words report.js reads and the guard's words. What the new kind needs beyond
the table is its producer: one module in harness/evidence/producers/ and its entry in
:data:`harness.evidence.registry.PRODUCERS` (:mod:`harness.evidence`'s docstring); the scan, ``diagnose``, ``--fix``
and the planning view all gather evidence through :func:`harness.evidence.evidence_for`. The README's verdict tables
gain their rows (a test compares them).

A new verdict word is its word in the vocabulary, placed in its order (``SCAN_VERDICTS``, worst first) and in its
groups (``SCAN_GOOD``, ``SCAN_FAILING``, ``SCAN_WORKAROUND_VERDICTS``, ``SCAN_FAIL_ON_LEVELS`` if ``--fail-on`` may
stop at it), plus its symbol, colour and meaning in :mod:`~harness.judgement.presentation` (one missing fails at
import) and its README row. Tried on a scratch branch: 2 files of code (vocabulary.py, presentation.py), plus the
README row and the test that pins the order.
"""
from harness.judgement.vocabulary import *  # noqa: F401,F403
from harness.judgement.meaning import *  # noqa: F401,F403
from harness.judgement.claims import *  # noqa: F401,F403
from harness.judgement.bases import *  # noqa: F401,F403
from harness.judgement.engine import *  # noqa: F401,F403
from harness.judgement.presentation import *  # noqa: F401,F403
