"""Crafted VPK trees and GMA tables from a red-team pass over the archive readers (issue 31): names that make
``..`` only with their extension, trees of empty folders or extensions that cost memory without entries, sizes
whose running total overflows, duplicate and overlapping entries. Each is refused with our message, or read as
the engine would."""

from __future__ import annotations

import struct
import zlib
from pathlib import Path

import pytest
from archive_writer import GEntry, WEntry, gma_bytes, write_vpk

from io_ms3d_mdl.errors import BudgetExceeded, FormatError
from io_ms3d_mdl.filesystem import mounts

pytestmark = pytest.mark.usefixtures("no_archives_mounted")


def record(data: bytes = b"", offset: int = 0, length: int | None = None, crc: int | None = None) -> bytes:
    crc = zlib.crc32(data) if crc is None else crc
    return struct.pack("<IHHIIH", crc, 0, 0x7FFF, offset, len(data) if length is None else length, 0xFFFF)


def raw_vpk(tmp: Path, tree: bytes, data: bytes = b"", name: str = "crafted.vpk") -> Path:
    path = tmp / name
    path.write_bytes(struct.pack("<III", 0x55AA1234, 1, len(tree)) + tree + data)
    return path


@pytest.mark.parametrize(
    ("extension", "name"),
    [(b".", b"a/"), (b".", b"a\\"), (b".", b"a/b/"), (b" ", b"a/.."), (b"x", b"..\\..\\x")],
    ids=[
        "slash+dot-dot extension",
        "backslash+dot-dot extension",
        "deeper slash+dot-dot extension",
        "no extension",
        "climb",
    ],
)
def test_a_name_that_climbs_with_its_extension_is_refused(tmp_path, extension, name):
    tree = extension + b"\0models\0" + name + b"\0" + record() + b"\0\0\0"
    with pytest.raises(FormatError, match="climbs out or is absolute"):
        mounts.mount_archive(str(raw_vpk(tmp_path, tree)))


def test_a_name_with_a_slash_inside_is_kept_but_leads_nowhere(tmp_path):
    tree = b"mdl\0models\0a/b\0" + record() + b"\0\0\0"
    archive = mounts.mount_archive(str(raw_vpk(tmp_path, tree)))
    assert archive.entries() == ["models/a/b.mdl"] and archive.find("models/a/b.mdl") is None


@pytest.mark.parametrize("kind", ["folders", "extensions"])
def test_empty_folders_or_extensions_are_charged_as_the_walk_meets_them(tmp_path, kind):
    """Three bytes each, 44 million fit a 128 MB tree: the walk stops at the budget, not after keeping them."""
    if kind == "folders":
        tree = b"vtf\0" + b"".join(b"%x\0\0" % i for i in range(300_000)) + b"\0\0"
    else:
        tree = b"".join(b"e%x\0\0" % i for i in range(300_000)) + b"\0"
    with pytest.raises(BudgetExceeded, match=f"VPK {kind}"):
        mounts.mount_archive(str(raw_vpk(tmp_path, tree)))


def test_embedded_data_past_the_end_is_refused_whatever_the_sum(tmp_path):
    tree = b"vtf\0m\0x\0" + record(b"", 0xFFFFFFFF, 0xFFFFFFFF) + b"\0\0\0"
    with pytest.raises(FormatError, match="runs past the end of the file"):
        mounts.mount_archive(str(raw_vpk(tmp_path, tree)))


def test_duplicate_names_read_the_first_and_overlapping_data_reads_for_both(tmp_path):
    data = b"shared bytes"
    first, second = record(data, 0), record(data[:6], 0)
    tree = b"vmt\0m\0x\0" + first + b"X\0" + second + b"\0\0\0"
    archive = mounts.mount_archive(str(raw_vpk(tmp_path, tree, data)))
    assert archive.read(archive.find("m/x.vmt")) == data
    assert archive.read(archive.find("m/X.VMT")) == data  # the first of the names that differ in case only
    assert [archive.read(i) for i in range(len(archive))] == [data, data[:6]]


def test_a_huge_extension_and_folder_name_mount_and_list(tmp_path):
    extension, folder = b"e" * 200_000, b"f" * 300_000
    tree = extension + b"\0" + folder + b"\0x\0" + record(b"d") + b"\0\0\0"
    archive = mounts.mount_archive(str(raw_vpk(tmp_path, tree, b"d")))
    (name,) = archive.entries()
    assert name == f"{'f' * 300_000}/x.{'e' * 200_000}" and archive.read(archive.find(name)) == b"d"
    assert archive.is_folder("F" * 300_000)


def test_gma_sizes_that_overflow_their_running_total_are_refused(tmp_path):
    entries = [GEntry("models/a.mdl", b"", size=1 << 62), GEntry("models/b.mdl", b"", size=1 << 62)]
    path = tmp_path / "sum.gma"
    path.write_bytes(gma_bytes(entries))
    with pytest.raises(FormatError, match=r"has size .* runs past the end"):
        mounts.mount_archive(str(path))


def test_gma_files_in_and_out_of_folder_order_list_and_read(tmp_path):
    files = [("b/1.txt", b"1"), ("a/2.txt", b"2"), ("b/3.txt", b"3"), ("top.txt", b"t"), ("B\\4.txt", b"4")]
    path = tmp_path / "order.gma"
    path.write_bytes(gma_bytes([GEntry(n, d) for n, d in files]))
    archive = mounts.mount_archive(str(path))
    assert sorted(archive.listing("b")) == ["1.txt", "3.txt", "4.txt"]
    assert {n: archive.read(archive.find(n)) for n, _ in files} == dict(files)
    assert sorted(archive.listing("")) == ["a", "b", "top.txt"]


def test_an_archive_of_many_parts_names_each_part_beside_it(tmp_path):
    entries = [WEntry(f"m/x{i}.vtf", bytes([i]), part=i) for i in range(20)]
    archive = mounts.mount_archive(str(write_vpk(tmp_path, "pak01", entries)))
    assert [archive.read(archive.find(e.name)) for e in entries] == [e.data for e in entries]
    with pytest.raises(FormatError, match="parts go to 999"):
        tree = b"vtf\0m\0x\0" + struct.pack("<IHHIIH", 0, 0, 1000, 0, 1, 0xFFFF) + b"\0\0\0"
        mounts.mount_archive(str(raw_vpk(tmp_path, tree, name="parts_dir.vpk")))


def test_mounted_archives_are_let_go_past_the_cache_bytes(tmp_path, monkeypatch):
    """The session cache keeps at most MAX_CACHED_BYTES of directories (each may hold 128 MiB); one let go is read
    again when asked for, not kept alive by the path lookup beside the cache."""
    paths = [write_vpk(tmp_path / str(i), "pak", [WEntry(f"m/x{j}.vtf", b"x") for j in range(50)]) for i in range(3)]
    size = len(mounts.mount_archive(str(paths[0])).text)
    mounts.forget_archives()
    monkeypatch.setattr(mounts, "MAX_CACHED_BYTES", 2 * size)
    reads = []
    real = mounts.read_vpk
    monkeypatch.setattr(mounts, "read_vpk", lambda path: reads.append(path) or real(path))
    for path in [*paths, paths[2], paths[1], paths[0]]:
        mounts.mount_archive(str(path))
    assert [Path(p).parent.name for p in reads] == ["0", "1", "2", "0"]
    assert len(mounts._ARCHIVES) == 2 and mounts._KEPT[0] == 2 * size
