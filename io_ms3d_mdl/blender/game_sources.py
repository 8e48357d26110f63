"""The browser's view of the mounted games: one thin adapter over ``io_ms3d_mdl.filesystem`` (Steam discovery and
the registry of mounted games and archives), so the window and the preferences speak in rows and labels only."""

from __future__ import annotations

import os
import posixpath
from collections.abc import Sequence
from dataclasses import dataclass

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
    return [ModelRow(e.path, e.label, *posixpath.split(e.name)) for e in mounts.list_models(mounted)]
