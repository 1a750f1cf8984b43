"""The ways users paste TensorRT output into an issue thread, as functions of the text: each returns the text as the
thread would show it. Used by the tests of the pasted-fragment corpus (reference/pasted-fragments) to paste every
fragment again."""
import html


def lines_of(transform):
    return lambda text: "\n".join(transform(line) for line in text.splitlines()) + "\n"


def cut_mid_line(text: str) -> str:
    """The paste starts in the middle of its first non-blank line, as a selection dragged from mid-line does."""
    lines = text.splitlines()
    first = next((i for i, line in enumerate(lines) if line.strip()), None)
    if first is not None:
        lines[first] = lines[first][len(lines[first]) // 2:]
    return "\n".join(lines) + "\n"


# Pastes that leave every line's content as TensorRT wrote it: the readers must read them as the original.
REPASTES = {
    "crlf": lambda text: text.replace("\n", "\r\n"),
    "colour-codes": lines_of(lambda line: f"\x1b[0;31m{line}\x1b[0m" if line else line),
    "quoted": lines_of(lambda line: f"> {line}"),
    "quoted-twice": lines_of(lambda line: f"> > {line}"),
    "quoted-html-escaped": lines_of(lambda line: html.escape(f"> {line}", quote=False)),
    "html-escaped": lambda text: html.escape(text, quote=True),
    "fenced": lambda text: f"```text\n{text}```\n",
    "fenced-in-a-quote": lambda text: "".join(f"> {line}\n" for line in f"```\n{text}```".splitlines()),
    "elided": lambda text: f"...\n{text}[...]\n",
}
# Pastes that lose part of a line: what is left must still be read as TensorRT output by every reader alike.
CUT_PASTES = {"cut-mid-line": cut_mid_line}


def repasted(text: str) -> dict[str, str]:
    """``text`` pasted each of the usual ways, by name."""
    return {name: paste(text) for name, paste in {**REPASTES, **CUT_PASTES}.items()}
