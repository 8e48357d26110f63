"""Valve material files (``.vmt``): KeyValues text parsed into a shader name and lower-cased parameters.

Lenient the way the engine is: quoted or bare tokens, ``//`` comments, ``[$X360]``-style conditions (ignored, the
parameter kept), keys compared case-insensitively, and ``patch`` materials (``include`` another VMT, then
``insert``/``replace`` parameters) resolved through a caller-supplied lookup with a depth bound.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass, field

from ...errors import FormatError
from ..text import decode_text

MAX_PATCH_DEPTH = 8
# Backslashes are ordinary characters (paths use them), as in Valve's own KeyValues reader.
_TOKEN = re.compile(r'"([^"]*)"|(\{|\})|(//[^\n]*)|(\[[^\]\n]*\])|([^\s{}"]+)')


@dataclass
class Vmt:
    shader: str  # lower-cased, e.g. "vertexlitgeneric"
    params: dict[str, str | dict] = field(default_factory=dict)  # "$basetexture" -> "models/x/y"

    def text(self, key: str) -> str | None:
        value = self.params.get(key.lower())
        return value if isinstance(value, str) else None

    def number(self, key: str, default: float | None = None) -> float | None:
        value = self.text(key)
        if value is None:
            return default
        try:
            number = float(value.strip().split()[0].strip("[]{}"))
        except (ValueError, IndexError):
            return default
        return number if math.isfinite(number) else default  # "nan" and "1e999" parse, but mean nothing

    def flag(self, key: str) -> bool:
        return bool(self.number(key, 0.0))

    def color(self, key: str) -> tuple[float, float, float] | None:
        """``"[r g b]"`` (0..1 floats) or ``"{r g b}"`` (0..255 ints), or a single number for grey."""
        value = self.text(key)
        if value is None:
            return None
        braces = value.strip().startswith("{")
        try:
            parts = [float(p) for p in value.strip().strip("[]{}").split()]
        except ValueError:
            return None
        if len(parts) == 1:
            parts = parts * 3
        if len(parts) < 3 or not all(math.isfinite(p) for p in parts[:3]):
            return None
        scale = 255.0 if braces else 1.0
        return (parts[0] / scale, parts[1] / scale, parts[2] / scale)


def parse_keyvalues(text: str, path: str | None = None) -> tuple[str, dict]:
    """The first root key and its block, with keys lower-cased (the last of repeated keys wins)."""
    tokens = []
    for match in _TOKEN.finditer(text):
        quoted, brace, comment, condition, bare = match.groups()
        if comment is not None or condition is not None:
            continue
        tokens.append(("brace", brace) if brace else ("text", quoted if quoted is not None else bare))
    position = 0

    def block() -> dict:
        nonlocal position
        out: dict = {}
        while position < len(tokens):
            kind, value = tokens[position]
            if kind == "brace":
                position += 1
                if value == "}":
                    return out
                continue  # a stray "{" is skipped
            key = value.lower()
            position += 1
            if position >= len(tokens):
                break
            kind, value = tokens[position]
            position += 1
            if kind == "brace" and value == "{":
                out[key] = block()
            elif kind == "text":
                out[key] = value
        return out

    if not tokens or tokens[0][0] != "text":
        raise FormatError(path, 0, "not a material: expected a shader name")
    shader = tokens[0][1].lower()
    position = 1
    while position < len(tokens) and tokens[position] != ("brace", "{"):
        position += 1
    position += 1
    return shader, block()


def parse_vmt(
    data: bytes, path: str | None = None, lookup: Callable[[str], bytes | None] | None = None, depth: int = 0
) -> Vmt:
    """``lookup(name)`` returns another VMT's bytes (for ``patch``), or None when it cannot be found."""
    shader, params = parse_keyvalues(decode_text(data.lstrip(b"\xef\xbb\xbf")), path)
    if shader != "patch":
        return Vmt(shader, params)
    include = params.get("include")
    if not isinstance(include, str) or lookup is None or depth >= MAX_PATCH_DEPTH:
        return Vmt("patch", params)
    base_data = lookup(include)
    if base_data is None:
        return Vmt("patch", params)
    base = parse_vmt(base_data, include, lookup, depth + 1)
    for section in ("insert", "replace"):
        extra = params.get(section)
        if isinstance(extra, dict):
            base.params.update(extra)
    return base
