"""Find texture files the way artists expect, on any OS: game files name them with Windows paths, odd cases
and folders that moved. No ``bpy``.

Order: the path as written (``\\`` → ``/``), relative to the model's folder (or absolute), matched
case-insensitively; then the bare file name in the model's folder; then in ``Textures/`` beside it.
"""

from __future__ import annotations

import os

from ..paths import clear_cache, resolve


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
        found = resolve(model_dir, path)
        if found:
            return found
    name = parts[-1]
    if not name:
        return None
    for folder in ("", *extra_dirs):
        found = resolve(model_dir, f"{folder}/{name}" if folder else name)
        if found:
            return found
    return None


__all__ = ["clear_cache", "find_texture"]
