"""Decode Source animations (notes §1.9): per frame and bone, a local rotation and position, exactly as the SDK's
``CalcBoneQuaternion``/``CalcBonePosition`` compute them.

- data lives in the MDL (``animblock == 0``) or in an ``.ani`` block, per section for sectioned animations (with
  the last frame of a long animation in its own extra section);
- each bone with data has a node ``{bone, flags, nextoffset}``; rotations are raw Quaternion48/64 or RLE Euler
  streams (times ``rotscale``, plus the bone's ``rot`` unless delta), positions raw Vector48 or RLE streams;
- bones without a node keep their bind pose, or identity in a delta animation.

``STUDIO_FRAMEANIM`` (v49 frame-major, CS:GO) sections hold per-bone flags, constants and fixed-size frames
instead of nodes; ``frame_animation`` decodes them into the same arrays, with the same sections. Titanfall 2
(v53) bone headers are decoded by ``animation53`` into the same ``DecodedAnimation``. What the three decoders share
lies below all of them, so imports go one way: the value types (``animation_values``), the RLE streams and checked
gathers (``animation_streams``), the result and the section layout (``decoded_animation``).
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

from ...errors import BudgetExceeded, FormatError
from ..binary import Cursor, run_layout
from . import structs as S
from .animation53 import decode_v53_animation
from .animation2531 import decode_2531_animations
from .animation_streams import gather, value_streams
from .animation_values import euler_to_quaternion, half_to_float, quaternion48_words, quaternion64_words
from .decoded_animation import (
    BONE_FIXED_ALIGNMENT,
    CHUNK_VALUES,
    IDENTITY,
    MAX_FRAMES,
    DecodedAnimation,
    fill_rest_pose,
    section_spans,
)
from .frame_animation import decode_frame_section
from .model import MdlAnimation, MdlFile

RAWPOS, RAWROT, ANIMPOS, ANIMROT, DELTA, RAWROT2 = 0x01, 0x02, 0x04, 0x08, 0x10, 0x20
STUDIO_DELTA, STUDIO_FRAMEANIM = 0x04, 0x40
BATCH_VALUES = 1 << 17  # node-frames decoded per step when several animations are decoded together
NODE = struct.Struct("<BBh")  # mstudioanim_t: bone, flags, nextoffset


class SkippedAnimation(Exception):
    """An animation that is valid but not decodable here (reported per animation, never silently wrong)."""


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
    if mdl.version == 53:  # Respawn's own per-bone headers
        return [_caught(decode_v53_animation, mdl, index) for index in indices]
    if mdl.version == 2531:  # Bloodlines: seven value streams per bone, quaternions stored as such
        return list(decode_2531_animations(mdl, indices))
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
    tracks = value_streams(
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
        fixed[raw48] = quaternion48_words(gather(cur, data[raw48], 6, "Quaternion48").view("<u2"))
    if raw64.any():
        fixed[raw64] = quaternion64_words(gather(cur, data[raw64], 8, "Quaternion64").view("<u8")[:, 0])
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
        fixed[raw] = half_to_float(gather(cur, at[raw], 6, "Vector48").view("<u2"))
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
