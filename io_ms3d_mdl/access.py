"""Which files an import may open, and how: the one place that decides it. No ``bpy``.

Every model is written by a stranger, and so is every name inside it (textures, sidecars, ``$includemodel``,
``.ani`` blocks, VMT includes). So:

- a name from inside a file is only looked up under the import's **roots**: the model's own folder, its game
  folder (the one holding ``models/``) and the folders the user listed. Absolute names, drive letters, UNC
  names, ``..`` that climbs out of every root and symlinks that resolve outside them are refused;
- only **regular files** are opened (never a FIFO, device or folder: those would hang or never end), opened
  without blocking and checked on the open descriptor, and read with a **size bound**.

Lookups are case-insensitive with ``\\`` or ``/`` separators, because game files name each other with Windows
paths in any letter case.

Archives (VPK, GMA) are folders here: a path that passes through a regular file named ``.vpk``/``.gma``
(``<game>/pak01_dir.vpk/models/x.mdl``) is listed, found and read from the archive's directory
(``filesystem``). An archive is used only when it is a regular file and it (followed through links), or the
folder inside it that is asked for, lies under a root of the current import; its entries are bytes, never paths on
disk; its numbered parts are only ever ``<stem>_NNN.vpk`` beside it, opened with the same checks and refused when
they lead out of its folder; every entry read is size-bounded by the budget and CRC-checked.

A :class:`Confinement` is made per imported model and made current with :func:`confined`; readers and the scene
layer ask :func:`current` for it.
"""

from __future__ import annotations

import errno
import os
import re
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from functools import lru_cache

from .budget import Budget, current_budget, using_budget
from .errors import FormatError, printable
from .filesystem import mounts
from .filesystem.archive import folder_key
from .filesystem.files import kernel_paths as _kernel_paths
from .filesystem.files import read_regular, real_path

_DRIVE = re.compile(r"^[A-Za-z]:")


@lru_cache(maxsize=256)
def listing(folder: str) -> dict[str, str]:
    """Lower-cased name → real name of a folder's entries (cached for one import; see :func:`clear_cache`); for a
    folder inside an archive, or an archive file itself, its entries and sub-folders."""
    archive = _archive_for(folder, whole=True)
    if archive is not None:
        return archive[0].listing(archive[1])
    try:
        return {name.lower(): name for name in os.listdir(folder)}
    except (OSError, ValueError):  # ValueError: a NUL, which no folder's name holds
        return {}


def clear_cache() -> None:
    listing.cache_clear()
    mounts.forget_splits()


def _archive_for(path: str, whole: bool = False) -> tuple[mounts.Archive, str] | None:
    """The mounted archive ``path`` passes through and the entry name inside it (``whole``: ``path`` may be the
    archive file itself, with name ``""``), when the archive may be used: a regular file that lies, or whose folder
    ``path`` names lies, under the current import's roots (any, outside an import: the caller named it). None
    otherwise, or when it is not a readable archive."""
    where = mounts.split(path)
    if where is None and whole and mounts.is_archive_name(path) and _is_regular(path):
        where = (path, "")
    if where is None:
        return None
    active = _current.get()
    if active is not None:  # the archive, or the folder inside it, lies under a root (a model's own folder may be)
        real = _regular_real_path(where[0])
        inside = os.path.join(real, *where[1].split("/")) if real is not None and where[1] else real
        if real is None or not (active._holds(real) or active._holds(inside)):
            return None
    try:
        return mounts.mount_archive(where[0]), where[1]
    except FormatError:
        return None


def shown(name: str) -> str:
    """A name from a file as it may appear inside a message or property: printable and at most 120 characters."""
    return printable(name, 120)


def is_absolute_name(name: str) -> bool:
    """``/x``, ``\\x``, ``\\\\host\\share``, ``C:\\x`` or ``C:x``: on any OS, a name that ignores its base folder."""
    text = name.strip().replace("\\", "/")
    return text.startswith("/") or bool(_DRIVE.match(text))


def relative_parts(name: str) -> list[str] | None:
    """The folder steps of a relative name (``.`` dropped, ``..`` kept), or None for an absolute one."""
    if is_absolute_name(name):
        return None
    return [p for p in name.strip().replace("\\", "/").split("/") if p not in ("", ".")]


def game_root(path: str) -> str | None:
    """The folder holding ``models/`` that ``path`` sits under (a game or mod folder), or None."""
    folder = os.path.dirname(os.path.abspath(path))
    while True:
        if os.path.basename(folder).lower() == "models":
            return os.path.dirname(folder)
        parent = os.path.dirname(folder)
        if parent == folder:
            return None
        folder = parent


def _inside(path: str, root: str) -> bool:
    """``path`` is ``root`` or below it; both absolute and normalised (a prefix test on whole components, the
    cheap equivalent of ``commonpath``, which the texture search would call hundreds of times per model)."""
    path, root = os.path.normcase(path), os.path.normcase(root)
    return path == root or path.startswith(root if root.endswith(os.sep) else root + os.sep)


@dataclass(frozen=True)
class Confinement:
    """The roots an import may read under (absolute, normalised; each also by its real path) and its limits."""

    roots: tuple[str, ...]
    allow_absolute: bool = False  # absolute texture names are honoured (the user's own files; off by default)
    # Where names from inside the model are looked up, in order: its game root, its game's search paths, the
    # mounted games and archives, the user's roots (folders and archive files).
    lookup: tuple[str, ...] = ()
    # What the import should be told about its roots: the gameinfo.txt lines left out because a link leads outside.
    notes: tuple[str, ...] = field(default=(), compare=False)
    # (folder, name as written) → the entry's path or None, for this import: material searches try the same
    # folders for every texture (and mostly miss), so each step is looked up once.
    _steps: dict[tuple[str, str], str | None] = field(default_factory=dict, compare=False, repr=False)
    # (base, folder steps as written) → the folder they lead to under a root, or None: a material search asks for
    # many names in the same few folders, and the path arithmetic cost more than the lookups.
    _folders: dict[tuple[str, tuple[str, ...]], str | None] = field(default_factory=dict, compare=False, repr=False)
    # The bases a search tries in order (the lookup roots, or a texture search's folders) → the one index of what
    # each holds, built once: a name is then looked up only under the bases that can hold it (``find_first``).
    _indexes: dict[tuple[str, ...], SearchIndex] = field(default_factory=dict, compare=False, repr=False)
    # each root (normcased) → its rank in ``roots``: which roots hold a path is answered from its ancestors
    _ranks: dict[str, int] = field(default_factory=dict, compare=False, repr=False)
    # Bytes read through read_file under this confinement (one element, mutable): what a decompile may write is
    # bounded relative to it (budget.output_bytes).
    bytes_read: list[int] = field(default_factory=lambda: [0], compare=False, repr=False)

    @classmethod
    def for_model(
        cls,
        model_path: str,
        user_roots: tuple[str, ...] = (),
        allow_absolute: bool = False,
        mounted: tuple[str, ...] = (),
    ) -> Confinement:
        """The model's folder, its game root (the folder holding ``models/``), the ``game`` search paths of the
        game it lies in (gameinfo.txt; see ``filesystem.gameinfo`` for what a stranger's one may not widen), the
        mounted games and archives, and the user's roots."""
        model_dir = os.path.dirname(os.path.abspath(model_path))
        game = game_root(model_path)
        if game is not None and os.path.dirname(game) == game:  # ``/models/x.mdl``: never the whole disk
            game = None
        lookup = [game, *mounts.model_game_roots(model_path), *mounts.mount_roots(mounted), *user_roots]
        lookup = [os.path.normpath(os.path.abspath(r)) for r in lookup if r]
        base = cls.for_roots([model_dir, *lookup], allow_absolute)
        notes = mounts.refused_links(model_path, mounted)
        return cls(base.roots, allow_absolute, tuple(dict.fromkeys(lookup)), notes)

    @classmethod
    def for_roots(cls, candidates: list[str | None] | tuple[str, ...], allow_absolute: bool = False) -> Confinement:
        roots: dict[str, None] = {}  # (a dict: a game with 4,096 ``custom/*`` entries made a list lookup quadratic)
        for root in candidates:
            if not root:
                continue
            roots[os.path.normpath(os.path.abspath(root))] = None
            real = real_path(root)
            if real is not None:
                roots[real] = None
        return cls(tuple(roots), allow_absolute)

    def allows(self, path: str) -> bool:
        """True when ``path`` (followed through every symlink) lies under one of the roots."""
        # Resolved afresh each time, never from a cache: a folder swapped for a link during the import must not
        # pass on an earlier answer.
        return self._holds(os.path.realpath(path))

    def _holds(self, real: str) -> bool:
        return self._first_root(real) is not None

    def _first_root(self, path: str) -> str | None:
        """The first root (in order) that ``path`` (absolute, normalised) lies under, found by looking its
        ancestors up (a path is a few folders deep; an import may have thousands of roots)."""
        ranks = self._ranks
        if not ranks:
            for rank, root in enumerate(self.roots):
                ranks.setdefault(os.path.normcase(root.rstrip(os.sep) or root), rank)
        best = None
        step = os.path.normcase(path)
        while True:
            rank = ranks.get(step)
            if rank is not None and (best is None or rank < best):
                best = rank
            parent = os.path.dirname(step)
            if parent == step:
                return None if best is None else self.roots[best]
            step = parent

    def find(self, base: str, name: str) -> str | None:
        """``name`` (relative, any case, ``\\`` or ``/``) under ``base`` when it is a regular file inside the roots.

        ``..`` may climb while the result stays under a root (``..\\textures\\x.bmp`` from ``models/`` in a mod
        folder); anything that leaves every root, or is absolute, is refused (None).
        """
        parts = relative_parts(name)
        # A name ending in ``..`` is a folder, never a regular file; a last step that is a path of its own
        # (``D:x`` on Windows, joined as another drive's) never names an entry of the folder it is looked up in.
        if not parts or parts[-1] == ".." or os.path.splitdrive(parts[-1])[0] or os.path.isabs(parts[-1]):
            return None
        key = (base, tuple(parts[:-1]))
        if key not in self._folders:
            self._folders[key] = self._folder(base, key[1])
        folder = self._folders[key]
        current = self._step(folder, parts[-1]) if folder is not None else None
        # Where it leads is resolved afresh, never from a cache (only the spelling of the steps is remembered): a
        # folder swapped for a link during the import must not pass on an earlier answer.
        if current is None:
            return None
        real = _regular_real_path(current)
        return current if real is not None and self._holds(real) else None

    def find_first(self, bases: list[str] | tuple[str, ...], name: str) -> str | None:
        """``find(base, name)`` for the first of ``bases`` (in order) where it is found. The bases' index (what
        each archive and folder holds at its top) is built once per list of bases, so a name is looked up only
        under the few bases that can hold it: a game with thousands of ``custom/*`` entries costs one index, not
        one walk over every archive per texture. A name that climbs above its base is tried on each in turn."""
        parts = relative_parts(name)
        if not parts:
            return None
        steps: list[str] = []
        for part in parts:
            if part != "..":
                steps.append(part)
            elif steps:
                steps.pop()
            else:  # climbs above the base: where it leads depends on the base
                return next((f for b in dict.fromkeys(bases) if b and (f := self.find(b, name))), None)
        if not steps:
            return None
        key = tuple(bases)
        index = self._indexes.get(key)
        if index is None:
            index = self._indexes[key] = SearchIndex(key)
        for base in index.candidates(steps):
            found = self.find(base, name)
            if found:
                return found
        return None

    def _folder(self, base: str, parts: tuple[str, ...]) -> str | None:
        """The folder ``parts`` lead to from ``base``, spelled as it exists below the first root holding it, or
        None when it is outside every root or missing (a file inside it is inside that root too)."""
        target = os.path.normpath(os.path.join(os.path.abspath(base), *parts))
        root = self._first_root(target)
        if root is None:
            return None
        current: str | None = root
        for part in target[len(root) :].split(os.sep):  # below the root (the prefix ``_inside`` matched)
            if part:
                current = self._step(current, part)
                if current is None:
                    return None
        return current

    def _step(self, folder: str, part: str) -> str | None:
        """``folder``'s entry named ``part`` in any letter case (the exact name first), or None."""
        key = (folder, part)
        if key not in self._steps:
            found = listing(folder).get(part.lower())  # cached per folder: one listing, not a stat a step
            if found != part and os.path.lexists(os.path.join(folder, part)):
                found = part  # an exact name beside a case variant, or a folder that cannot be listed
            self._steps[key] = os.path.join(folder, found) if found is not None else None
        return self._steps[key]

    def find_absolute(self, name: str) -> str | None:
        """An absolute name as written, only when the user allowed absolute paths; still a regular file only."""
        if not self.allow_absolute:
            return None
        path = name.strip()
        return path if _is_regular(path) else None


class SearchIndex:
    """What a list of bases (folders, archives, folders inside archives) holds, indexed once: every folder of
    every archive → the bases holding it, every name at the top of a folder on disk → the bases holding it.
    ``candidates`` then names the bases that can hold a relative name, in order, without a step per base. The
    archives are charged to the budget before any is mounted, and what they hold (entries, folders) as each is."""

    def __init__(self, bases: tuple[str, ...]) -> None:
        bases = tuple(dict.fromkeys(os.path.normpath(os.path.abspath(b)) for b in bases if b))
        places = [mounts.split(base) or (base, "") for base in bases]
        archives = {path for path, _ in places if mounts.is_archive_name(path) and _is_regular(path)}
        budget = current_budget()
        what = "search paths: archives (custom/* entries and mounts)"
        budget.check(None, what, len(archives), budget.search_paths, "archives")
        budget.check(None, "search paths: folders and archives", len(bases), 4 * budget.search_paths, "paths")
        self.bases = bases
        self._by_folder: dict[str, list[int]] = {}  # an archive's folder key (below the base) → ranks of bases
        self._by_top: dict[str, list[int]] = {}  # a name at the top of a folder on disk → ranks of bases
        self._unlisted: list[int] = []  # folders that could not be listed: always tried
        entries = folders = tree = 0
        for rank, (base, (archive_path, inside)) in enumerate(zip(bases, places, strict=True)):
            if archive_path in archives:
                try:  # not a readable archive: nothing is found in it (as ``find`` says)
                    archive = mounts.mount_archive(archive_path)
                except FormatError:
                    continue
                entries, folders = entries + len(archive), folders + archive.folder_count
                tree += len(archive.text)
                budget.check(archive_path, "directory bytes of the archives searched", tree, 2 * budget.file_bytes)
                budget.check(archive_path, "entries of the archives searched", entries, budget.archive_entries)
                budget.check(archive_path, "folders of the archives searched", folders, budget.archive_folders)
                self._add_archive(rank, archive, folder_key(inside))
                continue
            try:
                names = os.listdir(base)
            except FileNotFoundError:
                continue
            except (OSError, ValueError):
                self._unlisted.append(rank)
                continue
            for name in {n.lower() for n in names}:
                self._by_top.setdefault(name, []).append(rank)
        self._asked: dict[tuple[str, str], tuple[str, ...]] = {}

    def _add_archive(self, rank: int, archive: mounts.Archive, inside: str) -> None:
        keys: Iterator[str] | dict[str, int] = archive.folders
        if inside:
            prefix = inside + "/"
            keys = (
                k[len(prefix) :] if k != inside else "" for k in archive.folders if k.startswith(prefix) or k == inside
            )
        by_folder = self._by_folder
        for key in keys:
            by_folder.setdefault(key, []).append(rank)

    def candidates(self, steps: list[str]) -> tuple[str, ...]:
        """The bases that may hold the relative name ``steps`` (no ``.`` or ``..``), in order."""
        folder = folder_key("/".join(steps[:-1]))
        top = steps[0].lower()
        key = (folder, top)
        found = self._asked.get(key)
        if found is None:
            ranks = {*self._by_folder.get(folder, ()), *self._by_top.get(top, ()), *self._unlisted}
            found = self._asked[key] = tuple(self.bases[r] for r in sorted(ranks))
        return found


def _is_regular(path: str) -> bool:
    try:
        return stat.S_ISREG(os.stat(path).st_mode)
    except (OSError, ValueError):
        return False


def _regular_real_path(path: str) -> str | None:
    """Where ``path`` leads, through every symlink, when it is a regular file; else None.

    On Linux the kernel answers for the one object it opened (a path-only descriptor: no read access needed, a
    FIFO does not block), so the type and the place are those of the same file, in four system calls; Python's
    ``realpath`` takes an ``lstat`` per path step and was most of a texture search's time. Elsewhere: ``realpath``
    and ``stat``, as before. A path inside an archive leads to the archive's real path joined with the entry's
    name, when the archive is a regular file and holds that entry."""
    where = mounts.split(path)
    if where is not None:
        real = _regular_real_path(where[0])
        if real is None or not where[1]:
            return None
        try:
            found = mounts.mount_archive(where[0]).find(where[1])
        except FormatError:
            return None
        return os.path.join(real, *where[1].split("/")) if found is not None else None
    if not _kernel_paths():
        return os.path.realpath(path) if _is_regular(path) else None
    try:
        fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
    except (OSError, ValueError):
        return None
    try:
        return os.readlink(f"/proc/self/fd/{fd}") if stat.S_ISREG(os.fstat(fd).st_mode) else None
    except OSError as exc:
        if exc.errno == errno.ENAMETOOLONG:  # the kernel names no path over PATH_MAX here; realpath still can
            return os.path.realpath(path) if _is_regular(path) else None
        return None
    finally:
        os.close(fd)


_current: ContextVar[Confinement | None] = ContextVar("io_ms3d_mdl_confinement", default=None)


@contextmanager
def confined(confinement: Confinement, budget: Budget | None = None) -> Iterator[Confinement]:
    """Make ``confinement`` (and ``budget``) current for everything read and converted inside the block."""
    token = _current.set(confinement)
    try:
        with using_budget(budget or current_budget()):
            yield confinement
    finally:
        _current.reset(token)


def current(model_path: str | None) -> Confinement:
    """The import's confinement, or (outside an import, e.g. a reader called directly) the model's own roots."""
    active = _current.get()
    if active is not None:
        return active
    return Confinement.for_model(model_path or os.path.join(os.getcwd(), "model"))


def read_file(path: str | os.PathLike[str]) -> bytes:
    """The bytes of a regular file, at most the budget's file size. Opened without blocking and checked on the
    descriptor, so a FIFO or device named like a model (or linked from one) is refused instead of hanging. A path
    inside an archive reads the entry (size-bounded, its CRC checked)."""
    path = os.fspath(path)
    where = mounts.split(path)
    data = mounts.read_entry(path) if where is not None else read_regular(path)
    active = _current.get()
    if active is not None:
        active.bytes_read[0] += len(data)
    return data
