"""Which outputs a batch made, by file identity, so ``--resume`` replaces its own files and nothing else.

The report is rewritten only every few seconds, and a run that is interrupted, or killed outright, may already have
moved outputs into place that its report never recorded. So each output is also logged, one JSON line appended to
``<report>.outputs.jsonl`` just before it is moved into place: its final path and the identity of the finished
temporary file (inode, size, modification time), which the move keeps. The report's record of an output carries the
same identity.

``--resume`` plans to replace an output only while the file there still has an identity the report or the log gives
it, and sits in the folder its path names (no linked folder on the way); the worker checks the identity again just
before it replaces the file. A file someone else put there, or changed since, is never touched; neither is a log
that is not ours. At the end of a run the log is removed once the report says all it says.

Appending one short line at a time keeps the lines of several workers whole on local POSIX file systems; a line cut
short by a kill cannot take the next one with it, since every line starts on a fresh one. Identities are only as
good as the file system's: on FAT or over SMB a moved file may get a new one, and then ``--resume`` refuses to
replace it, as it would a stranger's.
"""

from __future__ import annotations

import json
import os
import stat
from contextlib import suppress
from pathlib import Path
from typing import Any

from .no_links import Folder, output_folder

HEADER = {"kind": "io_ms3d_mdl batch outputs"}
IDENTITY = ("ino", "size", "mtime_ns")
NO_LINKS = getattr(os, "O_NOFOLLOW", 0)  # never through a planted link, where the platform can say so
Identity = dict[str, int]


class NotOurLog(Exception):
    """Something else sits where the run would keep its log of outputs."""


def log_path(report: Path) -> Path:
    return report.with_name(report.stem + ".outputs.jsonl")


def identity(path: Path) -> Identity | None:
    """What tells this file from another at the same path; None unless it is a regular file."""
    try:
        info = path.lstat()
    except OSError:
        return None
    return identity_of(info)


def identity_of(info: os.stat_result | None) -> Identity | None:
    if info is None or not stat.S_ISREG(info.st_mode):
        return None
    return dict(zip(IDENTITY, (info.st_ino, info.st_size, info.st_mtime_ns), strict=True))


def still_ours(target: Path | None, identities: list[Identity]) -> Identity | None:
    """The identity the file at ``target`` has, when it is one of ``identities`` and the file sits in the folder
    its path names (a linked folder on the way could lead anywhere); else None."""
    if target is None or not identities:
        return None
    now = identity(target)
    if now is None or now not in identities:
        return None
    return now if os.path.realpath(target.parent) == os.path.normpath(target.parent) else None


# --- the log ----------------------------------------------------------------------------------------------------


def open_log(log: Path, root: Path | None = None) -> None:
    """Start the run's log, or keep the one an earlier run left; NotOurLog when anything else is there (a user's
    file is never appended to or removed). Done before any file is converted, so a log that cannot be written stops
    the run at once. ``root``: the output folder, below which no step is followed through a link."""
    with output_folder(log.parent, root) as folder:
        try:
            descriptor = folder.create(log.name)
        except FileExistsError:
            if not ours(log):
                raise NotOurLog(
                    f"{log} exists and is not a log of io-ms3d-mdl batch; move it, or choose another --report"
                ) from None
            return
    try:
        _write(descriptor, json.dumps(HEADER) + "\n")
    finally:
        os.close(descriptor)


def ours(log: Path) -> bool:
    """A regular file (not a link) that starts with our header."""
    if identity(log) is None:
        return False
    try:
        with open(log, "rb", opener=_no_follow) as f:
            first = f.readline(256)
    except OSError:
        return False
    try:
        return json.loads(first) == HEADER
    except ValueError:
        return False


def _no_follow(path: str, flags: int) -> int:
    return os.open(path, flags | NO_LINKS | getattr(os, "O_NONBLOCK", 0))


def log_output(
    log: Path, target: Path, finished: Path | str, folder: Folder | None = None, root: Path | None = None
) -> Identity:
    """Log ``finished`` (the complete temporary file, named in ``folder`` when given) as the output ``target`` it
    is about to become; returns its identity. One write to the run's existing log (never created here, never
    through a link)."""
    found = identity_of(folder.lstat(str(finished))) if folder is not None else identity(Path(finished))
    if found is None:
        raise OSError(f"{finished} is not a regular file")
    with output_folder(log.parent, root, create=False) as place:
        descriptor = place.create(log.name, exclusive=False)
    try:
        _write(descriptor, "\n" + json.dumps({"output": str(target), **found}) + "\n")
    finally:
        os.close(descriptor)
    return found


def _write(descriptor: int, text: str) -> None:
    data = text.encode("utf-8")
    if os.write(descriptor, data) != len(data):  # a full disk: the line is cut, and so is this output
        raise OSError("the log of outputs could not be written in full")


def read_log(log: Path) -> dict[str, list[Identity]]:
    """Output path → every identity logged for it. Lines cut short by a kill, and anything else that is not an
    entry, are skipped; a file that is not our log gives nothing."""
    return _entries(log) if ours(log) else {}


def _entries(log: Path) -> dict[str, list[Identity]]:
    try:
        with open(log, "rb", opener=_no_follow) as f:
            text = f.read().decode("utf-8", errors="replace")
    except OSError:
        return {}
    entries: dict[str, list[Identity]] = {}
    for line in text.splitlines():
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        if isinstance(entry, dict) and isinstance(entry.get("output"), str):
            found = {key: entry.get(key) for key in IDENTITY}
            if all(isinstance(v, int) for v in found.values()):
                entries.setdefault(entry["output"], []).append(found)
    return entries


def close_log(log: Path, records: list[dict[str, Any]], root: Path | None = None) -> None:
    """Remove the log when it says nothing the report does not: every output it names is gone, changed, or
    recorded as made with that identity. Otherwise it stays as it is, for the next ``--resume``."""
    if not ours(log):
        return
    entries = _entries(log)
    recorded = {(r.get("output"), _key(r.get("output_identity"))) for r in records if r.get("status") == "ok"}
    for output, identities in entries.items():
        now = still_ours(Path(output), identities)
        if now is not None and (output, _key(now)) not in recorded:
            return
    with suppress(OSError), output_folder(log.parent, root, create=False) as folder:
        folder.unlink(log.name)


def _key(found: object) -> tuple | None:
    return tuple(found.get(key) for key in IDENTITY) if isinstance(found, dict) else None
