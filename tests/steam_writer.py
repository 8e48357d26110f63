"""A made-up Steam installation for the game-browser tests, in the shape Steam keeps on disk."""

from __future__ import annotations

from pathlib import Path


def steam_tree(root: Path, library: str = "SteamLibrary") -> Path:
    """``root/Steam`` with Half-Life 2, and a second library ``root/<library>`` (listed in libraryfolders.vdf)
    with Team Fortress 2; returns the Steam folder."""
    steam, second = root / "Steam", root / library
    for base, install, folder, title in (
        (steam, "Half-Life 2", "hl2", "Half-Life 2"),
        (second, "Team Fortress 2", "tf", "Team Fortress 2"),
    ):
        game = base / "steamapps" / "common" / install / folder
        game.mkdir(parents=True)
        (game / "gameinfo.txt").write_text(f'"GameInfo"\n{{\n game "{title}"\n}}\n')
    libraries = "".join(f' "{i}"\n {{\n  "path" "{p}"\n }}\n' for i, p in enumerate((steam, second)))
    (steam / "steamapps" / "libraryfolders.vdf").write_text(f'"libraryfolders"\n{{\n{libraries}}}\n')
    return steam
