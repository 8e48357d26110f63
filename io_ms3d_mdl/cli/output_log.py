"""The outputs a batch made, by file identity, so ``--resume`` knows its own files even when the report does not.

The report is rewritten only every few seconds, and a run that is interrupted, or killed outright, may already have
moved outputs into place that its report never recorded. So each output is also logged, one JSON line appended to
``<report>.outputs.jsonl`` just before it is moved into place: its final path and the identity of the finished
temporary file (device, inode, size, modification time), which the move keeps. ``--resume`` replaces such a file only
while it is still that very file, so a file someone else put there, or changed since, is never touched. At the end of
a run the log keeps only what the report does not already say, and is removed when that is nothing.
"""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path
from typing import Any

from .safe_write import write_text

IDENTITY = ("dev", "ino", "size", "mtime_ns")
OPEN_FLAGS = os.O_WRONLY | os.O_APPEND | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0)  # never through a planted link


def log_path(report: Path) -> Path:
    return report.with_name(report.stem + ".outputs.jsonl")


def identity(path: Path) -> dict[str, int] | None:
    """What tells this file from any other at the same path; None unless it is a regular file."""
    try:
        info = path.lstat()
    except OSError:
        return None
    if not stat.S_ISREG(info.st_mode):
        return None
    return dict(zip(IDENTITY, (info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns), strict=True))


def log_output(log: Path, target: Path, finished: Path) -> None:
    """Log ``finished`` (the complete temporary file) as the output ``target`` it is about to become. One short
    write to a file opened for appending, so the lines of several workers never interleave."""
    line = json.dumps({"output": str(target), **(identity(finished) or {})}) + "\n"
    descriptor = os.open(log, OPEN_FLAGS, 0o644)
    try:
        os.write(descriptor, line.encode("utf-8"))
    finally:
        os.close(descriptor)


def read_log(log: Path) -> dict[str, dict[str, Any]]:
    """Output path → its last logged identity. A line cut short by a kill, or anything else that is not an entry,
    is skipped."""
    try:
        text = log.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return {}
    entries: dict[str, dict[str, Any]] = {}
    for line in text.splitlines():
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        if isinstance(entry, dict) and isinstance(entry.get("output"), str):
            entries[entry["output"]] = entry
    return entries


def still_ours(target: Path | None, entries: dict[str, dict[str, Any]]) -> bool:
    """The file at ``target`` is the very file a run of ours logged there."""
    entry = entries.get(str(target)) if target is not None else None
    if entry is None:
        return False
    now = identity(target)
    return now is not None and all(entry.get(key) == now[key] for key in IDENTITY)


def settle(log: Path, records: list[dict[str, Any]]) -> None:
    """Keep only the outputs that are still ours and that no record of the report names; remove the log when none
    is left (the usual end of a run)."""
    entries = read_log(log)
    if not entries and not os.path.lexists(log):
        return
    recorded = {r.get("output") for r in records if r.get("status") == "ok"}
    kept = [e for output, e in entries.items() if output not in recorded and still_ours(Path(output), entries)]
    if kept:
        write_text(log, "".join(json.dumps(e) + "\n" for e in kept))
    else:
        log.unlink(missing_ok=True)
