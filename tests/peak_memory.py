"""A process's own peak resident memory, for the tests that bound what an import or a decoder may take.

Linux's ``ru_maxrss`` is no good in a child process: a process started by a large one (the test runner, after a
few thousand imports) inherits that one's peak through ``fork`` and ``exec``, so a child that used 300 MB reads
3.4 GB. The resident high-water mark of the child's own memory (``VmHWM``) starts afresh at ``exec``.
"""

from __future__ import annotations

import re
from pathlib import Path


def peak_bytes() -> int:
    """This process's peak resident memory in bytes: ``VmHWM`` where Linux gives it, else ``ru_maxrss``."""
    try:
        found = re.search(r"VmHWM:\s+(\d+) kB", Path("/proc/self/status").read_text())
    except OSError:
        found = None
    if found:
        return int(found.group(1)) * 1024
    import resource
    import sys

    scale = 1 if sys.platform == "darwin" else 1024  # bytes on macOS, kilobytes elsewhere
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * scale
