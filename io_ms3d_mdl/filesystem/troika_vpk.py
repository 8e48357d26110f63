"""Troika's VPK archives (Vampire: The Masquerade – Bloodlines' ``pack000.vpk`` …), which share only the suffix
with Valve's. No ``bpy``.

Layout (little-endian, from the Official Patch's ``pack102.vpk`` and ``pack103.vpk``): the files' data from byte 0,
then a directory of one record per file (a 32-bit name length, the name without a NUL, its ``/``-separated path,
spaces allowed; a 32-bit offset and size of its data), then a 9-byte trailer: the file count, the directory's
offset and a zero byte. The directory ends where the trailer starts, and every file's data ends before the
directory. There is no magic: a file is taken for one only when its trailer and directory agree exactly like that.
The directory is read once when mounted (``vpk.read_vpk`` tells a pack from Valve's by its trailer), bounded by the
budget; the data on demand.
"""

from __future__ import annotations

import struct

import numpy as np

from ..budget import current_budget
from ..errors import FormatError, printable
from .archive import MAX_FLAT_FILES, Archive, flat_archive
from .files import read_at

TRAILER = 9
RECORD = 12  # a record's fixed bytes: name length, offset, size
MAX_DIRECTORY = 64 << 20  # bytes of directory (× the Work Limit): real packs list a few thousand files


def troika_trailer(tail: bytes, size: int) -> tuple[int, int] | None:
    """(file count, directory offset) when ``tail``, the last bytes of a file of ``size`` bytes, ends in a Troika
    trailer that leaves room for that many records; None otherwise (a Valve VPK or something else)."""
    if size < TRAILER or len(tail) < TRAILER:
        return None
    count, at, zero = struct.unpack_from("<IIB", tail, len(tail) - TRAILER)
    room = size - TRAILER - at
    if zero != 0 or at > size - TRAILER or count * RECORD > room or (count == 0) != (room == 0):
        return None
    return count, at


def read_troika_directory(path: str, fd: int, size: int, count: int, at: int) -> Archive:
    """The index, from the open pack whose trailer (``troika_trailer``) gave ``count`` files listed at ``at``."""
    budget = current_budget()
    directory_limit = min(budget.file_bytes, int(MAX_DIRECTORY * budget.scale))
    budget.check(path, "Troika VPK directory", size - TRAILER - at, directory_limit, "bytes", size - TRAILER)
    budget.check(path, "Troika VPK entries", count, budget.archive_entries, "entries", size - TRAILER)
    if count > MAX_FLAT_FILES:
        raise FormatError(path, size - TRAILER, f"the pack lists {count:,} files, more than {MAX_FLAT_FILES:,}")
    return _parse(path, read_at(fd, at, size - TRAILER - at, path), count, at)


def _parse(path: str, directory: bytes, count: int, at: int) -> Archive:
    """The records, each checked as it is met (a name runs past the directory, data past the files)."""
    names: list[str] = []
    where: list[int] = []
    offsets = np.empty(count, dtype=np.int64)
    sizes = np.empty(count, dtype=np.int64)
    pos, end = 0, len(directory)
    unpack = struct.unpack_from
    for i in range(count):  # (one record a file: names have no fixed size)
        if pos + 4 > end:
            raise FormatError(path, at + pos, f"the directory ends after {i:,} of its {count:,} files")
        (length,) = unpack("<I", directory, pos)
        if pos + 4 + length + 8 > end:
            raise FormatError(path, at + pos, f"file {i:,}'s name of {length:,} bytes runs past the directory")
        raw = directory[pos + 4 : pos + 4 + length]
        if b"\0" in raw:  # (the index keeps names NUL-separated, as the other archives end theirs)
            shown = printable(raw.decode("utf-8", "replace"), 120)
            raise FormatError(path, at + pos + 4, f"file {i:,}'s name '{shown}' holds a NUL byte")
        offsets[i], sizes[i] = unpack("<II", directory, pos + 4 + length)
        if offsets[i] + sizes[i] > at:
            shown = printable(raw.decode("utf-8", "replace"), 120)
            raise FormatError(
                path,
                at + pos + 4 + length,
                f"the data of file '{shown}' ({int(sizes[i]):,} bytes at {int(offsets[i]):,}) runs into the"
                f" directory at {at:,}",
            )
        names.append(raw.decode("utf-8", "surrogateescape"))
        where.append(at + pos)
        pos += 4 + length + 8
    if pos != end:
        raise FormatError(path, at + pos, f"{end - pos:,} bytes follow the last of the directory's {count:,} files")
    return flat_archive(path, "Troika VPK", names, where, offsets, sizes)
