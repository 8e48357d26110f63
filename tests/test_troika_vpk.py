"""Troika's VPK (Bloodlines' ``pack###.vpk``): mounted like Valve's archives, read against the Official Patch's
real packs (from a local fetch of the Unofficial Patch's repository) and against packs the tests write, hostile
ones included."""

from __future__ import annotations

import struct
from pathlib import Path

import hostile
import numpy as np
import pytest
from archive_writer import GEntry, gma_bytes, troika_bytes
from bloodlines_writer import character_spec2531, prop_spec, tth_pair, write_bloodlines
from conftest import mirror_tree

from io_ms3d_mdl import access
from io_ms3d_mdl.budget import Budget, using_budget
from io_ms3d_mdl.errors import BudgetExceeded, FormatError
from io_ms3d_mdl.filesystem import mounts
from io_ms3d_mdl.scene.load import load_source

pytestmark = pytest.mark.usefixtures("no_archives_mounted")

REPO = "miracleflame+VTMB-Unofficial-Patch-by-Wesp"


def _directory(data: bytes) -> dict[str, bytes]:
    """The test's own reading: the trailer, then each record, each file's bytes sliced from the pack."""
    count, at, _ = struct.unpack_from("<IIB", data, len(data) - 9)
    out, pos = {}, at
    for _ in range(count):
        (length,) = struct.unpack_from("<I", data, pos)
        name = data[pos + 4 : pos + 4 + length].decode()
        offset, size = struct.unpack_from("<II", data, pos + 4 + length)
        out[name] = data[offset : offset + size]
        pos += 4 + length + 8
    assert pos == len(data) - 9
    return out


def test_the_official_patchs_packs_mount_and_every_file_reads_as_stored(tmp_path):
    folder = mirror_tree(REPO, ["Official_Patch/Vampire"], tmp_path) / "Official_Patch" / "Vampire"
    packs = sorted(folder.glob("pack*.vpk"))
    assert [p.name for p in packs] == ["pack102.vpk", "pack103.vpk"]
    empty = mounts.mount_archive(str(packs[0]))
    assert empty.kind == "Troika VPK" and len(empty) == 0
    archive = mounts.mount_archive(str(packs[1]))
    files = _directory(packs[1].read_bytes())
    assert len(files) == 7 and "dlg/main characters/regent.dlg" in files  # (a folder name with a space)
    assert sorted(archive.entries()) == sorted(files)
    for name, data in files.items():
        assert access.read_file(str(packs[1] / name)) == data


def test_a_bloodlines_model_inside_a_pack_imports_as_it_does_loose(tmp_path):
    loose = write_bloodlines(character_spec2531(), tmp_path / "loose" / "models" / "test", "guy")
    files = {f"models/test/{p.name}": p.read_bytes() for p in sorted(loose.parent.iterdir())}
    (tmp_path / "Vampire").mkdir()
    pack = tmp_path / "Vampire" / "pack000.vpk"
    pack.write_bytes(troika_bytes(files))
    inside = load_source(str(pack / "models" / "test" / "guy.mdl"))
    alone = load_source(str(loose))
    meshes = [(o.name, o.mesh) for o in alone.objects if o.mesh is not None]
    assert meshes and len(meshes) == len([o for o in inside.objects if o.mesh is not None])
    for (name, mesh), other in zip(meshes, [o for o in inside.objects if o.mesh is not None], strict=True):
        assert other.name == name
        np.testing.assert_array_equal(other.mesh.positions, mesh.positions)
        np.testing.assert_array_equal(other.mesh.triangles, mesh.triangles)


def _game(tmp_path: Path) -> tuple[Path, dict[str, bytes], dict[str, bytes]]:
    """A Bloodlines install in little: ``Vampire/`` with the prop's model files and its material (a VMT and its
    TTH/TTZ texture, red) as the packs would hold them."""
    loose = write_bloodlines(prop_spec(0), tmp_path / "made" / "models" / "test", "box")
    model = {f"models/test/{p.name}": p.read_bytes() for p in sorted(loose.parent.iterdir())}
    tth, ttz = tth_pair(hostile.vtf(8, 8, fill=b"\xff\x00\x00\xff"), 80 + 4)
    material = {
        "materials/models/test/skin.vmt": b'VertexLitGeneric\n{\n"$basetexture" "models\\test\\skin"\n}\n',
        "materials/models/test/skin.tth": tth,
        "materials/models/test/skin.ttz": ttz,
    }
    game = tmp_path / "Vampire"
    game.mkdir()
    return game, model, material


def _red(scene) -> bool:
    (material,) = scene.materials
    pixels = material.base_texture.pixels if material.base_texture is not None else None
    return pixels is not None and bool((pixels[..., 0] == 255).all() and (pixels[..., 1] == 0).all())


def test_a_model_in_one_pack_finds_its_material_in_another(tmp_path):
    """The game folder holding ``pack000.vpk`` is the game: a model in one pack, its VMT and texture in another."""
    game, model, material = _game(tmp_path)
    (game / "pack000.vpk").write_bytes(troika_bytes(model))
    (game / "pack001.vpk").write_bytes(troika_bytes(material))
    assert _red(load_source(str(game / "pack000.vpk" / "models" / "test" / "box.mdl")))
    found = list(mounts.list_models([str(game)]))  # the game browser, the folder added as a game
    assert [(e.name, e.archive) for e in found] == [("models/test/box.mdl", str(game / "pack000.vpk"))]


def test_loose_files_come_before_the_packs_and_a_higher_pack_before_a_lower(tmp_path):
    """A loose model (the Unofficial Patch's way) finds its material in the packs; a material in a higher pack
    replaces the lower one's, and a loose one replaces both."""
    game, model, material = _game(tmp_path)
    for name, data in model.items():
        (game / name).parent.mkdir(parents=True, exist_ok=True)
        (game / name).write_bytes(data)
    blue, _ = tth_pair(hostile.vtf(8, 8, fill=b"\x00\x00\xff\xff"), 80 + 4)
    (game / "pack000.vpk").write_bytes(troika_bytes({**material, "materials/models/test/skin.tth": blue}))
    (game / "pack103.vpk").write_bytes(troika_bytes(material))  # (the patch's: red)
    path = str(game / "models" / "test" / "box.mdl")
    assert _red(load_source(path))
    (game / "pack103.vpk").unlink()
    (game / "pack101.vpk").write_bytes(troika_bytes({}))
    assert not _red(load_source(path))  # pack000's blue one now
    for name, data in material.items():
        (game / name).parent.mkdir(parents=True, exist_ok=True)
        (game / name).write_bytes(data)
    assert _red(load_source(path))  # loose, before every pack


def test_a_pack_linked_from_outside_the_game_folder_is_not_mounted(tmp_path):
    game, model, material = _game(tmp_path)
    (game / "pack000.vpk").write_bytes(troika_bytes(model))
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "pack001.vpk").write_bytes(troika_bytes(material))
    (game / "pack001.vpk").symlink_to(elsewhere / "pack001.vpk")
    assert mounts.model_game_roots(str(game / "pack000.vpk" / "models" / "test" / "box.mdl")) == (
        str(game),
        str(game / "pack000.vpk"),
    )
    scene = load_source(str(game / "pack000.vpk" / "models" / "test" / "box.mdl"))
    assert not _red(scene) and any("skin" in w for w in scene.warnings)


def _refused(path: Path, *words: str) -> None:
    with pytest.raises(FormatError) as caught:
        archive = mounts.mount_archive(str(path))
        for name in archive.entries():
            archive.read(archive.find(name))
    for word in words:
        assert word in caught.value.message, caught.value.message
    assert caught.value.message.startswith(path.name)


@pytest.mark.parametrize(
    "damage, words",
    [
        ({"offsets": {"b.txt": 10}}, ["'b.txt'", "runs into the directory"]),
        ({"name_lengths": {"b.txt": 1 << 20}}, ["runs past the directory"]),
        ({"extra": b"\0" * 16}, ["16 bytes follow the last"]),
        ({"count": 1000}, ["not a VPK", "nor Troika's"]),
    ],
    ids=["data-into-directory", "name-past-directory", "bytes-after-records", "count-past-directory"],
)
def test_a_damaged_pack_is_refused_naming_what_and_where(tmp_path, damage, words):
    path = tmp_path / "pack000.vpk"
    path.write_bytes(troika_bytes({"a.txt": b"12345678", "b.txt": b"abcdefgh"}, **damage))
    _refused(path, *words)


@pytest.mark.parametrize("name", ["../outside.txt", "/etc/passwd", "models/../../x.mdl", "C:/x.mdl", "mo\0ls/x"])
def test_a_name_that_climbs_out_is_absolute_or_holds_a_nul_is_refused(tmp_path, name):
    """(Names are counted, not NUL-terminated, here: a NUL would split the index's names; found by the fuzzer.)"""
    path = tmp_path / "pack000.vpk"
    path.write_bytes(troika_bytes({"a.txt": b"1", name: b"2"}))
    _refused(path, "holds a NUL byte" if "\0" in name else "climbs out or is absolute")


def test_its_files_are_charged_to_the_budget(tmp_path):
    class FewEntries(Budget):
        archive_entries = property(lambda self: 3)

    path = tmp_path / "pack000.vpk"
    path.write_bytes(troika_bytes({f"f{i}.txt": b"x" for i in range(4)}))
    with using_budget(FewEntries()), pytest.raises(BudgetExceeded, match="Troika VPK entries"):
        mounts.mount_archive(str(path))
    assert len(mounts.mount_archive(str(path))) == 4


def test_a_pack_listing_more_files_than_an_index_of_lists_holds_is_refused_in_time(tmp_path):
    """2,000,000 one-letter files pass the entry budget but would take over 1 GB as Python lists (as GMA's cap)."""
    import struct
    import time

    from io_ms3d_mdl.filesystem.archive import MAX_FLAT_FILES

    count = MAX_FLAT_FILES + 1
    path = tmp_path / "pack000.vpk"
    path.write_bytes((struct.pack("<I", 1) + b"a" + bytes(8)) * count + struct.pack("<IIB", count, 0, 0))
    start = time.perf_counter()
    _refused(path, f"{count:,} files, more than {MAX_FLAT_FILES:,}")
    assert time.perf_counter() - start < 1.0


@pytest.mark.parametrize("name", ["models/", "", "models\\"], ids=["slash", "empty", "backslash"])
def test_a_name_with_nothing_after_its_folder_is_refused(tmp_path, name):
    """Found by the red-team pass: a name ending in ``/`` (or empty) was listed and ended in an internal TypeError
    when read (the index cannot hold an entry apart from its folder). GMA shares the check (flat_archive)."""
    path = tmp_path / "pack000.vpk"
    path.write_bytes(troika_bytes({"a.txt": b"1", name: b"2"}))
    _refused(path, f"file '{name}' has no name after its folder")
    gma = tmp_path / "addon.gma"
    gma.write_bytes(gma_bytes([GEntry("a.txt", b"1"), GEntry(name or "x/", b"2")]))
    _refused(gma, "has no name after its folder")


def test_odd_but_harmless_packs_read_as_stored(tmp_path):
    """Already fine: names with ``\\`` and ``.`` steps are found under ``/`` paths, names differing by case are one
    file (the first, as lookups ignore case), overlapping and empty data ranges read as stored, and a pack of no
    files is an empty folder; a count of 0 before other bytes, or a directory pointing into the trailer, is not a
    pack."""

    def pack(records: list[tuple[bytes, int, int]], data: bytes, at: int | None = None) -> Path:
        rows = b"".join(struct.pack("<I", len(n)) + n + struct.pack("<II", o, s) for n, o, s in records)
        path = tmp_path / f"p{len(list(tmp_path.iterdir()))}" / "pack000.vpk"
        path.parent.mkdir()
        path.write_bytes(data + rows + struct.pack("<IIB", len(records), len(data) if at is None else at, 0))
        return path

    def read(path: Path, name: str) -> bytes:
        archive = mounts.mount_archive(str(path))
        return archive.read(archive.find(name))

    odd = pack([(b"models\\x.mdl", 0, 2), (b"./a/./b.txt", 2, 2), (b"A.txt", 0, 6), (b"a.txt", 4, 2)], b"xxbbcc")
    assert read(odd, "models/x.mdl") == b"xx" and read(odd, "a/b.txt") == b"bb"
    assert read(odd, "a.txt") == read(odd, "A.TXT") == b"xxbbcc"
    empty = pack([(b"e.txt", 0, 0), (b"f.txt", 3, 0)], b"abc")
    assert read(empty, "e.txt") == read(empty, "f.txt") == b""
    assert list(mounts.mount_archive(str(pack([], b""))).entries()) == []
    with pytest.raises(FormatError, match="not a VPK"):
        mounts.mount_archive(str(pack([], b"garbage!!", at=0)))
    with pytest.raises(FormatError, match="not a VPK"):
        mounts.mount_archive(str(pack([(b"a.txt", 0, 1)], b"abc", at=10**6)))
