"""Synthetic VPK (v1, v2, single-file, multi-part, preload) and GMA archives for the tests, including every hostile
corner the readers must refuse: each field the file gives can be overridden per entry.

An entry is written as ``WEntry(name, data)``; ``part`` says where its data goes (``EMBEDDED``: after the tree in
the directory file; a number: ``<stem>_NNN.vpk``), ``preload`` how many of its first bytes sit in the tree. The
other fields replace what the writer would store (a wrong CRC, an offset beyond the file, a raw name with ``..``).
"""

from __future__ import annotations

import struct
import zlib
from dataclasses import dataclass
from pathlib import Path

EMBEDDED = 0x7FFF
SIGNATURE = 0x55AA1234


@dataclass
class WEntry:
    name: str  # "models/x.mdl"; "folder/" part, stem and extension are split as a VPK stores them
    data: bytes
    part: int = EMBEDDED
    preload: int = 0  # bytes of data kept in the tree
    crc: int | None = None
    offset: int | None = None
    length: int | None = None
    preload_size: int | None = None  # stored preload size (the bytes written stay ``preload``)
    terminator: int = 0xFFFF


def _split(name: str) -> tuple[str, str, str]:
    folder, _, base = name.rpartition("/")
    stem, dot, ext = base.rpartition(".")
    if not dot:
        stem, ext = base, ""
    return folder or " ", stem, ext or " "


def vpk_bytes(entries: list[WEntry], version: int = 1, tail: bytes = b"") -> tuple[bytes, dict[int, bytes]]:
    """The directory file's bytes and each part's bytes. Entries are grouped by extension, then folder, as Valve's
    tool writes them; data is laid out in entry order."""
    groups: dict[str, dict[str, list[WEntry]]] = {}
    for entry in entries:
        folder, _, ext = _split(entry.name)
        groups.setdefault(ext, {}).setdefault(folder, []).append(entry)
    parts: dict[int, bytearray] = {}
    embedded = bytearray()
    tree = bytearray()
    for ext, folders in groups.items():
        tree += ext.encode() + b"\0"
        for folder, items in folders.items():
            tree += folder.encode() + b"\0"
            for entry in items:
                _, stem, _ = _split(entry.name)
                head, rest = entry.data[: entry.preload], entry.data[entry.preload :]
                target = embedded if entry.part == EMBEDDED else parts.setdefault(entry.part, bytearray())
                offset = len(target)
                target += rest
                crc = zlib.crc32(entry.data) if entry.crc is None else entry.crc
                tree += stem.encode("utf-8", "surrogateescape") + b"\0"
                tree += struct.pack(
                    "<IHHIIH",
                    crc,
                    len(head) if entry.preload_size is None else entry.preload_size,
                    entry.part,
                    offset if entry.offset is None else entry.offset,
                    len(rest) if entry.length is None else entry.length,
                    entry.terminator,
                )
                tree += head
            tree += b"\0"
        tree += b"\0"
    tree += b"\0"
    if version == 1:
        header = struct.pack("<III", SIGNATURE, 1, len(tree))
    else:
        header = struct.pack("<IIIIIII", SIGNATURE, 2, len(tree), len(embedded), 0, 0, 0)
    return header + bytes(tree) + bytes(embedded) + tail, {k: bytes(v) for k, v in parts.items()}


def write_vpk(folder: Path, stem: str, entries: list[WEntry], version: int = 1, single: bool = False) -> Path:
    """``<stem>_dir.vpk`` and its parts in ``folder`` (``single``: ``<stem>.vpk``, data embedded); the dir file."""
    folder.mkdir(parents=True, exist_ok=True)
    directory, parts = vpk_bytes(entries, version)
    path = folder / (f"{stem}.vpk" if single else f"{stem}_dir.vpk")
    path.write_bytes(directory)
    for number, data in parts.items():
        (folder / f"{stem}_{number:03d}.vpk").write_bytes(data)
    return path


@dataclass
class GEntry:
    name: str
    data: bytes
    crc: int | None = None
    size: int | None = None


def gma_bytes(entries: list[GEntry], version: int = 3, required: tuple[str, ...] = ("base",)) -> bytes:
    out = bytearray(b"GMAD" + bytes([version]) + struct.pack("<QQ", 76561197960287930, 1_700_000_000))
    if version > 1:
        for content in required:
            out += content.encode() + b"\0"
        out += b"\0"
    out += b"test addon\0" + b'{"description": "made by tests"}\0' + b"tests\0" + struct.pack("<i", 1)
    for number, entry in enumerate(entries, 1):
        out += struct.pack("<I", number) + entry.name.encode("utf-8", "surrogateescape") + b"\0"
        size = len(entry.data) if entry.size is None else entry.size
        out += struct.pack("<qI", size, zlib.crc32(entry.data) if entry.crc is None else entry.crc)
    out += struct.pack("<I", 0)
    for entry in entries:
        out += entry.data
    out += struct.pack("<I", zlib.crc32(bytes(out)))
    return bytes(out)


def write_gma(path: Path, entries: list[GEntry], version: int = 3) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(gma_bytes(entries, version))
    return path


def model_entries(folder: Path, prefix: str = "") -> list[tuple[str, bytes]]:
    """(name inside the archive, bytes) of every file under ``folder``, names with ``/``."""
    return [
        (prefix + p.relative_to(folder).as_posix(), p.read_bytes()) for p in sorted(folder.rglob("*")) if p.is_file()
    ]


def troika_bytes(
    files: dict[str, bytes],
    offsets: dict[str, int] | None = None,
    name_lengths: dict[str, int] | None = None,
    count: int | None = None,
    extra: bytes = b"",
) -> bytes:
    """A Troika (Bloodlines) pack: the files' data, a directory of (name length, name, offset, size), ``extra``
    bytes, then the trailer (count, directory offset, 0). ``offsets``, ``name_lengths`` and ``count`` replace what
    the writer would store."""
    data, records = b"", b""
    for name, body in files.items():
        raw = name.encode()
        offset = (offsets or {}).get(name, len(data))
        records += struct.pack("<I", (name_lengths or {}).get(name, len(raw))) + raw
        records += struct.pack("<II", offset, len(body))
        data += body
    trailer = struct.pack("<IIB", len(files) if count is None else count, len(data), 0)
    return data + records + extra + trailer
