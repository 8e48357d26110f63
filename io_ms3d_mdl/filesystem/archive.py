"""What every archive answers, whatever its format: the entries of a virtual folder, one entry's bytes. No ``bpy``.

An index keeps the names' bytes as they came (a VPK's tree itself) and the records as numpy arrays (no object per
entry: a texture archive holds 100,000 of them); entries are grouped into runs that share a folder and suffix, kept
as arrays too, with one ``folder key → first run`` dict; the per-folder ``name → entry`` dicts and the folder tree
are built only when asked for. Lookups are case-insensitive with ``/`` or ``\\``. Entry names that climb (``..``),
are absolute or carry a drive letter were refused when the index was built.
"""

from __future__ import annotations

import os
import re
import zlib
from collections.abc import Iterator
from dataclasses import dataclass, field

import numpy as np

from ..budget import current_budget
from ..errors import FormatError, printable
from .files import open_regular, read_at

EMBEDDED = 0x7FFF  # a VPK entry whose data follows the tree in the directory file itself
# Files one archive indexed through Python lists may list (``flat_archive``: GMA, Troika; a name and a few numbers
# a file, about 500 bytes each on the way): real ones hold a few thousand; 2 M would pass 1 GB.
MAX_FLAT_FILES = 200_000
_DRIVE = re.compile(r"^[A-Za-z]:")


def folder_key(folder: str) -> str:
    """A folder as looked up: lower case, ``/`` separators, no leading, trailing or doubled slashes."""
    if "\\" not in folder and "//" not in folder and "." not in folder and folder[:1] != "/" and folder[-1:] != "/":
        return folder.lower()  # as archives write their folders (10,000 of them in a texture archive)
    return "/".join(p for p in folder.replace("\\", "/").lower().split("/") if p and p != ".")


def unsafe(path: str) -> bool:
    """A name inside an archive that could mean a place outside it: absolute, a drive, or a ``..`` step."""
    if ".." not in path and ":" not in path and path[:1] not in ("/", "\\"):
        return False
    text = path.replace("\\", "/")
    return text.startswith("/") or bool(_DRIVE.match(text)) or ".." in text.split("/")


def folder_runs(keys: list[str]) -> tuple[dict[str, int], np.ndarray]:
    """Folder key → its first run (in the order folders first appear) and each run's next run of the same folder
    (-1 after the last), from each run's key: a few passes in C, no Python loop per run."""
    count = len(keys)
    folders = dict(zip(keys, range(count), strict=True))  # in order of first appearance, holding the last runs
    run_next = np.full(count, -1, np.int32)
    if len(folders) == count:
        return folders, run_next
    folders.update(zip(reversed(keys), range(count - 1, -1, -1), strict=True))  # now the first runs, same order
    owner = np.fromiter(map(folders.__getitem__, keys), np.int64, count)
    order = np.argsort(owner, kind="stable")  # each folder's runs together, in the tree's order
    same = owner[order[1:]] == owner[order[:-1]]
    run_next[order[:-1][same]] = order[1:][same]
    return folders, run_next


def flat_archive(
    path: str,
    kind: str,
    names: list[str],
    where: list[int],
    offset: np.ndarray,
    length: np.ndarray,
    crc: np.ndarray | None = None,
) -> Archive:
    """The index of an archive that lists each file's whole path with its data in the archive file itself (GMA,
    Troika's VPK): runs of files in a row in one folder, as a VPK's tree groups them. ``where``: each name's
    offset in the file, for the error that refuses a name climbing out or absolute. ``crc``: None when the format
    keeps none (then none is checked)."""
    base_names: list[bytes] = []  # joined below into one text, as a VPK's tree holds its names
    spellings: list[bytes] = []  # each run's folder, joined below
    run_first: list[int] = []
    keys: list[str] = []
    last = None
    for i, name in enumerate(names):
        if unsafe(name):
            raise FormatError(path, where[i], f"file '{printable(name, 120)}' climbs out or is absolute")
        folder, _, base = name.replace("\\", "/").rpartition("/")
        if not base:  # ("" or "a/": no entry a lookup can name, and one the index cannot hold apart from a folder)
            raise FormatError(path, where[i], f"file '{printable(name, 120)}' has no name after its folder")
        if folder != last:  # a run: files in a row in one folder
            run_first.append(i)
            keys.append(folder_key(folder))
            spellings.append(folder.encode("utf-8", "surrogateescape") or b" ")
            last = folder
        base_names.append(base.encode("utf-8", "surrogateescape"))
    count, runs = len(names), len(run_first)
    lengths = np.asarray([len(b) for b in base_names], dtype=np.int64)
    name_end = np.cumsum(lengths + 1) - 1 if count else np.zeros(0, np.int64)
    folder_lengths = np.asarray([len(b) for b in spellings], dtype=np.int64)
    folder_end = np.cumsum(folder_lengths + 1) - 1 if runs else np.zeros(0, np.int64)
    first = np.asarray(run_first, dtype=np.int64)
    folders, run_next = folder_runs(keys)
    return Archive(
        path=path,
        kind=kind,
        text=b"\0".join(base_names),
        name_at=name_end - lengths,
        name_end=name_end,
        run_first=first,
        run_end=np.append(first[1:], count).astype(np.int64) if runs else first,
        run_suffix=np.zeros(runs, np.uint16),
        run_next=run_next,
        folder_at=folder_end - folder_lengths,
        folder_end=folder_end,
        folder_text=b"\0".join(spellings),
        suffixes=[""],
        folders=folders,
        crc=crc if crc is not None else np.zeros(count, dtype=np.uint32),
        part=np.full(count, EMBEDDED, dtype=np.uint16),
        offset=np.asarray(offset, dtype=np.int64),
        length=np.asarray(length, dtype=np.int64),
        preload_at=np.zeros(count, dtype=np.int64),
        preload_len=np.zeros(count, dtype=np.int64),
        check_zero_crc=False,
    )


@dataclass(eq=False)
class Archive:
    """One mounted archive's directory. ``path`` is the archive file (a VPK's ``_dir.vpk``, a GMA).

    Compact on purpose (a tree may hold millions of entries): per entry only numbers in numpy arrays, per run of
    entries sharing a folder and suffix only numbers too, and one ``folder key → first run`` dict; a folder's
    spelling is read from ``folder_text`` when asked for."""

    path: str
    kind: str  # "VPK v1", "VPK v2", "GMA"
    text: bytes  # the names' bytes: entry i's name inside its folder (without its run's suffix) is
    name_at: np.ndarray  # text[name_at[i]:name_end[i]]
    name_end: np.ndarray
    run_first: np.ndarray  # per run (in entry order): its entries are run_first[r]:run_end[r]
    run_end: np.ndarray
    run_suffix: np.ndarray  # index into ``suffixes`` (a VPK run shares one extension: ".vtf", "" for none)
    run_next: np.ndarray  # the next run of the same folder, -1 after the last
    folder_at: np.ndarray  # per run: its folder as spelled is folder_text[folder_at[r]:folder_end[r]]
    folder_end: np.ndarray
    folder_text: bytes
    suffixes: list[str]
    folders: dict[str, int]  # folder key → its first run
    crc: np.ndarray  # uint32 per entry
    part: np.ndarray  # uint16 per entry: EMBEDDED or the VPK part number
    offset: np.ndarray  # per entry: in its part, or (EMBEDDED) in the archive file less ``embedded_base``
    length: np.ndarray  # per entry
    preload_at: np.ndarray  # per entry: where its preload bytes start in ``preload``
    preload_len: np.ndarray  # per entry
    preload: bytes = b""
    embedded_base: int = 0  # where data stored in the directory file itself starts (a VPK's: after its tree)
    check_zero_crc: bool = True  # GMA writers may leave the CRC 0: then it is not checked
    real_folder: str = ""  # the folder the directory file really lies in (set when mounted; parts must lead there)
    _files: dict[str, dict[str, int]] = field(default_factory=dict, repr=False)
    _children: dict[str, dict[str, str]] | None = field(default=None, repr=False)
    # entry → identity (device, inode, size, mtime) of the file its data was read from when its CRC was checked:
    # read again from that same unchanged file, it is not checked again (a texture shared by several imports)
    _verified: dict[int, tuple[int, int, int, int]] = field(default_factory=dict, repr=False)

    def __len__(self) -> int:
        return len(self.name_at)

    @property
    def folder_count(self) -> int:
        return len(self.folders)

    def _names(self, first: int, end: int) -> list[str]:
        """The names of entries ``first`` to ``end`` (without their run's suffix)."""
        text = self.text
        starts, ends = self.name_at[first:end].tolist(), self.name_end[first:end].tolist()
        return [text[a:b].decode("utf-8", "surrogateescape") for a, b in zip(starts, ends, strict=True)]

    def _runs(self, key: str) -> Iterator[tuple[int, int, str]]:
        """(first, end, suffix) of each run of entries in the folder ``key``."""
        run = self.folders.get(key, -1)
        while run >= 0:
            yield int(self.run_first[run]), int(self.run_end[run]), self.suffixes[int(self.run_suffix[run])]
            run = int(self.run_next[run])

    def spelled(self, key: str) -> str:
        """The folder ``key`` as the archive spells it (its first run's spelling)."""
        run = self.folders.get(key, -1)
        return self._spelling(run) if run >= 0 else key

    def _spelling(self, run: int) -> str:
        text = self.folder_text[int(self.folder_at[run]) : int(self.folder_end[run])]
        return "" if text == b" " else text.decode("utf-8", "surrogateescape").strip("/")

    def _folder(self, key: str) -> dict[str, int]:
        files = self._files.get(key)
        if files is None:
            files = {}
            for first, end, suffix in self._runs(key):
                suffix = suffix.lower()
                for i, name in enumerate(self._names(first, end), first):
                    files.setdefault(name.lower() + suffix, i)
            self._files[key] = files
        return files

    def entry_name(self, index: int) -> str:
        """The entry's whole name as the archive spells it (``models/x.mdl``)."""
        run = int(np.searchsorted(self.run_first, index, side="right")) - 1
        if run < 0 or not int(self.run_first[run]) <= index < int(self.run_end[run]):
            raise IndexError(index)
        folder = self._spelling(run)
        name = self._names(index, index + 1)[0] + self.suffixes[int(self.run_suffix[run])]
        return f"{folder}/{name}" if folder else name

    def find(self, name: str) -> int | None:
        """The entry named ``name`` (any case, ``/`` or ``\\``), or None."""
        key = folder_key(name)
        folder, _, base = key.rpartition("/")
        if folder not in self.folders:
            return None
        return self._folder(folder).get(base)

    def is_folder(self, name: str) -> bool:
        key = folder_key(name)
        return key == "" or key in self.children()

    def children(self) -> dict[str, dict[str, str]]:
        """Folder key → its sub-folders (lower-cased name → spelling), every folder that holds entries listed
        (and the folders above them). Built once, in one pass over the folders with their spellings decoded at
        once."""
        if self._children is None:
            children: dict[str, dict[str, str]] = {"": {}}
            for key, shown in zip(self.folders, self._spellings(), strict=True):
                while key:
                    parent, _, name = key.rpartition("/")
                    shown = shown.replace("\\", "/").strip("/")
                    spelled = shown.rpartition("/")[2] if shown.lower() == key else name
                    kids = children.get(parent)
                    known = kids is not None
                    if not known:
                        kids = children[parent] = {}
                    kids[name] = spelled
                    children.setdefault(key, {})
                    if known:
                        break
                    key, shown = parent, shown.rpartition("/")[0]  # a folder above that holds no entries itself
            self._children = children
        return self._children

    def _spellings(self) -> list[str]:
        """Each folder as spelled by its first run, in the order of ``folders``: one gather and one decode."""
        runs = np.fromiter(self.folders.values(), np.int64, len(self.folders))
        if not len(runs):
            return []
        at, end = self.folder_at[runs].astype(np.int64), self.folder_end[runs].astype(np.int64)
        lengths = end - at
        starts = np.zeros(len(runs), np.int64)
        starts[1:] = np.cumsum(lengths[:-1] + 1)
        total = int(starts[-1] + lengths[-1])
        index = np.arange(total) + np.repeat(at - starts, lengths + 1)[:total]
        data = np.frombuffer(self.folder_text, np.uint8)[np.minimum(index, len(self.folder_text) - 1)]
        data[starts[1:] - 1] = 0  # each name's end (the byte after it in the text need not be a NUL)
        names = data.tobytes().decode("utf-8", "surrogateescape").split("\0")
        return ["" if name == " " else name for name in names]

    def listing(self, folder: str) -> dict[str, str]:
        """Lower-cased name → name of the entries and sub-folders of a virtual folder ({} when there is none)."""
        key = folder_key(folder)
        out = dict(self.children().get(key, {}))
        for first, end, suffix in self._runs(key):
            for name in self._names(first, end):
                out.setdefault((name + suffix).lower(), name + suffix)
        return out

    def count(self, suffix: str = "") -> int:
        """How many entries ``entries(suffix)`` would name, counted before any name is made (a budget is charged
        with it): whole runs by their extension, names only in runs without one (a GMA's, at most 200,000)."""
        suffix = suffix.lower()
        sizes = (self.run_end - self.run_first).astype(np.int64)
        matching = [i for i, s in enumerate(self.suffixes) if s.lower().endswith(suffix)]
        total = int(sizes[np.isin(self.run_suffix, matching)].sum()) if matching else 0
        if suffix and "" in self.suffixes and "" not in [self.suffixes[i] for i in matching]:
            bare = np.flatnonzero(self.run_suffix == self.suffixes.index(""))
            for run in bare.tolist():
                first, end = int(self.run_first[run]), int(self.run_end[run])
                total += sum(name.lower().endswith(suffix) for name in self._names(first, end))
        return total

    def entries(self, suffix: str = "") -> list[str]:
        """Every entry's whole name ending with ``suffix`` (any case), as the archive spells it."""
        suffix = suffix.lower()
        out = []
        for key, run in self.folders.items():
            folder = self._spelling(run)
            prefix = f"{folder}/" if folder else ""
            for first, end, run_suffix in self._runs(key):
                if run_suffix.lower().endswith(suffix):  # a VPK run shares one extension
                    out += [prefix + name + run_suffix for name in self._names(first, end)]
                elif not run_suffix:
                    out += [prefix + name for name in self._names(first, end) if name.lower().endswith(suffix)]
        return out

    def size(self, index: int) -> int:
        return int(self.preload_len[index]) + int(self.length[index])

    def part_path(self, part: int) -> str:
        """Where a VPK part lives: ``<stem>_NNN.vpk`` beside the directory file, never anywhere else."""
        folder, base = os.path.split(self.path)
        stem = base[: -len("_dir.vpk")] if base.lower().endswith("_dir.vpk") else None
        if stem is None:
            raise FormatError(self.path, None, f"an entry is stored in archive part {part}, but this is not a _dir.vpk")
        return os.path.join(folder, f"{stem}_{part:03d}.vpk")

    def read(self, index: int) -> bytes:
        """One entry's bytes (preload, then data), size-bounded by the budget and checked against its CRC32."""
        size, limit = self.size(index), current_budget().file_bytes
        if size > limit:
            where = f"{self.path} ({printable(self.entry_name(index), 120)})"
            raise current_budget().exceeded(where, "entry size", size, limit, "bytes")
        start = int(self.preload_at[index])
        head = self.preload[start : start + int(self.preload_len[index])]
        part, offset, length = int(self.part[index]), int(self.offset[index]), int(self.length[index])
        if part == EMBEDDED:
            offset += self.embedded_base
        data, identity = b"", None
        if length:
            where = self.path if part == EMBEDDED else self.part_path(part)
            try:
                if part != EMBEDDED and not self.real_folder:
                    self.real_folder = os.path.dirname(os.path.realpath(self.path))
                data, identity = _read_range(where, offset, length, None if part == EMBEDDED else self.real_folder)
            except FormatError as exc:  # named by the archive, with the part and the entry it was read for
                shown_where = "" if part == EMBEDDED else f" in its part {os.path.basename(where)}"
                raise FormatError(
                    self.path,
                    exc.offset,
                    f"entry '{printable(self.entry_name(index), 120)}'{shown_where}: {exc.reason}",
                ) from None
        whole = head + data if head else data
        expected = int(self.crc[index])
        if identity is not None and self._verified.get(index) == identity:
            return whole
        if (expected or self.check_zero_crc) and zlib.crc32(whole) != expected:
            name = self.entry_name(index)
            raise FormatError(
                self.path,
                offset,
                f"entry '{printable(name, 120)}' fails its CRC32 check (stored {expected:08x}, "
                f"read {zlib.crc32(whole):08x}; data at offset {offset:,} of "
                f"{os.path.basename(self.path if part == EMBEDDED else self.part_path(part))})",
            )
        if identity is not None:
            self._verified[index] = identity
        return whole


def _read_range(path: str, offset: int, length: int, beside: str | None) -> tuple[bytes, tuple[int, int, int, int]]:
    """``length`` bytes at ``offset`` of a regular file, and the file's identity; ``beside``: the real folder it
    must lead into (a VPK part: its directory file's), judged on the file actually opened."""
    fd, info = open_regular(path)
    try:
        if beside is not None and os.path.dirname(opened_path(fd, path)) != beside:
            raise FormatError(path, None, "the archive part leads outside the archive's folder; refused")
        if offset + length > info.st_size:
            raise FormatError(
                path,
                offset,
                f"{length:,} bytes at offset {offset:,} run past the end of the file ({info.st_size:,} bytes)",
            )
        identity = (info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns)
        return read_at(fd, offset, length, path), identity
    finally:
        os.close(fd)


def opened_path(fd: int, path: str) -> str:
    """Where an open file is: the kernel's answer on Linux (the very file read), else ``realpath``."""
    try:
        return os.readlink(f"/proc/self/fd/{fd}")
    except OSError:
        return os.path.realpath(path)
