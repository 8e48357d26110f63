"""Installed Source games, found from Steam's library list. No ``bpy``.

Steam keeps its libraries in ``steamapps/libraryfolders.vdf`` (KeyValues: numbered blocks with a ``path``, or in
older files numbered paths directly). Each library holds installs in ``steamapps/common/<install>``; a game folder
is an install's sub-folder holding ``gameinfo.txt`` (``Team Fortress 2/tf``, ``Half-Life 2/hl2``…).
:func:`find_games` is a pure function of the Steam folders it is given (tests give it a made-up tree);
:func:`default_steam_folders` says where Steam lives on Linux, Windows and macOS.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass

from ..errors import FormatError, printable
from . import keyvalues
from .files import read_regular, refused_name
from .gameinfo import GAMEINFO, read_gameinfo

MAX_LIBRARIES = 64
MAX_INSTALLS = 4096


@dataclass(frozen=True)
class InstalledGame:
    title: str  # gameinfo's ``game`` value ("Team Fortress 2")
    folder: str  # the game folder holding gameinfo.txt
    install: str  # its install folder under steamapps/common


def default_steam_folders(home: str | None = None, platform: str | None = None) -> list[str]:
    """Where Steam is usually installed on this (or the given) platform; only the ones that exist."""
    home = home or os.path.expanduser("~")
    platform = platform or sys.platform
    if platform.startswith("win"):
        drives = [os.environ.get("PROGRAMFILES(X86)", r"C:\Program Files (x86)"), os.environ.get("PROGRAMFILES", "")]
        candidates = [os.path.join(d, "Steam") for d in drives if d]
    elif platform == "darwin":
        candidates = [os.path.join(home, "Library", "Application Support", "Steam")]
    else:
        candidates = [
            os.path.join(home, ".steam", "steam"),
            os.path.join(home, ".local", "share", "Steam"),
            os.path.join(home, ".var", "app", "com.valvesoftware.Steam", ".local", "share", "Steam"),
            os.path.join(home, "snap", "steam", "common", ".local", "share", "Steam"),
        ]
    out: list[str] = []
    for candidate in candidates:
        if os.path.isdir(candidate) and os.path.realpath(candidate) not in {os.path.realpath(o) for o in out}:
            out.append(candidate)
    return out


def libraries(steam: str, notes: list[str] | None = None) -> list[str]:
    """The library folders a Steam installation lists (itself first), each once. A listed path the OS would refuse
    (a NUL) is left out, and ``notes`` (when given) says why."""
    out = [steam]
    for vdf in (
        os.path.join(steam, "steamapps", "libraryfolders.vdf"),
        os.path.join(steam, "config", "libraryfolders.vdf"),
    ):
        try:
            block = keyvalues.parse(read_regular(vdf, 1 << 20), vdf)
        except FormatError:
            continue
        top = keyvalues.first(block, "libraryfolders")
        for _, value in top if isinstance(top, list) else ():
            path = keyvalues.first(value, "path") if isinstance(value, list) else value
            if isinstance(path, str) and path.strip():
                out.append(path.replace("\\\\", "\\"))
        break
    seen, unique = set(), []
    for n, path in enumerate(out[:MAX_LIBRARIES]):
        # a listed library is absolute (Steam writes it so); a relative one would mean the current folder's
        why = refused_name(path) or (None if n == 0 or os.path.isabs(path) else "not an absolute path")
        if why:
            if notes is not None:
                notes.append(f"Steam library '{printable(path, 200)}' left out: {why}")
            continue
        key = os.path.normcase(os.path.realpath(path))
        if key not in seen and os.path.isdir(path):
            seen.add(key)
            unique.append(path)
    return unique


def find_games(steam_folders: list[str] | None = None, notes: list[str] | None = None) -> list[InstalledGame]:
    """Every installed game folder (holding gameinfo.txt) in every library of the given Steam installations
    (the platform's default ones when None), sorted by title; ``notes`` collects what was left out and why.

    An install that is a link (moved to another drive) is listed, once per real folder: Steam's list and its
    libraries are the user's; what a game's gameinfo.txt may mount is judged where it really is (``gameinfo``)."""
    games: dict[str, InstalledGame] = {}
    for steam in default_steam_folders() if steam_folders is None else steam_folders:
        if refused_name(steam):
            if notes is not None:
                notes.append(f"Steam folder '{printable(steam, 200)}' left out: {refused_name(steam)}")
            continue
        for library in libraries(steam, notes):
            common = os.path.join(library, "steamapps", "common")
            try:
                installs = sorted(os.listdir(common))[:MAX_INSTALLS]
            except OSError:
                continue
            for install in installs:
                folder = os.path.join(common, install)
                try:
                    subfolders = sorted(os.listdir(folder))
                except OSError:
                    continue
                for sub in subfolders:
                    game = os.path.join(folder, sub)
                    if not os.path.isfile(os.path.join(game, GAMEINFO)):
                        continue
                    key = os.path.normcase(os.path.realpath(game))
                    if key in games:
                        continue
                    try:
                        title = read_gameinfo(game).title
                    except FormatError:
                        title = f"{install} ({sub})"
                    games[key] = InstalledGame(title, game, folder)
    return sorted(games.values(), key=lambda g: (g.title.lower(), g.folder))
