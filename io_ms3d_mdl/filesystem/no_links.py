"""Outputs never follow a symbolic link (every writer: the batch in ``cli`` and the decompiler).

With the output folder inside the input tree (``cd pack && io-ms3d-mdl batch .`` writes to ``pack/converted``), a
pack could ship ``converted/sub`` as a link to anywhere and have outputs written, or with ``--overwrite`` a user's
file replaced, there. So every folder below the output folder is reached one step at a time from an open
descriptor of the one above: created with ``mkdir`` relative to it, then opened with ``O_NOFOLLOW|O_DIRECTORY``
(a link, or anything but a folder, is refused), and every file in it is created, checked, linked, renamed and
removed relative to that descriptor. What Blender writes itself (the .blend or .glb, under a temporary name) it is
given as ``/proc/self/fd/N/name``: the kernel resolves that to the folder already opened, not the path again, so
a link swapped in during the run leads nowhere. Where there is no ``/proc`` (macOS) Blender gets the checked path;
on Windows (no ``dir_fd``) each step is checked with ``lstat`` (links and junctions refused) before it is used.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from functools import cache
from pathlib import Path

NO_FOLLOW = getattr(os, "O_NOFOLLOW", 0)
CLOEXEC = getattr(os, "O_CLOEXEC", 0)
FOLDER = getattr(os, "O_DIRECTORY", 0)
BY_DESCRIPTOR = bool(NO_FOLLOW and FOLDER) and {os.open, os.mkdir, os.stat, os.unlink, os.rename, os.link} <= (
    os.supports_dir_fd
)
PROC = "/proc/self/fd"
REPARSE_POINT = getattr(stat, "FILE_ATTRIBUTE_REPARSE_POINT", 0x400)  # Windows: links and junctions


class LinkInTheWay(OSError):
    """A symbolic link (or anything but a folder) where an output folder goes, or a link where an output goes."""

    def __init__(self, path: Path | str, what: str = "folder") -> None:
        super().__init__(
            f"{path} is a symbolic link or not a {what}, where an output goes (outputs never follow links)"
        )


@cache
def _proc_names_folders() -> bool:
    """Whether ``/proc/self/fd/N/name`` reaches a name in the folder behind descriptor N (Linux)."""
    if not BY_DESCRIPTOR:
        return False
    try:
        fd = os.open(".", os.O_RDONLY | FOLDER | CLOEXEC)
    except OSError:
        return False
    try:
        return os.path.isdir(f"{PROC}/{fd}/.")
    finally:
        os.close(fd)


class Folder:
    """One output folder reached without following a link: an open descriptor (POSIX), or its checked path."""

    def __init__(self, path: Path, fd: int | None, made: bool = False) -> None:
        self.path = path
        self.fd = fd
        self.made = made  # this folder was made by ``folder()`` (a failed write removes it again when empty)

    def entry(self, name: str) -> str:
        """The path to give code that opens by path itself (Blender): through the open descriptor where the
        system can, so it leads into this very folder whatever happens to the path meanwhile."""
        if self.fd is not None and _proc_names_folders():
            return f"{PROC}/{self.fd}/{name}"
        return str(self.path / name)

    def lstat(self, name: str) -> os.stat_result | None:
        """The entry itself (a link is not followed); None when there is none."""
        try:
            if self.fd is not None:
                return os.stat(name, dir_fd=self.fd, follow_symlinks=False)
            return os.lstat(self.path / name)
        except FileNotFoundError:
            return None

    def exists(self, name: str) -> bool:
        return self.lstat(name) is not None

    def link(self, source: str, target: str) -> None:
        """A hard link; fails when ``target`` exists (whatever it is: a link there is not followed)."""
        if self.fd is not None:
            os.link(source, target, src_dir_fd=self.fd, dst_dir_fd=self.fd, follow_symlinks=False)
        else:
            os.link(self.path / source, self.path / target)

    def replace(self, source: str, target: str) -> None:
        """Rename over ``target`` (a link there is replaced, never followed)."""
        if self.fd is not None:
            os.replace(source, target, src_dir_fd=self.fd, dst_dir_fd=self.fd)
        else:
            os.replace(self.path / source, self.path / target)

    def unlink(self, name: str) -> None:
        if self.fd is not None:
            os.unlink(name, dir_fd=self.fd)
        else:
            os.unlink(self.path / name)

    def rmdir(self, name: str) -> None:
        """Remove the empty folder ``name`` (OSError when it is not empty)."""
        if self.fd is not None:
            os.rmdir(name, dir_fd=self.fd)
        else:
            os.rmdir(self.path / name)

    def create(self, name: str, exclusive: bool = True) -> int:
        """A descriptor to write ``name``: a new file (``exclusive``), or an existing regular file appended to;
        never through a link."""
        flags = os.O_WRONLY | NO_FOLLOW | CLOEXEC | (os.O_CREAT | os.O_EXCL if exclusive else os.O_APPEND)
        if self.fd is not None:
            return os.open(name, flags, 0o644, dir_fd=self.fd)
        if not exclusive and is_link(self.path / name):
            raise LinkInTheWay(self.path / name, "file")
        return os.open(self.path / name, flags, 0o644)

    def read(self, name: str) -> bytes:
        """A regular file's bytes, not through a link; OSError otherwise."""
        flags = os.O_RDONLY | NO_FOLLOW | CLOEXEC | getattr(os, "O_NONBLOCK", 0)
        if self.fd is not None:
            fd = os.open(name, flags, dir_fd=self.fd)
        else:
            if is_link(self.path / name):
                raise LinkInTheWay(self.path / name, "file")
            fd = os.open(self.path / name, flags)
        with os.fdopen(fd, "rb") as f:
            if not stat.S_ISREG(os.fstat(f.fileno()).st_mode):
                raise LinkInTheWay(self.path / name, "regular file")
            return f.read()

    def folder(self, name: str, create: bool = True) -> Folder:
        """The folder ``name`` in this one, made when missing (``create``), never through a link."""
        path = self.path / name
        made = False
        if create:
            with suppress(FileExistsError):
                if self.fd is not None:
                    os.mkdir(name, dir_fd=self.fd)
                else:
                    os.mkdir(path)
                made = True
        if self.fd is None:
            if is_link(path) or not path.is_dir():
                raise LinkInTheWay(path) if path.exists() or is_link(path) else FileNotFoundError(path)
            return Folder(path, None, made)
        try:
            return Folder(path, os.open(name, os.O_RDONLY | FOLDER | NO_FOLLOW | CLOEXEC, dir_fd=self.fd), made)
        except FileNotFoundError:
            raise
        except OSError:  # ELOOP (a link), ENOTDIR (a file): refused
            raise LinkInTheWay(path) from None

    def close(self) -> None:
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None


def is_link(path: Path) -> bool:
    """A symbolic link, or (Windows) a junction or any other reparse point."""
    try:
        info = os.lstat(path)
    except OSError:
        return False
    return stat.S_ISLNK(info.st_mode) or bool(getattr(info, "st_file_attributes", 0) & REPARSE_POINT)


def below(path: Path, root: Path | None) -> bool:
    """``path`` lies in ``root``, as text (both absolute; nothing is resolved)."""
    return root is not None and (path == root or root in path.parents)


def open_root(root: Path, create: bool = True) -> Folder:
    """The output folder itself, made when missing: the user chose it, so a link there is followed (its being a
    link inside the inputs is refused before the run, ``batch.check_output_folder``)."""
    if create:
        root.mkdir(parents=True, exist_ok=True)
    if not BY_DESCRIPTOR:
        if not root.is_dir():
            raise NotADirectoryError(f"{root} is not a folder")
        return Folder(root, None)
    return Folder(root, os.open(root, os.O_RDONLY | FOLDER | CLOEXEC))


@contextmanager
def output_folder(folder: Path, root: Path | None = None, create: bool = True) -> Iterator[Folder]:
    """``folder``, reached from ``root`` (the output folder) one step at a time without following a link, each
    step made when missing (``create``). A folder not below ``root`` (a ``--single`` file's, a ``--report``
    elsewhere) is the user's choice and opened as it stands; the files in it are still never reached through a
    link. LinkInTheWay where a step is a link or not a folder; FileNotFoundError when one is missing and
    ``create`` is off."""
    start = root if root is not None and below(folder, root) else folder
    current = open_root(start, create)
    try:
        for step in folder.relative_to(start).parts:
            deeper = current.folder(step, create)
            current.close()
            current = deeper
        yield current
    finally:
        current.close()
