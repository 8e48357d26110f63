"""QC text as studiomdl's tokenizer reads it (the SDK's ``scriplib``): tokens split at whitespace; ``"..."`` is
one token (no escapes: a name cannot hold a double quote); ``//``, ``#`` and ``;`` start a line comment and
``/* */`` a block comment outside quotes; braces are tokens of their own.

Stable API:

``qc_token(value) -> str``
    A str is quoted when it is empty or holds whitespace, a quote, a brace, a parenthesis, ``;``, ``#``, ``$``,
    ``//``, ``/*``, a comma or any byte above ASCII (the tokenizer compares signed chars, so a UTF-8 byte would
    end a bare token); otherwise written bare. A ``Quoted`` str is always quoted (file names, by convention). An
    int is written as is, a float with the digits that read back as its float32 (``formats.float_text``; nan/inf
    become 0 and are counted in ``QcWriter.non_finite``). ``Raw`` text is written untouched (keywords, ``{``).
``QcWriter()``
    ``.line(*tokens)`` (a plain str first token is the keyword, written bare), ``.command("$name", *tokens)``
    (the same), ``.comment(text)``, ``.blank()``,
    ``with .block("$name", *tokens):`` (writes ``{`` ... ``}`` with the inside indented), ``.text()`` and
    ``.encode()`` (UTF-8: names as stored).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import numpy as np

from ..float_text import float_tokens

_BARE = re.compile(r"[A-Za-z0-9_.\-+/\\:!@%&*=<>?|'`~^\[\]]+")
_COMMENT = re.compile(r"//|/\*|\*/")


class Quoted(str):
    """A string always written in quotes."""


class Raw(str):
    """Text written exactly as given."""


def qc_name(name: str) -> str:
    """A name as a quoted token can hold it: a double quote becomes a single one, a line break a space."""
    return name.replace('"', "'").replace("\r", " ").replace("\n", " ")


def qc_token(value: object) -> str:
    if isinstance(value, Raw):
        return str(value)
    if isinstance(value, bool):
        return str(int(value))
    if isinstance(value, (int, np.integer)):
        return str(int(value))
    if isinstance(value, (float, np.floating)):
        return float_tokens(np.array([value]))[0][0]
    text = str(value)
    if isinstance(value, Quoted) or not _BARE.fullmatch(text) or _COMMENT.search(text):
        return f'"{qc_name(text)}"'
    return text


class _Pending:
    """A line whose numbers are formatted when the text is asked for: all of a QC's numbers in one pass."""

    __slots__ = ("indent", "tokens")

    def __init__(self, indent: str, tokens: tuple) -> None:
        self.indent, self.tokens = indent, tokens


_FLOATS = (float, np.floating)  # the tokens formatted as float32 numbers (a bool is an int, never one of these)


class QcWriter:
    """A QC's lines, formatted at the end. ``check(size)``, when given, sees the text's running size (an upper
    estimate) after each line, so a budget can stop a QC that shares one long name across a large table before
    its text is built (90,000 skin entries naming one 20 KB texture were a 371 MB string, 1.5 GB at peak)."""

    def __init__(self, check: Callable[[int], None] | None = None) -> None:
        self.lines: list[str | _Pending] = []
        self.depth = 0
        self.non_finite = 0
        self.size = 0  # bytes the text will take, at most (a number at 32, a name at 4 per character)
        self.check = check

    def _grow(self, amount: int) -> None:
        self.size += amount
        if self.check is not None:
            self.check(self.size)

    def line(self, *tokens: object) -> None:
        size = self.depth + 1
        for t in tokens:  # (one pass: a QC's lines hold thousands of tokens)
            if isinstance(t, str):
                size += 4 * len(t) + 3
            else:
                size += 32
                if isinstance(t, _FLOATS) and not math.isfinite(t):
                    self.non_finite += 1
        self.lines.append(_Pending("\t" * self.depth, tokens))
        self._grow(size)

    command = line

    def comment(self, text: str) -> None:
        for part in text.splitlines() or [""]:
            self.lines.append("\t" * self.depth + "// " + part)
        self._grow(4 * len(text) + 8)

    def blank(self) -> None:
        self.lines.append("")

    @contextmanager
    def block(self, *tokens: object) -> Iterator[QcWriter]:
        self.line(*tokens)
        self.lines.append("\t" * self.depth + "{")
        self.depth += 1
        try:
            yield self
        finally:
            self.depth -= 1
            self.lines.append("\t" * self.depth + "}")

    def text(self) -> str:
        numbers = [
            t for line in self.lines if isinstance(line, _Pending) for t in line.tokens if isinstance(t, _FLOATS)
        ]
        texts = iter(float_tokens(np.array(numbers, dtype=np.float64))[0].tolist() if numbers else ())
        out = []
        for line in self.lines:
            if isinstance(line, _Pending):  # a first token that is a plain str is the command or keyword: bare
                first = [line.tokens[0]] if line.tokens and type(line.tokens[0]) is str else []
                rest = line.tokens[len(first) :]
                line = line.indent + " ".join(
                    first + [next(texts) if isinstance(t, _FLOATS) else qc_token(t) for t in rest]
                )
            out.append(line)
        return "\n".join(out) + "\n"

    def encode(self) -> bytes:
        return self.text().encode("utf-8", "surrogateescape")  # (formats.stored_text: names as stored)
