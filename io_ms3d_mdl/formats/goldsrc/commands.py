"""GoldSrc triangle command lists: a signed count (positive: a strip, negative: a fan, zero: the end), then that
many vertices of four shorts each (vertex index, normal index, s, t). Expanded to three corners per triangle in
the order the engine draws them (winding is the scene's business)."""

from __future__ import annotations

import numpy as np

from ...budget import current_budget
from ..binary import Cursor


def mesh_corners(cur: Cursor, offset: int, what: str, work_left: int) -> tuple[np.ndarray, int]:
    """(T*3, 4) int16 corners of the triangles the command list at ``offset`` draws, and the work of walking it:
    one unit per triangle and one per command too short to draw any (a list of one-vertex commands is work
    too), checked against ``work_left`` as the walk goes. The walk stops where the copy budget does (the bytes
    walked are charged before they are used)."""
    if offset < 0 or offset + 2 > cur.size:
        raise cur.error(f"{what}: offset {offset} is outside the {cur.size}-byte file", offset)
    shorts = np.frombuffer(cur.data, dtype="<i2", count=(cur.size - offset) // 2, offset=offset)
    budget = current_budget()
    copy_left = (cur.copy_limit - cur.copied) // 2  # shorts the copy budget still allows
    pos, starts, kinds, counts, work = 0, [], [], [], 0
    end = len(shorts)
    while True:
        if pos >= end:
            raise cur.error(f"{what} run past the end of the file without their terminating zero", offset + 2 * pos)
        count = int(shorts[pos])
        if count == 0:
            break
        n = abs(count)
        if pos + 1 + 4 * n > end:
            raise cur.error(
                f"{what}: a {'strip' if count > 0 else 'fan'} of {n} vertices runs past the end of the file",
                offset + 2 * pos,
            )
        if n >= 3:
            starts.append(pos + 1)
            kinds.append(count > 0)
            counts.append(n)
        work += max(n - 2, 1)
        if work > work_left:
            raise budget.exceeded(cur.path, f"triangles and commands of {what}", work, work_left)
        pos += 1 + 4 * n
        if pos > copy_left:
            cur.charge(2 * pos, what)  # over the budget: raises, naming it
    cur.charge(2 * (pos + 1), what)
    if not counts:
        return np.zeros((0, 4), dtype=np.int16), work
    return _expand(shorts, np.array(starts), np.array(kinds), np.array(counts)), work


def _expand(shorts: np.ndarray, starts: np.ndarray, strip: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """Triangles of every strip and fan at once: triangle ``i`` of a strip is (i, i+1, i+2), its odd ones with the
    first two swapped (so every triangle keeps the strip's facing); of a fan (0, i+1, i+2)."""
    tri_counts = counts - 2
    run = np.repeat(np.arange(len(counts)), tri_counts)
    i = np.arange(len(run)) - np.repeat(np.cumsum(tri_counts) - tri_counts, tri_counts)
    is_strip = strip[run]
    odd = (i & 1).astype(bool) & is_strip
    a = np.where(is_strip, np.where(odd, i + 1, i), 0)
    b = np.where(is_strip, np.where(odd, i, i + 1), i + 1)
    c = i + 2
    local = np.stack([a, b, c], axis=1).ravel()  # vertex of its command
    first = starts[np.repeat(run, 3)] + 4 * local
    return np.ascontiguousarray(shorts[first[:, None] + np.arange(4)])
