"""``$includemodel``: the models whose animations a model borrows, found the way the engine finds them
(relative to the game root, case-insensitively, ``\\`` or ``/``), recursively, with cycles and depth bounded."""

from __future__ import annotations

import os
from dataclasses import dataclass

from ...access import current, game_root, read_file, shown
from ...errors import BudgetExceeded, FormatError, Warnings
from .mdl import read_mdl
from .model import MdlFile
from .sidecars import find_ani

MAX_DEPTH = 8
NAMES_SHOWN = 8  # missing includes a warning names (a Bloodlines character from a patch alone misses 23)


@dataclass
class Included:
    name: str  # as the including model wrote it
    mdl: MdlFile
    ani: tuple[bytes, str] | None


def load_ani(path: str, mdl: MdlFile) -> tuple[bytes, str] | None:
    if mdl.num_anim_blocks <= 1:
        return None
    found = find_ani(path, mdl.anim_block_name)
    return (read_file(found), found) if found else None


def load_includes(path: str, mdl: MdlFile, warnings: Warnings) -> list[Included]:
    """Every model ``mdl`` includes, depth first, each once; problems become warnings, never failures."""
    root = game_root(path)
    confinement = current(path)
    roots = confinement.lookup or ((root,) if root else ())
    out: list[Included] = []
    seen = {os.path.normcase(os.path.abspath(path))}
    missing: list[str] = []

    def visit(model: MdlFile, depth: int) -> None:
        for name in model.include_models:
            found = confinement.find_first(roots, name)
            if found is None:
                if f"'{shown(name)}'" not in missing:  # (several included models may name the same one)
                    missing.append(f"'{shown(name)}'")
                continue
            key = os.path.normcase(os.path.abspath(found))
            if key in seen:
                warnings.add(f"included model '{shown(name)}' is included again (a cycle or a repeat); skipped")
                continue
            if depth >= MAX_DEPTH:
                warnings.add(f"included model '{shown(name)}' is nested more than {MAX_DEPTH} deep; skipped")
                continue
            seen.add(key)
            try:
                included = read_mdl(found)
                ani = load_ani(found, included)
            except BudgetExceeded:
                raise
            except FormatError as exc:
                warnings.add(f"included model '{shown(name)}' could not be read: {exc.message}")
                continue
            out.append(Included(name, included, ani))
            visit(included, depth + 1)

    visit(mdl, 0)
    if missing:  # one warning, however many
        where = "under the game folder" if roots else "(the model is not inside a models/ folder)"
        if len(missing) == 1:
            warnings.add(f"included model {missing[0]} was not found {where}; its animations are missing")
        else:
            more = len(missing) - NAMES_SHOWN
            names = ", ".join(missing[:NAMES_SHOWN]) + (f" and {more} more" if more > 0 else "")
            warnings.add(
                f"{len(missing)} included models were not found {where}; their animations are missing: {names}"
            )
    return out
