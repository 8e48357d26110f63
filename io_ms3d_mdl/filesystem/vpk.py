"""Valve's VPK archives, versions 1 and 2: the directory tree of a ``_dir.vpk`` (or a single-file VPK). No ``bpy``.

Layout (little-endian): a header (signature 0x55AA1234, version, tree size; version 2 adds four section sizes),
then the tree: for each extension, for each folder, for each file a NUL-terminated name and an 18-byte record
(CRC32, preload size, archive index, offset, length, 0xFFFF), then that many preload bytes; empty strings end each
level, and ``" "`` stands for "no extension" or "the root folder". Archive index 0x7FFF means the data follows the
tree in this same file; any other index ``n`` names the part ``<stem>_NNN.vpk`` beside the directory file.

The tree is walked with one tight loop over the bytes (a ``find`` and three index operations per entry, a ``find``
and three appends per folder); everything after it works on all entries and folders at once (records gathered
with numpy fancy indexing, folder names decoded in one piece, names checked in chunks), so a directory of 100,000
entries or 100,000 folders mounts in about 0.1 s and nothing is quadratic. Every offset, count and size from the
file is checked before use; a bad one is a ``FormatError`` with its offset; entries, folders and extensions are
charged to the budget (``archive_entries``, ``archive_folders``).
"""

from __future__ import annotations

import os
import struct
from array import array

import numpy as np

from ..budget import current_budget
from ..errors import FormatError, printable
from .archive import EMBEDDED, Archive, folder_key, folder_runs, unsafe
from .files import open_regular, read_at
from .troika_vpk import TRAILER, read_troika_directory, troika_trailer

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
    """The index of the VPK directory file at ``path`` (entry data is read later, on demand); a file without
    Valve's signature whose end is a Troika directory trailer is read as Troika's (``troika_vpk``)."""
    fd, info = open_regular(path)
    try:
        head = read_at(fd, 0, min(28, info.st_size), path)
        valve = head[:4] == struct.pack("<I", SIGNATURE)
        if not valve:
            tail = read_at(fd, max(0, info.st_size - TRAILER), min(TRAILER, info.st_size), path)
            found = troika_trailer(tail, info.st_size)
            if found is not None:
                return read_troika_directory(path, fd, info.st_size, *found)
        if len(head) < 12:
            raise FormatError(path, 0, f"a VPK header needs 12 bytes, the file has {info.st_size}")
        if not valve:
            (signature,) = struct.unpack_from("<I", head)
            raise FormatError(
                path, 0, f"not a VPK (signature {signature:#010x}, expected {SIGNATURE:#010x}; nor Troika's)"
            )
        tree, version, header = _valve_tree(path, fd, head, info.st_size)
    finally:
        os.close(fd)
    return parse_tree(path, tree, version, header, info.st_size)


def _valve_tree(path: str, fd: int, head: bytes, size: int) -> tuple[bytes, int, int]:
    """The directory tree's bytes, the version and the header's size, each checked against the file."""
    _, version, tree_size = struct.unpack_from("<III", head)
    if version not in (1, 2):
        raise FormatError(path, 4, f"VPK version {version} is not supported (1 and 2 are)")
    header = 12 if version == 1 else 28
    if len(head) < header:
        raise FormatError(path, 0, f"a VPK v2 header needs 28 bytes, the file has {size}")
    if header + tree_size > size:
        raise FormatError(
            path, 8, f"the directory tree of {tree_size:,} bytes runs past the end of the file ({size:,})"
        )
    budget = current_budget()
    budget.check(
        path, "VPK directory tree", tree_size, min(budget.file_bytes, int(MAX_TREE * budget.scale)), "bytes", 8
    )
    return read_at(fd, header, tree_size, path), version, header


def parse_tree(path: str, tree: bytes, version: int, header: int, file_size: int) -> Archive:
    budget = current_budget()
    ends, (first, at, end), extensions = _walk(path, tree, header, budget.archive_folders)
    count, runs = len(ends), len(first)
    # the walk keeps 8 bytes an entry (at most one per 20 bytes of tree); what follows keeps more
    budget.check(path, "VPK entries", count, budget.archive_entries, "entries")
    index = np.int32 if len(tree) + RECORD < 1 << 31 else np.int64  # offsets into the tree
    name_end = np.frombuffer(ends, np.int64).astype(index) if count else np.zeros(0, index)
    run_first, folder_at, folder_end = (
        np.frombuffer(a, np.int64) if runs else np.zeros(0, np.int64) for a in (first, at, end)
    )
    run_end = np.append(run_first[1:], count).astype(np.int64)
    run_suffix = np.zeros(runs, np.uint32)
    for number, (start, _) in enumerate(extensions):
        run_suffix[start:] = number
    suffixes = [suffix for _, suffix in extensions]
    raw = np.frombuffer(tree, np.uint8)
    crc, preload_len, part, offset, length = _records(path, raw, name_end, header)
    name_at = np.empty(count, dtype=index)  # a name starts where the previous entry's preload ends...
    if count:
        name_at[1:] = name_end[:-1] + (1 + RECORD) + preload_len[:-1]
        filled = run_end > run_first  # ...or where its folder's run starts
        name_at[run_first[filled]] = folder_end[filled] + 1
    named = np.unique(part[part != EMBEDDED])
    if len(named) and int(named[-1]) > MAX_PART:
        bad = int(np.flatnonzero(part == named[-1])[0])
        raise FormatError(
            path,
            header + int(name_end[bad]) + 7,
            f"an entry names archive part {int(named[-1])}; parts go to {MAX_PART}",
        )
    if len(named) > MAX_PARTS:
        raise FormatError(path, None, f"the directory names {len(named):,} archive parts; at most {MAX_PARTS} are read")
    data_start = header + len(tree)
    embedded = np.flatnonzero(part == EMBEDDED)
    if len(embedded):
        stops = offset[embedded].astype(np.int64) + length[embedded]
        if int(stops.max()) > file_size - data_start:
            bad = int(embedded[int(np.argmax(stops))])
            raise FormatError(
                path,
                header + int(name_end[bad]) + 9,
                f"an entry's data ({int(length[bad]):,} bytes at {int(offset[bad]):,} after the tree) runs past the "
                f"end of the file",
            )
    for text in suffixes:
        if any(c in text for c in "/\\:"):
            raise FormatError(path, None, f"an extension '{printable(text, 120)}' holds a path separator or drive")
    folders, run_next = _folders(path, tree, folder_at, folder_end)
    _check_names(path, tree, raw, name_at, name_end, run_first, run_suffix, suffixes, header)
    small = np.int32
    return Archive(
        path=path,
        kind=f"VPK v{version}",
        text=tree,
        name_at=name_at,
        name_end=name_end,
        run_first=run_first.astype(small),
        run_end=run_end.astype(small),
        run_suffix=run_suffix,
        run_next=run_next,
        folder_at=folder_at.astype(index),
        folder_end=folder_end.astype(index),
        folder_text=tree,
        suffixes=suffixes,
        folders=folders,
        crc=crc,
        part=part,
        offset=offset,
        length=length,
        preload_at=name_end + (1 + RECORD),
        preload_len=preload_len,
        preload=tree,
        embedded_base=data_start,
    )


def _records(path: str, raw: np.ndarray, name_end: np.ndarray, header: int) -> tuple[np.ndarray, ...]:
    """Each entry's record fields (CRC, preload size, part, offset, length), gathered a slice of entries at a time
    (the 18-byte rows are copied only a million at once) and checked for their 0xFFFF terminator."""
    count = len(name_end)
    crc, offset, length = (np.empty(count, np.uint32) for _ in range(3))
    preload_len, part = np.empty(count, np.uint16), np.empty(count, np.uint16)
    if not count:
        return crc, preload_len, part, offset, length
    if int(name_end[-1]) + 1 + RECORD > len(raw):
        raise FormatError(path, header + int(name_end[-1]) + 1, "an entry's record runs past the directory tree")
    rows = np.lib.stride_tricks.as_strided(raw, shape=(len(raw) - RECORD + 1, RECORD), strides=(1, 1))
    step = 1 << 20
    for first in range(0, count, step):
        at = name_end[first : first + step].astype(np.int64) + 1
        rec = np.ascontiguousarray(rows[at]).view(_RECORD).reshape(len(at))
        wrong = np.flatnonzero(rec["end"] != 0xFFFF)
        if len(wrong):
            raise FormatError(path, header + int(at[wrong[0]]) + 16, "an entry record does not end with 0xFFFF")
        done = slice(first, first + len(at))
        crc[done], preload_len[done], part[done] = rec["crc"], rec["preload"], rec["part"]
        offset[done], length[done] = rec["offset"], rec["length"]
    return crc, preload_len, part, offset, length


def _text(raw: bytes) -> str:
    return raw.decode("utf-8", "surrogateescape")


def _walk(
    path: str, tree: bytes, header: int, most: int
) -> tuple[array, tuple[array, array, array], list[tuple[int, str]]]:
    """Where each entry's name ends (its record follows); per run of entries sharing a folder and extension, its
    first entry and where its folder's name starts and ends in the tree (a run ends where the next begins); and
    each extension with the first run that has it. One ``find`` and two byte reads per entry, one ``find`` and
    three appends per folder: a 100,000-folder tree is walked as fast as a 100,000-entry one. More than ``most``
    folders or extensions (empty ones take 3 bytes each) stop the walk before it keeps them."""
    find = tree.find
    ends = array("q")
    append = ends.append
    runs = run_first, folder_at, folder_end = array("q"), array("q"), array("q")
    add_run, add_at, add_end = run_first.append, folder_at.append, folder_end.append
    extensions: list[tuple[int, str]] = []
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
            extensions.append((len(run_first), "" if extension == b" " else "." + _text(extension)))
            if len(extensions) > most:
                _too_many(path, "extensions", len(extensions), most)
            while True:
                end = find(b"\0", pos)
                if end <= pos:
                    if end == pos:
                        pos += 1
                        break
                    raise _unterminated(path, header + pos, "folder name")
                add_run(len(ends))
                add_at(pos)
                add_end(end)
                if len(run_first) > most:
                    _too_many(path, "folders (once per extension)", len(run_first), most)
                pos = end + 1
                while True:
                    end = find(b"\0", pos)
                    if end <= pos:
                        if end == pos:
                            pos += 1
                            break
                        raise _unterminated(path, header + pos, "file name")
                    append(end)
                    pos = end + 1 + RECORD + (tree[end + 5] | tree[end + 6] << 8)
                if pos > size:
                    raise FormatError(path, header + ends[-1] + 1, "an entry's record or preload runs past the tree")
    except IndexError:
        raise FormatError(
            path, header + (ends[-1] + 1 if ends else 0), "an entry's record runs past the directory tree"
        ) from None
    return ends, runs, extensions


def _too_many(path: str, what: str, count: int, most: int) -> None:
    raise current_budget().exceeded(path, f"VPK {what}", count, most, what.split()[0])


def _unterminated(path: str, offset: int, what: str) -> FormatError:
    return FormatError(path, offset, f"the directory tree ends inside a {what} (no NUL before its end)")


_FOLDER_MARKS = np.zeros(256, dtype=bool)
_FOLDER_MARKS[[ord("\\"), ord("."), ord(":")]] = True  # a folder holding one is normalised and checked one by one


def _folders(
    path: str, tree: bytes, folder_at: np.ndarray, folder_end: np.ndarray
) -> tuple[dict[str, int], np.ndarray]:
    """Folder key → first run, and each run's next run of the same folder (-1: none), in a few passes over all
    folder names at once. Only folders that need more than lower-casing (a ``\\``, ``.``, ``:``, a leading,
    trailing or doubled ``/``, the root ``" "``) are normalised and checked one by one; one that climbs out or is
    absolute refuses the archive."""
    count = len(folder_at)
    if not count:
        return {}, np.zeros(0, np.int32)
    lengths = folder_end - folder_at
    starts = np.zeros(count, np.int64)  # where each name starts in ``data``: all of them, each with its NUL
    starts[1:] = np.cumsum(lengths[:-1] + 1)
    total = int(starts[-1] + lengths[-1] + 1)
    data = np.frombuffer(tree, np.uint8)[np.arange(total) + np.repeat(folder_at - starts, lengths + 1)]
    keys = _text(data[:-1].tobytes()).lower().split("\0")
    marked = np.logical_or.reduceat(_FOLDER_MARKS[data], starts) if len(data) else np.zeros(count, bool)
    slash = data == ord("/")
    odd = marked | slash[starts] | slash[starts + lengths - 1] | ((lengths == 1) & (data[starts] == ord(" ")))
    doubled = np.flatnonzero(slash[:-1] & slash[1:])
    if len(doubled):
        odd[np.searchsorted(starts, doubled, side="right") - 1] = True
    del data, slash
    for run in np.flatnonzero(odd).tolist():
        spelled = _text(tree[int(folder_at[run]) : int(folder_end[run])])
        if spelled == " ":
            keys[run] = ""
            continue
        if unsafe(spelled):
            raise FormatError(path, None, f"an entry folder '{printable(spelled, 120)}' climbs out or is absolute")
        keys[run] = folder_key(spelled)
    return folder_runs(keys)


def _check_names(
    path: str,
    tree: bytes,
    raw: np.ndarray,
    name_at: np.ndarray,
    name_end: np.ndarray,
    run_first: np.ndarray,
    run_suffix: np.ndarray,
    suffixes: list[str],
    header: int,
) -> None:
    """Refuse an archive naming an entry that would mean a place outside it (``..``, absolute, a drive), its
    folder being safe. Only a name starting with a separator, with a colon second, holding two dots in a row or
    ending where its extension could finish a ``..`` can (a separator inside a name is harmless): those are found
    for all names at once, a few megabytes of the tree at a time, and looked at one by one with their extension
    (real archives have few)."""
    count = len(name_at)
    if not count:
        return
    first_byte, last_byte = raw[name_at], raw[name_end - 1]
    second = raw[np.minimum(name_at + 1, len(raw) - 1)]
    suspect = (first_byte == ord("/")) | (first_byte == ord("\\")) | ((name_end - name_at > 1) & (second == ord(":")))
    # a name ending in "/", "\\" or "." can make ".." with its extension ("a/" + ".." from the extension ".")
    suspect |= (last_byte == ord("/")) | (last_byte == ord("\\")) | (last_byte == ord("."))
    step = 4 << 20
    dotted = tree.find(b"..") >= 0  # most trees have none anywhere: no scan (a small tree mounts in microseconds)
    for start in range(0, len(raw) if dotted else 0, step):
        chunk = raw[start : start + step + 1]
        at = np.flatnonzero((chunk[:-1] == ord(".")) & (chunk[1:] == ord("."))) + start
        owner = np.searchsorted(name_at, at, side="right") - 1
        inside = (owner >= 0) & (at + 1 < name_end[np.maximum(owner, 0)])
        suspect[owner[inside]] = True
    picked = np.flatnonzero(suspect)
    runs = np.searchsorted(run_first, picked, side="right") - 1
    for i, run in zip(picked.tolist(), runs.tolist(), strict=True):
        name = _text(bytes(raw[name_at[i] : name_end[i]])) + suffixes[int(run_suffix[run])]
        if unsafe(name):
            raise FormatError(
                path, header + int(name_at[i]), f"entry '{printable(name, 120)}' climbs out or is absolute"
            )
