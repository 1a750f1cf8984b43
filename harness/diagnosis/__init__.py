"""``python -m harness diagnose``: what a user's file is (from its content), the facts it holds, and what the case
library knows about them.

identify (the kind of a file) -> facts (what it says) -> library (patterns, evidence per target, caches, removed
flags, the model's findings) -> render (text, JSON). ``diagnose.diagnose_files`` runs the steps.
"""
