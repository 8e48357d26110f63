"""Where every benchmark's markdown tables go: the terminal, and the file ``--output`` names (for BENCHMARKS.md)."""

from __future__ import annotations

import sys
from pathlib import Path


def report_tables(lines: list[str], output: str | Path | None) -> int:
    """Prints ``lines`` as one text (after a blank line, apart from the progress printed before) and writes it to
    ``output`` when given; returns the exit status 0, for ``main`` to return."""
    text = "\n".join(lines) + "\n"
    print("\n" + text)
    if output:
        Path(output).write_text(text, encoding="utf-8")
    return 0


def leave(status: int | None) -> None:
    """Exit once the report is out, without the bpy module's teardown (bpy 4.5's exit handlers can deadlock:
    ``cli.needs_blender.leave``, which the command-line tools use too)."""
    root = str(Path(__file__).resolve().parents[1])
    if root not in sys.path:
        sys.path.insert(0, root)
    from io_ms3d_mdl.cli.needs_blender import leave as leave_without_teardown

    leave_without_teardown(int(status or 0))
