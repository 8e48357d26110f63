"""How ``info`` words and lays out its text report (shared by the Source/MilkShape and the GoldSrc reports)."""

from __future__ import annotations

from collections.abc import Iterable

LIST_LIMIT = 20  # items shown per list in the text report; --json has them all


def plural(n: int, one: str, many: str | None = None) -> str:
    return f"{n:,} {one if n == 1 else (many or one + 's')}"


def number(value: float) -> str:
    """``24`` rather than ``24.0``; fractions kept."""
    return f"{value:g}" if isinstance(value, float) else f"{value:,}"


def table(rows: list[tuple[str, ...]], indent: str = "    ") -> list[str]:
    """Rows with their columns aligned, cut to LIST_LIMIT with a note saying how many were left out."""
    shown = rows[:LIST_LIMIT]
    widths = [max(len(row[i]) for row in shown) for i in range(len(shown[0]))] if shown else []
    lines = [indent + "  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip() for row in shown]
    if len(rows) > LIST_LIMIT:
        lines.append(f"{indent}… and {len(rows) - LIST_LIMIT:,} more (--json lists all)")
    return lines


def inline(items: Iterable[str]) -> str:
    items = list(items)
    if not items:
        return "none"
    text = ", ".join(items[:LIST_LIMIT])
    return text + (f", … and {len(items) - LIST_LIMIT:,} more" if len(items) > LIST_LIMIT else "")
