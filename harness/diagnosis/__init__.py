"""``trt-matrix diagnose``: what a user's file is (from its content), the facts it holds, and what the case
library knows about them.

identify (the kind of a file) -> its kind's facts (what it says) -> library (patterns, evidence per target, caches,
removed flags, the model's findings) -> render (text, JSON), each file in its kind's sentences. Every kind is one module
of ``kinds/`` (detect, read, facts, sentences). ``diagnose.diagnose_files`` runs the steps.
"""
