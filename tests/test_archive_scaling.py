"""Mounting and searching archives scales with what they hold: a VPK's folders cost what its entries cost (linear,
not one scan of every folder per name), and a game with thousands of ``custom/*`` archives is indexed once per
import, not opened again for every material lookup."""

from __future__ import annotations

import struct
import time
from pathlib import Path

import hostile
import pytest
from archive_writer import WEntry, write_vpk
from source_writer import character_spec

from io_ms3d_mdl import access
from io_ms3d_mdl.budget import Budget, using_budget
from io_ms3d_mdl.errors import BudgetExceeded
from io_ms3d_mdl.filesystem import mounts, vpk
from io_ms3d_mdl.scene.load import load_source
from io_ms3d_mdl.scene.source.convert import SourceOptions

RECORD = struct.pack("<IHHIIH", 0, 0, 0x7FFF, 0, 0, 0xFFFF)


pytestmark = pytest.mark.usefixtures("no_archives_mounted")


def spread_tree(folders: int, name: bytes = b"t") -> bytes:
    """A VPK v1 directory of ``folders`` folders holding one empty ``.vtf`` each (written directly: fast)."""
    tree = bytearray(b"vtf\0")
    for i in range(folders):
        tree += b"materials/f%06d\0" % i + name + b"\0" + RECORD + b"\0"
    tree += b"\0\0"
    return struct.pack("<III", 0x55AA1234, 1, len(tree)) + bytes(tree)


def fastest_mount(path: Path, runs: int = 3) -> float:
    best = float("inf")
    for _ in range(runs):
        mounts.forget_archives()
        start = time.perf_counter()
        archive = mounts.mount_archive(str(path))
        best = min(best, time.perf_counter() - start)
    assert archive.folder_count == int(path.stem.split("_")[1])
    return best


@pytest.mark.parametrize("name", [b"t", b"a/t"], ids=["plain names", "names holding a slash"])
def test_mounting_is_linear_in_folders(tmp_path, name):
    """Ten times the folders take about ten times as long (a scan per folder would take a hundred); 100,000
    folders mount in well under a second (they took minutes with a slash in each name)."""
    small, large = tmp_path / "f_10000_dir.vpk", tmp_path / "f_100000_dir.vpk"
    small.write_bytes(spread_tree(10_000, name))
    large.write_bytes(spread_tree(100_000, name))
    fastest_mount(small, 1)  # warm up
    t_small, t_large = fastest_mount(small), fastest_mount(large)
    assert t_large < 25 * t_small + 0.05, f"10k folders {t_small * 1e3:.1f} ms, 100k {t_large * 1e3:.1f} ms"
    assert t_large < 1.0
    archive = mounts.mount_archive(str(large))
    if b"/" not in name:  # a name holding a slash is listed, but no path leads to it
        assert archive.find("materials/F099999/" + name.decode() + ".VTF") is not None
    assert archive.entries(".vtf")[-1] == "materials/f099999/" + name.decode() + ".vtf"


def test_a_folder_in_several_extensions_lists_all_its_runs(tmp_path):
    entries = [WEntry(f"materials/m{i % 3}/x{i}.{('vtf', 'vmt', 'txt')[i % 5 % 3]}", bytes([i])) for i in range(30)]
    archive = mounts.mount_archive(str(write_vpk(tmp_path, "pak01", entries)))
    assert sorted(archive.entries()) == sorted(e.name for e in entries)
    assert sorted(archive.listing("materials/m1")) == sorted(e.name.rsplit("/", 1)[1] for e in entries[1::3])
    assert archive.count(".vtf") == sum(e.name.endswith(".vtf") for e in entries)
    assert all(archive.read(archive.find(e.name)) == e.data for e in entries)


def custom_game(tmp_path: Path, archives: int, textures: int) -> Path:
    """A game whose ``custom/`` holds ``archives`` tiny VPKs (searched before the game's own folder), and a model
    of ``textures`` materials that lie in the game folder, each naming a base texture that lies nowhere."""
    spec = character_spec(includes=[], textures=[f"t{i}" for i in range(textures)], skins=[list(range(textures))])
    model = hostile.source(tmp_path, spec)
    game = hostile.game(tmp_path)
    (game / "gameinfo.txt").write_text(
        '"GameInfo" { game "custom" FileSystem { SearchPaths { game+mod |gameinfo_path|custom/* '
        "game |gameinfo_path|. } } }"
    )
    for i in range(archives):
        write_vpk(game / "custom", f"a{i:05d}", [WEntry(f"materials/other{i}/x.vmt", b"x")], single=True)
    for i in range(textures):
        hostile.vmt(tmp_path, f"t{i}", f'"VertexLitGeneric"\n{{\n"$basetexture" "models/test/missing{i}"\n}}\n')
    return model


def test_custom_archives_are_mounted_once_and_searched_through_one_index(tmp_path, monkeypatch):
    """4,096 tiny archives in ``custom/`` and 32 materials: each archive is read once for the whole import (135k
    reads and 75 s before), and once more for nothing on the next import."""
    model = custom_game(tmp_path, 4096, 32)
    reads = []
    real = mounts.read_vpk
    monkeypatch.setattr(mounts, "read_vpk", lambda path: reads.append(path) or real(path))
    start = time.perf_counter()
    scene = load_source(str(model))
    seconds = time.perf_counter() - start
    print(f"first import: {seconds:.2f} s")
    assert len(reads) == 4096 and len(set(reads)) == 4096
    found = [m for m in scene.materials if not m.props.get("source_missing")]
    assert len(found) == 32, [w for w in scene.warnings][:5]
    assert seconds < 10, f"{seconds:.1f} s"
    access.clear_cache()
    start = time.perf_counter()
    load_source(str(model))
    print(f"second import: {time.perf_counter() - start:.2f} s")
    assert len(reads) == 4096  # still mounted (small archives are kept past 64)


def test_the_search_paths_are_charged_before_any_is_mounted(tmp_path, monkeypatch):
    model = custom_game(tmp_path, 40, 1)
    monkeypatch.setattr(vpk, "read_vpk", lambda path: pytest.fail("mounted before the budget was charged"))
    monkeypatch.setattr(mounts, "read_vpk", lambda path: pytest.fail("mounted before the budget was charged"))
    with pytest.raises(BudgetExceeded, match="search paths: archives"):
        load_source(str(model), SourceOptions(work_limit=32 / Budget().search_paths))


def test_what_the_searched_archives_hold_is_charged_in_total(tmp_path):
    """Each archive within its own budgets, together over them: refused as the index is built."""
    model = custom_game(tmp_path, 0, 1)
    for i in range(3):
        entries = [WEntry(f"materials/m{i}_{j}/x.vmt", b"x") for j in range(10)]
        write_vpk(tmp_path / "game" / "custom", f"b{i}", entries, single=True)
    confinement = access.Confinement.for_model(str(model))
    with using_budget(Budget(1e-4)), pytest.raises(BudgetExceeded, match="folders of the archives searched"):
        confinement.find_first(confinement.lookup, "materials/models/test/t0.vmt")  # 25 in all, 10 in each
    found = access.Confinement.for_model(str(model)).find_first(confinement.lookup, "materials/models/test/t0.vmt")
    assert found is not None and found.endswith("t0.vmt")
