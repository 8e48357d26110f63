"""Valve's VPK archives, versions 1 and 2: the directory tree of a ``_dir.vpk`` (or a single-file VPK). No ``bpy``.

Layout (little-endian): a header (signature 0x55AA1234, version, tree size; version 2 adds four section sizes),
then the tree: for each extension, for each folder, for each file a NUL-terminated name and an 18-byte record
(CRC32, preload size, archive index, offset, length, 0xFFFF), then that many preload bytes; empty strings end each
level, and ``" "`` stands for "no extension" or "the root folder". Archive index 0x7FFF means the data follows the
tree in this same file; any other index ``n`` names the part ``<stem>_NNN.vpk`` beside the directory file.

The tree is walked with one tight loop over the bytes (a ``find`` and three index operations per entry) and the
records gathered with one numpy fancy index, so a 100,000-entry directory mounts in tens of milliseconds. Every
offset, count and size from the file is checked before use; a bad one is a ``FormatError`` with its offset.
"""

from __future__ import annotations

import os
import struct

import numpy as np

from ..budget import current_budget
from ..errors import FormatError, printable
from .archive import EMBEDDED, Archive, folder_key, unsafe
from .files import open_regular, read_at

SIGNATURE = 0x55AA1234
RECORD = 18
MAX_PART = 999  # parts are named with three digits, as the engine names them
MAX_PARTS = 512  # distinct parts one directory may name (real ones name under 300)
MAX_TREE = 128 << 20  # bytes of directory tree (× the Work Limit): a real 100,000-entry tree is about 4 MB
_RECORD = np.dtype(
    [("crc", "<u4"), ("preload", "<u2"), ("part", "<u2"), ("offset", "<u4"), ("length", "<u4"), ("end", "<u2")]
)


def is_vpk_name(name: str) -> bool:
    return name.lower().endswith(".vpk")


def read_vpk(path: str) -> Archive:
    """The index of the VPK directory file at ``path`` (entry data is read later, on demand)."""
    fd, info = open_regular(path)
    try:
        head = read_at(fd, 0, min(28, info.st_size), path)
        if len(head) < 12:
            raise FormatError(path, 0, f"a VPK header needs 12 bytes, the file has {info.st_size}")
        signature, version, tree_size = struct.unpack_from("<III", head)
        if signature != SIGNATURE:
            raise FormatError(path, 0, f"not a VPK (signature {signature:#010x}, expected {SIGNATURE:#010x})")
        if version not in (1, 2):
            raise FormatError(path, 4, f"VPK version {version} is not supported (1 and 2 are)")
        header = 12 if version == 1 else 28
        if len(head) < header:
            raise FormatError(path, 0, f"a VPK v2 header needs 28 bytes, the file has {info.st_size}")
        if header + tree_size > info.st_size:
            raise FormatError(
                path, 8, f"the directory tree of {tree_size:,} bytes runs past the end of the file ({info.st_size:,})"
            )
        budget = current_budget()
        budget.check(
            path, "VPK directory tree", tree_size, min(budget.file_bytes, int(MAX_TREE * budget.scale)), "bytes", 8
        )
        tree = read_at(fd, header, tree_size, path)
    finally:
        os.close(fd)
    return parse_tree(path, tree, version, header, info.st_size)


def parse_tree(path: str, tree: bytes, version: int, header: int, file_size: int) -> Archive:
    ends, runs = _walk(path, tree, header)
    count = len(ends)
    name_end = np.asarray(ends, dtype=np.int64)
    at = name_end + 1  # each record follows its name's NUL
    raw = np.frombuffer(tree, np.uint8)
    if count and int(at[-1]) + RECORD > len(raw):
        raise FormatError(path, header + int(at[-1]), "an entry's record runs past the directory tree")
    if count:  # one row of 18 bytes per record, gathered at once through a sliding view
        rows = np.lib.stride_tricks.as_strided(raw, shape=(len(raw) - RECORD + 1, RECORD), strides=(1, 1))
        rec = np.ascontiguousarray(rows[at]).view(_RECORD).reshape(count)
    else:
        rec = np.zeros(0, _RECORD)
    if count and np.any(rec["end"] != 0xFFFF):
        bad = int(np.flatnonzero(rec["end"] != 0xFFFF)[0])
        raise FormatError(path, header + int(at[bad]) + 16, "an entry record does not end with 0xFFFF")
    preload_len = rec["preload"].astype(np.int64)
    name_at = np.empty(count, dtype=np.int64)  # a name starts where the previous entry's preload ends...
    if count:
        name_at[1:] = at[:-1] + RECORD + preload_len[:-1]
        for first, end, _folder, _suffix, start in runs:  # ...or where its folder's run starts
            if end > first:
                name_at[first] = start
    part = rec["part"]
    offset = rec["offset"].astype(np.int64)
    length = rec["length"].astype(np.int64)
    named = np.unique(part[part != EMBEDDED])
    if len(named) and int(named[-1]) > MAX_PART:
        bad = int(np.flatnonzero(part == named[-1])[0])
        raise FormatError(
            path, header + int(at[bad]) + 6, f"an entry names archive part {int(named[-1])}; parts go to {MAX_PART}"
        )
    if len(named) > MAX_PARTS:
        raise FormatError(path, None, f"the directory names {len(named):,} archive parts; at most {MAX_PARTS} are read")
    embedded = part == EMBEDDED
    data_start = header + len(tree)
    if np.any(embedded):
        stops = offset[embedded] + length[embedded]
        if int(stops.max()) > file_size - data_start:
            bad = int(np.flatnonzero(embedded)[int(np.argmax(stops))])
            raise FormatError(
                path,
                header + int(at[bad]) + 8,
                f"an entry's data ({int(length[bad]):,} bytes at {int(offset[bad]):,} after the tree) runs past the "
                f"end of the file",
            )
        offset = np.where(embedded, offset + data_start, offset)
    spelled: dict[str, str] = {}
    grouped: dict[str, list[tuple[int, int, str]]] = {}
    for first, end, folder, suffix, _start in runs:
        key = folder_key(folder)
        spelled.setdefault(key, folder.strip("/"))
        grouped.setdefault(key, []).append((first, end, suffix))
    _check_names(path, raw, name_at, name_end, runs, header)
    return Archive(
        path=path,
        kind=f"VPK v{version}",
        text=tree,
        name_at=name_at,
        name_end=name_end,
        runs=grouped,
        spelled=spelled,
        crc=rec["crc"].copy(),
        part=part.copy(),
        offset=offset,
        length=length,
        preload_at=at + RECORD,
        preload_len=preload_len,
        preload=tree,
    )


def _text(raw: bytes) -> str:
    return raw.decode("utf-8", "surrogateescape")


def _walk(path: str, tree: bytes, header: int) -> tuple[list[int], list[tuple[int, int, str, str, int]]]:
    """Where each entry's name ends (its record follows) and the (first, end, folder, suffix, start) runs of
    entries sharing a folder and extension, in the tree's order: one ``find`` and two byte reads per entry."""
    find = tree.find
    ends: list[int] = []
    runs: list[tuple[int, int, str, str, int]] = []
    append = ends.append
    size = len(tree)
    pos = 0
    try:
        while True:
            end = find(b"\0", pos)
            if end < 0:
                raise _unterminated(path, header + pos, "extension")
            extension = tree[pos:end]
            pos = end + 1
            if not extension:
                break
            suffix = "" if extension == b" " else "." + _text(extension)
            while True:
                end = find(b"\0", pos)
                if end < 0:
                    raise _unterminated(path, header + pos, "folder name")
                folder = tree[pos:end]
                pos = end + 1
                if not folder:
                    break
                first, start = len(ends), pos
                while True:
                    end = find(b"\0", pos)
                    if end == pos:
                        pos += 1
                        break
                    if end < 0:
                        raise _unterminated(path, header + pos, "file name")
                    append(end)
                    pos = end + 1 + RECORD + (tree[end + 5] | tree[end + 6] << 8)
                if pos > size:
                    raise FormatError(path, header + ends[-1] + 1, "an entry's record or preload runs past the tree")
                runs.append((first, len(ends), "" if folder == b" " else _text(folder), suffix, start))
    except IndexError:
        raise FormatError(
            path, header + (ends[-1] + 1 if ends else 0), "an entry's record runs past the directory tree"
        ) from None
    return ends, runs


def _unterminated(path: str, offset: int, what: str) -> FormatError:
    return FormatError(path, offset, f"the directory tree ends inside a {what} (no NUL before its end)")


def _check_names(
    path: str, raw: np.ndarray, name_at: np.ndarray, name_end: np.ndarray, runs: list, header: int
) -> None:
    """Refuse an archive naming an entry that would mean a place outside it (``..``, absolute, a drive). Folders
    are checked one by one; names (100,000 of them) at once: only those holding a separator, a colon or being
    ``..`` are looked at closely."""
    for _first, _end, folder, _suffix, _start in runs:
        if unsafe(folder):
            raise FormatError(path, None, f"an entry folder '{printable(folder, 120)}' climbs out or is absolute")
    for suffix in {run[3] for run in runs}:
        if any(c in suffix for c in "/\\:"):
            raise FormatError(path, None, f"an extension '{printable(suffix, 120)}' holds a path separator or drive")
    if not len(name_at):
        return
    odd = np.flatnonzero((raw == ord("/")) | (raw == ord("\\")) | (raw == ord(":")))  # few, mostly in records
    owner = np.searchsorted(name_at, odd, side="right") - 1
    inside = (owner >= 0) & (odd < name_end[np.maximum(owner, 0)])
    suspect = np.zeros(len(name_at), dtype=bool)
    suspect[owner[inside]] = True
    second = raw[np.minimum(name_at + 1, len(raw) - 1)]
    dots = (name_end - name_at == 2) & (raw[name_at] == ord(".")) & (second == ord("."))
    for i in np.flatnonzero(suspect | dots).tolist():
        run = next(r for r in runs if r[0] <= i < r[1])
        name = _text(bytes(raw[name_at[i] : name_end[i]])) + run[3]
        whole = f"{run[2]}/{name}" if run[2] else name
        if unsafe(whole) or unsafe(name):
            raise FormatError(
                path, header + int(name_at[i]), f"entry '{printable(whole, 120)}' climbs out or is absolute"
            )
