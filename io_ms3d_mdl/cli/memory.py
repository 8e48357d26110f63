"""How much memory a worker process holds right now (resident set), for --max-memory. Read from /proc on Linux,
with psutil where it is installed, or from ``ps`` (macOS, the BSDs); None where none of them works."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

MB = 1024 * 1024


def resident_mb(pid: int) -> float | None:
    for probe in (from_proc, from_psutil, from_ps):
        value = probe(pid)
        if value is not None:
            return value
    return None


def from_proc(pid: int) -> float | None:
    try:
        pages = int(Path(f"/proc/{pid}/statm").read_text().split()[1])
    except (OSError, ValueError, IndexError):
        return None
    return pages * os.sysconf("SC_PAGE_SIZE") / MB


def from_psutil(pid: int) -> float | None:
    try:
        import psutil  # optional: not a dependency
    except ImportError:
        return None
    try:
        return psutil.Process(pid).memory_info().rss / MB
    except psutil.Error:
        return None


def from_ps(pid: int) -> float | None:
    try:
        out = subprocess.run(["ps", "-o", "rss=", "-p", str(pid)], capture_output=True, text=True, timeout=5)
        return int(out.stdout.strip()) * 1024 / MB
    except (OSError, ValueError, subprocess.SubprocessError):
        return None


def measurable() -> bool:
    """Whether --max-memory can be enforced on this system."""
    return resident_mb(os.getpid()) is not None
