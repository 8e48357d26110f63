"""Names written back with the very bytes the file stored them with.

Readers decode names leniently (``formats.text.decode_text``: UTF-8, else cp1252, else Latin-1), so "é" read from
``e9`` (a cp1252 file) and from ``c3 a9`` (a UTF-8 one) are the same str. A writer that must give the compiler the
stored bytes back gets, for a name stored in a single-byte code page, a str whose UTF-8 encoding with
``surrogateescape`` is exactly those bytes (:func:`stored_name`); every text writer encodes with
:func:`encode_stored`, so a plain str is written as UTF-8 and such a name as stored."""

from __future__ import annotations

from .text import decode_text


def encode_stored(text: str) -> bytes:
    return text.encode("utf-8", "surrogateescape")


def stored_name(name: str, data: bytes) -> str:
    """``name`` as the zero-terminated string ``data`` holds it: unchanged when ASCII or stored as UTF-8; else,
    when its single-byte form is what ``data`` holds, that form with its high bytes as surrogate escapes."""
    if name.isascii():
        return name
    utf8 = name.encode("utf-8", "surrogateescape")
    if b"\0" + utf8 + b"\0" in data or data.startswith(utf8 + b"\0"):
        return name
    for codec in ("cp1252", "latin-1"):
        try:
            single = name.encode(codec)
        except UnicodeEncodeError:
            continue
        if decode_text(single) == name and (single + b"\0") in data:
            return single.decode("utf-8", "surrogateescape")
    return name


def printable_name(name: str) -> str:
    """A stored name made safe for file names and messages: surrogate escapes read back as cp1252/Latin-1."""
    try:
        name.encode("utf-8")
        return name
    except UnicodeEncodeError:
        return decode_text(name.encode("utf-8", "surrogateescape"))
