"""The browser's view of the mounted games: one thin adapter over ``io_ms3d_mdl.filesystem`` (Steam discovery and
the registry of mounted games and archives), so the window and the preferences speak in rows and labels only."""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass

ARCHIVE_SUFFIXES = (".vpk", ".gma")


@dataclass(frozen=True)
class ModelRow:
    """A model the browser lists: ``path`` is what the import operator opens (a file, or an archive's path joined
    with the entry's name), ``game`` the label of what it was mounted from, ``folder`` its folder inside that."""

    path: str
    game: str
    folder: str

    @property
    def name(self) -> str:
        return self.path.replace("\\", "/").rsplit("/", 1)[-1]


def is_archive(path: str) -> bool:
    return path.lower().endswith(ARCHIVE_SUFFIXES)


def label(path: str) -> str:
    """How a game or archive is named in lists: a game by its folder and the folder above (``Team Fortress 2/tf``),
    an archive by its file name."""
    path = os.path.normpath(path) if path else ""
    if not path:
        return "(no path)"
    if is_archive(path):
        return os.path.basename(path)
    parent = os.path.basename(os.path.dirname(path))
    return f"{parent}/{os.path.basename(path)}" if parent else os.path.basename(path)


def steam_games() -> list[str]:
    """The game folders (each holding gameinfo.txt) in the Steam libraries of this computer."""
    return []  # PROVISIONAL until filesystem.steam lands


def list_models(mounts: Sequence[str]) -> list[ModelRow]:
    return []  # PROVISIONAL until filesystem.mounts lands
