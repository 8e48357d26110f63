"""Writing an export so that a failure never leaves a partial file, and a link is never written through. No ``bpy``.

The bytes go to a new hidden file beside the target (same folder, so the final rename stays on one file system),
created exclusively and without following links, then renamed over the target in one step. A target that is a
link (or not a regular file) is refused rather than followed or replaced.

:func:`replace_files` does the same for a set of files (a split export): all of them or none. Every target is
checked before anything is written, every file is written under its temporary name, and only then are they put in
place; a failure on the way removes the temporary files and the files already placed, and puts back the ones
replaced. A target the caller did not allow to be replaced is refused when it exists (and, placed with a hard
link, when it appears meanwhile).
"""

from __future__ import annotations

import contextlib
import os
import stat
import threading
import uuid
from collections.abc import Collection, Iterator, Sequence

# A file's bytes: one bytes-like object, or its pieces in order (bytes or views of memory, written without joining)
Data = bytes | bytearray | memoryview | Sequence[bytes | memoryview]

_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0) | getattr(os, "O_NOFOLLOW", 0)


class WriteRefused(OSError):
    """The target cannot be written safely: the message names it and why."""


def replace_file(path: str | os.PathLike[str], data: Data) -> None:
    path = os.path.abspath(os.fspath(path))
    exists = _check_target(path, replaceable=True)
    with _as_refusal(path):
        partial = _write_partial(path, data)
        held = _hold(path) if exists else None
        try:
            os.replace(partial, path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(partial)
            raise
        finally:
            _let_go(held)


def _hold(path: str) -> int | None:
    """The file about to be replaced, held open (POSIX) so that freeing it, which its last close does (1.4 ms for a
    4.5 MB file on ext4, in the rename otherwise), happens on a helper thread after the export; None when it
    cannot be (Windows, where an open file cannot be renamed over, or a file that is not a regular one)."""
    if os.name != "posix":
        return None
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        regular = stat.S_ISREG(os.fstat(fd).st_mode)
    except OSError:
        regular = False
    if not regular:
        os.close(fd)
        return None
    return fd


def _let_go(fd: int | None) -> None:
    if fd is None:
        return
    try:
        threading.Thread(target=os.close, args=(fd,), name="io_ms3d_mdl close", daemon=True).start()
    except RuntimeError:  # no thread to be had (a limit, or Python shutting down): the file is written, close here
        os.close(fd)


def replace_files(
    files: Sequence[tuple[str | os.PathLike[str], Data]], replaceable: Collection[str | os.PathLike[str]] = ()
) -> None:
    """Every ``(path, bytes)`` written, or none: a path in ``replaceable`` may replace a file, the others must be
    new (:class:`WriteRefused` names the first that exists)."""
    targets = [os.path.abspath(os.fspath(path)) for path, _ in files]
    allowed = {os.path.abspath(os.fspath(path)) for path in replaceable}
    existing = [_check_target(target, target in allowed) for target in targets]
    partials: list[str] = []
    try:
        for target, (_, data) in zip(targets, files, strict=True):
            with _as_refusal(target):
                partials.append(_write_partial(target, data))
        with _as_refusal(targets[0]):
            _place_all(targets, partials, existing)
    finally:
        for partial in partials:
            with contextlib.suppress(OSError):
                os.unlink(partial)


@contextlib.contextmanager
def _as_refusal(path: str) -> Iterator[None]:
    """An error of the system (a full disk, a read-only file system) as one :class:`WriteRefused` naming the file,
    not the temporary file it happened on."""
    try:
        yield
    except WriteRefused:
        raise
    except OSError as exc:
        raise WriteRefused(f"{path} could not be written: {exc.strerror or exc}") from None


def _check_target(path: str, replaceable: bool) -> bool:
    """Whether ``path`` holds a file (one that may be replaced); refused when it is a link or something else, or
    exists and may not be replaced, or its folder is missing."""
    folder = os.path.dirname(path)
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        info = None
    if info is not None and not stat.S_ISREG(info.st_mode):
        what = "a link" if stat.S_ISLNK(info.st_mode) else "not a regular file"
        raise WriteRefused(f"{path} is {what}; the export does not write through it (choose another file)")
    if info is not None and not replaceable:
        raise _not_asked(path)
    if not os.path.isdir(folder):
        raise WriteRefused(f"the folder {folder} does not exist")
    return info is not None


def _write_partial(path: str, data: Data) -> str:
    """``data`` in a new hidden file beside ``path`` (created exclusively, not through a link), flushed to disk."""
    folder = os.path.dirname(path)
    # (a fixed length: the target's name may already be as long as the folder allows)
    partial = os.path.join(folder, f".io_ms3d_mdl.{uuid.uuid4().hex[:12]}.partial")
    fd = os.open(partial, _FLAGS, 0o644)
    try:
        with os.fdopen(fd, "wb") as out:
            for chunk in [data] if isinstance(data, (bytes, bytearray, memoryview)) else data:
                out.write(chunk)
            out.flush()
            os.fsync(out.fileno())
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(partial)
        raise
    return partial


def _place_all(targets: list[str], partials: list[str], existing: list[bool]) -> None:
    """The written files under their names. A replaced file is kept under a hidden name (a hard link, or renamed
    where there are none) until all are placed, so a failure can put everything back."""
    kept: list[tuple[str, str]] = []  # (target, the file it held)
    placed: list[str] = []  # targets that did not exist
    try:
        for target, partial, exists in zip(targets, partials, existing, strict=True):
            if exists:
                kept.append((target, _keep(target)))
                os.replace(partial, target)
            else:
                _place_new(partial, target)
                placed.append(target)
    except BaseException:
        for target in placed:
            with contextlib.suppress(OSError):
                os.unlink(target)
        for target, old in kept:
            with contextlib.suppress(OSError):
                os.replace(old, target)
        raise
    for _, old in kept:
        with contextlib.suppress(OSError):
            os.unlink(old)


def _keep(target: str) -> str:
    old = os.path.join(os.path.dirname(target), f".io_ms3d_mdl.{uuid.uuid4().hex[:12]}.old")
    try:
        os.link(target, old)
    except OSError:  # no hard links here: moved aside (the name is missing until its new file takes it)
        os.replace(target, old)
    return old


def _place_new(partial: str, target: str) -> None:
    """A hard link, which fails when the name was taken meanwhile; a rename where there are no hard links."""
    try:
        os.link(partial, target)
    except FileExistsError:
        raise _not_asked(target) from None
    except OSError:
        if os.path.lexists(target):
            raise _not_asked(target) from None
        os.replace(partial, target)


def _not_asked(path: str) -> WriteRefused:
    return WriteRefused(f"{path} exists and the export was not asked to replace it (move it, or choose another name)")
