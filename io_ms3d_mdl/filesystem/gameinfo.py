"""A game folder's ``gameinfo.txt``: its SearchPaths, resolved as the engine mounts them. No ``bpy``.

Each SearchPaths line is ``<ids> <path>``: ids joined by ``+`` (``game``, ``mod``, ``game+mod``, ``platform``…),
the path relative to the base folder (the one above the game folder, where the engine's executable is), or
starting with ``|gameinfo_path|`` (the game folder) or ``|all_source_engine_paths|`` (the base folder). A path
ending ``/*`` mounts every sub-folder and VPK inside, in alphabetical order; ``x.vpk`` means ``x_dir.vpk`` with its
parts (or ``x.vpk`` itself when it is a single-file VPK). A folder's own ``pak01_dir.vpk`` is mounted just before
the folder, as the engines from Left 4 Dead on do (Left 4 Dead 2, Portal 2 and CS:GO name only folders, and keep
their content in ``pak01``). Order is kept: the first path holding a file wins.

A stranger's ``gameinfo.txt`` must not widen what an import may read: a path is mounted only when it lies inside
the game folder, or inside a folder holding a ``gameinfo.txt`` of its own below the folder that holds the
installs (``steamapps/common``): another game's install, as ``../Source SDK Base 2013 Singleplayer/ep2`` is.
Absolute paths and paths that do not exist are left out and listed in ``skipped``. The spelling is not enough: a
folder, ``custom/*`` entry or archive that is a symlink is mounted only when where it really leads (links followed)
lies inside where that game folder, or that other install, really is; one that leads out is left out, listed in
``skipped`` and in ``refused`` (each import warns once per such line), so the roots never grow through a link. The
``gameinfo.txt`` itself is read only when it really lies in its folder, and a line holding a character the OS
refuses (a NUL) never reaches an OS call.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from functools import lru_cache

from ..errors import FormatError
from . import keyvalues
from .files import nearest_folder_holding, read_regular, real_path, refused_name

GAMEINFO = "gameinfo.txt"
MAX_GAMEINFO = 1 << 20
MAX_WILDCARD = 4096  # entries one ``custom/*`` line may mount
MAX_PATH = 4096  # PATH_MAX on Linux; longer lines name nothing that can be opened
MAX_LINES = 1024  # SearchPaths lines read (real games write under 50; each may cost a few system calls)
MAX_SEARCH_PATHS = 2 * MAX_WILDCARD  # places mounted in all: ``custom/*`` spelled 1,000 ways made 4 M of them
AUTO_PAK = "pak01_dir.vpk"  # mounted with the folder holding it (Left 4 Dead and later keep all content in one)
OUTSIDE = "outside the game folder and every other game's install"
LINKED = "a link leading outside the game folder and every other game's install; not mounted"


@dataclass(frozen=True)
class SearchPath:
    ids: tuple[str, ...]  # lower case: ("game", "mod")
    path: str  # absolute: a folder or a VPK directory file
    written: str  # the line as written
    real: str = ""  # where it led (links followed) when it was judged


@dataclass(frozen=True)
class GameInfo:
    folder: str  # the game folder (holding gameinfo.txt)
    title: str  # its ``game`` value, or the folder's name
    search_paths: tuple[SearchPath, ...]
    skipped: tuple[str, ...] = ()  # lines not mounted, and why
    lines: tuple[tuple[str, str], ...] = ()  # every SearchPaths line as written: (ids, path)
    refused: tuple[str, ...] = ()  # the skipped lines that were links leading outside (an import warns of them)

    def roots(self, ids: str = "game") -> tuple[str, ...]:
        """The folders and archives searched for the path id ``ids`` (``game`` for models and materials), in
        order, each once; the game folder itself when gameinfo.txt names none. Each is judged again where it
        leads now: the game is cached by its gameinfo.txt, but a folder may have become a link since."""
        usable: dict[str, bool] = {}
        for p in self.search_paths:
            if ids in p.ids and p.path not in usable:  # each place judged once, however many lines name it
                usable[p.path] = not self.changed(p)
        return tuple(path for path, ok in usable.items() if ok) or (self.folder,)

    def changed(self, path: SearchPath) -> str:
        """Why a search path judged when the game was read may not be used now (it leads elsewhere, and out), or
        "". One ``realpath`` each: the same answer as when it was read is the usual case."""
        if real_path(path.path) == path.real:
            return ""
        return _judge(self.folder, path.path)


def has_gameinfo(folder: str) -> bool:
    return os.path.isfile(os.path.join(folder, GAMEINFO))


def game_folder(path: str) -> str | None:
    """The nearest folder at or above ``path``'s folder holding ``gameinfo.txt`` (for a path inside an archive,
    starting from the archive's folder, since no archive holds one that counts), or None."""
    return nearest_folder_holding(path, GAMEINFO)


def read_gameinfo(folder: str) -> GameInfo:
    """The game at ``folder``, cached per (path, size, modification time) of its gameinfo.txt."""
    if refused_name(folder):
        raise FormatError(folder, None, f"not a folder name: {refused_name(folder)}")
    folder = os.path.normpath(os.path.abspath(folder))
    path = os.path.join(folder, GAMEINFO)
    try:
        info = os.stat(path)
    except OSError as exc:
        raise FormatError(path, None, f"no gameinfo.txt in this folder ({exc.strerror or exc})") from exc
    real, real_folder = real_path(path), real_path(folder)
    if real is None or real_folder is None or not _inside(real, real_folder):  # a link within it is fine
        raise FormatError(path, None, "a link leading out of its game folder; not read")
    return _read_cached(folder, info.st_size, info.st_mtime_ns)


@lru_cache(maxsize=64)
def _read_cached(folder: str, size: int, mtime_ns: int) -> GameInfo:
    path = os.path.join(folder, GAMEINFO)
    return parse_gameinfo(read_regular(path, MAX_GAMEINFO), folder, path)


def parse_gameinfo(data: bytes | str, folder: str, path: str | None = None) -> GameInfo:
    folder = os.path.normpath(os.path.abspath(folder))
    root = keyvalues.parse(data, path)
    info = keyvalues.first(root, "GameInfo")
    info = info if isinstance(info, list) else root
    title = keyvalues.first(info, "game")
    title = title if isinstance(title, str) and title.strip() else os.path.basename(folder)
    system = keyvalues.first(info, "FileSystem")
    lines = keyvalues.first(system, "SearchPaths") if isinstance(system, list) else None
    out: list[SearchPath] = []
    skipped: list[str] = []
    refused: list[str] = []
    written_lines: list[tuple[str, str]] = []
    resolved: dict[str, list[tuple[str, str, str]]] = {}
    listed: dict[str, list[tuple[str, str]]] = {}
    lines = [(k, v) for k, v in lines if isinstance(v, str)] if isinstance(lines, list) else []
    if len(lines) > MAX_LINES:
        skipped.append(f"{len(lines) - MAX_LINES:,} SearchPaths lines past the first {MAX_LINES:,}: not read")
        lines = lines[:MAX_LINES]
    for n, (key, value) in enumerate(lines):
        if len(out) >= MAX_SEARCH_PATHS:
            skipped.append(f"{len(lines) - n:,} SearchPaths lines after {MAX_SEARCH_PATHS:,} places: not mounted")
            break
        written_lines.append((key, value))
        ids = tuple(i for i in key.lower().split("+") if i)
        written = f"{key} {value}"
        if value not in resolved:  # a line repeated is judged once
            found = _resolve(folder, value, listed)
            resolved[value] = [(t, why, "" if why else real_path(t) or "") for t, why in found]
        for target, why, real in resolved[value]:
            if why:
                skipped.append(f"{written}: {why}")
                if LINKED in why:
                    refused.append(skipped[-1])
            elif len(out) < MAX_SEARCH_PATHS:
                out.append(SearchPath(ids, target, written, real))
    return GameInfo(folder, title.strip(), tuple(out), tuple(skipped), tuple(written_lines), tuple(refused))


def _resolve(folder: str, written: str, listed: dict | None = None) -> list[tuple[str, str]]:
    """(path, "") for each place a SearchPaths value mounts, or (written, why not). ``listed``: the ``/*`` folders
    already listed and judged while reading this file, by folder (however each line spells it)."""
    text = written.strip().replace("\\", "/")
    refused = refused_name(text)
    if refused:
        return [(written, f"not a path: {refused}")]
    if len(text) > MAX_PATH:  # no folder the OS opens: answered without a walk up its thousands of steps
        return [(written, f"longer than any path the OS opens ({MAX_PATH:,} bytes)")]
    base = os.path.dirname(folder)
    lower = text.lower()
    if lower.startswith("|gameinfo_path|"):
        start, rest = folder, text[len("|gameinfo_path|") :]
    elif lower.startswith("|all_source_engine_paths|"):
        start, rest = base, text[len("|all_source_engine_paths|") :]
    elif text.startswith("/") or (len(text) > 1 and text[1] == ":"):
        return [(written, "an absolute path is not mounted")]
    elif "|" in text:
        return [(written, "an unknown |token|")]
    else:
        start, rest = base, text
    rest = rest.lstrip("/")
    if rest.endswith("*"):
        parent = os.path.normpath(os.path.join(start, rest[:-1] or "."))
        if listed is None or parent not in listed:
            found = _wildcard(folder, "\0", parent)
            if listed is None:
                return [(written if t == "\0" else t, why) for t, why in found]
            listed[parent] = found
        return [(written if t == "\0" else t, why) for t, why in listed[parent]]
    target = os.path.normpath(os.path.join(start, rest or "."))
    if target.lower().endswith(".vpk"):
        found = vpk_directory(target)
        if not found:
            return [(written, "no such archive")]
    elif os.path.isdir(target):
        found = target
    else:
        return [(written, "no such folder")]
    why = _judge(folder, found)
    if why:
        return [(written, why)]
    pak = os.path.join(found, AUTO_PAK)
    if os.path.isdir(found) and os.path.isfile(pak):  # a folder's own pak01_dir.vpk, searched before its files
        why = _judge(folder, pak)
        return [(written, f"{AUTO_PAK}: {why}"), (found, "")] if why else [(pak, ""), (found, "")]
    return [(found, "")]


def _wildcard(folder: str, written: str, parent: str) -> list[tuple[str, str]]:
    """Every sub-folder and VPK of ``parent`` (``custom/*``), each judged where it really leads; the entries that
    are links leading outside are left out together, in one line of ``skipped``."""
    if not os.path.isdir(parent):  # (one stat, before the judgement's real paths)
        return [(written, "no such folder")]
    why = _judge(folder, parent)
    if why:
        return [(written, why)]
    try:
        names = sorted(os.listdir(parent), key=str.lower)[:MAX_WILDCARD]
    except OSError:
        return [(written, "no such folder")]
    out, linked = [], []
    for name in names:
        full = os.path.join(parent, name)
        if refused_name(name) or not (os.path.isdir(full) or (name.lower().endswith(".vpk") and not _is_part(name))):
            continue
        if _judge(folder, full):
            linked.append(name)
        else:
            out.append((full, ""))
    if linked:
        shown = ", ".join(linked[:3]) + (f" and {len(linked) - 3:,} more" if len(linked) > 3 else "")
        out.append((written, f"{shown}: {LINKED}"))
    return out


def _is_part(name: str) -> bool:
    stem = name[:-4]
    return len(stem) > 4 and stem[-4] == "_" and stem[-3:].isdigit()


def vpk_directory(path: str) -> str | None:
    """The directory file a VPK name means: ``x.vpk`` → ``x_dir.vpk`` when that exists, else ``x.vpk`` itself."""
    if not path.lower().endswith("_dir.vpk"):
        candidate = path[:-4] + "_dir.vpk"
        if os.path.isfile(candidate):
            return candidate
    return path if os.path.isfile(path) else None


def _inside(path: str, root: str) -> bool:
    path, root = os.path.normcase(path), os.path.normcase(root)
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


def _anchor(folder: str, target: str) -> str | None:
    """The folder ``target`` is spelled inside of that permits it: the game folder, or another game's install (a
    folder holding gameinfo.txt below the folder that holds the installs); None when there is none."""
    if _inside(target, folder):
        return folder
    common = os.path.dirname(os.path.dirname(folder))
    if common == os.path.dirname(common) or not _inside(target, common) or target == common:
        return None
    step = target if os.path.isdir(target) else os.path.dirname(target)
    while _inside(step, common) and step != common:
        if has_gameinfo(step):
            return step
        step = os.path.dirname(step)
    return None


def _judge(folder: str, target: str) -> str:
    """Why ``target`` may not be mounted, or "": it must be spelled inside the game folder or another install, and
    really lie (links followed) inside where that folder really is, or inside another install beside where the
    game folder really is (a game's install moved to another drive through a link stays usable)."""
    anchor = _anchor(folder, target)
    if anchor is None:
        return OUTSIDE
    real = real_path(target)
    if real is None:
        return LINKED
    real_anchor = real_path(anchor)
    if real_anchor is not None and _inside(real, real_anchor):
        return ""
    real_folder = real_path(folder)
    return "" if real_folder is not None and _anchor(real_folder, real) is not None else LINKED
