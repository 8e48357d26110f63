"""Case-insensitive file lookup for game content: files name each other with Windows paths in any letter case.
Used by the readers (Source companions, includes) and the scene layer (textures). No ``bpy``."""

from __future__ import annotations

import os
from functools import lru_cache


@lru_cache(maxsize=256)
def listing(folder: str) -> dict[str, str]:
    try:
        return {name.lower(): name for name in os.listdir(folder)}
    except OSError:
        return {}


def resolve(base: str, relative: str) -> str | None:
    """``relative`` (``\\`` or ``/`` separated, any case) under ``base`` if such a file exists, else None."""
    current = base
    for part in relative.replace("\\", "/").split("/"):
        if part in ("", "."):
            continue
        if part == "..":
            current = os.path.dirname(current)
            continue
        exact = os.path.join(current, part)
        if os.path.exists(exact):
            current = exact
            continue
        found = listing(current).get(part.lower())
        if found is None:
            return None
        current = os.path.join(current, found)
    return current if os.path.isfile(current) else None


def game_root(path: str) -> str | None:
    """The folder holding ``models/`` that ``path`` sits under (a game or mod folder), or None."""
    folder = os.path.dirname(os.path.abspath(path))
    while True:
        if os.path.basename(folder).lower() == "models":
            return os.path.dirname(folder)
        parent = os.path.dirname(folder)
        if parent == folder:
            return None
        folder = parent


def clear_cache() -> None:
    listing.cache_clear()
