"""Decode Source animations (notes §1.9): per frame and bone, a local rotation and position, exactly as the SDK's
``CalcBoneQuaternion``/``CalcBonePosition`` compute them.

- data lives in the MDL (``animblock == 0``) or in an ``.ani`` block, per section for sectioned animations (with
  the last frame of a long animation in its own extra section);
- each bone with data has a node ``{bone, flags, nextoffset}``; rotations are raw Quaternion48/64 or RLE Euler
  streams (times ``rotscale``, plus the bone's ``rot`` unless delta), positions raw Vector48 or RLE streams;
- bones without a node keep their bind pose, or identity in a delta animation.

``STUDIO_FRAMEANIM`` (v49 frame-major, CS:GO) sections hold per-bone flags, constants and fixed-size frames
instead of nodes; ``frame_animation`` decodes them into the same arrays, with the same sections. Titanfall 2
(v53) bone headers are decoded by ``animation53`` into the same ``DecodedAnimation``.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from dataclasses import dataclass, field

import numpy as np

from ...errors import BudgetExceeded, FormatError
from ..binary import Cursor, run_layout
from . import structs as S
from .animation_values import half_to_float
from .frame_animation import decode_frame_section
from .model import MdlAnimation, MdlFile

RAWPOS, RAWROT, ANIMPOS, ANIMROT, DELTA, RAWROT2 = 0x01, 0x02, 0x04, 0x08, 0x10, 0x20
STUDIO_DELTA, STUDIO_FRAMEANIM = 0x04, 0x40
BONE_FIXED_ALIGNMENT = 0x100000
MAX_FRAMES = 100_000
CHUNK_VALUES = 1 << 16  # frames × nodes decoded per step: bounds the temporaries of long animations
BATCH_VALUES = 1 << 17  # node-frames decoded per step when several animations are decoded together
NODE = struct.Struct("<BBh")  # mstudioanim_t: bone, flags, nextoffset
IDENTITY = np.array([1.0, 0.0, 0.0, 0.0])


@dataclass
class DecodedAnimation:
    name: str
    fps: float
    delta: bool
    rotations: np.ndarray  # (F, B, 4) local quaternions (w, x, y, z)
    positions: np.ndarray  # (F, B, 3) local positions (Source units)
    animated: np.ndarray  # (B,) bool: bones that have data in this animation
    notes: list[str] = field(default_factory=list)  # what was decoded but cannot be shown (v53 bone scale)


class SkippedAnimation(Exception):
    """An animation that is valid but not decodable here (reported per animation, never silently wrong)."""


def fill_rest_pose(bones: np.ndarray, delta: bool, rotations: np.ndarray, positions: np.ndarray) -> None:
    """What bones without data hold, over (F, B, 4) ``rotations`` and (F, B, 3) ``positions``: the bind pose, or
    identity and zero in a delta animation (which adds to another pose)."""
    rotations[:] = IDENTITY if delta else bones["quat"].astype(np.float64)[:, [3, 0, 1, 2]]
    positions[:] = 0.0 if delta else bones["pos"].astype(np.float64)


def quaternion48(raw: bytes) -> np.ndarray:
    return quaternion48_words(np.frombuffer(raw, "<u2", 3)[None])[0]


def quaternion64(raw: bytes) -> np.ndarray:
    return quaternion64_words(np.frombuffer(raw, "<u8", 1))[0]


def quaternion48_words(words: np.ndarray) -> np.ndarray:
    """(N, 3) little-endian words of ``Quaternion48`` → (N, 4) wxyz: 16-bit x and y, 15-bit z, w's sign on top."""
    x, y, zw = (words[:, i].astype(np.int64) for i in range(3))
    xyz = np.stack([(x - 32768) / 32768.0, (y - 32768) / 32768.0, ((zw & 0x7FFF) - 16384) / 16384.0], axis=-1)
    return _with_w(xyz, (zw >> 15) != 0)


def quaternion64_words(bits: np.ndarray) -> np.ndarray:
    """(N,) 64-bit ``Quaternion64`` words → (N, 4) wxyz: three 21-bit components, w's sign in the top bit."""
    bits = np.asarray(bits, dtype=np.uint64)
    xyz = np.stack([((bits >> np.uint64(s)) & np.uint64(0x1FFFFF)).astype(np.int64) for s in (0, 21, 42)], axis=-1)
    return _with_w((xyz - 1048576) / 1048576.5, (bits >> np.uint64(63)) != 0)


def _with_w(xyz: np.ndarray, negative: np.ndarray) -> np.ndarray:
    """The unit quaternion whose vector part is stored: w from the norm, its sign from the stored flag."""
    w = np.sqrt(np.maximum(0.0, 1.0 - np.einsum("ni,ni->n", xyz, xyz)))
    return np.concatenate([np.where(negative, -w, w)[:, None], xyz], axis=1)


def euler_to_quaternion(angles: np.ndarray) -> np.ndarray:
    """Source ``AngleQuaternion`` (= Blender ``Euler((x, y, z), 'XYZ').to_quaternion()``), vectorised, (..., 4) wxyz."""
    half = np.asarray(angles, dtype=np.float64) * 0.5
    sx, sy, sz = np.sin(half[..., 0]), np.sin(half[..., 1]), np.sin(half[..., 2])
    cx, cy, cz = np.cos(half[..., 0]), np.cos(half[..., 1]), np.cos(half[..., 2])
    return np.stack(
        [
            cx * cy * cz + sx * sy * sz,
            sx * cy * cz - cx * sy * sz,
            cx * sy * cz + sx * cy * sz,
            cx * cy * sz - sx * sy * cz,
        ],
        axis=-1,
    )


def rle_track(cur: Cursor, offset: int, frames: int) -> np.ndarray:
    """Every frame's value of one ``mstudioanimvalue_t`` stream (see :func:`rle_tracks`)."""
    return rle_tracks(cur, np.array([offset]), frames)[0]


def rle_tracks(cur: Cursor, starts: np.ndarray, frames: int) -> np.ndarray:
    """(T,) stream offsets → (T, frames): ``ExtractAnimValue`` for frames 0..n-1 of many streams at once."""
    return rle_streams(cur, starts, np.full(len(starts), frames, dtype=np.int64)).reshape(len(starts), frames)


def rle_streams(cur: Cursor, starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """(T,) stream offsets and frame counts → every stream's frames laid end to end (stream ``i`` from
    ``cumsum(lengths)[i] − lengths[i]``): ``ExtractAnimValue`` for frames 0..n-1 of each stream.

    A stream is runs of ``{valid, total}`` headers, each followed by ``valid`` shorts; a run covers ``total``
    frames and repeats its last valid value for the rest. Streams hold a few runs each, so all of them advance one
    run per step (never frame by frame), then every value is gathered in one indexing operation. Work is bounded
    by the sum of ``lengths`` (every run covers a frame), which the caller budgets; reads are checked like
    ``Cursor`` reads.
    """
    buf = np.frombuffer(cur.data, np.uint8)
    track = np.arange(len(starts))
    offset = np.asarray(starts, dtype=np.int64)
    need = np.asarray(lengths, dtype=np.int64)
    frame = np.zeros(len(starts), dtype=np.int64)
    runs = []
    while len(track):
        _check(cur, offset, 2, "animation value run")
        valid, total = buf[offset].astype(np.int64), buf[offset + 1].astype(np.int64)
        go = total > 0  # corrupt: the SDK returns 0 for the rest
        if not go.all():
            track, offset, frame, need, valid, total = track[go], offset[go], frame[go], need[go], valid[go], total[go]
        runs.append((track, frame, np.minimum(total, need - frame), valid, offset + 2))
        frame, offset = frame + total, offset + 2 * (valid + 1)
        more = frame < need
        if not more.all():
            track, offset, frame, need = track[more], offset[more], frame[more], need[more]
    return _expand_runs(cur, buf, runs, np.asarray(lengths, dtype=np.int64))


def _expand_runs(cur: Cursor, buf: np.ndarray, runs: list[tuple[np.ndarray, ...]], lengths: np.ndarray) -> np.ndarray:
    """Runs ``(track, first frame, span, valid, values offset)`` → the tracks' frames end to end, frames past a
    run's valid values holding its last one and frames no run covers holding 0. Every run's values must lie in the
    data (as the SDK reads them all), checked once for all runs."""
    out = np.zeros(int(lengths.sum()))
    if not runs:
        return out
    track, first, span, valid, at = (np.concatenate(column) for column in zip(*runs, strict=True))
    _check(cur, at, 2 * valid, "animation values")
    filled = valid > 0
    track, first, span, valid, at = track[filled], first[filled], span[filled], valid[filled], at[filled]
    run, step = run_layout(span)
    byte = at[run] + 2 * np.minimum(step, valid[run] - 1)
    words = buf[byte].astype(np.uint16) | (buf[byte + 1].astype(np.uint16) << np.uint16(8))
    out[(np.cumsum(lengths) - lengths)[track[run]] + first[run] + step] = words.view(np.int16)
    return out


def _check(cur: Cursor, offsets: np.ndarray, nbytes: np.ndarray | int, what: str) -> None:
    """Every ``nbytes`` read at ``offsets`` lies inside the data, or the first that does not is reported."""
    bad = (offsets < 0) | (offsets + nbytes > cur.size)
    if bad.any():
        i = int(np.argmax(bad))
        size = int(np.broadcast_to(nbytes, bad.shape)[i])
        raise cur.error(
            f"{what}: {size} bytes at offset {int(offsets[i])} run past the end of the {cur.size}-byte file",
            int(offsets[i]),
        )


def _gather(cur: Cursor, offsets: np.ndarray, nbytes: int, what: str) -> np.ndarray:
    """(N, nbytes) raw bytes at each offset, bounds-checked first; ``.view`` gives little-endian words."""
    _check(cur, offsets, nbytes, what)
    return np.frombuffer(cur.data, np.uint8)[offsets[:, None] + np.arange(nbytes)]


def _data_offset(
    anim: MdlAnimation, section: int, mdl_cur: Cursor, ani: Cursor | None, mdl: MdlFile
) -> tuple[Cursor, int] | None:
    if anim.section_frames > 0:
        (sec,) = mdl_cur.array_at(S.ANIM_SECTION, anim.offset + anim.section_index + section * 8, 1, "section")
        block, index = int(sec["animblock"]), int(sec["animindex"])
    else:
        block, index = anim.anim_block, anim.anim_index
    if block == -1:
        raise SkippedAnimation("its data is marked as needing a recompile (animation block -1)")
    if block == 0:
        return mdl_cur, anim.offset + index
    if ani is None:
        raise SkippedAnimation(
            f"its data is in the .ani file ({mdl.anim_block_name or 'no name'}), which was not found"
        )
    if not 0 < block < len(mdl.anim_blocks):
        raise FormatError(
            mdl.path, anim.offset, f"animation '{anim.name}' uses block {block} of {len(mdl.anim_blocks)}"
        )
    return ani, int(mdl.anim_blocks[block][0]) + index


def section_spans(anim: MdlAnimation, respawn: bool = False) -> list[tuple[int, int, int]]:
    """(section, first frame, frame count) of each part of the data to read: the whole animation, or its sections.
    The last frame of an animation longer than a section lives alone in an extra section (notes §1.9): section
    ``frames // sectionframes + 1`` in Valve's models, ``(frames − 1) // sectionframes + 1`` in Respawn's (v53)."""
    frames, sf = anim.num_frames, anim.section_frames
    if sf <= 0:
        return [(0, 0, frames)]
    spans = [(s, s * sf, min(sf, frames - s * sf)) for s in range((frames + sf - 1) // sf)]
    if frames > sf:
        spans = [(s, start, n if start + n < frames else n - 1) for s, start, n in spans]
        spans.append(((frames - 1 if respawn else frames) // sf + 1, frames - 1, 1))
    return [span for span in spans if span[2] > 0]


def decode_animation(
    mdl: MdlFile, index: int, ani_data: bytes | None = None, ani_path: str | None = None
) -> DecodedAnimation:
    (result,) = decode_animations(mdl, [index], ani_data, ani_path)
    if isinstance(result, Exception):
        raise result
    return result


Outcome = DecodedAnimation | SkippedAnimation | FormatError


def decode_animations(
    mdl: MdlFile, indices: list[int], ani_data: bytes | None = None, ani_path: str | None = None
) -> list[Outcome]:
    """Several animations of one model, each decoded or the reason it could not be. Their per-bone data is decoded
    together: numpy's cost per call, not the data, is what one short animation costs. Their arrays are views of
    buffers laid end to end along frames. An animation whose sections cannot all be located, or all animations
    when the joint decode meets damaged data, are decoded again one by one, section by section, so each ends as
    it would alone, with the error of the first damage met."""
    if mdl.version == 53:  # Respawn's own per-bone headers; that module builds on this one's helpers
        from .animation53 import decode_v53_animation

        return [_caught(decode_v53_animation, mdl, index) for index in indices]
    batch = _Batch(mdl, indices, ani_data, ani_path)
    alone = [k for k, result in enumerate(batch.results) if result is None and not batch.locate(k)]
    together = [k for k, result in enumerate(batch.results) if result is None and k not in alone]
    try:
        batch.decode_nodes(together)
    except BudgetExceeded:
        raise
    except FormatError:
        alone = sorted(alone + together)
    for k in alone:
        batch.decode_alone(k)
    return [batch.results[k] or batch.decoded(k) for k in range(len(indices))]


def _caught(decode, mdl: MdlFile, index: int) -> Outcome:
    try:
        return decode(mdl, index)
    except BudgetExceeded:
        raise
    except (SkippedAnimation, FormatError) as exc:
        return exc


@dataclass
class _Piece:
    """One section's nodes, and where its frames go in the batch's buffers."""

    animation: int
    cur: Cursor
    bone: np.ndarray
    flags: np.ndarray
    data: np.ndarray
    first: int
    length: int


class _Batch:
    """The animations of one decode, their buffers and how far each got."""

    def __init__(self, mdl: MdlFile, indices: list[int], ani_data: bytes | None, ani_path: str | None) -> None:
        self.mdl = mdl
        self.anims = [mdl.animations[i] for i in indices]
        self.results: list[Outcome | None] = [None] * len(indices)
        for k, anim in enumerate(self.anims):
            if not 0 < anim.num_frames <= MAX_FRAMES:
                self.results[k] = FormatError(
                    mdl.path, anim.offset, f"animation '{anim.name}' declares {anim.num_frames} frames"
                )
        self.lengths = np.array(
            [0 if r else a.num_frames for a, r in zip(self.anims, self.results, strict=True)], dtype=np.int64
        )
        self.starts = (np.cumsum(self.lengths) - self.lengths).tolist()
        self.delta = np.array([a.is_delta for a in self.anims], dtype=bool)
        count = len(mdl.bones)
        self.rotations = np.empty((int(self.lengths.sum()), count, 4))
        self.positions = np.empty((int(self.lengths.sum()), count, 3))
        self.animated = np.zeros((len(indices), count), dtype=bool)
        for k in range(len(indices)):
            self.reset(k)
        self.mdl_cur = Cursor(mdl.data, mdl.path)
        self.ani = Cursor(ani_data, ani_path) if ani_data is not None else None
        self.pieces: dict[int, list[_Piece]] = {}

    def frames(self, k: int) -> slice:
        return slice(self.starts[k], self.starts[k] + int(self.lengths[k]))

    def reset(self, k: int) -> None:
        frames = self.frames(k)
        fill_rest_pose(self.mdl.bones, bool(self.delta[k]), self.rotations[frames], self.positions[frames])

    def walk(self, k: int) -> Iterator[_Piece]:
        """Animation ``k``'s sections in the SDK's order: frame-major ones are decoded on the way, the others come
        out as their node lists, read as they are reached."""
        anim, frames = self.anims[k], self.frames(k)
        rotations, positions = self.rotations[frames], self.positions[frames]
        for section, start, length in section_spans(anim):
            cur, offset = _data_offset(anim, section, self.mdl_cur, self.ani, self.mdl)
            if anim.flags & STUDIO_FRAMEANIM:
                decode_frame_section(cur, offset, anim.name, start, length, rotations, positions, self.animated[k])
                continue
            nodes = _read_nodes(cur, offset, len(self.mdl.bones), anim.name)
            yield _Piece(k, cur, *nodes, frames.start + start, length)

    def locate(self, k: int) -> bool:
        """Walk animation ``k``'s sections, keeping their node lists for the joint decode. False when anything on
        the way fails (the animation is then decoded alone)."""
        try:
            pieces = list(self.walk(k))
        except BudgetExceeded:
            raise
        except (SkippedAnimation, FormatError):
            return False
        self.pieces[k] = pieces
        return True

    def decode_nodes(self, animations: list[int]) -> None:
        """The node data of these animations' sections, in steps of at most BATCH_VALUES node-frames, one step per
        file (the .mdl or the .ani) at a time."""
        for cur in (self.mdl_cur, self.ani):
            pieces = [p for k in animations for p in self.pieces.get(k, ()) if p.cur is cur]
            if pieces:
                _decode_pieces(cur, pieces, self.mdl.bones, self.rotations, self.positions, self.animated)

    def decode_alone(self, k: int) -> None:
        """Animation ``k`` from scratch, section by section as the SDK reads it; its error, if any, is kept."""
        self.reset(k)
        self.animated[k] = False
        try:
            for piece in self.walk(k):
                chunk = max(1, CHUNK_VALUES // piece.length)  # the steps the SDK's order of reads is kept in
                for first in range(0, len(piece.bone), chunk):
                    part = (column[first : first + chunk] for column in (piece.bone, piece.flags, piece.data))
                    step = _Piece(k, piece.cur, *part, piece.first, piece.length)
                    _decode_pieces(piece.cur, [step], self.mdl.bones, self.rotations, self.positions, self.animated)
        except BudgetExceeded:
            raise
        except (SkippedAnimation, FormatError) as exc:
            self.results[k] = exc

    def decoded(self, k: int) -> DecodedAnimation:
        anim, frames = self.anims[k], self.frames(k)
        fps = anim.fps if anim.fps > 0 else 30.0
        return DecodedAnimation(
            anim.name, fps, bool(self.delta[k]), self.rotations[frames], self.positions[frames], self.animated[k]
        )


def _read_nodes(cur: Cursor, offset: int, count: int, name: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The section's linked list of ``{bone, flags, nextoffset}`` nodes → (bone, flags, data offset) arrays.

    One small read per node (a list cannot be walked in bulk); the data the nodes point at is decoded for all
    bones at once by :func:`_decode_pieces`."""
    bones, flags, data = [], [], []
    while True:
        if offset < 0 or offset + NODE.size > cur.size:
            raise cur.error(
                f"node of animation '{name}': 1 × 4 bytes at offset {offset} run past the end of the "
                f"{cur.size}-byte file",
                offset,
            )
        bone, flag, step = NODE.unpack_from(cur.data, offset)
        if bone == 255:
            break
        if bone >= count:
            raise FormatError(cur.path, offset, f"animation '{name}' animates bone {bone} of {count}")
        bones.append(bone)
        flags.append(flag)
        data.append(offset + NODE.size)
        if step == 0 or len(bones) > count:
            break
        offset += step
    return np.array(bones, np.int64), np.array(flags, np.int64), np.array(data, np.int64)


def _decode_pieces(
    cur: Cursor,
    pieces: list[_Piece],
    bones: np.ndarray,
    rotations: np.ndarray,
    positions: np.ndarray,
    animated: np.ndarray,
) -> None:
    """Write every frame of every node of ``pieces`` (all in ``cur``'s file) into the buffers, in steps whose
    node-frames stay under BATCH_VALUES (a single node is never split: at most MAX_FRAMES)."""
    bone, flags, data = (np.concatenate([getattr(p, name) for p in pieces]) for name in ("bone", "flags", "data"))
    counts = [len(p.bone) for p in pieces]
    piece = np.repeat(np.arange(len(pieces)), counts)
    first = np.repeat([p.first for p in pieces], counts)
    length = np.repeat([p.length for p in pieces], counts)
    owner = np.repeat([p.animation for p in pieces], counts)
    ends = np.cumsum(length)
    step_of = (ends - 1) // BATCH_VALUES  # nodes ending in the same span of node-frames go together
    cuts = np.flatnonzero(np.diff(step_of)) + 1
    for part in np.split(np.arange(len(bone)), cuts):
        if len(part):
            # ``piece × bones + bone`` names a bone within its section: a bone named twice there keeps its last node
            at = (bone[part], flags[part], data[part], first[part], length[part], piece[part] * len(bones))
            _decode_nodes(cur, at, bones, rotations, positions)
            animated[owner[part], bone[part]] = True


def _decode_nodes(
    cur: Cursor,
    nodes: tuple[np.ndarray, ...],
    bones: np.ndarray,
    rotations: np.ndarray,
    positions: np.ndarray,
) -> None:
    """Write each node's frames ``first..first+length`` into the buffers: all RLE streams (rotations and
    positions) walked together, raw values read in one gather each; a bone named twice in a section keeps its last
    node."""
    bone, flags, data, first, length, section_base = nodes
    delta = (flags & DELTA) != 0
    rot_kind = np.select([(flags & mask) != 0 for mask in (RAWROT, RAWROT2, ANIMROT)], [1, 2, 3], 0)
    pos_at = data + np.array([0, 6, 8, 6])[rot_kind]
    rle_rot = rot_kind == 3
    rle_pos = ((flags & RAWPOS) == 0) & ((flags & ANIMPOS) != 0)
    node, step = run_layout(length)  # every node-frame: its node, its frame in the section
    tracks = _value_streams(
        cur,
        np.concatenate([data[rle_rot], pos_at[rle_pos]]),
        np.concatenate([length[rle_rot], length[rle_pos]]),
        np.concatenate([bones["rotscale"][bone[rle_rot]], bones["posscale"][bone[rle_pos]]]).astype(np.float64),
    )
    split = int(length[rle_rot].sum())
    rot = _node_rotations(cur, bones, bone, rot_kind, data, delta, tracks[:split], node)
    pos = _node_positions(cur, bones, bone, flags, pos_at, delta, tracks[split:], node)
    keep = np.flatnonzero(_last_per_bone(section_base + bone)[node] == node)
    frame = first[node] + step
    rotations[frame[keep], bone[node[keep]]] = rot[keep]
    positions[frame[keep], bone[node[keep]]] = pos[keep]


def _value_tracks(cur: Cursor, pointers: np.ndarray, length: int, scale: np.ndarray) -> np.ndarray:
    """(N,) value pointers → (N, length, 3): see :func:`_value_streams`, all of one length."""
    lengths = np.full(len(pointers), length, dtype=np.int64)
    return _value_streams(cur, pointers, lengths, scale).reshape(len(pointers), length, 3)


def _value_streams(cur: Cursor, pointers: np.ndarray, lengths: np.ndarray, scale: np.ndarray) -> np.ndarray:
    """(N,) value pointers and frame counts → (sum of lengths, 3), pointer by pointer: the three RLE streams each
    names (offsets relative to the pointer; ≤ 0 means the axis is 0), times the bone's per-axis ``scale`` (N, 3);
    frames are local to the section."""
    offsets = _gather(cur, pointers, 6, "animation value offsets").view("<i2").astype(np.int64)
    values = np.zeros((int(lengths.sum()), 3))
    used = offsets > 0
    if used.any():
        which, axis = np.nonzero(used)
        streams = rle_streams(cur, pointers[which] + offsets[which, axis], lengths[which])
        run, step = run_layout(lengths[which])
        rows = (np.cumsum(lengths) - lengths)[which][run] + step
        values[rows, axis[run]] = streams * scale[which, axis][run]
    return values


def _node_rotations(
    cur: Cursor,
    bones: np.ndarray,
    bone: np.ndarray,
    kind: np.ndarray,
    data: np.ndarray,
    delta: np.ndarray,
    angles: np.ndarray,
    node: np.ndarray,
) -> np.ndarray:
    """(node-frames, 4): raw Quaternion48/64, RLE Euler angles (plus the bind ``rot`` unless delta), or the bind
    pose (identity in a delta); bones with a fixed alignment keep their quaternions on its side."""
    fixed = np.where(delta[:, None], IDENTITY, bones["quat"][bone][:, [3, 0, 1, 2]].astype(np.float64))
    raw48, raw64 = kind == 1, kind == 2
    if raw48.any():
        fixed[raw48] = quaternion48_words(_gather(cur, data[raw48], 6, "Quaternion48").view("<u2"))
    if raw64.any():
        fixed[raw64] = quaternion64_words(_gather(cur, data[raw64], 8, "Quaternion64").view("<u8")[:, 0])
    out = fixed[node]
    rle = (kind == 3)[node]
    if rle.any():
        bind = np.where(delta[:, None], 0.0, bones["rot"][bone].astype(np.float64))
        out[rle] = euler_to_quaternion(angles + bind[node[rle]])
    aligned = (((bones["flags"][bone].astype(np.int64) & BONE_FIXED_ALIGNMENT) != 0) & ~delta)[node]
    if aligned.any():
        align = bones["qalignment"][bone][:, [3, 0, 1, 2]].astype(np.float64)[node[aligned]]
        q = out[aligned]
        q[np.einsum("fi,fi->f", q, align) < 0] *= -1.0
        out[aligned] = q
    return out


def _node_positions(
    cur: Cursor,
    bones: np.ndarray,
    bone: np.ndarray,
    flags: np.ndarray,
    at: np.ndarray,
    delta: np.ndarray,
    tracks: np.ndarray,
    node: np.ndarray,
) -> np.ndarray:
    """(node-frames, 3): a raw Vector48 (absolute), RLE streams (plus the bind ``pos`` unless delta), or the bind
    position (zero in a delta)."""
    bind = np.where(delta[:, None], 0.0, bones["pos"][bone].astype(np.float64))
    fixed = bind.copy()
    raw = (flags & RAWPOS) != 0
    if raw.any():
        fixed[raw] = half_to_float(_gather(cur, at[raw], 6, "Vector48").view("<u2"))
    out = fixed[node]
    rle = (~raw & ((flags & ANIMPOS) != 0))[node]
    if rle.any():
        out[rle] = tracks + bind[node[rle]]
    return out


def _last_per_bone(bone: np.ndarray) -> np.ndarray:
    """Each node's last node of the same bone (file order): later nodes overwrite earlier ones, as the SDK's do."""
    if len(np.unique(bone)) == len(bone):
        return np.arange(len(bone))
    _, first_from_end, inverse = np.unique(bone[::-1], return_index=True, return_inverse=True)
    return (len(bone) - 1 - first_from_end)[inverse[::-1]]
