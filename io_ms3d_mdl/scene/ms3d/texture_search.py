"""Find texture files the way artists expect, on any OS, without leaving the import's roots. No ``bpy``.

Game files name textures with Windows paths, odd letter case and folders that moved. Order: the path as
written, relative to the model's folder (``..`` allowed while it stays under a root), matched case-insensitively;
then the bare file name in the model's folder, its ``Textures/``, and each other root and its ``textures/``.
An absolute path is honoured only when the user allowed it (``Confinement.allow_absolute``); otherwise only its
file name is looked for, so a file cannot make the import read (and embed) an image from anywhere on the disk.
"""

from __future__ import annotations

import os

from ...access import Confinement, clear_cache, current, is_absolute_name

EXTRA_DIRS = ("Textures", "textures")


def find_texture(raw_path: str, model_dir: str, confinement: Confinement | None = None) -> str | None:
    """Return an existing regular file for ``raw_path`` inside the roots, or None."""
    path = raw_path.strip().replace("\\", "/")
    if not path:
        return None
    confinement = confinement or current(os.path.join(model_dir, "model"))
    found = confinement.find_absolute(raw_path) if is_absolute_name(path) else confinement.find(model_dir, path)
    if found:
        return found
    name = path.rsplit("/", 1)[-1]
    if not name or name == "..":
        return None
    folders = [model_dir, *(os.path.join(model_dir, d) for d in EXTRA_DIRS)]
    for root in confinement.roots:
        folders += [root, os.path.join(root, "textures")]
    return confinement.find_first(folders, name)  # one index over the folders, not a listing of each per name


__all__ = ["clear_cache", "find_texture"]
