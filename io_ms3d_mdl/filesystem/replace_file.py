"""Writing an export so that a failure never leaves a partial file, and a link is never written through. No ``bpy``.

The bytes go to a new hidden file beside the target (same folder, so the final rename stays on one file system),
created exclusively and without following links, then renamed over the target in one step. A target that is a
link (or not a regular file) is refused rather than followed or replaced.
"""

from __future__ import annotations

import contextlib
import os
import stat
import uuid

_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0) | getattr(os, "O_NOFOLLOW", 0)


class WriteRefused(OSError):
    """The target cannot be written safely: the message names it and why."""


def replace_file(path: str | os.PathLike[str], data: bytes) -> None:
    path = os.path.abspath(os.fspath(path))
    folder, name = os.path.split(path)
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        info = None
    if info is not None and not stat.S_ISREG(info.st_mode):
        what = "a link" if stat.S_ISLNK(info.st_mode) else "not a regular file"
        raise WriteRefused(f"{path} is {what}; the export does not write through it (choose another file)")
    if not os.path.isdir(folder):
        raise WriteRefused(f"the folder {folder} does not exist")
    partial = os.path.join(folder, f".{name}.{uuid.uuid4().hex[:12]}.partial")
    fd = os.open(partial, _FLAGS, 0o644)
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(data)
            out.flush()
            os.fsync(out.fileno())
        os.replace(partial, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(partial)
        raise
