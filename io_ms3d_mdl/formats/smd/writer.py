"""Studiomdl's text sources: SMD (skeleton, animation frames, triangles) and VTA (vertex animation).

Stable API (the GoldSrc and Source decompilers both write through it):

``SmdSkeleton(names, parents)``
    Bone names (exactly as stored; any length) and parent indices (-1: a root; parents before children).
``SmdTriangles(materials, material_index, positions, normals, uvs, bones, weights)``
    T triangles, corners in the order the file should list them: ``positions``/``normals`` (T, 3, 3), ``uvs``
    (T, 3, 2) with v up (SMD's convention: the engine's v flipped), ``bones``/``weights`` (T, 3, K) links, bone -1
    or weight 0 for an unused link. The corner's parent bone is its first link; every link with a weight is
    written, so even a GoldSrc (one bone) vertex is exact.
``write_smd(out, skeleton, frames, triangles=None) -> SmdStats``
    ``frames``: (F, B, 6) float per bone local position (x, y, z) then Euler angles (x, y, z) in radians, the
    rotation being Rz·Ry·Rx (Source's ``AngleMatrix``); a reference SMD has one frame, the rest pose.
``write_vta(out, skeleton, base_positions, base_normals, shapes) -> SmdStats``
    The vertex animation of one mesh: frame 0 lists every vertex (``base_*``, (V, 3), in the reference SMD's
    space: studiomdl matches them to the reference by position), then one frame per shape in ``shapes``
    ``(name, indices (N,), positions (N, 3), normals (N, 3))`` listing only the vertices it moves, index being the
    row in ``base_*``. Frame ``i + 1`` is shape ``i``: the QC's ``flex "name" frame i+1``.

``out`` is a binary stream; text is UTF-8 (names as stored). Every number reads back as the float32 it was
(``formats.float_text``); a nan or inf is written as 0 and counted in ``SmdStats.non_finite`` for a warning.
Lines are built for whole arrays with one ``%`` per block, never a Python loop per vertex or frame.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import BinaryIO

import numpy as np

from ..float_text import finite32, float_tokens

STORED = ("utf-8", "surrogateescape")  # names as the model stored them (formats.stored_text)
CHUNK = 1 << 16  # rows formatted at a time: the text of a big animation never sits whole in memory


@dataclass
class SmdSkeleton:
    names: list[str]
    parents: np.ndarray  # (B,) int


@dataclass
class SmdTriangles:
    materials: list[str]
    material_index: np.ndarray  # (T,) int into ``materials``
    positions: np.ndarray  # (T, 3, 3)
    normals: np.ndarray  # (T, 3, 3)
    uvs: np.ndarray  # (T, 3, 2)
    bones: np.ndarray  # (T, 3, K) int, -1: unused
    weights: np.ndarray  # (T, 3, K) float


@dataclass
class SmdStats:
    non_finite: int = 0  # nan/inf values written as 0
    rows: int = 0  # vertex or bone-frame lines written


def smd_name(name: str) -> str:
    """A name inside SMD quotes: the format has no escape, so a double quote becomes a single one, and a line
    break a space (the only changes ever made to a name)."""
    return name.replace('"', "'").replace("\r", " ").replace("\n", " ")


def write_nodes(out: BinaryIO, skeleton: SmdSkeleton) -> None:
    parents = np.asarray(skeleton.parents, dtype=np.int64).tolist()
    rows = [f'{i} "{smd_name(n)}" {p}\n' for i, (n, p) in enumerate(zip(skeleton.names, parents, strict=True))]
    out.write(("version 1\nnodes\n" + "".join(rows) + "end\n").encode(*STORED))


def _rows(first: list | np.ndarray, numbers: np.ndarray, stats: SmdStats) -> str:
    """Lines of ``first`` (a column of ints or text) followed by the float columns of ``numbers`` (N, C)."""
    n, columns = numbers.shape
    tokens, bad = float_tokens(numbers)
    stats.non_finite += bad
    stats.rows += n
    table = np.empty((n, columns + 1), dtype=object)
    table[:, 0] = first
    table[:, 1:] = tokens.reshape(n, columns)
    return (("%s" + " %s" * columns + "\n") * n) % tuple(table.ravel().tolist())


def write_skeleton(out: BinaryIO, frames: np.ndarray, stats: SmdStats) -> None:
    frames = np.asarray(frames)
    count, bones = frames.shape[:2]
    out.write(b"skeleton\n")
    per_chunk = max(1, CHUNK // max(bones, 1))
    for start in range(0, count, per_chunk):
        lines = _pose_lines(frames[start : start + per_chunk], stats)
        n = len(lines)
        table = np.empty((n, bones + 1), dtype=object)
        table[:, 0] = ("time %d\n" * n % tuple(range(start, start + n))).split("\n")[:-1]
        table[:, 1:] = lines
        out.write(("\n".join(table.ravel().tolist()) + "\n").encode(*STORED))
    out.write(b"end\n")


def _pose_lines(block: np.ndarray, stats: SmdStats) -> np.ndarray:
    """(F, B) object array: the line of each bone in each frame. A value equal to the same column's in the frame
    before reuses its text, and a line whose six values all repeat reuses the line: an animation's channels mostly
    hold still, and formatting numbers is the writer's cost."""
    values, bad = finite32(block)
    stats.non_finite += bad
    n, bones = values.shape[:2]
    stats.rows += n * bones
    flat = values.reshape(n, bones * 6)
    fresh = np.ones(flat.shape, dtype=bool)
    fresh[1:] = flat[1:] != flat[:-1]
    tokens, _ = float_tokens(flat[fresh])
    slot = np.zeros(flat.shape, dtype=np.int64)
    slot[fresh] = np.arange(tokens.size)
    slot = slot[_last_fresh(fresh), np.arange(bones * 6)]  # each value's token: its column's latest change
    row_fresh = fresh.reshape(n, bones, 6).any(axis=2)
    picked = np.flatnonzero(row_fresh.ravel())
    table = np.empty((picked.size, 7), dtype=object)
    table[:, 0] = (picked % bones).tolist()
    table[:, 1:] = tokens[slot.reshape(n * bones, 6)[picked]]
    text = ("%d %s %s %s %s %s %s\n" * picked.size) % tuple(table.ravel().tolist())
    rows = np.array(text.split("\n")[:-1], dtype=object)
    row_slot = np.zeros(n * bones, dtype=np.int64)
    row_slot[picked] = np.arange(picked.size)
    return rows[row_slot.reshape(n, bones)[_last_fresh(row_fresh), np.arange(bones)]]


def _last_fresh(fresh: np.ndarray) -> np.ndarray:
    """(F, C): per column, the latest frame at or before each one where ``fresh`` is set (frame 0 always is)."""
    return np.maximum.accumulate(np.where(fresh, np.arange(len(fresh))[:, None], 0), axis=0)


CORNER_BYTES = 64  # at least what a triangle corner's line takes (a decompile checks its budget with it first)


def write_triangles(out: BinaryIO, triangles: SmdTriangles, stats: SmdStats) -> None:
    out.write(b"triangles\n")
    t = len(triangles.material_index)
    if t == 0:  # (a mesh whose every triangle was refused: nothing to lay out)
        out.write(b"end\n")
        return
    bones = np.asarray(triangles.bones).reshape(t * 3, -1)
    weights = np.asarray(triangles.weights, dtype=np.float32).reshape(t * 3, -1)
    used = (bones >= 0) & (weights > 0)
    order = np.argsort(~used, axis=1, kind="stable")  # used links first, in their order
    bones = np.take_along_axis(bones, order, axis=1)
    weights = np.take_along_axis(weights, order, axis=1)
    counts = used.sum(axis=1)
    parent = np.where(counts > 0, bones[:, 0], np.maximum(bones[:, 0], 0))
    names = np.array([smd_name(m) for m in triangles.materials] or [""], dtype=object)
    material = names[np.asarray(triangles.material_index, dtype=np.int64)]
    positions = np.asarray(triangles.positions).reshape(t * 3, 3)
    normals = np.asarray(triangles.normals).reshape(t * 3, 3)
    uvs = np.asarray(triangles.uvs).reshape(t * 3, 2)
    for start in range(0, t, CHUNK // 3):
        stop = min(t, start + CHUNK // 3)
        corners = slice(start * 3, stop * 3)
        lines = np.empty(((stop - start) * 3,), dtype=object)
        base = np.concatenate([positions[corners], normals[corners], uvs[corners]], axis=1)
        head = _rows(parent[corners].tolist(), base, stats).split("\n")[:-1]
        lines[:] = head
        for k in np.unique(counts[corners]).tolist():  # the links, grouped by how many
            rows = np.nonzero(counts[corners] == k)[0]
            if k == 0:
                continue
            links = np.empty((rows.size, 2 * k + 1), dtype=object)
            links[:, 0] = k
            links[:, 1::2] = bones[corners][rows, :k]
            tokens, bad = float_tokens(weights[corners][rows, :k])
            stats.non_finite += bad
            links[:, 2::2] = tokens.reshape(rows.size, k)
            tail = (("%d" + " %d %s" * k + "\n") * rows.size) % tuple(links.ravel().tolist())
            lines[rows] = lines[rows] + " " + np.array(tail.split("\n")[:-1], dtype=object)
        block = np.empty((stop - start, 4), dtype=object)
        block[:, 0] = material[start:stop]
        block[:, 1:] = lines.reshape(-1, 3)
        out.write(("%s\n%s\n%s\n%s\n" * (stop - start) % tuple(block.ravel().tolist())).encode(*STORED))
    out.write(b"end\n")


def write_smd(
    out: BinaryIO, skeleton: SmdSkeleton, frames: np.ndarray, triangles: SmdTriangles | None = None
) -> SmdStats:
    stats = SmdStats()
    write_nodes(out, skeleton)
    write_skeleton(out, frames, stats)
    if triangles is not None:
        write_triangles(out, triangles, stats)
    return stats


def write_vta(
    out: BinaryIO,
    skeleton: SmdSkeleton,
    base_positions: np.ndarray,
    base_normals: np.ndarray,
    shapes: list[tuple[str, np.ndarray, np.ndarray, np.ndarray]],
) -> SmdStats:
    """See the module's docstring. The skeleton section has one frame per VTA frame, each node posed at zero
    (studiomdl only counts them; a one-node ``root`` skeleton is the usual VTA's)."""
    stats = SmdStats()
    write_nodes(out, skeleton)
    pose = "".join(f"{b} 0 0 0 0 0 0\n" for b in range(len(skeleton.names)))
    frames = [f"time {i}\n{pose}" for i in range(len(shapes) + 1)]
    out.write(("skeleton\n" + "".join(frames) + "end\nvertexanimation\n").encode(*STORED))
    count = len(base_positions)
    base = np.concatenate([np.asarray(base_positions), np.asarray(base_normals)], axis=1).reshape(-1, 6)
    out.write(b"time 0\n")  # (no "# name" after it: strict readers take the line whole; the QC names frames)
    for start in range(0, count, CHUNK):
        stop = min(count, start + CHUNK)
        out.write(_rows(list(range(start, stop)), base[start:stop], stats).encode(*STORED))
    for frame, (_name, indices, positions, normals) in enumerate(shapes, start=1):
        out.write(f"time {frame}\n".encode())
        rows = np.concatenate([np.asarray(positions), np.asarray(normals)], axis=1).reshape(-1, 6)
        if len(rows):
            out.write(_rows(np.asarray(indices, dtype=np.int64).tolist(), rows, stats).encode(*STORED))
    out.write(b"end\n")
    return stats
