"""Find a model's companion files next to it, case-insensitively (game files mix case: ``pushcart01a.mdl`` beside
``PushCart01a.dx90.vtx``), through the import's confinement: a companion that is a link out of the model's
folders, or not a regular file, is treated as absent."""

from __future__ import annotations

import os
from dataclasses import dataclass

from ...access import current, game_root, listing

VTX_SUFFIXES = (".dx90.vtx", ".vtx", ".dx80.vtx", ".sw.vtx")  # preference order (notes §1.1)


@dataclass
class Sidecars:
    vvd: str | None
    vtx: str | None
    phy: str | None
    ani: str | None


def find_sidecars(mdl_path: str) -> Sidecars:
    folder = os.path.dirname(os.path.abspath(mdl_path))
    stem = os.path.splitext(os.path.basename(mdl_path))[0].lower()
    names = listing(folder)
    confinement = current(mdl_path)

    def find(*suffixes: str) -> str | None:
        for suffix in suffixes:
            found = names.get(stem + suffix)
            if found is not None:
                found = confinement.find(folder, found)
                if found:
                    return found
        return None

    return Sidecars(find(".vvd"), find(*VTX_SUFFIXES), find(".phy"), find(".ani"))


def find_ani(mdl_path: str, block_name: str) -> str | None:
    """The model's animation block file: as named in the model (relative to the game root), else beside it."""
    root = game_root(mdl_path)
    if block_name and root is not None:
        found = current(mdl_path).find(root, block_name)
        if found:
            return found
    return find_sidecars(mdl_path).ani
