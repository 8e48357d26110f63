"""A Bloodlines install as a game: it has no ``gameinfo.txt``. Its game folder (``Vampire``) holds the content loose
and in Troika packs ``pack000.vpk`` … (``troika_vpk``); the loose files come first, then the packs from the highest
number down (the Official Patch ships its updated files as ``pack102.vpk`` and ``pack103.vpk`` beside the game's
``pack000`` … ``pack010``). A folder is taken for such a game when it holds ``pack000.vpk``; a pack is mounted only
when it is a regular file that really lies (links followed) in where the folder really is. No ``bpy``.
"""

from __future__ import annotations

import os
import re

from .files import nearest_folder_holding, real_path

FIRST_PACK = "pack000.vpk"
PACK = re.compile(r"pack\d{3}\.vpk\Z", re.IGNORECASE)


def troika_game_folder(path: str) -> str | None:
    """The nearest folder at or above ``path``'s folder holding ``pack000.vpk`` (for a path inside a pack, from the
    pack's folder), or None."""
    return nearest_folder_holding(path, FIRST_PACK)


def troika_packs(folder: str) -> tuple[str, ...]:
    """The packs of the Bloodlines game at ``folder``, the highest number first; () when it holds none."""
    if not os.path.isfile(os.path.join(folder, FIRST_PACK)):
        return ()
    real_folder = real_path(folder)
    try:
        names = [n for n in os.listdir(folder) if PACK.match(n)]  # (three digits: at most 1,000 names kept)
    except OSError:
        return ()
    out = []
    for name in sorted(names, key=str.lower, reverse=True):
        path = os.path.join(folder, name)
        real = real_path(path)
        if (
            os.path.isfile(path)
            and real is not None
            and real_folder is not None
            and os.path.dirname(real) == real_folder
        ):
            out.append(path)
    return tuple(out)
