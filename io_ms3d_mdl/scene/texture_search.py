"""Find texture files the way artists expect, on any OS: game files name them with Windows paths, odd cases
and folders that moved. No ``bpy``.

Order: the path as written (``\\`` → ``/``), relative to the model's folder (or absolute), matched
case-insensitively; then the bare file name in the model's folder; then in ``Textures/`` beside it.
"""

from __future__ import annotations

import os
from functools import lru_cache


@lru_cache(maxsize=256)
def _listing(folder: str) -> dict[str, str]:
    try:
        return {name.lower(): name for name in os.listdir(folder)}
    except OSError:
        return {}


def _resolve_case_insensitive(base: str, parts: list[str]) -> str | None:
    current = base
    for part in parts:
        if part in ("", "."):
            continue
        if part == "..":
            current = os.path.dirname(current)
            continue
        exact = os.path.join(current, part)
        if os.path.exists(exact):
            current = exact
            continue
        found = _listing(current).get(part.lower())
        if found is None:
            return None
        current = os.path.join(current, found)
    return current if os.path.isfile(current) else None


def find_texture(raw_path: str, model_dir: str, extra_dirs: tuple[str, ...] = ("Textures", "textures")) -> str | None:
    """Return an existing file for ``raw_path`` or None. ``raw_path`` may be absolute, relative, ``\\``-separated."""
    path = raw_path.strip().replace("\\", "/")
    if not path:
        return None
    parts = path.split("/")
    is_drive = len(parts[0]) == 2 and parts[0][1] == ":"
    if path.startswith("/") or is_drive:
        if os.path.isfile(path):
            return path
    else:
        found = _resolve_case_insensitive(model_dir, parts)
        if found:
            return found
    name = parts[-1]
    if not name:
        return None
    for folder in ("", *extra_dirs):
        found = _resolve_case_insensitive(model_dir, [folder, name] if folder else [name])
        if found:
            return found
    return None


def clear_cache() -> None:
    """Forget folder listings (call between imports so new files are seen)."""
    _listing.cache_clear()
