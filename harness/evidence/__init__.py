"""Evidence: every piece of what is known about a library form on a target, gathered in one place for every page
and command. :func:`evidence_for` (form, target, sources) is what the scan (per finding and per workaround),
``diagnose`` and ``--fix`` (through the scan's :func:`harness.scan.prediction.predict`) and the planning view (per
variant and target) call, so the scan and the planning view read the same evidence by construction; the verdict it
gives is the engine's (:func:`harness.judgement.judge`), its words are each page's.

- :mod:`~harness.evidence.model`: :class:`Evidence` (basis, scope, strength, source, conditions, what it says, for
  which form on which target, and the item it was read from), :class:`Form` (a variant of a case as index.json
  declares it) and :class:`Sources` (observed records, the user's own layers, a prediction, whether the model has
  Q/DQ).
- :mod:`~harness.evidence.producers`: one module per basis, each ``produce(form, target, sources, scope)``:
  ``not_applicable`` (the case's word), ``target_fact`` (a fact of the target that stops the form), ``observed``
  (records of this harness), ``claimed`` (upstream, for the target), ``range_claimed`` (upstream, over a range of
  versions), ``predicted`` (from TensorRT's documented rules).
- :mod:`~harness.evidence.registry`: :data:`~harness.evidence.registry.PRODUCERS`, one entry per basis, and
  :func:`evidence_for`.
- :mod:`~harness.evidence.observations`: reading observed records (``--results``: results files, merged, run and
  history directories) into :class:`~harness.evidence.observations.Observations`.

Adding a basis of evidence (the parser's facts per version, say) is one producer module in ``producers/`` and one
entry of ``PRODUCERS`` (its tests beside them in tests/harness/evidence/): the scan, ``diagnose``, ``--fix`` and
the planning view then all gather it. How the engine judges it (its word, its precedence, what its words answer, how
pages name it) is its entry in :data:`harness.judgement.BASES` (that package's docstring); a test fails while a
basis of that table has no producer here, or a producer names a basis the table lacks.

A producer returns pieces with ``kind`` its basis and ``scope`` the one it is asked for, the fields the engine and
the pages read filled (``outcome`` a word its basis answers, ``source``, ``strength``, ``said``: what it rests on
in words, ``conditions``: where it holds) and ``item`` the thing it was read from. It reads the form's declarations
(:class:`Form`) and ``sources`` only; a basis about the target rather than one form (``across_scopes`` in the
table) is asked for the form in question only, never for the forms standing in for it.

Layers: this package sits above :mod:`harness.store`, :mod:`harness.targets`, :mod:`harness.matrix` and
:mod:`harness.judgement`, and below the scan, diagnosis and reports; it imports none of those, nor the case library
(the scan makes a case's forms from its index.json entries, the planning view from index.json).
"""
from harness.evidence.model import Evidence, Form, Sources
from harness.evidence.observations import Observation, Observations, ObservationsError, read_observations
from harness.evidence.registry import PRODUCERS, Producer, evidence_for

__all__ = ["Evidence", "Form", "Sources", "Observation", "Observations", "ObservationsError", "read_observations",
           "PRODUCERS", "Producer", "evidence_for"]
