"""Where every benchmark's markdown tables go: the terminal, and the file ``--output`` names (for BENCHMARKS.md)."""

from __future__ import annotations

from pathlib import Path


def report_tables(lines: list[str], output: str | Path | None) -> int:
    """Prints ``lines`` as one text (after a blank line, apart from the progress printed before) and writes it to
    ``output`` when given; returns the exit status 0, for ``main`` to return."""
    text = "\n".join(lines) + "\n"
    print("\n" + text)
    if output:
        Path(output).write_text(text, encoding="utf-8")
    return 0
