"""Opening a file on disk the one safe way: a regular file only, without blocking, size-bounded. No ``bpy``.

``access.read_file`` and the archive readers (which open a VPK's numbered parts and a GMA's data on demand) share
it, so a FIFO, device or folder named like an archive is refused the same way a model would be.
"""

from __future__ import annotations

import os
import stat
import sys
from collections.abc import Callable, Iterator
from functools import lru_cache

from ..budget import current_budget
from ..errors import FormatError

_FLAGS = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0) | getattr(os, "O_CLOEXEC", 0)


_WINDOWS_REFUSED = frozenset('<>"|?*') | frozenset(chr(c) for c in range(1, 32))


def refused_name(path: str) -> str | None:
    """Why the operating system would refuse ``path`` before looking at the disk, or None: a NUL anywhere (every
    OS; Python raises ``ValueError`` for it), on Windows also a control character or one of ``<>"|?*``. A name from
    a file that holds one is left out with a warning instead of reaching an OS call."""
    if "\0" in path:
        return "it holds a NUL character, which no file system accepts"
    if sys.platform == "win32" and not _WINDOWS_REFUSED.isdisjoint(path):
        return "it holds a character Windows refuses in a file name"
    return None


def real_path(path: str) -> str | None:
    """Where ``path`` leads, through every symlink (``realpath``'s answer), or None when the OS cannot say (a
    refused character). On Linux the kernel names the object a path-only descriptor opened, in three system calls
    instead of an ``lstat`` per step (a game with 4,096 ``custom/*`` entries asks for each, on every import)."""
    if refused_name(path):
        return None
    if kernel_paths():
        try:
            fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
        except OSError:
            pass  # missing: ``realpath`` resolves what exists and keeps the rest
        else:
            try:
                return os.readlink(f"/proc/self/fd/{fd}")
            except OSError:
                pass  # past PATH_MAX: ``realpath`` still can
            finally:
                os.close(fd)
    try:
        return os.path.realpath(path)
    except (OSError, ValueError):
        return None


@lru_cache(maxsize=1)
def kernel_paths() -> bool:
    """Whether this system names an open descriptor's file in ``/proc/self/fd`` as ``realpath`` would (Linux with
    ``/proc`` mounted; checked once on this module's own folder, not assumed)."""
    if not hasattr(os, "O_PATH"):
        return False
    folder = os.path.dirname(os.path.abspath(__file__))
    try:
        fd = os.open(folder, os.O_PATH | os.O_CLOEXEC)
        try:
            return os.readlink(f"/proc/self/fd/{fd}") == os.path.realpath(folder)
        finally:
            os.close(fd)
    except OSError:
        return False


def walk(top: str, onerror: Callable[[OSError], None] | None = None) -> Iterator[tuple[str, list[str], list[str]]]:
    """``os.walk`` top-down without following links to folders, but with a stack instead of recursion: on Python
    3.11 (Blender 4.2 to 5.0) ``os.walk`` recurses, and a tree 3,000 folders deep (one-letter names fit PATH_MAX
    2,000 times over) raised RecursionError. Each folder's sub-folders are visited in sorted order; ``onerror``
    gets what a folder that cannot be listed raised (a path past PATH_MAX)."""
    stack = [top]
    while stack:
        folder = stack.pop()
        dirs, files, links = [], [], []
        try:
            with os.scandir(folder) as entries:
                for entry in entries:
                    try:
                        is_dir = entry.is_dir()
                        (links if is_dir and entry.is_symlink() else dirs if is_dir else files).append(entry.name)
                    except OSError:
                        files.append(entry.name)
        except OSError as exc:
            if onerror is not None:
                onerror(exc)
            continue
        dirs.sort()
        yield folder, dirs, files
        stack.extend(os.path.join(folder, d) for d in reversed(dirs))


def nearest_folder_holding(path: str, name: str) -> str | None:
    """The nearest folder at or above ``path``'s folder that holds a file ``name`` (a game's ``gameinfo.txt``,
    Bloodlines' ``pack000.vpk``), or None."""
    folder = os.path.dirname(os.path.abspath(path))
    while True:
        if os.path.isfile(os.path.join(folder, name)):
            return folder
        parent = os.path.dirname(folder)
        if parent == folder:
            return None
        folder = parent


def kind(mode: int) -> str:
    for test, name in (
        (stat.S_ISDIR, "a folder"),
        (stat.S_ISFIFO, "a FIFO"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISSOCK, "a socket"),
    ):
        if test(mode):
            return name
    return "not a plain file"


def open_regular(path: str) -> tuple[int, os.stat_result]:
    """A descriptor on ``path`` and its status, checked on the descriptor to be a regular file."""
    try:
        fd = os.open(path, _FLAGS)
    except (OSError, ValueError) as exc:
        raise FormatError(path, None, f"cannot open file: {getattr(exc, 'strerror', None) or exc}") from exc
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise FormatError(path, None, f"not a regular file ({kind(info.st_mode)}); refused")
    except BaseException:
        os.close(fd)
        raise
    return fd, info


def read_at(fd: int, offset: int, length: int, path: str) -> bytes:
    """Exactly ``length`` bytes at ``offset`` (a short read is a truncated file, named with its offset)."""
    chunks, done = [], 0
    try:
        if hasattr(os, "pread"):
            while done < length:
                chunk = os.pread(fd, min(length - done, 1 << 24), offset + done)
                if not chunk:
                    break
                chunks.append(chunk)
                done += len(chunk)
        else:  # Windows
            os.lseek(fd, offset, os.SEEK_SET)
            while done < length:
                chunk = os.read(fd, min(length - done, 1 << 24))
                if not chunk:
                    break
                chunks.append(chunk)
                done += len(chunk)
    except OSError as exc:
        raise FormatError(path, offset, f"cannot read file: {exc.strerror or exc}") from exc
    if done < length:
        raise FormatError(path, offset + done, f"file ends {length - done:,} bytes before the {length:,} asked for")
    return b"".join(chunks)


def read_regular(path: str, limit: int | None = None) -> bytes:
    """The whole of a regular file, at most ``limit`` bytes (the budget's file size by default)."""
    limit = current_budget().file_bytes if limit is None else limit
    fd, info = open_regular(path)
    try:
        if info.st_size > limit:
            raise current_budget().exceeded(path, "file size", info.st_size, limit, unit="bytes")
        # Asking for the whole file at once reads a regular file in one chunk, which join hands back uncopied: in
        # 16 MiB chunks, a 512 MiB file was held twice (the chunks, then their join).
        chunks, remaining, size = [], limit + 1, info.st_size + 1
        while remaining > 0:
            chunk = os.read(fd, min(remaining, max(size, 1 << 24)))
            if not chunk:
                break
            chunks.append(chunk)
            remaining -= len(chunk)
    except OSError as exc:
        raise FormatError(path, None, f"cannot read file: {exc.strerror or exc}") from exc
    finally:
        os.close(fd)
    data = b"".join(chunks)
    if len(data) > limit:  # grew while being read
        raise current_budget().exceeded(path, "file size", len(data), limit, unit="bytes")
    return data
