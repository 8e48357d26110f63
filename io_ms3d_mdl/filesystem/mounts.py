"""The registry of mounted archives and games, and the virtual paths through archives. No ``bpy``.

An archive behaves as a folder: an entry's path is the archive file's own path joined with the entry's name
(``/games/tf/tf2_misc_dir.vpk/models/x.mdl``, ``/addons/foo.gma/models/x.mdl``), so ``os.path.dirname`` and the
readers work on it unchanged; :func:`split` finds the archive a path passes through. Archives are mounted once per
session and kept while their file is unchanged (keyed by real path, size and modification time).
"""

from __future__ import annotations

import os
import stat
from collections import OrderedDict
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from functools import lru_cache

from ..budget import current_budget
from ..errors import FormatError
from .archive import Archive
from .files import walk
from .gameinfo import GameInfo, game_folder, has_gameinfo, read_gameinfo, vpk_directory
from .gma import read_gma
from .troika_game import troika_game_folder, troika_packs
from .vpk import read_vpk

ARCHIVE_SUFFIXES = (".vpk", ".gma")
MODEL_SUFFIXES = (".mdl", ".ms3d")
MAX_ARCHIVES = 64  # mounted indexes always kept (a game mounts a dozen)...
MAX_SMALL_ARCHIVES = 16_384  # ...and more while they are small (a custom/ folder of tiny add-on VPKs)
MAX_KEPT_BYTES = 256 << 20  # directory bytes of the archives kept beyond MAX_ARCHIVES
MAX_CACHED_BYTES = 512 << 20  # directory bytes of all archives kept (each may hold 128 MiB)
MAX_LOOSE_MODELS = 200_000

_ARCHIVES: OrderedDict[tuple[str, int, int], Archive] = OrderedDict()
_KEPT = [0]  # directory bytes of the archives in _ARCHIVES
_BY_PATH: dict[str, tuple[tuple[int, int, int, int], tuple[str, int, int]]] = {}


def is_archive_name(name: str) -> bool:
    return name.lower().endswith(ARCHIVE_SUFFIXES)


def _regular(path: str) -> os.stat_result | None:
    try:
        info = os.stat(path)
    except (OSError, ValueError):
        return None
    return info if stat.S_ISREG(info.st_mode) else None


def mount_archive(path: str) -> Archive:
    """The index of the archive at ``path`` (a ``.vpk`` directory file, ``x.vpk`` meaning ``x_dir.vpk``, or a
    ``.gma``); ``FormatError`` when it is not one or is malformed."""
    path = os.path.abspath(path)
    if path.lower().endswith(".vpk"):
        path = vpk_directory(path) or path
    info = _regular(path)
    if info is None:
        raise FormatError(path, None, "not a regular file; an archive must be one")
    known = _BY_PATH.get(path)  # the same file as last time: one stat, not a walk over the path's links
    if known is not None and known[0] == (info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns):
        cached = _ARCHIVES.get(known[1])  # (only a key: an archive evicted below is let go, not kept from here)
        if cached is not None and cached.path == path:
            return cached
    key = (os.path.realpath(path), info.st_size, info.st_mtime_ns)
    archive = _ARCHIVES.get(key)
    if archive is not None and archive.path == path:
        _ARCHIVES.move_to_end(key)
    else:
        archive = read_gma(path) if path.lower().endswith(".gma") else read_vpk(path)
        archive.real_folder = os.path.dirname(key[0])
        old = _ARCHIVES.pop(key, None)
        _KEPT[0] += len(archive.text) - (len(old.text) if old is not None else 0)
    _ARCHIVES[key] = archive
    _BY_PATH[path] = ((info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns), key)
    while len(_BY_PATH) > 2 * MAX_SMALL_ARCHIVES:
        _BY_PATH.pop(next(iter(_BY_PATH)))
    while len(_ARCHIVES) > 1 and (
        _KEPT[0] > MAX_CACHED_BYTES
        or (len(_ARCHIVES) > MAX_ARCHIVES and (len(_ARCHIVES) > MAX_SMALL_ARCHIVES or _KEPT[0] > MAX_KEPT_BYTES))
    ):
        _KEPT[0] -= len(_ARCHIVES.popitem(last=False)[1].text)
    return archive


def forget_archives() -> None:
    _ARCHIVES.clear()
    _BY_PATH.clear()
    _KEPT[0] = 0
    forget_splits()


def split(path: str) -> tuple[str, str] | None:
    """``(archive file, entry name)`` when ``path`` passes through an archive file (a regular file named
    ``.vpk``/``.gma``: the first such component), else None (also for the archive file itself). Remembered until
    :func:`forget_splits` (each import starts afresh): only which prefix is an archive is remembered; whether it
    may be opened, and where it leads, is judged on every use (``access``)."""
    lower = path.lower()
    if ".vpk" not in lower and ".gma" not in lower:  # the usual case, without a system call
        return None
    return _split(path)


def forget_splits() -> None:
    _split.cache_clear()


@lru_cache(maxsize=4096)
def _split(path: str) -> tuple[str, str] | None:
    lower = path.lower()
    text = path.replace("\\", "/") if os.sep == "\\" else path
    start = 0
    while True:
        hits = [i for i in (lower.find(".vpk", start), lower.find(".gma", start)) if i >= 0]
        if not hits:
            return None
        end = min(hits) + 4
        if end < len(text) and text[end] in "/" + os.sep and _regular(path[:end]) is not None:
            return path[:end], text[end + 1 :].replace("\\", "/")
        start = end


def mount_roots(mounts: Iterable[str]) -> tuple[str, ...]:
    """The search roots (folders and archive files) the mounts mean, in order, each once: a game folder (holding
    gameinfo.txt) its ``game`` search paths, an archive itself (``x.vpk`` as ``x_dir.vpk``), any other folder
    itself. Missing mounts are left out."""
    out: dict[str, None] = {}
    for mount in mounts:
        if not mount:
            continue
        mount = os.path.normpath(os.path.abspath(mount))
        if is_archive_name(mount):
            found = vpk_directory(mount) if mount.lower().endswith(".vpk") else mount
            if found and _regular(found):
                out[found] = None
        elif has_gameinfo(mount):
            try:
                out.update(dict.fromkeys(read_gameinfo(mount).roots()))
            except FormatError:
                out[mount] = None
        elif os.path.isdir(mount):
            out[mount] = None
            out.update(dict.fromkeys(troika_packs(mount)))  # (a Bloodlines game folder: its packs after it)
    return tuple(out)


def model_game_roots(model_path: str) -> tuple[str, ...]:
    """The ``game`` search paths of the game a model lies in (the nearest folder above it, or above its archive,
    holding gameinfo.txt; else a Bloodlines game folder and its packs: ``troika_game``), or () outside any game."""
    where = split(model_path)
    folder = game_folder(where[0] if where else model_path)
    if folder is None:
        troika = troika_game_folder(where[0] if where else model_path)  # Bloodlines: packs, no gameinfo.txt
        return (troika, *troika_packs(troika)) if troika is not None else ()
    try:
        return read_gameinfo(folder).roots()
    except FormatError:
        return (folder,)


def refused_links(model_path: str, mounted: Iterable[str] = ()) -> tuple[str, ...]:
    """One warning per SearchPaths line that was left out because a link leads outside its game (see
    ``gameinfo``): of the game the model lies in and of each mounted game; each names its gameinfo.txt and line."""
    where = split(model_path)
    folders = [game_folder(where[0] if where else model_path), *mounted]
    out: dict[str, None] = {}
    for folder in folders:
        if not folder or is_archive_name(folder) or not has_gameinfo(folder):
            continue
        try:
            info = read_gameinfo(folder)
        except FormatError as exc:
            if "link" in exc.message:
                out[exc.message] = None
            continue
        unique = {p.path: p for p in reversed(info.search_paths)}.values()  # each place once (its first line)
        now = [f"{p.written}: {why}" for p in unique if (why := info.changed(p))]  # links made since it was read
        for line in (*info.refused, *now):
            out[f"{os.path.join(info.folder, 'gameinfo.txt')}: SearchPaths line '{line}'"] = None
    return tuple(out)


@dataclass(frozen=True)
class ModelEntry:
    path: str  # what to import: a file on disk, or a virtual path through an archive
    name: str  # the model's name inside its game or archive (``models/weapons/v_knife.mdl``)
    label: str  # the game's title or the archive's file name
    mount: str  # the mounted game folder or archive it was found through
    archive: str | None  # the archive file holding it, None for a loose file


def label(mount: str) -> str:
    mount = os.path.normpath(os.path.abspath(mount))
    if has_gameinfo(mount):
        try:
            return read_gameinfo(mount).title
        except FormatError:
            pass
    return os.path.basename(mount)


def list_models(mounts: Iterable[str], suffixes: tuple[str, ...] = MODEL_SUFFIXES) -> Iterator[ModelEntry]:
    """Every model in the mounted games and archives (a game: each of its ``game`` search paths; loose files are
    looked for under each folder's ``models/`` only), each virtual path once. Archives that cannot be read are
    skipped (``mount_archive`` names why). The models are charged to the listing budget before their names are
    made (an archive's by counting its entries): ``BudgetExceeded`` past it."""
    seen: set[str] = set()
    listed = [0]
    for mount in mounts:
        title = label(mount)
        for root in mount_roots([mount]):
            for entry in _models_in(root, suffixes, listed):
                key = os.path.normcase(entry[0])
                if key in seen:
                    continue
                seen.add(key)
                yield ModelEntry(entry[0], entry[1], title, mount, entry[2])


def _charge(listed: list[int], count: int, where: str) -> None:
    budget = current_budget()
    listed[0] += count
    budget.check(where, "models listed", listed[0], budget.listed_models, "models")


def _models_in(root: str, suffixes: tuple[str, ...], listed: list[int]) -> Iterator[tuple[str, str, str | None]]:
    if is_archive_name(root):
        try:
            archive = mount_archive(root)
        except FormatError:
            return
        _charge(listed, sum(archive.count(suffix) for suffix in suffixes), archive.path)
        for suffix in suffixes:
            for name in archive.entries(suffix):
                yield os.path.join(archive.path, *name.split("/")), name, archive.path
        return
    models = os.path.join(root, "models")
    real_root = os.path.realpath(root)
    if not os.path.isdir(models) or not _really_inside(models, real_root):
        return
    count = 0
    for folder, _, files in walk(models):  # links to folders are not walked into
        for name in sorted(files):
            if name.lower().endswith(suffixes):
                full = os.path.join(folder, name)
                if os.path.islink(full) and not _really_inside(full, real_root):  # a link to a model elsewhere
                    continue
                _charge(listed, 1, root)
                yield full, os.path.relpath(full, root).replace(os.sep, "/"), None
                count += 1
                if count >= MAX_LOOSE_MODELS:
                    return


def _really_inside(path: str, real_root: str) -> bool:
    """``path``, links followed, lies in ``real_root`` (itself a real path): a model listed under a mounted folder
    is that folder's, not one a link there leads to."""
    real = os.path.normcase(os.path.realpath(path))
    root = os.path.normcase(real_root)
    return real == root or real.startswith(root.rstrip(os.sep) + os.sep)


def read_entry(path: str) -> bytes:
    """The bytes of the entry a virtual path names (``FormatError`` when there is none)."""
    where = split(path)
    if where is None:
        raise FormatError(path, None, "not a path inside an archive")
    archive = mount_archive(where[0])
    index = archive.find(where[1])
    if index is None:
        raise FormatError(where[0], None, f"the archive holds no entry '{where[1][:120]}'")
    return archive.read(index)


def games(roots: Iterable[str] = ()) -> list[GameInfo]:
    """The games (gameinfo.txt read) of the given folders that hold one."""
    out = []
    for root in roots:
        if has_gameinfo(root):
            try:
                out.append(read_gameinfo(root))
            except FormatError:
                continue
    return out
