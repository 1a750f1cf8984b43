"""A trtexec or Polygraphy command line (one or more invocations, a trailing backslash joining lines): the tool, its
subcommand, model and flags, and the precision the flags ask for."""
from __future__ import annotations

import re
import shlex
from pathlib import Path
from typing import Any

from harness.diagnosis.kinds import DAMAGED, READ, Around, Content, FileKind, Identified, KindFacts
from harness.diagnosis.sentences import applies_sentence, command_sentence, library_sentences
from harness.judgement import PRECISION_ORDER  # narrowest first: which of several asked to name

NAME = "command-line"
# One invocation: an optional "$ " prompt and VAR=value prefixes, then trtexec or polygraphy (a path, .exe, or
# `python -m polygraphy`).
_COMMAND = re.compile(r"^\s*(?:\$\s+)?(?:\w+=\S*\s+)*(?:\S*[/\\])?(?:(?P<trtexec>trtexec)(?:\.exe)?"
                      r"|(?:python3?\s+-m\s+)?(?P<polygraphy>polygraphy))(?:\s|$)")
_PRECISION_FLAGS = {"--int8": "int8", "--best": "int8", "--fp8": "fp8", "--fp16": "fp16", "--bf16": "bf16"}


def command_lines(text: str) -> list[str]:
    """The non-blank, non-comment lines of ``text``, a trailing backslash joining a line to the next."""
    joined = re.sub(r"\\\r?\n", " ", text)
    return [line.strip() for line in joined.splitlines() if line.strip() and not line.lstrip().startswith("#")]


def command_tool(line: str) -> str | None:
    """"trtexec" or "polygraphy" when ``line`` invokes that tool, else None."""
    invocation = _COMMAND.match(line)
    if invocation is None:
        return None
    return "trtexec" if invocation.group("trtexec") else "polygraphy"


def command_facts(line: str) -> dict[str, Any]:
    """Tool, subcommand, model and flags of one trtexec or Polygraphy invocation."""
    try:
        arguments = shlex.split(line, posix=True)
    except ValueError:  # a quote the paste cut off: the words as they stand
        arguments = line.split()
    tool = command_tool(line) or "trtexec"
    start = next((i for i, a in enumerate(arguments) if Path(a).name.removesuffix(".exe") == tool), -1)
    rest = arguments[start + 1:]
    subcommand = rest[0] if tool == "polygraphy" and rest and not rest[0].startswith("-") else None
    flags = [a.split("=", 1)[0] for a in rest if a.startswith("--")]
    models = [a.split("=", 1)[1] for a in rest if a.startswith("--onnx=")]
    models += [a for a in rest if not a.startswith("-") and a.endswith(".onnx")]
    asked = [_PRECISION_FLAGS[flag] for flag in flags if flag in _PRECISION_FLAGS]
    requested = min(asked, key=PRECISION_ORDER.index) if asked else None
    return {"tool": tool, "subcommand": subcommand, "command": line, "flags": list(dict.fromkeys(flags)),
            "models": models, "requested_precision": requested}


class CommandLine(FileKind):
    name = NAME
    text = "a trtexec or Polygraphy command line"
    priority = 35

    def detect(self, content: Content) -> bool:
        lines = command_lines(content.pasted)
        return bool(lines) and all(command_tool(line) for line in lines)

    def read(self, content: Content) -> Identified:
        text = content.pasted
        lines = command_lines(text)
        for line in lines:
            try:
                shlex.split(line)
            except ValueError as err:
                return Identified(content.path, NAME, DAMAGED, f"a {command_tool(line)} command line that cannot be "
                                  f"split into arguments ({err}): {line[:120]!r}", text=text)
        return Identified(content.path, NAME, READ, text=text, content=lines)

    def facts(self, item: Identified, around: Around) -> KindFacts:
        commands = [command_facts(line) for line in command_lines(item.text or "")]
        return KindFacts({"commands": commands}, commands=commands)

    def sentences(self, f: Any) -> list[str]:
        return [command_sentence(command) for command in f.facts["commands"]] + library_sentences(f) + [
            applies_sentence(f)]


KIND = CommandLine()
