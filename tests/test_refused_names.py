"""No name a file wrote reaches an OS call when the OS would refuse it (a NUL; on Windows also ``<>"|?*`` and
control characters): from ``gameinfo.txt``, ``libraryfolders.vdf``, a VMT and an archive's entries, it is left out
with a warning, never "internal error … embedded null byte" (issue 31, items 6 and 10)."""

from __future__ import annotations

from pathlib import Path

import hostile
import pytest
from archive_writer import WEntry, write_vpk
from source_writer import character_spec, write_source

from io_ms3d_mdl.filesystem import mounts, steam
from io_ms3d_mdl.filesystem.files import refused_name
from io_ms3d_mdl.filesystem.gameinfo import read_gameinfo
from io_ms3d_mdl.scene.load import load_ms3d, load_source

pytestmark = pytest.mark.usefixtures("no_archives_mounted")


NUL_LINES = [
    "game |gameinfo_path|a\0b/*",
    "game |gameinfo_path|a\0b",
    "game |gameinfo_path|x\0.vpk",
    "game a\0b",
    "game |all_source_engine_paths|mod/\0",
]


def nul_game(tmp: Path) -> Path:
    mod = tmp / "common" / "Game" / "mod"
    mod.mkdir(parents=True)
    text = "\n".join(["game |gameinfo_path|.", *(line.replace("\0", "\\0") for line in NUL_LINES)])
    raw = ('"GameInfo" { game "Mod" FileSystem { SearchPaths {\n' + text + "\n} } }").replace("\\0", "\0")
    (mod / "gameinfo.txt").write_bytes(raw.encode())
    return mod


def test_refused_name_says_why():
    assert refused_name("a\0b") and "NUL" in refused_name("a\0b")
    assert refused_name("models/x.mdl") is None


def test_a_nul_in_gameinfo_is_left_out_with_its_line(tmp_path):
    mod = nul_game(tmp_path)
    info = read_gameinfo(str(mod))
    assert info.roots() == (str(mod),)
    assert len(info.skipped) == len(NUL_LINES), info.skipped
    assert all("NUL" in s for s in info.skipped)
    assert mounts.mount_roots([str(mod)]) == (str(mod),)
    assert [e.name for e in mounts.list_models([str(mod)])] == []
    model = write_source(character_spec(includes=[]), mod / "models", "model")
    scene = load_source(str(model))  # no "embedded null byte"
    assert scene.triangle_count > 0
    with pytest.raises(Exception, match="NUL"):
        read_gameinfo(str(mod) + "\0x")


def test_a_nul_in_a_steam_library_list_is_left_out(tmp_path):
    home = tmp_path / "Steam"
    game = home / "steamapps" / "common" / "Game" / "hl2"
    game.mkdir(parents=True)
    (game / "gameinfo.txt").write_text('"GameInfo" { game "Game" }')
    vdf = '"libraryfolders" { "0" { "path" "HOME" } "1" { "path" "HOME/x\0y" } "2" "HOME\0" }'
    (home / "steamapps" / "libraryfolders.vdf").write_bytes(vdf.replace("HOME", str(home)).encode())
    notes: list[str] = []
    assert [g.title for g in steam.find_games([str(home)], notes)] == ["Game"]
    assert len(notes) == 2 and all("NUL" in n for n in notes), notes
    assert [g.title for g in steam.find_games([str(home) + "\0"])] == []


def test_a_nul_in_a_material_or_texture_name_is_a_missing_file(tmp_path):
    """A VMT is text: its include, base texture and bump map may hold a NUL."""
    hostile.vmt(tmp_path, "body", 'patch { include "materials/a\0b.vmt" }')
    hostile.vmt(tmp_path, "body_red", '"VertexLitGeneric" { "$basetexture" "models/test/x\0y" "$bumpmap" "\0" }')
    scene = load_source(str(hostile.source(tmp_path)))
    assert scene.triangle_count > 0
    assert not any("null byte" in w for w in scene.warnings), list(scene.warnings)


def test_a_nul_in_an_archive_of_a_strangers_game_is_harmless(tmp_path):
    """Entry names end at a NUL (C strings), so an archive cannot hold one; a VMT inside one can."""
    vmt = b'"VertexLitGeneric" { "$basetexture" "a\0b" }'
    write_source(character_spec(includes=[]), tmp_path / "loose" / "models" / "test", "guy")
    files = [
        WEntry(p.relative_to(tmp_path / "loose").as_posix(), p.read_bytes())
        for p in (tmp_path / "loose").rglob("*")
        if p.is_file()
    ]
    files.append(WEntry("materials/models/test/body.vmt", vmt))
    archive = write_vpk(tmp_path / "game", "pak01", files)
    scene = load_source(str(archive / "models" / "test" / "guy.mdl"))
    assert scene.triangle_count > 0


def test_a_milkshape_texture_path_is_never_refused_by_the_os(tmp_path):
    """A MilkShape name is a C string: what follows a NUL is never part of it; control characters are looked up
    like any other name, and simply not found."""
    scene = load_ms3d(str(hostile.ms3d_textured(tmp_path / "m", "a\x01b\x1f.png", alphamap="x\x7f.png")))
    assert [m.base_texture.resolved_path for m in scene.materials if m.base_texture] == [None]
