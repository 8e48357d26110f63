"""Lenient decoding of the fixed-size and counted strings that game formats store."""

from __future__ import annotations


def decode_text(raw: bytes) -> str:
    """Decode as UTF-8, then cp1252, then Latin-1 (which cannot fail). Never raises."""
    for encoding in ("utf-8", "cp1252"):
        try:
            return raw.decode(encoding)
        except UnicodeDecodeError:
            pass
    return raw.decode("latin-1")


def fixed_string(raw: bytes) -> str:
    """A C ``char[N]`` field: cut at the first zero byte, or use the whole field when there is none."""
    end = raw.find(b"\0")
    return decode_text(raw if end < 0 else raw[:end])


def encode_text(text: str) -> bytes:
    """The bytes :func:`decode_text` reads back as ``text``: ASCII as is, else Windows-1252 (MilkShape's own
    code page) when it holds every character and the bytes are not read as UTF-8 instead, else UTF-8."""
    if text.isascii():
        return text.encode("ascii")
    try:
        raw = text.encode("cp1252")
    except UnicodeEncodeError:
        return text.encode("utf-8")
    return raw if decode_text(raw) == text else text.encode("utf-8")
