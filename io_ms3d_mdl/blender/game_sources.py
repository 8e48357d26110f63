"""The browser's view of the mounted games: one thin adapter over ``io_ms3d_mdl.filesystem`` (Steam discovery and
the registry of mounted games and archives), so the window and the preferences speak in rows and labels only."""

from __future__ import annotations

import os
import posixpath
from collections.abc import Sequence
from dataclasses import dataclass

from ..errors import FormatError
from ..filesystem import mounts, steam


@dataclass(frozen=True)
class ModelRow:
    """A model the browser lists: ``path`` is what the import operator opens (a file, or an archive's path joined
    with the entry's name), ``game`` the label of what it was mounted from, ``folder`` its folder inside that."""

    path: str
    game: str
    folder: str
    name: str = ""  # the file name (taken from ``path`` when not given)

    def __post_init__(self) -> None:
        if not self.name:
            object.__setattr__(self, "name", self.path.replace("\\", "/").rsplit("/", 1)[-1])


def is_archive(path: str) -> bool:
    return mounts.is_archive_name(path)


def label(path: str) -> str:
    """How a game or archive is named in lists: a game by its title (gameinfo.txt), an archive by its file name."""
    return mounts.label(path) if path else "(no path)"


def steam_games(steam_folder: str = "") -> list[tuple[str, str]]:
    """``(title, game folder)`` of every Source game in the Steam libraries: those of ``steam_folder`` when given
    (Steam installed somewhere unusual), else of Steam's usual places on this platform."""
    found = steam.find_games([steam_folder] if steam_folder else None)
    return [(game.title, os.path.normpath(game.folder)) for game in found]


def list_models(mounted: Sequence[str]) -> list[ModelRow]:
    """Every model of the mounted games and archives, as rows (game: its title or archive name; folder: where it
    lies inside its game or archive)."""
    return listed_models(mounted)[0]


def listed_models(mounted: Sequence[str]) -> tuple[list[ModelRow], str]:
    """``list_models`` and why the list stops short ("" when it does not): the models are charged to the listing
    budget before their rows are made, and the rows listed before the budget ran out are kept."""
    rows: list[ModelRow] = []
    try:
        for e in mounts.list_models(mounted):
            rows.append(ModelRow(e.path, e.label, *posixpath.split(e.name)))
    except FormatError as exc:
        return rows, f"Listed {len(rows):,} models, then stopped: {exc}"
    return rows, ""
