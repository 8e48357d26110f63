"""The one exception type that readers let escape, and the warning list they fill.

Every reader reports bad input as :class:`FormatError` so that the operator (and batch tools) can catch exactly
this type, show a readable message, and let real bugs surface as real tracebacks.
"""

from __future__ import annotations

import os


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
        return f"{name}: {self.reason}{where}"


class Warnings(list[str]):
    """Non-fatal findings collected while reading or converting; shown to the user after the import."""

    def add(self, message: str) -> None:
        if message not in self:
            self.append(message)
