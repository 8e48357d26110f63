"""A stranger's game folder cannot widen an import's roots through a link: a SearchPaths folder, a ``custom/*``
entry, a VPK (or its ``pak01_dir.vpk``), a companion or a Steam install that is a symlink leading outside the game
folder (and every other game's install beside it) is left out, with one warning naming the ``gameinfo.txt`` line,
for MilkShape, Source and GoldSrc models alike (issue 31, item 1)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import hostile
import pytest
from archive_writer import WEntry, write_vpk
from goldsrc_writer import character_spec as goldsrc_character
from goldsrc_writer import write_model_files
from source_writer import character_spec, write_source

from io_ms3d_mdl import access
from io_ms3d_mdl.filesystem import mounts, steam
from io_ms3d_mdl.filesystem.gameinfo import read_gameinfo
from io_ms3d_mdl.scene.load import load_ms3d, load_source

pytestmark = pytest.mark.skipif(not hasattr(os, "symlink") or sys.platform == "win32", reason="needs symlinks")

_opened: list[str] = []


def _audit(event: str, args: tuple) -> None:
    """Records every file opened for reading (writes are the test building its files)."""
    if event != "open" or not args or not isinstance(args[0], (str, bytes, os.PathLike)):
        return
    mode, flags = (*args, None, 0)[1:3]
    reading = ("r" in mode or "+" in mode) if isinstance(mode, str) else (flags or 0) & os.O_ACCMODE != os.O_WRONLY
    if reading and not (
        isinstance(flags, int) and flags & getattr(os, "O_PATH", 0)
    ):  # O_PATH: asks where, reads nothing
        _opened.append(os.fsdecode(args[0]))


sys.addaudithook(_audit)


@pytest.fixture(autouse=True)
def fresh(no_archives_mounted):
    _opened.clear()


outside_tree, game_with, linked, attack = hostile.outside_tree, hostile.game_with, hostile.linked, hostile.gameinfo_link

KINDS = ["folder", "custom", "custom_folder", "vpk", "pak01", "all_source_engine_paths"]


def nothing_read_from(outside: Path) -> None:
    real = os.path.realpath(outside)
    touched = [p for p in _opened if os.path.realpath(p).startswith(real + os.sep)]
    assert not touched, f"opened outside the roots: {touched}"


def one_link_warning(scene, line: str) -> None:
    said = [w for w in scene.warnings if "gameinfo.txt" in w and line in w]
    assert len(said) == 1, list(scene.warnings)
    assert "link" in said[0]


@pytest.mark.parametrize("kind", KINDS)
def test_a_link_in_a_search_path_never_becomes_a_root(tmp_path, kind):
    mod, outside = attack(tmp_path, kind)
    info = read_gameinfo(str(mod))
    real = os.path.realpath(outside)
    assert all(not os.path.realpath(r).startswith(real) for r in info.roots()), info.roots()
    assert any("link" in s for s in info.skipped), info.skipped
    confinement = access.Confinement.for_model(str(mod / "models" / "x.mdl"))
    assert not confinement.allows(str(outside / "secret.png"))
    assert not any(os.path.realpath(r).startswith(real) for r in confinement.roots)


@pytest.mark.parametrize("kind", ["folder", "custom", "all_source_engine_paths"])
def test_source_materials_cdmaterials_and_includes_never_reach_through_the_link(tmp_path, kind):
    mod, outside = attack(tmp_path, kind)
    spec = character_spec(
        includes=["models/secret.mdl"], cd_materials=["", "..\\..\\outside\\"], textures=["secret"] * 3
    )
    model = write_source(spec, mod / "models", "model")
    scene = load_source(str(model))
    assert hostile.SECRET not in repr([m.props for m in scene.materials]) + repr(list(scene.warnings))
    assert all(m.props.get("source_missing") for m in scene.materials)
    nothing_read_from(outside)
    one_link_warning(scene, {"folder": "stolen", "custom": "custom/*"}.get(kind, "stolen"))


@pytest.mark.parametrize("kind", ["vpk", "pak01"])
def test_source_materials_never_come_from_a_linked_archive(tmp_path, kind):
    mod, outside = attack(tmp_path, kind)
    spec = character_spec(includes=[], cd_materials=[""], textures=["secret"] * 3)
    scene = load_source(str(write_source(spec, mod / "models", "model")))
    assert all(m.props.get("source_missing") for m in scene.materials), [m.props for m in scene.materials]
    nothing_read_from(outside)
    one_link_warning(scene, "evil.vpk" if kind == "vpk" else "sub")


def test_a_source_companion_linked_to_the_outside_stays_refused(tmp_path):
    mod, outside = attack(tmp_path, "folder")
    model = write_source(character_spec(includes=[]), mod / "models", "model")
    vvd = model.with_suffix(".vvd")
    os.replace(vvd, outside / "model.vvd")
    linked(vvd, outside / "model.vvd")
    scene = load_source(str(model))
    assert any(".vvd file is missing" in w for w in scene.warnings), list(scene.warnings)
    assert scene.triangle_count == 0
    nothing_read_from(outside)


@pytest.mark.parametrize("kind", ["folder", "custom", "all_source_engine_paths"])
def test_a_milkshape_texture_never_comes_through_the_link(tmp_path, kind):
    mod, outside = attack(tmp_path, kind)
    model = hostile.ms3d_textured(mod / "models", "secret.png")
    scene = load_ms3d(str(model))
    found = [m.base_texture.resolved_path for m in scene.materials if m.base_texture]
    assert found == [None], found
    nothing_read_from(outside)
    one_link_warning(scene, {"folder": "stolen", "custom": "custom/*"}.get(kind, "stolen"))


def test_a_goldsrc_texture_file_linked_to_the_outside_is_not_read(tmp_path):
    mod, outside = attack(tmp_path, "folder")
    model = write_model_files(goldsrc_character(), mod / "models", "guy", textures_apart=True)
    texture_file = model.with_name("guyT.mdl")
    os.replace(texture_file, outside / "guyT.mdl")
    linked(texture_file, outside / "guyT.mdl")
    scene = load_source(str(model))
    assert not any(m.base_texture and m.base_texture.pixels is not None for m in scene.materials)
    assert any("guyT.mdl" in w for w in scene.warnings), list(scene.warnings)
    nothing_read_from(outside)
    one_link_warning(scene, "stolen")


def test_links_inside_the_game_folder_and_to_another_install_still_mount(tmp_path):
    """An honest link stays usable: one that leads inside the game folder, or into another game's install."""
    mod = game_with(tmp_path, ["game |gameinfo_path|alias", "game |gameinfo_path|custom/*", "game |gameinfo_path|base"])
    (mod / "real").mkdir()
    linked(mod / "alias", mod / "real")
    (mod / "custom").mkdir()
    linked(mod / "custom" / "also", mod / "real")
    other = mod.parent.parent / "Base Game" / "base"
    other.mkdir(parents=True)
    (other / "gameinfo.txt").write_text('"GameInfo" { game "Base" }')
    linked(mod / "base", other)
    info = read_gameinfo(str(mod))
    assert info.roots() == (str(mod), str(mod / "alias"), str(mod / "custom" / "also"), str(mod / "base"))
    assert info.skipped == ()


def test_a_game_folder_that_is_a_link_mounts_what_lies_inside_it(tmp_path):
    """The game folder (or its whole install) may be a link, as to another drive: what it holds still mounts, and
    links inside it are judged against where it really is."""
    real = tmp_path / "drive" / "mod"
    outside = outside_tree(tmp_path)
    (real / "sub").mkdir(parents=True)
    (real / "gameinfo.txt").write_text(
        '"GameInfo" { FileSystem { SearchPaths { game |gameinfo_path|sub game |gameinfo_path|stolen } } }'
    )
    linked(real / "stolen", outside)
    mod = linked(tmp_path / "steamapps" / "common" / "Game" / "mod", real)
    info = read_gameinfo(str(mod))
    assert info.roots() == (str(mod / "sub"),)
    assert len(info.skipped) == 1 and "link" in info.skipped[0]


def test_a_gameinfo_that_is_a_link_out_of_its_folder_is_not_read(tmp_path):
    outside = outside_tree(tmp_path)
    (outside / "gameinfo.txt").write_text(
        '"GameInfo" { game "' + hostile.SECRET + '" FileSystem { SearchPaths { game |gameinfo_path|. } } }'
    )
    mod = tmp_path / "steamapps" / "common" / "Game" / "mod"
    mod.mkdir(parents=True)
    linked(mod / "gameinfo.txt", outside / "gameinfo.txt")
    assert mounts.label(str(mod)) == "mod"
    assert mounts.mount_roots([str(mod)]) == (str(mod),)
    nothing_read_from(outside)
    (mod / "gameinfo.txt").unlink()  # a link to a file inside the game folder is still its gameinfo.txt
    (mod / "cfg").mkdir()
    (mod / "cfg" / "gameinfo.txt").write_text('"GameInfo" { game "Kept" }')
    linked(mod / "gameinfo.txt", mod / "cfg" / "gameinfo.txt")
    assert mounts.label(str(mod)) == "Kept"


def test_a_steam_install_moved_through_a_link_is_listed_and_judged_where_it_really_is(tmp_path):
    """Steam's library list is the user's (Steam writes it) and users move installs to other drives through links:
    such an install is still listed, once; its gameinfo.txt is then judged against where it really is."""
    steam_dir = tmp_path / "Steam"
    common = steam_dir / "steamapps" / "common"
    (common / "Honest" / "hl2").mkdir(parents=True)
    (common / "Honest" / "hl2" / "gameinfo.txt").write_text('"GameInfo" { game "Honest" }')
    moved = tmp_path / "drive" / "Moved" / "mod"
    moved.mkdir(parents=True)
    (moved / "gameinfo.txt").write_text(
        '"GameInfo" { game "Moved" FileSystem { SearchPaths { game |gameinfo_path|. game |gameinfo_path|stolen } } }'
    )
    outside = outside_tree(tmp_path)
    linked(moved / "stolen", outside)
    linked(common / "Moved", moved.parent)
    linked(common / "Again", moved.parent)
    found = steam.find_games([str(steam_dir)])
    assert [g.title for g in found] == ["Honest", "Moved"]  # "Again" and "Moved" are one install
    roots = mounts.mount_roots([found[1].folder])
    assert roots == (found[1].folder,), roots


# --- a red-team pass over the same paths: loops, the root of the disk, chains, depth, case, many links ---------


def test_links_to_the_disk_root_loops_and_chains_are_left_out(tmp_path):
    outside = outside_tree(tmp_path)
    mod = game_with(
        tmp_path,
        [
            "game |gameinfo_path|root",
            "game |gameinfo_path|loop_a",
            "game |gameinfo_path|chain",
            "game |gameinfo_path|self/../../../outside",
            "game |gameinfo_path|STOLEN",
            "game |gameinfo_path|./custom/../stolen",
        ],
    )
    os.symlink("/", mod / "root")
    os.symlink("loop_b", mod / "loop_a")
    os.symlink("loop_a", mod / "loop_b")
    os.symlink("hop", mod / "chain")  # inside, then out: judged where the last link leads
    linked(mod / "hop", outside)
    os.symlink(".", mod / "self")
    linked(mod / "stolen", outside)
    info = read_gameinfo(str(mod))
    assert info.roots() == (str(mod),), info.roots()
    assert len(info.skipped) == 6, info.skipped
    scene = load_ms3d(str(hostile.ms3d_textured(mod / "models", "secret.png")))
    assert [m.base_texture.resolved_path for m in scene.materials if m.base_texture] == [None]
    nothing_read_from(outside)


def test_a_link_loop_inside_custom_is_mounted_once_and_walks_nowhere(tmp_path):
    mod = game_with(tmp_path, ["game |gameinfo_path|custom/*"])
    (mod / "custom" / "real" / "models").mkdir(parents=True)
    (mod / "custom" / "real" / "models" / "x.mdl").write_bytes(b"IDST")
    os.symlink(".", mod / "custom" / "real" / "models" / "again")  # a junction-like loop under models/
    os.symlink("..", mod / "custom" / "up")  # custom/up is the game folder: inside it, honest
    names = [e.name for e in mounts.list_models([str(mod)])]
    assert names == ["models/x.mdl"]


def test_thousands_of_links_in_custom_cost_one_warning(tmp_path):
    outside = outside_tree(tmp_path)
    mod = game_with(tmp_path, ["game |gameinfo_path|custom/*"])
    (mod / "custom").mkdir()
    for i in range(2000):
        os.symlink(os.path.relpath(outside, mod / "custom"), mod / "custom" / f"evil{i:04d}")
    info = read_gameinfo(str(mod))
    assert info.roots() == (str(mod),)
    assert len(info.refused) == 1 and "1,997 more" in info.refused[0]
    scene = load_ms3d(str(hostile.ms3d_textured(mod / "models", "secret.png")))
    assert sum("custom/*" in w for w in scene.warnings) == 1


def test_a_line_longer_than_any_path_is_answered_at_once(tmp_path):
    import time

    mod = game_with(tmp_path, ["game |gameinfo_path|" + "a/" * 200_000 + "*", "game " + "../" * 100_000 + "x"])
    start = time.perf_counter()
    info = read_gameinfo(str(mod))
    assert time.perf_counter() - start < 1.0
    assert info.roots() == (str(mod),) and len(info.skipped) == 2


def test_an_archive_part_linked_to_the_outside_stays_refused(tmp_path):
    """The part a mounted VPK's entry lies in is ``<stem>_NNN.vpk`` beside it, really: a link to a part outside is
    refused even when a SearchPaths line also tries to link the outside in."""
    mod, outside = attack(tmp_path, "folder")
    vmt = b'"VertexLitGeneric" { "$basetexture" "' + hostile.SECRET.encode() + b'" }'
    write_vpk(outside, "pak01", [WEntry("materials/secret.vmt", vmt, part=0)])
    os.replace(outside / "pak01_dir.vpk", mod / "pak01_dir.vpk")
    linked(mod / "pak01_000.vpk", outside / "pak01_000.vpk")
    spec = character_spec(includes=[], cd_materials=[""], textures=["secret"] * 3)
    scene = load_source(str(write_source(spec, mod / "models", "model")))
    assert hostile.SECRET not in repr([m.props for m in scene.materials]) + repr(list(scene.warnings))
    # (the part is opened, then judged by where that very descriptor leads, so a swap cannot slip past; no byte
    # of it is read)
    assert any("outside the archive's folder" in w for w in scene.warnings), list(scene.warnings)


def test_a_model_listed_in_a_mounted_game_is_the_games_own_not_a_links(tmp_path):
    """The game browser and ``batch --game`` list a game's loose models: a model file or ``models`` folder that is
    a link leading out of the game is not listed (it would be imported from there, companions and all)."""
    from io_ms3d_mdl.cli.files import in_mounts

    outside = outside_tree(tmp_path)
    mod = game_with(tmp_path, [])
    (mod / "models" / "sub").mkdir(parents=True)
    (mod / "models" / "sub" / "x.mdl").write_bytes(b"IDST")
    linked(mod / "models" / "sub" / "evil.mdl", outside / "models" / "secret.mdl")
    linked(mod / "models" / "sub" / "evil_dir", outside / "models")
    linked(mod / "models" / "sub" / "also.mdl", mod / "models" / "sub" / "x.mdl")  # inside: still the game's
    assert [e.name for e in mounts.list_models([str(mod)])] == ["models/sub/also.mdl", "models/sub/x.mdl"]
    found = in_mounts("models", (str(mod),))
    assert sorted(f.relative.as_posix() for f in found) == ["models/sub/also.mdl", "models/sub/x.mdl"]
    assert {f.source for f in found} == {(mod / "models" / "sub" / "x.mdl").resolve()}
    assert in_mounts("models/sub/evil_dir", (str(mod),))[0].source == mod / "models" / "sub" / "evil_dir"  # missing

    other = game_with(tmp_path / "second", [])
    linked(other / "models", outside / "models")
    assert list(mounts.list_models([str(other)])) == []


def test_a_folder_swapped_for_a_link_after_the_game_was_read_is_judged_again(tmp_path):
    """The game is cached by its gameinfo.txt (path, size, time); a folder it mounts that has become a link to
    the outside since (an update extracted over it keeps gameinfo.txt as it was) is not a root."""
    outside = outside_tree(tmp_path)
    mod = game_with(tmp_path, ["game |gameinfo_path|stolen"])
    (mod / "stolen").mkdir()
    assert read_gameinfo(str(mod)).roots() == (str(mod), str(mod / "stolen"))
    stamp = os.stat(mod / "gameinfo.txt")
    (mod / "stolen").rmdir()
    linked(mod / "stolen", outside)
    os.utime(mod / "gameinfo.txt", ns=(stamp.st_atime_ns, stamp.st_mtime_ns))
    assert read_gameinfo(str(mod)).roots() == (str(mod),)
    model = hostile.ms3d_textured(mod / "models", "secret.png")
    scene = load_ms3d(str(model))
    assert [m.base_texture.resolved_path for m in scene.materials if m.base_texture] == [None]
    one_link_warning(scene, "stolen")
    nothing_read_from(outside)


def test_thirty_thousand_search_path_lines_cost_what_a_thousand_do(tmp_path):
    import time

    mod = game_with(tmp_path, [f"game |gameinfo_path|x{i}/*" for i in range(30_000)])
    start = time.perf_counter()
    info = read_gameinfo(str(mod))
    assert time.perf_counter() - start < 3.0  # (about 0.1 s unloaded; the text alone takes most of it)
    assert info.roots() == (str(mod),)
    assert len(info.skipped) == 1024 and "28,977 SearchPaths lines" in info.skipped[0]


def test_one_custom_folder_spelled_a_thousand_ways_is_listed_once(tmp_path, monkeypatch):
    mod = game_with(tmp_path, ["game |gameinfo_path|custom" + "/." * i + "/*" for i in range(1000)])
    for i in range(50):
        (mod / "custom" / f"a{i}").mkdir(parents=True)
    listed = []
    real_listdir = os.listdir
    monkeypatch.setattr(os, "listdir", lambda p: listed.append(p) or real_listdir(p))
    info = read_gameinfo(str(mod))
    assert len(listed) == 1
    assert len(info.roots()) == 51 and len(info.search_paths) == 8192  # (bounded: see below)


def test_places_mounted_in_all_are_bounded(tmp_path):
    """``custom/*`` of 4,096 folders spelled 1,000 ways made 4 M search paths (134 s); now at most 8,192."""
    import time

    mod = game_with(tmp_path, ["game |gameinfo_path|custom" + "/." * i + "/*" for i in range(1000)])
    for i in range(4096):
        (mod / "custom" / f"a{i:04d}").mkdir(parents=True)
    start = time.perf_counter()
    info = read_gameinfo(str(mod))
    assert len(info.search_paths) == 8192 and len(info.roots()) == 4097
    assert "lines after 8,192 places: not mounted" in info.skipped[-1]
    assert time.perf_counter() - start < 5.0  # (about 0.3 s unloaded)
