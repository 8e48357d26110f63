"""Studiomdl's text sources: SMD (skeleton, animation frames, triangles) and VTA (vertex animation).

Stable API (the GoldSrc and Source decompilers both write through it):

``SmdSkeleton(names, parents)``
    Bone names (exactly as stored; any length) and parent indices (-1: a root; parents before children).
``SmdTriangles(materials, material_index, positions, normals, uvs, bones, weights)``
    T triangles, corners in the order the file should list them: ``positions``/``normals`` (T, 3, 3), ``uvs``
    (T, 3, 2) with v up (SMD's convention: the engine's v flipped), ``bones``/``weights`` (T, 3, K) links, bone -1
    or weight 0 for an unused link. The corner's parent bone is its first link; every link with a weight is
    written, so even a GoldSrc (one bone) vertex is exact. ``corners`` (T, 3), optional: a number per corner, equal
    for corners equal in every field (a mesh's vertex), so each vertex's line is formatted once.
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

import operator
from dataclasses import dataclass
from typing import BinaryIO

import numpy as np

from ..float_text import finite32, float_chars

STORED = ("utf-8", "surrogateescape")  # names as the model stored them (formats.stored_text)
CHUNK = 1 << 16  # rows formatted at a time: the text of a big animation never sits whole in memory
# bone lines of animation formatted at a time (2^16 cost scientist.mdl 8,000 page faults: 28 ms of system time)
POSE_ROWS = 1 << 14


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
    corners: np.ndarray | None = None  # (T, 3) optional: corners numbered alike are equal in every field


@dataclass
class SmdStats:
    non_finite: int = 0  # nan/inf values written as 0
    rows: int = 0  # vertex or bone-frame lines written


def smd_name(name: str) -> str:
    """A name inside SMD quotes: the format has no escape, so a double quote becomes a single one, and a line
    break a space (the only changes ever made to a name)."""
    return name.replace('"', "'").replace("\r", " ").replace("\n", " ")


def write_nodes(out: BinaryIO, skeleton: SmdSkeleton) -> None:
    out.write(nodes_text(skeleton))


def nodes_text(skeleton: SmdSkeleton) -> bytes:
    """The ``version`` line and ``nodes`` section (a caller writing many SMDs of one skeleton makes it once)."""
    parents = np.asarray(skeleton.parents, dtype=np.int64).tolist()
    rows = [f'{i} "{smd_name(n)}" {p}\n' for i, (n, p) in enumerate(zip(skeleton.names, parents, strict=True))]
    return ("version 1\nnodes\n" + "".join(rows) + "end\n").encode(*STORED)


def int_chars(values: np.ndarray) -> np.ndarray:
    """(N, D) ASCII digits of non-negative ints, leading zeros as NUL (``_compact`` drops them)."""
    values = np.asarray(values, dtype=np.int64).ravel()
    width = len(str(int(values.max()))) if values.size else 1
    powers = 10 ** np.arange(width - 1, -1, -1, dtype=np.int64)
    digits = values[:, None] // powers % 10
    lead = (values[:, None] < powers) & (powers > 1)  # a zero before the first digit (a 0 itself keeps one)
    return np.where(lead, 0, digits + ord("0")).astype(np.uint8)


def _column(n: int, text: bytes) -> np.ndarray:
    return np.broadcast_to(np.frombuffer(text, dtype=np.uint8), (n, len(text)))


def _compact(table: np.ndarray) -> bytes:
    """The bytes of a NUL-padded table, row after row, with the padding taken out (``bytes.translate`` deletes
    them in one C loop: 11 ms where a boolean mask took 21 on a 1.7 MB table, 40 % of it padding)."""
    return table.astype(np.uint8, copy=False).tobytes().translate(None, b"\0")


def _number_table(first: np.ndarray, numbers: np.ndarray, stats: SmdStats) -> np.ndarray:
    """Rows of ``first`` (ints) then the float columns of ``numbers`` (N, C), space-separated, no line end."""
    n, columns = numbers.shape
    chars, bad = float_chars(numbers)
    stats.non_finite += bad
    stats.rows += n
    parts = [int_chars(first)]
    chars = chars.reshape(n, columns, -1)
    for c in range(columns):  # (a loop over the few columns, not the rows)
        parts += [_column(n, b" "), chars[:, c]]
    return np.concatenate(parts, axis=1)


def _rows(first: np.ndarray, numbers: np.ndarray, stats: SmdStats) -> bytes:
    """Lines of ``first`` (a column of ints) followed by the float columns of ``numbers`` (N, C)."""
    n = len(numbers)
    return _compact(np.concatenate([_number_table(first, numbers, stats), _column(n, b"\n")], axis=1))


def write_skeleton(out: BinaryIO, frames: np.ndarray, stats: SmdStats) -> None:
    frames = np.asarray(frames)
    count, bones = frames.shape[:2]
    out.write(b"skeleton\n")
    per_chunk = max(1, POSE_ROWS // max(bones, 1))
    for start in range(0, count, per_chunk):
        values, bad = finite32(frames[start : start + per_chunk])
        stats.non_finite += bad
        stats.rows += values.shape[0] * bones
        out.write(_frames_text(*_frame_cells(values, np.arange(start, start + len(values))), 0, len(values)))
    out.write(b"end\n")


def skeleton_texts(animations: list[np.ndarray]) -> list[tuple[bytes, SmdStats]]:
    """The ``skeleton`` section of each (F, B, 6) animation (every one with the same B bones) and its stats, the
    same bytes as :func:`write_skeleton`'s. The animations are laid end to end and formatted a block of rows at a
    time, so a model's hundred short sequences cost what one long one does: numpy's cost is per call as much as
    per number. All their text is held at once: the caller hands over a bounded batch. Each section is its frames'
    cells taken into a padded buffer of its own, the padding then taken out (no pass counts each frame's length)."""
    if not animations:
        return []
    bones = animations[0].shape[1]
    counts = np.array([len(a) for a in animations], dtype=np.int64)
    ends = np.cumsum(counts)
    values = np.concatenate([np.asarray(a).reshape(len(a), bones, 6) for a in animations], dtype=np.float32)
    bad = ~np.isfinite(values)
    bad_so_far = np.zeros(len(values) + 1, dtype=np.int64)
    if bad.any():  # (as finite32: nan and inf written as 0, and counted)
        np.cumsum(bad.reshape(len(values), -1).sum(axis=1), out=bad_so_far[1:])
        values[bad] = 0
    values += np.float32(0)  # (-0 is written as 0)
    numbers = np.arange(len(values)) - np.repeat(ends - counts, counts)  # each animation counts its frames from 0
    per_chunk = max(1, POSE_ROWS // max(bones, 1))
    begins = (ends - counts).tolist()
    parts: list[list[bytes | bytearray]] = [[b"skeleton\n"] for _ in animations]
    out: list[tuple[bytes, SmdStats]] = []
    for start in range(0, len(values), per_chunk):  # (a block's padded text is dropped before the next is made)
        stop = min(len(values), start + per_chunk)
        cells, ids = _frame_cells(values[start:stop], numbers[start:stop])
        for a in range(len(out), len(animations)):  # the animations whose frames lie in this block
            if begins[a] >= stop:
                break
            first, last = max(begins[a], start) - start, min(begins[a] + int(counts[a]), stop) - start
            if first < last:
                parts[a].append(_frames_text(cells, ids, first, last))
            if last < stop - start:
                out.append(_section(parts, len(out), bad_so_far, begins, counts, bones))
    while len(out) < len(animations):  # (those with no frames after the last block)
        out.append(_section(parts, len(out), bad_so_far, begins, counts, bones))
    return out


def _section(
    parts: list[list[bytes | bytearray]],
    a: int,
    bad_so_far: np.ndarray,
    begins: list[int],
    counts: np.ndarray,
    bones: int,
) -> tuple[bytes, SmdStats]:
    """Animation ``a``'s skeleton section, its parts joined (and let go of), and its stats."""
    end = begins[a] + int(counts[a])
    stats = SmdStats(non_finite=int(bad_so_far[end] - bad_so_far[begins[a]]), rows=int(counts[a]) * bones)
    text = b"".join([*parts[a], b"end\n"])
    parts[a] = []
    return text, stats


def _frame_cells(values: np.ndarray, numbers: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The pieces of text of the frames of ``values`` (finite float32, (F, B, 6)), each ``time N`` (``numbers``)
    then one line per bone, as NUL-padded cells (void items), and per frame the cells it is made of, in order
    (:func:`_frames_text` joins them). A value equal to the same channel's in the frame before reuses its text: an
    animation's channels mostly hold still, and formatting numbers is the writer's cost.

    Every piece of text the frames are made of is one NUL-padded cell of a table: each fresh value after its
    space, each frame's ``time`` line with the first bone's number, and each line end with the next bone's
    number. A frame is a row of cell numbers, and the text of a run of frames one ``take`` of their cells: no table
    of the frames' lines is filled piece by piece."""
    n, bones = values.shape[:2]
    channels = values.reshape(n, bones * 6).T  # (B·6, F): each channel's frames in a row
    fresh = np.ones(channels.shape, dtype=bool)
    np.not_equal(channels[:, 1:], channels[:, :-1], out=fresh[:, 1:])
    chars, _ = float_chars(channels[fresh], dedupe=False)  # (fresh values seldom repeat enough to pay a sort)
    count = len(chars)
    ends = np.concatenate([_column(bones, b"\n"), int_chars(np.arange(1, bones + 1))], axis=1)
    ends[bones - 1 :, 1:] = 0  # (the last bone's line end has no bone after it)
    head = np.concatenate([_column(n, b"time "), int_chars(numbers), _column(n, b"\n0" if bones else b"\n")], axis=1)
    first_head = count + bones
    width = max(chars.shape[1] + 1, ends.shape[1], head.shape[1])
    cells = np.zeros((first_head + n, width), dtype=np.uint8)
    cells[:count, 0] = ord(" ")
    cells[:count, 1 : chars.shape[1] + 1] = chars
    cells[count:first_head, : ends.shape[1]] = ends
    cells[first_head:, : head.shape[1]] = head
    ids = np.empty((n, 1 + bones * 7), dtype=np.intp)  # per frame: its time line, then per bone 7 cells
    ids[:, 0] = np.arange(first_head, first_head + n)
    lines = ids[:, 1:].reshape(n, bones, 7)
    # in channel order, a value's text is the latest fresh one's: the count of fresh values so far, less one
    lines[:, :, :6] = (np.cumsum(fresh.ravel()) - 1).reshape(bones, 6, n).transpose(2, 0, 1)
    lines[:, :, 6] = np.arange(count, first_head)
    return cells.view(f"V{width}").ravel(), ids


def _frames_text(cells: np.ndarray, ids: np.ndarray, first: int, last: int) -> bytearray:
    """The text of frames ``first`` to ``last`` of :func:`_frame_cells`: their cells taken into a buffer (a copy
    each), the padding then taken out (``translate``, one C loop)."""
    buffer = bytearray((last - first) * ids.shape[1] * cells.itemsize)
    table = np.frombuffer(buffer, dtype=cells.dtype).reshape(last - first, ids.shape[1])
    cells.take(ids[first:last], out=table, mode="clip")  # (every id is in range: no checked copy)
    return buffer.translate(None, b"\0")


def _name_table(names: list[str]) -> np.ndarray:
    """(len(names), L) the UTF-8 bytes of each name, NUL-padded (a stored name ends at its first NUL)."""
    encoded = np.array([n.encode(*STORED) for n in names] or [b""], dtype=bytes)
    width = max(encoded.itemsize, 1)
    return encoded.astype(f"S{width}").view(np.uint8).reshape(-1, width)


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
    if (used[:, 1:] > used[:, :-1]).any():  # (mostly not: a reader lists the links used first)
        order = np.argsort(~used, axis=1, kind="stable")  # used links first, in their order
        bones = np.take_along_axis(bones, order, axis=1)
        weights = np.take_along_axis(weights, order, axis=1)
        used = np.take_along_axis(used, order, axis=1)
    counts = used.sum(axis=1)
    parent = np.where(counts > 0, bones[:, 0], np.maximum(bones[:, 0], 0))
    names = _name_table([smd_name(m) for m in triangles.materials])
    material = np.asarray(triangles.material_index, dtype=np.int64)
    base = np.concatenate(
        [
            np.asarray(triangles.positions).reshape(t * 3, 3),
            np.asarray(triangles.normals).reshape(t * 3, 3),
            np.asarray(triangles.uvs).reshape(t * 3, 2),
        ],
        axis=1,
    )
    links = (parent, base, bones, weights, used, counts)
    shared = _shared_lines(triangles.corners, links, stats)
    if shared is not None:
        _write_shared(out, names, material, *shared)
        out.write(b"end\n")
        return
    for start in range(0, t, CHUNK // 3):
        stop = min(t, start + CHUNK // 3)
        lines = _corner_lines(*(a[start * 3 : stop * 3] for a in links), stats)
        head = np.concatenate([names[material[start:stop]], _column(stop - start, b"\n")], axis=1)
        out.write(_compact(np.concatenate([head, lines.reshape(stop - start, -1)], axis=1)))
    out.write(b"end\n")


def _write_shared(
    out: BinaryIO, names: np.ndarray, material: np.ndarray, table: np.ndarray, line_of: np.ndarray
) -> None:
    """Each triangle's material line and its corners' lines, picked from the lines made once (``table``, a vertex
    a row) as bytes objects joined in C: half the time of taking them into a padded table of every corner and
    compacting that (each corner's line is copied once, not three times)."""
    pool = [row.tobytes().replace(b"\0", b"") + b"\n" for row in names]  # (as _compact drops every NUL)
    material = np.arange(len(pool))[material]  # (numpy's indexing: a negative counts from the end, past it raises)
    pool += _compact(table).splitlines(keepends=True)  # (a line holds numbers and spaces: one line a row)
    if len(pool) != len(names) + len(table):
        raise AssertionError("a vertex line of the SMD table is not one line")
    picks = np.empty((len(material), 4), dtype=np.int64)
    picks[:, 0] = material
    picks[:, 1:] = len(names) + line_of.reshape(-1, 3)
    for start in range(0, len(picks), CHUNK // 3):  # (the text of a chunk of triangles at a time)
        chosen = picks[start : start + CHUNK // 3].ravel().tolist()
        out.write(b"".join(operator.itemgetter(*chosen)(pool)))  # (four picks a triangle: always a tuple)


def _shared_lines(
    corners: np.ndarray | None, links: tuple[np.ndarray, ...], stats: SmdStats
) -> tuple[np.ndarray, np.ndarray] | None:
    """With corners numbered by vertex (``SmdTriangles.corners``), each vertex's line formatted once: the lines of
    one corner of each vertex, and each corner's line among them; None when not numbered (or too many
    vertices for one table, or not one whole number a corner). The counts are the corners', as if each were
    formatted."""
    if corners is None:
        return None
    ids = np.asarray(corners).ravel()
    if ids.dtype.kind not in "iu" or len(ids) != len(links[0]) or ids.min() < 0 or ids.max() > 4 * len(ids):
        return None
    ids = ids.astype(np.int64)
    first = np.full(int(ids.max()) + 1, len(ids), dtype=np.int64)
    first[ids] = np.arange(len(ids))  # a corner of each vertex (which one does not matter: they are equal)
    present = first < len(ids)
    if int(present.sum()) > CHUNK:
        return None
    rows = first[present]
    line_of = (np.cumsum(present) - 1)[ids]
    parent, base, bones, weights, used, counts = (a[rows] for a in links)
    table = _corner_lines(parent, base, bones, weights, used, counts, SmdStats())
    written = np.asarray(base, dtype=np.float32)  # (as float_chars counts: a float64 past float32's range is inf)
    bad = (~np.isfinite(written)).sum(axis=1) + (~np.isfinite(weights) & used).sum(axis=1)
    stats.non_finite += int(bad[line_of].sum())
    stats.rows += len(ids)
    return table, line_of


def _corner_lines(
    parent: np.ndarray,
    base: np.ndarray,
    bones: np.ndarray,
    weights: np.ndarray,
    used: np.ndarray,
    counts: np.ndarray,
    stats: SmdStats,
) -> np.ndarray:
    """(N, L) NUL-padded lines of N corners: parent, position, normal, UV, then the links used (a corner without
    any writes none, nor its count)."""
    n = len(parent)
    parts = [_number_table(parent, base, stats)]
    k = int(counts.max()) if n else 0
    if k:  # " count bone weight ..."
        has = (counts > 0)[:, None]
        parts += [np.where(has, _column(n, b" "), 0), np.where(has, int_chars(counts), 0)]
        linked = used[:, :k]
        link_bones = int_chars(np.where(linked, bones[:, :k], 0)).reshape(n, k, -1)
        chars, bad = float_chars(weights[:, :k][linked])
        tokens = np.zeros((n, k, chars.shape[1]), dtype=np.uint8)
        stats.non_finite += bad
        tokens[linked] = chars
        for i in range(k):  # (a loop over the links, at most a handful)
            on = linked[:, i : i + 1]
            parts += [np.where(on, _column(n, b" "), 0), np.where(on, link_bones[:, i], 0)]
            parts += [np.where(on, _column(n, b" "), 0), tokens[:, i]]
    parts.append(_column(n, b"\n"))
    return np.concatenate(parts, axis=1)


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
        out.write(_rows(np.arange(start, stop), base[start:stop], stats))
    for frame, (_name, indices, positions, normals) in enumerate(shapes, start=1):
        out.write(f"time {frame}\n".encode())
        rows = np.concatenate([np.asarray(positions), np.asarray(normals)], axis=1).reshape(-1, 6)
        if len(rows):
            out.write(_rows(np.asarray(indices, dtype=np.int64), rows, stats))
    out.write(b"end\n")
    return stats
