"""Which files to convert, and where each output goes.

Folders are searched recursively for .ms3d and .mdl files. The outputs mirror the input tree: a model found under a
folder given on the command line goes to ``OUTPUT_DIR/<its path below that folder>/<stem>.blend`` (or ``.glb``);
files given directly are placed relative to their common folder. Where two inputs would still share an output name,
case-insensitively (``x.ms3d`` and ``x.mdl``, or ``X.ms3d`` beside ``x.ms3d``), both keep their source extension
(``x.ms3d.blend``, ``x.mdl.blend``), and a number is added if even that clashes, so every output is unique. Names
are worked out over every input before any ``--shard`` is taken, so shards agree on them.

With ``--vpk ARCHIVE`` or ``--game DIR``, an input that is not a file or folder on disk is a name inside the
mounted archives and games (``models/weapons/v_x.mdl``, any case, a file or a folder), looked up in the order they
were given; with no inputs at all, every model in them is taken. A model found inside an archive is imported
through its virtual path (``<archive>/models/x.mdl``) and its output mirrors the archive's tree.
"""

from __future__ import annotations

import errno
import os
import stat
import sys
import unicodedata
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..budget import Budget, using_budget
from ..errors import FormatError, printable
from ..filesystem import mounts
from ..filesystem.files import refused_name, walk
from .goldsrc_info import is_goldsrc_companion

EXTENSIONS = {".ms3d", ".mdl"}


class NotAModel(Exception):
    """An input that is missing or is not a model file; its message is reported as it stands."""


@dataclass(frozen=True)
class Found:
    """An input file, and where it sits below the folder it was found under (which its output mirrors)."""

    source: Path
    relative: Path


@dataclass(frozen=True)
class Task:
    source: Path
    target: Path | None  # None: imported into the one open file (convert -o, --single, or nothing saved)
    # --resume: the target is an output an earlier run wrote, with this identity (``output_log.identity``); it may
    # be replaced while it still has it
    replaces: dict[str, int] | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "source": str(self.source),
            "target": str(self.target) if self.target else None,
            "replaces": self.replaces,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Task:
        target = data["target"]
        return cls(Path(data["source"]), Path(target) if target else None, data["replaces"])


def read_list(path: str) -> list[str]:
    """``--files-from``: one path per line (``-`` reads standard input); blank lines are skipped."""
    text = sys.stdin.read() if path == "-" else Path(path).read_text(encoding="utf-8")
    return [line.rstrip("\r") for line in text.split("\n") if line.strip()]


def collect(
    inputs: list[str], mounted: tuple[str, ...] = (), exclude: Path | None = None, work_limit: float = 1.0
) -> list[Found]:
    """Folders are searched recursively; files given directly are placed relative to their common folder. Places
    come from the paths as given (``..`` folded, links not followed), so they never climb out of the output folder.
    ``mounted``: archives and game folders that names not on disk are looked up in (``ValueError`` for an archive
    that cannot be read). Nothing in ``exclude`` (the output folder, resolved, when it lies inside the inputs) is
    read as input. ``work_limit`` scales the listing budget (the models every model of an archive names)."""
    refused = [item for item in inputs if refused_name(item)]
    for item in refused:  # (from --files-from: a NUL, which no OS call takes)
        print(f"{printable(item, 200)}: left out: {refused_name(item)}", file=sys.stderr)
    inputs = [item for item in inputs if item not in refused]
    if mounted:
        for mount in mounted:  # a broken or missing archive is a usage error, said before any work
            if mounts.is_archive_name(mount):
                try:
                    mounts.mount_archive(mount)
                except FormatError as exc:
                    raise ValueError(exc.message) from None
            elif not os.path.isdir(mount):
                raise ValueError(f"{mount}: no such game folder")
        if not inputs:
            try:
                with using_budget(Budget(work_limit)):
                    return unique_sources(every_mounted_model(mounted))
            except FormatError as exc:  # more models than the listing budget: a usage error, said before any work
                raise ValueError(exc.message) from None
    virtual = {item for item in inputs if mounts.split(os.path.abspath(item))}
    inside = [item for item in inputs if mounted and item not in virtual and not os.path.lexists(item)]
    direct = [absolute(item) for item in inputs if not Path(item).is_dir() and item not in inside]
    base = common_folder([path for path in direct if path.is_file()])
    found: list[Found] = []
    for item in inputs:
        path = Path(item)
        if item in inside:
            found += in_mounts(item, mounted)
        elif item in virtual:
            found.append(Found(absolute(item), Path(mounts.split(os.path.abspath(item))[1])))
        elif path.is_dir():
            found += models_below(path)
        else:  # a missing file is kept: it is reported as failed
            found.append(Found(path.resolve(), below(absolute(item), base)))
    if exclude is not None:
        kept = [item for item in found if not (item.source == exclude or exclude in item.source.parents)]
        if len(kept) < len(found):
            print(
                f"{len(found) - len(kept):,} files inside the output folder {exclude} are not read as input",
                file=sys.stderr,
            )
        found = kept
    return unique_sources(found)


def every_mounted_model(mounted: tuple[str, ...]) -> list[Found]:
    """Every model in the archives given (or, with none, in the games), named as in its archive or game."""
    archives = [m for m in mounted if mounts.is_archive_name(m)]
    return [
        Found(Path(entry.path), Path(entry.name))
        for entry in mounts.list_models(archives or list(mounted), tuple(sorted(EXTENSIONS)))
    ]


def in_mounts(name: str, mounted: tuple[str, ...]) -> list[Found]:
    """A name inside the mounts: the first file of that name, else every model in the first folder of that name;
    when there is neither, the name in the first mount, to be reported as missing."""
    from ..access import Confinement  # the one place that decides what a name inside a mount leads to

    roots = mounts.mount_roots(mounted)
    confinement = Confinement.for_roots(list(roots))
    for root in roots:
        found = confinement.find(root, name)
        if found:
            return [Found(Path(found), Path(name.replace("\\", "/").strip("/")))]
    parts = [p for p in name.replace("\\", "/").split("/") if p and p != "."]
    for root in roots if ".." not in parts and parts else ():
        archive = mounts.mount_archive(root) if mounts.is_archive_name(root) else None
        if archive is not None and archive.is_folder(name):
            prefix = "/".join(parts).lower() + "/"
            names = [n for e in sorted(EXTENSIONS) for n in archive.entries(e) if n.lower().startswith(prefix)]
            return [Found(Path(archive.path, *n.split("/")), Path(n)) for n in sorted(names)]
        folder = Path(root, *parts)
        if archive is None and folder.is_dir() and confinement.allows(str(folder)):
            # what a link there leads to is not the mount's: a model (or folder) that leads out is left out
            models = [f for f in models_below(folder) if confinement.allows(str(f.source))]
            return [Found(f.source, Path(*parts, f.relative)) for f in models]
    first = roots[0] if roots else os.getcwd()
    return [Found(Path(first, *parts), Path(*parts) if parts else Path(name))]


def absolute(item: str) -> Path:
    return Path(os.path.abspath(item))


def common_folder(files: list[Path]) -> Path | None:
    try:
        return Path(os.path.commonpath([f.parent for f in files])) if files else None
    except ValueError:  # on different drives (Windows): nothing in common
        return None


def models_below(folder: Path) -> list[Found]:
    """The model files below ``folder`` (links to folders not followed, links to files only when they lead to a
    file inside it), GoldSrc companions left to their model.
    A file or folder whose path the OS refuses (past ``PATH_MAX``) is kept as it is, to fail with a row that names
    the limit, rather than end the listing or be left out unsaid."""
    refused: list[Path] = []

    def unreadable(exc: OSError) -> None:
        if exc.errno == errno.ENAMETOOLONG and exc.filename:
            refused.append(Path(os.fsdecode(exc.filename)))

    models: list[Path] = []
    real_folder = os.path.realpath(folder) + os.sep
    elsewhere = 0
    for parent, _, names in walk(str(folder), onerror=unreadable):
        for name in names:
            if os.path.splitext(name)[1].lower() not in EXTENSIONS:
                continue
            full = Path(parent, name)
            try:
                regular = stat.S_ISREG(os.stat(full).st_mode)
            except OSError as exc:
                regular = False
                unreadable(exc)
            if regular and os.path.islink(full) and not os.path.realpath(full).startswith(real_folder):
                elsewhere += 1  # a link in a pack to a model elsewhere (a user's own): not the pack's to give
            elif regular:
                models.append(full)
    if elsewhere:
        print(f"{elsewhere:,} links below {folder} to models outside it were left out", file=sys.stderr)
    models = [p for p in sorted(models) if not is_goldsrc_companion(p)]  # read by their model
    return [Found(p.resolve(), p.relative_to(folder)) for p in sorted(models + refused)]


def below(path: Path, base: Path | None) -> Path:
    try:
        return path.relative_to(base) if base else Path(path.name)
    except ValueError:
        return Path(path.name)


def unique_sources(found: list[Found]) -> list[Found]:
    """A file given twice (itself and in its folder) is converted once, where it was first named."""
    seen: set[Path] = set()
    unique = []
    for item in found:
        if item.source not in seen:
            seen.add(item.source)
            unique.append(item)
    return unique


def fold(path: Path) -> str:
    """A path as case-insensitive file systems (Windows, macOS) compare it."""
    return unicodedata.normalize("NFC", path.as_posix()).casefold()


def output_paths(relatives: list[Path], extension: str) -> list[Path]:
    """``folder/stem.ext``; where that clashes case-insensitively, ``folder/name.ext`` (the source extension kept);
    where even that clashes, a number. Deterministic for a given input order, and unique."""
    plain = [r.with_name(r.stem + extension) for r in relatives]
    clashes = Counter(fold(p) for p in plain)
    named = [
        r.with_name(r.name + extension) if clashes[fold(p)] > 1 else p for r, p in zip(relatives, plain, strict=True)
    ]
    taken: set[str] = set()
    unique = []
    for path in named:
        candidate, number = path, 1
        while fold(candidate) in taken:
            number += 1
            candidate = path.with_name(f"{path.name[: -len(extension)]}-{number}{extension}")
        taken.add(fold(candidate))
        unique.append(candidate)
    return unique


def plan(found: list[Found], out_dir: Path | None, fmt: str) -> list[Task]:
    """One task per input; with no output folder everything goes into the one open file."""
    if out_dir is None:
        return [Task(item.source, None) for item in found]
    targets = output_paths([item.relative for item in found], "." + fmt)
    return [Task(item.source, out_dir / target) for item, target in zip(found, targets, strict=True)]


def parse_shard(text: str) -> tuple[int, int]:
    """``I/N`` with 1 ≤ I ≤ N: this run takes every N-th input starting at the I-th."""
    try:
        index, count = (int(part) for part in text.split("/"))
    except ValueError:
        raise ValueError(f"--shard takes I/N, such as 1/4, not {text!r}") from None
    if not 1 <= index <= count:
        raise ValueError(f"--shard {text}: I must be between 1 and N")
    return index, count


def shard(tasks: list[Task], index: int, count: int) -> list[Task]:
    return tasks[index - 1 :: count]
