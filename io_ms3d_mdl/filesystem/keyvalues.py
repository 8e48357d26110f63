"""Valve's KeyValues text (``gameinfo.txt``, ``libraryfolders.vdf``), read tolerantly and within bounds. No ``bpy``.

Keys and values are quoted or bare tokens, blocks are braces, ``//`` starts a comment. Backslashes are kept as
written (``"maps\\instances\\"`` is a path, not an escape), conditionals such as ``[$WIN32]`` are dropped, and
``#base``/``#include`` lines are ignored (they would name other files). A block is a list of (key, value) pairs in
file order, the value a string or another block: gameinfo's SearchPaths repeat keys and their order matters.
Unbalanced braces or a missing value end the block quietly, as the engine does; the size, token count and nesting
depth are bounded.
"""

from __future__ import annotations

import re

from ..errors import FormatError

MAX_BYTES = 4 << 20
MAX_TOKENS = 1_000_000
MAX_DEPTH = 64

Block = list[tuple[str, "str | Block"]]

_TOKEN = re.compile(r'//[^\n]*|"([^"\n]*)"?|([{}])|(\[[^\]\n]*\])|([^\s"{}\[\]]+)')


def tokens(text: str) -> list[tuple[str, str]]:
    """(kind, text) pairs: ``s`` a string, ``{``/``}`` braces, ``c`` a conditional; comments dropped."""
    out: list[tuple[str, str]] = []
    for match in _TOKEN.finditer(text):
        quoted, brace, condition, bare = match.groups()
        if quoted is not None:
            out.append(("s", quoted))
        elif brace:
            out.append((brace, brace))
        elif condition:
            out.append(("c", condition))
        elif bare is not None:
            out.append(("s", bare))
        if len(out) > MAX_TOKENS:
            raise FormatError(None, None, f"more than {MAX_TOKENS:,} KeyValues tokens")
    return out


def parse(data: bytes | str, path: str | None = None) -> Block:
    """The top-level block of a KeyValues text."""
    if isinstance(data, bytes):
        if len(data) > MAX_BYTES:
            raise FormatError(path, None, f"KeyValues text of {len(data):,} bytes; at most {MAX_BYTES:,} are read")
        data = data.decode("utf-8", "replace").lstrip("\ufeff")
    toks = tokens(data)
    pos = 0

    def block(depth: int) -> Block:
        nonlocal pos
        if depth > MAX_DEPTH:
            raise FormatError(path, None, f"KeyValues blocks nested more than {MAX_DEPTH} deep")
        out: Block = []
        while pos < len(toks):
            kind, text = toks[pos]
            pos += 1
            if kind == "}":
                return out
            if kind != "s":
                continue  # a stray brace or conditional
            if text.lower() in ("#base", "#include"):
                pos += 1  # and its file name
                continue
            if pos >= len(toks):
                break
            kind, value = toks[pos]
            pos += 1
            if kind == "{":
                out.append((text, block(depth + 1)))
            elif kind == "s":
                out.append((text, value))
            else:
                continue
            if pos < len(toks) and toks[pos][0] == "c":  # a conditional after the value
                pos += 1
        return out

    return block(0)


def first(block: Block, key: str) -> str | Block | None:
    """The first value under ``key`` (any case), or None."""
    key = key.lower()
    return next((value for k, value in block if k.lower() == key), None)
