"""Files made, filled and closed by a second thread while the first one builds what goes in the next ones.

Making a file is the dear part of writing many small ones: on this project's VMs (ext4, profiled with ``perf``:
``recently_deleted`` under ``ext4_create``) the kernel looks at every inode freed in the last half minute or so, one
by one, for each new file, so after folders of thousands of files were deleted each new file costs 0.7–1.5 ms of
system time (ct_gsg9's 1,453 files: 1.0–2.2 s, more than the decompile's own work). ``os.open`` and ``os.write`` let
go of the GIL, so one thread doing them overlaps that time with the text being built on the other core. The files
are made exactly as before (``Folder.create``: ``O_CREAT|O_EXCL``, never through a link), only in that thread, in
the order they were asked for; the first error stops it and is raised in the caller at its next request or at
:meth:`WrittenBehind.finish`. Told how many files a folder is about to get (:meth:`WrittenBehind.expect`), the
thread makes them there while it has nothing else to do (a model's animations are decoded first, then written in a
burst), and hands them out in turn; one never asked for is removed by :meth:`WrittenBehind.close`.
"""

from __future__ import annotations

import os
import threading
from collections import deque
from contextlib import suppress

from .no_links import Folder

PENDING_BYTES = 32 << 20  # handed over but not yet written: the caller waits beyond this (memory stays bounded)
PIECE_BYTES = 1 << 20  # a stream hands its bytes over this many at a time
MADE_AHEAD = 64  # files made ahead and not yet taken, each open (a process may often hold only 1,024 descriptors)


class BehindFile:
    """One file the thread makes: ``made`` once it exists (so only a file this thread made is ever removed)."""

    __slots__ = ("descriptor", "folder", "made", "name")

    def __init__(self, folder: Folder, name: str) -> None:
        self.folder = folder
        self.name = name
        self.made = False
        self.descriptor: int | None = None


def temporary_name() -> str:
    """A hidden name that is not the final one (a long final name plus a suffix would pass 255 bytes)."""
    return f".{os.urandom(6).hex()}.partial"


class WrittenBehind:
    """A queue of file operations (make, write, close, remove) done in order by one thread."""

    def __init__(self, pending_bytes: int = PENDING_BYTES) -> None:
        self.pending_bytes = pending_bytes
        self._jobs: deque[tuple[str, BehindFile, list[bytes], int]] = deque()
        self._pending = 0
        self._unfinished = 0  # operations asked for and not yet done
        self._expected: dict[Folder, int] = {}  # files still to come in a folder (``expect``)
        self._spares: dict[Folder, deque[BehindFile]] = {}  # made ahead for them, in turn
        self._making: Folder | None = None  # the folder the thread is making one in now
        self._error: BaseException | None = None
        self._stopped = False
        self._changed = threading.Condition()
        self._thread: threading.Thread | None = None

    def expect(self, folder: Folder, count: int) -> None:
        """``count`` more files are coming in ``folder``: made ahead when the thread is idle."""
        with self._changed:
            self._expected[folder] = self._expected.get(folder, 0) + count
            self._spares.setdefault(folder, deque())
            self._changed.notify_all()
        self._start()

    def take(self, folder: Folder) -> BehindFile | None:
        """One of the files made ahead in ``folder`` (waiting for the one being made), or None: make your own."""
        with self._changed:
            if self._expected.get(folder, 0) <= 0:
                return None
            self._expected[folder] -= 1
            spares = self._spares[folder]
            while not spares and self._making is folder:
                self._changed.wait()
            return spares.popleft() if spares else None

    def write(self, file: BehindFile, chunks: list[bytes], size: int, last: bool = False) -> None:
        """``chunks`` (``size`` bytes, which nobody changes any more) appended to ``file``, which is made first
        when it was not made ahead (``take``), and closed after them when ``last``: a small file is one request."""
        self._put("close" if last else "write", file, chunks, size)

    def remove(self, file: BehindFile) -> None:
        """``file`` closed and, if the thread made it, removed (a write that failed half-way); never raises."""
        self._put("remove", file, [], 0, check=False)

    def finish(self) -> None:
        """Wait until every operation asked for is done; the first error raised."""
        with self._changed:
            while self._unfinished:
                self._changed.wait()
            if self._error is not None:
                raise self._error

    def close(self) -> None:
        """Wait for what was asked, then stop the thread (errors are not raised: see :meth:`finish`)."""
        with suppress(BaseException):
            self.finish()
        with self._changed:
            self._stopped = True
            self._changed.notify_all()
        if self._thread is not None:
            self._thread.join()
            self._thread = None
        for spares in self._spares.values():
            for file in spares:
                with suppress(OSError):
                    self._do("remove", file, [], False)
            spares.clear()

    def _put(self, what: str, file: BehindFile, chunks: list[bytes], size: int, check: bool = True) -> None:
        with self._changed:
            while check and self._error is None and self._pending > self.pending_bytes:
                self._changed.wait()
            if check and self._error is not None:
                raise self._error
            self._jobs.append((what, file, chunks, size))
            self._pending += size
            self._unfinished += 1
            self._changed.notify_all()
        self._start()

    def _start(self) -> None:
        if self._thread is None:
            self._thread = threading.Thread(target=self._work, name="io_ms3d_mdl files written behind", daemon=True)
            self._thread.start()

    def _work(self) -> None:
        while True:
            with self._changed:
                while not self._jobs and not self._stopped and self._spare_wanted() is None:
                    self._changed.wait()
                if not self._jobs:
                    if self._stopped:
                        return
                    self._making = self._spare_wanted()
                    assert self._making is not None
                    self._make_spare(self._making)
                    continue
                what, file, chunks, size = self._jobs.popleft()
                failed = self._error is not None
            try:
                self._do(what, file, chunks, failed)
            except BaseException as error:
                with self._changed:
                    self._error = self._error or error
                if file.descriptor is not None:
                    with suppress(OSError):
                        os.close(file.descriptor)
                    file.descriptor = None
            with self._changed:
                self._pending -= size
                self._unfinished -= 1
                self._changed.notify_all()

    def _spare_wanted(self) -> Folder | None:
        """The first folder expecting more files than were made ahead for it (none after an error, nor while
        ``MADE_AHEAD`` wait to be taken)."""
        if self._error is None and sum(map(len, self._spares.values())) < MADE_AHEAD:
            for folder, expected in self._expected.items():
                if expected > len(self._spares[folder]):
                    return folder
        return None

    def _make_spare(self, folder: Folder) -> None:
        """One file made ahead in ``folder`` (called holding the lock, let go of while the file is made); where
        that fails none more are made there (the caller's own attempt will say why)."""
        file = BehindFile(folder, temporary_name())
        self._changed.release()
        try:
            with suppress(BaseException):
                self._do("create", file, [], False)
        finally:
            self._changed.acquire()
            self._making = None
            if file.made:
                self._spares[folder].append(file)
            else:
                self._expected[folder] = 0
            self._changed.notify_all()

    @staticmethod
    def _do(what: str, file: BehindFile, chunks: list[bytes], failed: bool) -> None:
        """One operation (make, or write, or write and close, or remove); after an error nothing more is made or
        written (files are still closed and removed)."""
        if what != "remove" and not failed:
            if not file.made:
                file.descriptor = file.folder.create(file.name)
                file.made = True
            if file.descriptor is not None:
                for chunk in chunks:
                    view = memoryview(chunk)
                    while view:
                        view = view[os.write(file.descriptor, view) :]
        if what in ("close", "remove"):
            if file.descriptor is not None:
                descriptor, file.descriptor = file.descriptor, None
                os.close(descriptor)
            if what == "remove" and file.made:
                file.made = False
                with suppress(OSError):
                    file.folder.unlink(file.name)


class BehindStream:
    """A binary stream into a file of a ``WrittenBehind``: its bytes handed over a piece at a time (a copy of
    anything but ``bytes``, which its writer may change once written)."""

    def __init__(self, behind: WrittenBehind, file: BehindFile) -> None:
        self._behind = behind
        self._file = file
        self._chunks: list[bytes] = []
        self._size = 0

    def write(self, data) -> int:
        chunk = data if type(data) is bytes else memoryview(data).tobytes()
        self._chunks.append(chunk)
        self._size += len(chunk)
        if self._size >= PIECE_BYTES:
            self.flush()
        return len(chunk)

    def flush(self, last: bool = False) -> None:
        if self._chunks or last:
            self._behind.write(self._file, self._chunks, self._size, last)
            self._chunks, self._size = [], 0
