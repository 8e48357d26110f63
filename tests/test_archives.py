"""The archive layer (VPK v1/v2, GMA), read through ``access`` as folders: every layout, the independent writers'
archives, srctools' bytes, and every hostile corner refused with our ``FormatError``."""

from __future__ import annotations

import os
import struct
import zlib
from pathlib import Path

import pytest
from archive_writer import EMBEDDED, GEntry, WEntry, gma_bytes, vpk_bytes, write_gma, write_vpk

from io_ms3d_mdl import access
from io_ms3d_mdl.budget import Budget, using_budget
from io_ms3d_mdl.errors import BudgetExceeded, FormatError
from io_ms3d_mdl.filesystem import mounts

KNIFE = Path(__file__).resolve().parents[2] / "shared" / "samples" / "vpk" / "SirPlease__L4D2-Competitive-Rework"
KNIFE = KNIFE / "addons" / "knife.vpk"
needs_knife = pytest.mark.skipif(not KNIFE.is_file(), reason="the shared VPK sample is not here")

FILES = {
    "models/props/Crate.mdl": b"IDST" + bytes(range(256)) * 3,
    "models/props/crate.vvd": b"IDSV" + b"\x01" * 999,
    "materials/models/props/crate.vmt": b'"VertexLitGeneric" { "$basetexture" "models/props/crate" }',
    "materials/models/props/crate.vtf": b"VTF\0" + os.urandom(5000),
    "readme": b"no extension, no folder",
    "scripts/a.txt": b"",
}


pytestmark = pytest.mark.usefixtures("no_archives_mounted")


def assert_reads_all(archive_path: Path, files: dict[str, bytes]) -> None:
    archive = mounts.mount_archive(str(archive_path))
    assert sorted(archive.entries()) == sorted(files)
    for name, data in files.items():
        assert archive.read(archive.find(name)) == data
        assert access.read_file(os.path.join(archive.path, *name.split("/"))) == data


@pytest.mark.parametrize("version", [1, 2])
def test_embedded_data_in_the_directory_file(tmp_path, version):
    path = write_vpk(tmp_path, "pak01", [WEntry(n, d) for n, d in FILES.items()], version)
    assert_reads_all(path, FILES)
    assert mounts.mount_archive(str(path)).kind == f"VPK v{version}"


@pytest.mark.parametrize("version", [1, 2])
def test_numbered_parts_preload_and_embedded_mixed(tmp_path, version):
    entries = [
        WEntry(n, d, part=i % 3 if i % 4 else EMBEDDED, preload=[0, 3, len(d)][i % 3])
        for i, (n, d) in enumerate(FILES.items())
    ]
    path = write_vpk(tmp_path, "tf2_misc", entries, version)
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "tf2_misc_000.vpk",
        "tf2_misc_001.vpk",
        "tf2_misc_002.vpk",
        "tf2_misc_dir.vpk",
    ]
    assert_reads_all(path, FILES)


def test_single_file_vpk_and_the_x_vpk_name_meaning_x_dir_vpk(tmp_path):
    single = write_vpk(tmp_path / "a", "addon", [WEntry(n, d) for n, d in FILES.items()], single=True)
    assert_reads_all(single, FILES)
    write_vpk(tmp_path / "b", "hl2_textures", [WEntry(n, d) for n, d in FILES.items()])
    assert mounts.mount_archive(str(tmp_path / "b" / "hl2_textures.vpk")).path.endswith("hl2_textures_dir.vpk")


def test_lookups_ignore_case_and_separator_and_list_virtual_folders(tmp_path):
    path = write_vpk(tmp_path, "pak01", [WEntry(n, d) for n, d in FILES.items()])
    archive = mounts.mount_archive(str(path))
    assert archive.find("MODELS\\PROPS\\CRATE.MDL") == archive.find("models/props/crate.mdl") is not None
    assert archive.find("models/props/nothing.mdl") is None
    assert access.listing(str(path)) == {
        "models": "models",
        "materials": "materials",
        "readme": "readme",
        "scripts": "scripts",
    }
    assert access.listing(os.path.join(str(path), "Models", "PROPS")) == {
        "crate.mdl": "Crate.mdl",
        "crate.vvd": "crate.vvd",
    }
    assert access.listing(os.path.join(str(path), "nowhere")) == {}


def test_confinement_finds_entries_and_reads_them_like_files(tmp_path):
    path = write_vpk(tmp_path / "game", "pak01", [WEntry(n, d) for n, d in FILES.items()])
    confinement = access.Confinement.for_roots([str(path)])
    found = confinement.find(str(path), "materials\\MODELS\\props\\crate.vmt")
    assert found == os.path.join(str(path), "materials", "models", "props", "crate.vmt")
    assert access.read_file(found) == FILES["materials/models/props/crate.vmt"]
    assert confinement.find(str(path), "materials/models/props/missing.vmt") is None
    assert confinement.find(str(path), "../pak01_dir.vpk/readme") == os.path.join(str(path), "readme")
    # an archive under no root is never used, even by its exact path
    elsewhere = access.Confinement.for_roots([str(tmp_path / "other")])
    with access.confined(elsewhere):
        assert access.listing(os.path.join(str(path), "models")) == {}
    assert elsewhere.find(str(path), "readme") is None


def test_a_gma_addon_is_a_folder_too(tmp_path):
    path = write_gma(tmp_path / "addons" / "crate.gma", [GEntry(n, d) for n, d in FILES.items()])
    assert_reads_all(path, FILES)
    assert mounts.mount_archive(str(path)).kind == "GMA v3"
    for version in (1, 2):
        old = write_gma(tmp_path / f"v{version}.gma", [GEntry(n, d) for n, d in FILES.items()], version)
        assert_reads_all(old, FILES)


def test_list_models_gives_virtual_paths_labels_and_archives(tmp_path):
    vpk_path = write_vpk(tmp_path, "pak01", [WEntry(n, d) for n, d in FILES.items()])
    gma_path = write_gma(tmp_path / "x.gma", [GEntry("models/a/b.mdl", b"IDST"), GEntry("models/a/c.ms3d", b"MS3D")])
    found = list(mounts.list_models([str(vpk_path), str(gma_path)]))
    assert [(m.name, m.label, m.archive) for m in found] == [
        ("models/props/Crate.mdl", "pak01_dir.vpk", str(vpk_path)),
        ("models/a/b.mdl", "x.gma", str(gma_path)),
        ("models/a/c.ms3d", "x.gma", str(gma_path)),
    ]
    assert found[0].path == os.path.join(str(vpk_path), "models", "props", "Crate.mdl")


def test_archives_are_cached_until_their_file_changes(tmp_path):
    path = write_vpk(tmp_path, "pak01", [WEntry("a.txt", b"one")])
    first = mounts.mount_archive(str(path))
    assert mounts.mount_archive(str(path)) is first
    write_vpk(tmp_path, "pak01", [WEntry("a.txt", b"two!"), WEntry("b.txt", b"")])
    os.utime(path, ns=(1, 1))
    second = mounts.mount_archive(str(path))
    assert second is not first and second.read(second.find("a.txt")) == b"two!"


# --- independent writer and reader ------------------------------------------------------------------------------


@pytest.mark.parametrize("version", [1, 2])
def test_archives_the_pypi_vpk_package_writes(tmp_path, version):
    vpk = pytest.importorskip("vpk")
    source = tmp_path / "src"
    files = {n: d for n, d in FILES.items() if "." in n}  # it stores no extensionless files
    for name, data in files.items():
        (source / name).parent.mkdir(parents=True, exist_ok=True)
        (source / name).write_bytes(data)
    writer = vpk.new(str(source))
    writer.version = version
    writer.save(str(tmp_path / "made.vpk"))
    assert_reads_all(tmp_path / "made.vpk", files)


def srctools_bytes(path: Path) -> dict[str, bytes]:
    from srctools.vpk import VPK

    archive = VPK(str(path))
    return {f.filename: f.read() for f in archive}


def sample_archives() -> list[Path]:
    """Every VPK directory (or single-file VPK) in the shared samples: not the numbered parts."""
    folder = KNIFE.parents[2]
    return sorted(p for p in folder.rglob("*.vpk") if p.stem[-4:-3] != "_" or not p.stem[-3:].isdigit())


@needs_knife
def test_every_entry_of_every_sample_archive_equals_srctools_bytes():
    pytest.importorskip("srctools")
    archives = sample_archives()
    assert KNIFE in archives
    for path in archives:
        expected = srctools_bytes(path)
        assert expected, path
        assert_reads_all(path, expected)
    assert len(srctools_bytes(KNIFE)) == 12


@pytest.mark.parametrize("version", [1, 2])
def test_writer_archives_equal_srctools_bytes(tmp_path, version):
    pytest.importorskip("srctools")
    entries = [WEntry(n, d, part=i % 2 if i % 3 else EMBEDDED, preload=i % 4) for i, (n, d) in enumerate(FILES.items())]
    path = write_vpk(tmp_path, "pak01", entries, version)
    assert srctools_bytes(path) == FILES
    assert_reads_all(path, FILES)


# --- files from strangers ----------------------------------------------------------------------------------------


def refused(path: Path, *words: str, read: str | None = None) -> FormatError:
    with pytest.raises(FormatError) as caught:
        archive = mounts.mount_archive(str(path))
        if read is not None:
            archive.read(archive.find(read))
    message = caught.value.message
    assert message.startswith(path.name), message
    for word in words:
        assert word in message, message
    return caught.value


def put(tmp_path: Path, name: str, data: bytes) -> Path:
    path = tmp_path / name
    path.write_bytes(data)
    return path


def test_not_a_vpk_or_a_version_we_do_not_know(tmp_path):
    refused(put(tmp_path, "a_dir.vpk", b"PK\x03\x04" + bytes(40)), "not a VPK")
    refused(put(tmp_path, "b_dir.vpk", struct.pack("<III", 0x55AA1234, 3, 0)), "version 3")
    refused(put(tmp_path, "c_dir.vpk", b"\x34\x12"), "12 bytes")


def test_tree_beyond_the_file_and_unterminated_strings(tmp_path):
    good, _ = vpk_bytes([WEntry("models/x.mdl", b"data")])
    assert refused(put(tmp_path, "a_dir.vpk", good[:-10]), "runs past the end").offset == 8
    whole = bytearray(good)
    struct.pack_into("<I", whole, 8, 6)  # a tree that stops inside a name
    refused(put(tmp_path, "b_dir.vpk", bytes(whole)), "no NUL")


def test_a_record_or_preload_beyond_the_tree(tmp_path):
    data, _ = vpk_bytes([WEntry("models/x.mdl", b"abcd", preload=4, preload_size=60000)])
    refused(put(tmp_path, "a_dir.vpk", data), "directory tree")


def test_a_record_without_its_terminator(tmp_path):
    data, _ = vpk_bytes([WEntry("models/x.mdl", b"abcd", terminator=0x1234)])
    refused(put(tmp_path, "a_dir.vpk", data), "0xFFFF")


def test_entry_data_beyond_the_file(tmp_path):
    data, _ = vpk_bytes([WEntry("models/x.mdl", b"abcd", offset=1 << 30)])
    refused(put(tmp_path, "a_dir.vpk", data), "runs past the end of the file")
    path = write_vpk(tmp_path / "b", "pak", [WEntry("models/x.mdl", b"abcd", part=0, length=1 << 20)])
    refused(path, "models/x.mdl", "pak_000.vpk", "run past the end", read="models/x.mdl")


def test_archive_indices_naming_huge_numbers_or_a_thousand_parts(tmp_path):
    data, _ = vpk_bytes([WEntry("models/x.mdl", b"abcd", part=0x7FFE)])
    refused(put(tmp_path, "a_dir.vpk", data), "archive part 32766")
    many, _ = vpk_bytes([WEntry(f"models/x{i}.mdl", b"a", part=i) for i in range(1000)])
    refused(put(tmp_path, "b_dir.vpk", many), "1,000 archive parts")


def test_a_missing_part_is_named_and_no_other_file_is_opened(tmp_path):
    path = write_vpk(tmp_path / "game", "pak", [WEntry("models/x.mdl", b"abcd", part=7)])
    (tmp_path / "game" / "pak_007.vpk").unlink()
    (tmp_path / "pak_007.vpk").write_bytes(b"abcd")  # beside the folder: never looked at
    refused(path, "pak_007.vpk", "cannot open", read="models/x.mdl")
    single = write_vpk(tmp_path / "single", "addon", [WEntry("models/x.mdl", b"abcd", part=0)], single=True)
    refused(single, "not a _dir.vpk", read="models/x.mdl")


def test_a_part_linked_out_of_the_archives_folder_is_refused(tmp_path):
    if not hasattr(os, "symlink"):
        pytest.skip("no symlinks here")
    path = write_vpk(tmp_path / "game", "pak", [WEntry("models/x.mdl", b"abcd", part=0)])
    outside = tmp_path / "outside"
    outside.mkdir()
    (tmp_path / "game" / "pak_000.vpk").rename(outside / "secret.bin")
    (tmp_path / "game" / "pak_000.vpk").symlink_to(outside / "secret.bin")
    refused(path, "pak_000.vpk", "outside the archive's folder", read="models/x.mdl")
    linked = tmp_path / "elsewhere"
    linked.mkdir()
    (linked / "pak_dir.vpk").symlink_to(path)  # the directory file linked elsewhere, a part beside the link:
    (linked / "pak_000.vpk").write_bytes(b"abcd")  # not in the folder the directory file really is in
    mounts.forget_archives()
    refused(linked / "pak_dir.vpk", "outside the archive's folder", read="models/x.mdl")


@pytest.mark.parametrize(
    "name", ["../../outside/x.mdl", "models/../../x.mdl", "/etc/passwd", "C:/windows/x.dll", "models\\..\\..\\x"]
)
def test_entry_names_that_climb_or_are_absolute(tmp_path, name):
    data, _ = vpk_bytes([WEntry(name, b"abcd")])
    message = refused(put(tmp_path, "a_dir.vpk", data)).message
    assert "climbs out or is absolute" in message or "holds a path separator" in message
    refused(put(tmp_path, "a.gma", gma_bytes([GEntry(name, b"abcd")])), "climbs out or is absolute")


def test_an_extension_holding_a_path_is_refused(tmp_path):
    data, _ = vpk_bytes([WEntry("models/a.\\b", b"abcd")])
    refused(put(tmp_path, "a_dir.vpk", data), "holds a path separator")


def test_crc_mismatch_names_archive_entry_and_offset(tmp_path):
    path = write_vpk(tmp_path, "pak", [WEntry("a.txt", b"x" * 10), WEntry("models/b.mdl", b"abcd", part=0, crc=1)])
    error = refused(path, "models/b.mdl", "CRC32", "pak_000.vpk", read="models/b.mdl")
    assert error.offset == 0
    gma = write_gma(tmp_path / "x.gma", [GEntry("models/b.mdl", b"abcd", crc=5)])
    refused(gma, "models/b.mdl", "CRC32", read="models/b.mdl")


def test_huge_entries_and_trees_are_charged_to_the_budget(tmp_path):
    path = write_vpk(tmp_path, "pak", [WEntry("models/b.mdl", b"a" * 5000, part=0)])
    with using_budget(Budget(1e-6)), pytest.raises(BudgetExceeded, match="entry size"):
        archive = mounts.mount_archive(str(path))
        archive.read(archive.find("models/b.mdl"))
    mounts.forget_archives()
    with using_budget(Budget(1e-8)), pytest.raises(BudgetExceeded, match="directory tree"):
        mounts.mount_archive(str(path))


def test_a_gma_header_without_end_is_read_within_the_budget(tmp_path):
    path = put(tmp_path, "a.gma", b"GMAD\x03" + bytes(16) + b"x" * (1 << 20))  # a description never ended
    with using_budget(Budget(1 / 128)), pytest.raises(BudgetExceeded, match="GMA header and file table"):
        mounts.mount_archive(str(path))
    refused(path, "ends inside")


def test_gma_with_absurd_sizes_counts_or_a_cut_table(tmp_path):
    refused(put(tmp_path, "a.gma", gma_bytes([GEntry("models/b.mdl", b"abcd", size=1 << 40)])), "runs past the end")
    refused(put(tmp_path, "b.gma", gma_bytes([GEntry("models/b.mdl", b"abcd", size=-5)])), "size -5")
    refused(put(tmp_path, "c.gma", gma_bytes([GEntry("models/b.mdl", b"abcd")])[:40]), "ends inside")
    refused(put(tmp_path, "d.gma", b"GMAD\x09" + bytes(30)), "version 9")
    refused(put(tmp_path, "e.gma", b"NOPE" + bytes(30)), "not a GMA")
    table = bytearray(gma_bytes([]))[:-8]  # a table of 300,000 empty records
    table += b"".join(struct.pack("<I", 1) + b"a\0" + struct.pack("<qI", 0, 0) for _ in range(300_000))
    refused(put(tmp_path, "f.gma", bytes(table) + bytes(8)), "more than 200,000 files")


def test_a_fifo_named_like_an_archive_is_refused_without_hanging(tmp_path):
    if not hasattr(os, "mkfifo"):
        pytest.skip("no FIFOs here")
    os.mkfifo(tmp_path / "pak01_dir.vpk")
    with pytest.raises(FormatError, match="not a regular file"):
        mounts.mount_archive(str(tmp_path / "pak01_dir.vpk"))
    assert access.listing(str(tmp_path / "pak01_dir.vpk")) == {}
    assert mounts.split(str(tmp_path / "pak01_dir.vpk" / "models" / "x.mdl")) is None


def test_a_folder_named_like_an_archive_is_just_a_folder(tmp_path):
    (tmp_path / "odd.vpk" / "models").mkdir(parents=True)
    (tmp_path / "odd.vpk" / "models" / "x.mdl").write_bytes(b"IDST")
    assert access.read_file(tmp_path / "odd.vpk" / "models" / "x.mdl") == b"IDST"
    assert access.listing(str(tmp_path / "odd.vpk")) == {"models": "models"}


def test_a_checked_entry_is_checked_again_once_its_file_changes(tmp_path):
    path = write_vpk(tmp_path, "pak", [WEntry("a.bin", b"0123456789", part=0)])
    archive = mounts.mount_archive(str(path))
    assert archive.read(0) == archive.read(0) == b"0123456789"
    part = tmp_path / "pak_000.vpk"
    part.write_bytes(b"0123456780")  # same size, new contents (and modification time)
    os.utime(part, ns=(1, 1))
    refused(path, "CRC32", read="a.bin")


def test_entry_crc_is_checked_over_preload_and_data(tmp_path):
    data = b"0123456789"
    path = write_vpk(tmp_path, "pak", [WEntry("a.bin", data, part=0, preload=4, crc=zlib.crc32(data[4:]))])
    refused(path, "CRC32", read="a.bin")
