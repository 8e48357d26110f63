"""What one MilkShape 3D file can hold (its counts are 16- and 8-bit fields), and the error for a scene past it.
No ``bpy``."""

from __future__ import annotations

MAX_VERTICES = 65_534
MAX_TRIANGLES = 65_534
MAX_GROUPS = 255
MAX_MATERIALS = 128
MAX_JOINTS = 128


class ExportError(ValueError):
    """A scene MilkShape 3D cannot hold: the message names the object (or limit) and what is wrong."""


def check_limit(count: int, limit: int, what: str) -> None:
    """Refuse ``count`` past ``limit`` with one message naming both."""
    if count > limit:
        raise ExportError(f"the scene has {count:,} {what}; MilkShape 3D holds at most {limit:,} {what}")
