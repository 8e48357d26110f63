"""Garry's Mod addon archives (``.gma``, written by gmad). No ``bpy``.

Layout (little-endian): ``GMAD``, a version byte, a 64-bit Steam id and timestamp, (version > 1) a list of
NUL-terminated "required content" strings ended by an empty one, the addon's name, description and author strings,
a 32-bit addon version, then one record per file (a nonzero 32-bit number, its NUL-terminated path, a 64-bit size,
a CRC32) ended by a zero number; the files' data follow in the same order. Only the header and the file table are
read when the archive is mounted (a growing window, bounded by the budget), the data on demand.
"""

from __future__ import annotations

import os
import struct

import numpy as np

from ..budget import current_budget
from ..errors import FormatError, printable
from .archive import MAX_FLAT_FILES, Archive, flat_archive
from .files import open_regular, read_at

MAGIC = b"GMAD"
FIRST_WINDOW = 1 << 16
MAX_TABLE = 64 << 20  # bytes of header and file table (× the Work Limit): 200,000 long names fit


class _Short(Exception):
    """The window read so far ends inside the file table: read more."""


def read_gma(path: str) -> Archive:
    fd, info = open_regular(path)
    try:
        budget = current_budget()
        limit = min(info.st_size, budget.file_bytes, int(MAX_TABLE * budget.scale))
        window = min(FIRST_WINDOW, info.st_size)
        while True:
            head = read_at(fd, 0, window, path)
            try:
                return _parse(path, head, info.st_size)
            except _Short:
                if window >= info.st_size:
                    raise FormatError(path, window, "the file ends inside the addon's file table") from None
                if window >= limit:
                    raise budget.exceeded(path, "GMA header and file table", window, limit, "bytes") from None
                window = min(window * 4, limit)
    finally:
        os.close(fd)


def _parse(path: str, data: bytes, file_size: int) -> Archive:
    if data[:4] != MAGIC:
        if len(data) < 4:
            raise _Short
        raise FormatError(path, 0, f"not a GMA addon (magic {data[:4]!r}, expected {MAGIC!r})")
    pos = 4 + 1 + 8 + 8
    version = data[4] if len(data) > 4 else 0
    if version > 3:
        raise FormatError(path, 4, f"GMA version {version} is not supported (1 to 3 are)")

    def string(at: int) -> tuple[bytes, int]:
        end = data.find(b"\0", at)
        if end < 0:
            raise _Short
        return data[at:end], end + 1

    if version > 1:
        while True:
            text, pos = string(pos)
            if not text:
                break
    for _ in range(3):  # name, description, author
        _, pos = string(pos)
    pos += 4  # addon version
    names: list[str] = []
    sizes: list[int] = []
    crcs: list[int] = []
    where: list[int] = []
    unpack = struct.unpack_from
    while True:
        if pos + 4 > len(data):
            raise _Short
        (number,) = unpack("<I", data, pos)
        if number == 0:
            pos += 4
            break
        raw, after = string(pos + 4)
        if after + 12 > len(data):
            raise _Short
        size, crc = unpack("<qI", data, after)
        if size < 0 or size > file_size:  # (bounded, the sizes' running total cannot overflow)
            raise FormatError(
                path,
                after,
                f"file '{printable(raw.decode('utf-8', 'replace'), 120)}' has size {size:,}: it runs past the end "
                f"of the addon ({file_size:,} bytes)",
            )
        if len(names) >= MAX_FLAT_FILES:
            raise FormatError(path, pos, f"the addon lists more than {MAX_FLAT_FILES:,} files")
        names.append(raw.decode("utf-8", "surrogateescape"))
        sizes.append(size)
        crcs.append(crc)
        where.append(pos)
        pos = after + 12
    length = np.asarray(sizes, dtype=np.int64)
    ends = np.cumsum(length) if len(length) else length
    if len(ends) and int(ends[-1]) > file_size - pos:
        bad = int(np.argmax(ends > file_size - pos))
        raise FormatError(
            path,
            where[bad],
            f"the data of file '{printable(names[bad], 120)}' ({sizes[bad]:,} bytes) runs past the end of the "
            f"addon ({file_size:,} bytes)",
        )
    offset = pos + ends - length
    return flat_archive(path, f"GMA v{version}", names, where, offset, length, np.asarray(crcs, dtype=np.uint32))
