"""What is known of a target before anything runs on it:

* :mod:`harness.targets.facts`: the facts of each matrix target (what its TensorRT release and its GPU can and cannot
  do, each with its source and how it was established), and which fact stops a form that needs something;
* :mod:`harness.targets.ranges`: a claim that holds over a range of versions, platforms or GPU architectures
  (a :class:`harness.judgement.Claim` with its :class:`~harness.targets.ranges.Scope`), which targets it
  covers, and which evidence decides when several speak about one target;
* :mod:`harness.targets.declared`: what the case index declares for the verdict engine (range claims, needs, not
  applicable), read for the evidence layer's producers (:mod:`harness.evidence`).
"""
