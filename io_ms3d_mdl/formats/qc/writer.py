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

import re
from collections.abc import Iterator
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


class QcWriter:
    def __init__(self) -> None:
        self.lines: list[str] = []
        self.depth = 0
        self.non_finite = 0

    def _tokens(self, tokens: tuple) -> str:
        """The first token, when a plain str, is the command or option keyword and written bare."""
        out = []
        if tokens and type(tokens[0]) is str:
            out.append(tokens[0])
            tokens = tokens[1:]
        for token in tokens:
            if isinstance(token, (float, np.floating)) and not np.isfinite(token):
                self.non_finite += 1
            out.append(qc_token(token))
        return " ".join(out)

    def line(self, *tokens: object) -> None:
        self.lines.append("\t" * self.depth + self._tokens(tokens))

    command = line

    def comment(self, text: str) -> None:
        for part in text.splitlines() or [""]:
            self.lines.append("\t" * self.depth + "// " + part)

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
        return "\n".join(self.lines) + "\n"

    def encode(self) -> bytes:
        return self.text().encode("utf-8")
