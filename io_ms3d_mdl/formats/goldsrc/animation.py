"""GoldSrc animation values, decoded as the engine reads them, every frame of every channel at once.

Per blend, each bone has six channel offsets (position x, y, z, then Euler angles x, y, z), relative to the bone's
record; 0 means the channel holds the bone's default value. A channel's stream is a chain of spans: a header
(``valid``, ``total`` bytes) then ``valid`` shorts; the span covers ``total`` frames, frame ``k`` of it taking the
``k``-th short while ``k < valid`` and the last one after (a run of repeats). The value is ``default + short ×
scale``. The engine walks the chain frame by frame; here every channel walks it in step (one numpy pass per span,
not per frame or per channel) and the frames are then filled in one gather.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...budget import current_budget
from ...errors import FormatError
from ..binary import run_layout
from . import structs as S
from .model import GsFile, GsSequence

CHANNELS = 6
SPARE_STEPS = 64  # empty spans (total 0) a channel may hold beyond one per frame before it is refused


@dataclass
class DecodedSequence:
    positions: np.ndarray  # (blends, frames, bones, 3) float64, in the parent bone's space
    angles: np.ndarray  # (blends, frames, bones, 3) float64 radians (applied Z·Y·X, X first)


def sequence_data(gs: GsFile, seq: GsSequence) -> tuple[bytes, str | None]:
    """The bytes the sequence's ``animindex`` points into: the model (group 0) or its group file."""
    if seq.seqgroup == 0:
        return gs.data, gs.path
    if seq.seqgroup in gs.group_data:
        return gs.group_data[seq.seqgroup]
    if not 0 <= seq.seqgroup < len(gs.groups):
        raise FormatError(
            gs.path, seq.offset, f"sequence '{seq.label}' is in group {seq.seqgroup}, which does not exist"
        )
    raise FormatError(
        gs.path, seq.offset, f"sequence '{seq.label}' is in group {seq.seqgroup}, whose file was not read"
    )


def decode_sequence(gs: GsFile, seq: GsSequence) -> DecodedSequence:
    """Every frame of every blend of ``seq``, for every bone."""
    data, path = sequence_data(gs, seq)
    bones = gs.bones
    nb, frames, blends = len(bones), seq.numframes, seq.numblends
    if frames < 1 or blends < 1:
        raise FormatError(path, seq.offset, f"sequence '{seq.label}' has {frames} frames and {blends} blends")
    budget = current_budget()
    budget.check(
        path, f"frames × bones × blends of sequence '{seq.label}'", frames * nb * blends, budget.animation_bone_frames
    )
    raw = np.frombuffer(data, dtype=np.uint8)
    size = len(raw)
    table_bytes = blends * nb * S.ANIM.itemsize
    if seq.animindex < 0 or seq.animindex + table_bytes > size:
        raise FormatError(
            path, seq.animindex, f"the animation table of sequence '{seq.label}' runs past the end of the file"
        )
    offsets = np.frombuffer(data, dtype="<u2", count=blends * nb * CHANNELS, offset=seq.animindex).astype(np.int64)
    record = seq.animindex + S.ANIM.itemsize * (np.arange(blends * nb, dtype=np.int64))
    starts = np.repeat(record, CHANNELS) + offsets  # byte address of each channel's first span header
    stored = np.flatnonzero(offsets)
    values = np.zeros((blends * nb * CHANNELS, frames), dtype=np.float64)
    if len(stored):
        values[stored] = _walk(raw, starts[stored], frames, path, seq)
    values = values.reshape(blends, nb, CHANNELS, frames).transpose(0, 3, 1, 2)  # (blends, frames, bones, 6)
    out = bones["value"].astype(np.float64) + values * bones["scale"].astype(np.float64)
    return DecodedSequence(out[..., :3], out[..., 3:])


def _walk(raw: np.ndarray, heads: np.ndarray, frames: int, path: str | None, seq: GsSequence) -> np.ndarray:
    """(C, frames) raw shorts of the channels whose streams start at byte ``heads``."""
    size = len(raw)
    count = len(heads)
    pointer = heads.copy()
    covered = np.zeros(count, dtype=np.int64)
    active = np.arange(count)
    spans_c, spans_start, spans_valid, spans_total, spans_at = [], [], [], [], []
    steps = 0
    while len(active):
        at = pointer[active]
        if int(at.max()) + 2 > size:
            bad = int(at[np.argmax(at)])
            raise FormatError(path, bad, f"animation values of sequence '{seq.label}' run past the end of the file")
        valid = raw[at].astype(np.int64)
        total = raw[at + 1].astype(np.int64)
        spans_c.append(active)
        spans_start.append(covered[active])
        spans_valid.append(valid)
        spans_total.append(total)
        spans_at.append(at)
        covered[active] += total
        pointer[active] = at + 2 * (valid + 1)
        active = active[covered[active] < frames]
        steps += 1
        if steps > frames + SPARE_STEPS and len(active):
            raise FormatError(
                path,
                int(pointer[active[0]]),
                f"animation values of sequence '{seq.label}' hold more spans than its {frames} frames can use",
            )
    channel = np.concatenate(spans_c)
    start = np.concatenate(spans_start)
    valid = np.concatenate(spans_valid)
    total = np.concatenate(spans_total)
    at = np.concatenate(spans_at)
    length = np.minimum(total, frames - start)
    keep = length > 0
    channel, start, valid, at, length = channel[keep], start[keep], valid[keep], at[keep], length[keep]
    run, place = run_layout(length)
    # frame k of a span: its k-th value while k < valid, else the last (index ``valid``; with no values at all
    # that is the span header itself, as the engine reads it)
    index = np.where(place < valid[run], place + 1, valid[run])
    byte = at[run] + 2 * index
    if len(byte) and int(byte.max()) + 2 > size:
        raise FormatError(
            path, int(byte.max()), f"animation values of sequence '{seq.label}' run past the end of the file"
        )
    shorts = (raw[byte].astype(np.uint16) | (raw[byte + 1].astype(np.uint16) << 8)).view(np.int16)
    out = np.zeros((count, frames), dtype=np.float64)
    out[channel[run], start[run] + place] = shorts
    return out
