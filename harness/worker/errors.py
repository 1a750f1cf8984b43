"""The error of a user's bad input, kept apart from the harness's own bugs.

Every error that means "the file, field or argument you gave is wrong" derives from :class:`InputError`; the command
line ends it with one line naming the input and exit status 2 (usage). Anything else that reaches the command line,
a plain ``ValueError`` or a record invariant included, is a bug of the harness and ends as an internal error
(exit status 3). Standard library only: this module runs inside worker containers.
"""
from __future__ import annotations


class InputError(ValueError):
    """The user's input (a file, a field of it, an argument) is not what the harness reads; the message names it."""


class RecordError(ValueError):
    """A record that does not satisfy record.schema.json (a damaged line of a results file the tool wrote); the
    message names the field. The command line ends it with exit status 3."""
