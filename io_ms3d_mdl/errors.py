"""The one exception type that readers let escape, and the warning list they fill.

Every reader reports bad input as :class:`FormatError` so that the operator (and batch tools) can catch exactly
this type, show a readable message, and let real bugs surface as real tracebacks.
"""

from __future__ import annotations

import os
import re

MESSAGE_LIMIT = 1000


def printable(text: str, limit: int = MESSAGE_LIMIT) -> str:
    """Text as it may appear in a message: control characters escaped and length bounded, so a name from a file
    can neither forge lines in a report or console nor flood it."""
    if len(text) <= limit and text.isprintable():
        return text  # the usual case, without a pass per character
    out = "".join(c if c.isprintable() else f"\\x{ord(c):02x}" for c in text[: limit * 2])
    return out if len(out) <= limit else out[: limit - 1] + "…"


class FormatError(ValueError):
    """A file that cannot be read: names the file, the byte offset and what was expected there."""

    def __init__(self, path: str | os.PathLike[str] | None, offset: int | None, reason: str) -> None:
        self.path = os.fspath(path) if path is not None else None
        self.offset = offset
        self.reason = reason
        super().__init__(self.message)

    @property
    def message(self) -> str:
        where = f" (at byte offset {self.offset})" if self.offset is not None else ""
        name = os.path.basename(self.path) if self.path else "<data>"
        return printable(f"{name}: {self.reason}{where}")


class BudgetExceeded(FormatError):
    """A file asks for more work than the import's budget allows (see ``budget.py``). Never downgraded to a
    warning: skipping one part and going on would only spend the budget again on the next."""


_QUOTED = re.compile(r"'[^']*'")


def fold(messages: list[str]) -> list[str]:
    """Messages that differ only in the names they quote become one line with a count, in first-seen order:
    22 "material 'x' was not found" lines read as one line "(and 21 more like it)"."""
    groups: dict[str, list[str]] = {}
    for message in messages:
        groups.setdefault(_QUOTED.sub("'…'", message), []).append(message)
    return [
        group[0] if len(group) == 1 else f"{group[0]} (and {len(group) - 1} more like it)" for group in groups.values()
    ]


class Warnings(list[str]):
    """Non-fatal findings collected while reading or converting; shown to the user after the import.

    Each message once, checked in constant time: a hostile file can produce thousands."""

    def __init__(self, *args) -> None:
        super().__init__(*args)
        self._seen = set(self)

    def add(self, message: str) -> None:
        message = printable(message)
        if message not in self._seen:
            self._seen.add(message)
            self.append(message)

    def extend(self, messages) -> None:
        for message in messages:
            self.add(message)

    def truncate(self, count: int) -> None:
        """Forget every message after the first ``count`` (a part given up on says why in one message instead)."""
        for message in self[count:]:
            self._seen.discard(message)
        del self[count:]
