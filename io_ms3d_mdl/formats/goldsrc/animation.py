"""GoldSrc animation values, decoded as the engine reads them, every frame of every channel at once.

Per blend, each bone has six channel offsets (position x, y, z, then Euler angles x, y, z), relative to the bone's
record; 0 means the channel holds the bone's default value. A channel's stream is a chain of spans: a header
(``valid``, ``total`` bytes) then ``valid`` shorts; the span covers ``total`` frames, frame ``k`` of it taking the
``k``-th short while ``k < valid`` and the last one after (a run of repeats). The value is ``default + short ×
scale``.

The engine walks the chain frame by frame. Here every channel walks it in step, one numpy pass per span, for the
first :data:`LOCKSTEP` spans (real channels hold a handful); a chain longer than that (a span may cover a single
frame, so a million frames can be a million spans) leaps: a table of where ``B`` spans on from every header lands
and how many frames they cover, built by doubling, takes it from block to block, and the blocks are then walked
together, so the turns of Python are about twice the square root of the spans, never one per span or frame. The
frames are then filled in one gather.

A channel whose chain runs past the end of its file (CS 1.6's hostage.mdl has such channels in every group file)
holds its default value, as the bones that name it are reported by the caller; the sequence still plays.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...budget import current_budget
from ...errors import FormatError
from . import structs as S
from .model import GsFile, GsSequence

CHANNELS = 6
SPARE_STEPS = 64  # empty spans (total 0) a channel may hold beyond one per frame before it is refused
LOCKSTEP = 2 * SPARE_STEPS  # spans walked one turn each before a chain leaps (so a 1-frame sequence never leaps)
_FAR = 1 << 29  # frames "covered" by a block that reaches an unreadable header: it never counts as a full block


@dataclass
class DecodedSequence:
    positions: np.ndarray  # (blends, frames, bones, 3) float64, in the parent bone's space
    angles: np.ndarray  # (blends, frames, bones, 3) float64 radians (applied Z·Y·X, X first)
    held: np.ndarray  # (blends, bones, 6) bool: channels whose data runs past the end of the file (default value)


@dataclass
class WalkAllowance:
    """Animation data walked by leaping over one import, in bytes, against ``Budget.animation_walk_bytes``."""

    spent: int = 0


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


def decode_sequence(gs: GsFile, seq: GsSequence, allowance: WalkAllowance | None = None) -> DecodedSequence:
    """Every frame of every blend of ``seq``, for every bone (``allowance``: the import's, shared by its
    sequences; a fresh one otherwise)."""
    data, path = sequence_data(gs, seq)
    bones = gs.bones
    nb, frames, blends = len(bones), seq.numframes, seq.numblends
    if frames < 1 or blends < 1:
        raise FormatError(path, seq.offset, f"sequence '{seq.label}' has {frames} frames and {blends} blends")
    raw = np.frombuffer(data, dtype=np.uint8)
    size = len(raw)
    table_bytes = blends * nb * S.ANIM.itemsize
    if seq.animindex < 0 or seq.animindex + table_bytes > size:  # (a blend count no file holds stops here)
        raise FormatError(
            path, seq.animindex, f"the animation table of sequence '{seq.label}' runs past the end of the file"
        )
    budget = current_budget()
    budget.check(
        path, f"frames × bones × blends of sequence '{seq.label}'", frames * nb * blends, budget.animation_bone_frames
    )
    offsets = np.frombuffer(data, dtype="<u2", count=blends * nb * CHANNELS, offset=seq.animindex).astype(np.int64)
    record = seq.animindex + S.ANIM.itemsize * (np.arange(blends * nb, dtype=np.int64))
    starts = np.repeat(record, CHANNELS) + offsets  # byte address of each channel's first span header
    stored = np.flatnonzero(offsets)
    values = np.zeros((blends * nb * CHANNELS, frames), dtype=np.float64)
    held = np.zeros(blends * nb * CHANNELS, dtype=bool)
    if len(stored):
        walk = _Walk(raw, frames, path, seq, allowance or WalkAllowance())
        values[stored], held[stored] = walk.channels(starts[stored])
    values = values.reshape(blends, nb, CHANNELS, frames).transpose(0, 3, 1, 2)  # (blends, frames, bones, 6)
    out = bones["value"].astype(np.float64) + values * bones["scale"].astype(np.float64)
    return DecodedSequence(out[..., :3], out[..., 3:], held.reshape(blends, nb, CHANNELS))


class _Walk:
    """The span chains of one sequence's channels, over the bytes of its file."""

    def __init__(self, raw: np.ndarray, frames: int, path: str | None, seq: GsSequence, allowance: WalkAllowance):
        self.raw, self.size, self.frames, self.path, self.seq = raw, len(raw), frames, path, seq
        self.allowance = allowance
        self.spans: list[tuple[np.ndarray, ...]] = []  # (channel, first frame, valid, total, header byte)

    def channels(self, heads: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(C, frames) raw shorts of the channels whose chains start at byte ``heads``, and which of them run past
        the end of the file (all zero)."""
        count = len(heads)
        self.broken = np.zeros(count, dtype=bool)
        zero = np.zeros(count, dtype=np.int64)
        walkers = (np.arange(count), heads.astype(np.int64), zero, zero, np.full(count, LOCKSTEP, np.int64))
        left = self._lockstep(*walkers)
        if len(left[0]):
            for parity in (0, 1):
                mine = left[1] % 2 == parity
                if mine.any():
                    self._lockstep(*self._leap(*(a[mine] for a in left)))
        return self._expand(count), self.broken

    def _lockstep(self, chan, ptr, cov, steps, stop) -> tuple[np.ndarray, ...]:
        """Walk each chain one span a turn until it covers every frame, runs past the end of the file (broken) or
        reaches step ``stop``; (channel, pointer, covered, steps, stop) of the chains stopped short."""
        raw, size, frames = self.raw, self.size, self.frames
        stopped = []
        while len(chan):
            out = ptr + 2 > size
            if out.any():
                self.broken[chan[out]] = True
                chan, ptr, cov, steps, stop = (a[~out] for a in (chan, ptr, cov, steps, stop))
                if not len(chan):
                    break
            valid = raw[ptr].astype(np.int64)
            total = raw[ptr + 1].astype(np.int64)
            self.spans.append((chan, cov, valid, total, ptr))
            cov, ptr, steps = cov + total, ptr + 2 * (valid + 1), steps + 1
            going = cov < frames
            halt = going & (steps >= stop)
            if halt.any():
                stopped.append((chan[halt], ptr[halt], cov[halt], steps[halt], stop[halt]))
                going &= ~halt
            if not going.all():  # (most turns, every chain goes on: no copies)
                chan, ptr, cov, steps, stop = (a[going] for a in (chan, ptr, cov, steps, stop))
            self._check_spare(steps, ptr)
        if not stopped:
            return (np.zeros(0, np.int64),) * 5
        return tuple(np.concatenate(column) for column in zip(*stopped, strict=True))

    def _check_spare(self, steps: np.ndarray, ptr: np.ndarray) -> None:
        over = steps > self.frames + SPARE_STEPS
        if over.any():
            raise FormatError(
                self.path,
                int(ptr[np.argmax(over)]),
                f"animation values of sequence '{self.seq.label}' hold more spans than its {self.frames} frames "
                "can use",
            )

    def _leap(self, chan, ptr, cov, steps, _stop) -> tuple[np.ndarray, ...]:
        """Chains (all starting on one parity of byte) cut into blocks of ``B`` spans: where each block starts,
        found by jumping ``B`` spans a turn through a table built by doubling over the bytes they may cross.
        Returns the blocks as walkers for :meth:`_lockstep`, each to stop after its ``B`` spans."""
        raw, frames = self.raw, self.frames
        lo = int(ptr.min())
        # a span takes at most 512 bytes, and a chain may take at most frames + SPARE_STEPS of them: no further
        # (a chain that would is refused by the walk that follows it through its last block)
        hi = min(self.size, int((ptr + 512 * (frames + SPARE_STEPS - steps)).max()) + 2)
        window = raw[lo:hi]
        nodes = (len(window) + 1) // 2  # span headers may sit at lo, lo + 2, …
        budget = current_budget()
        self.allowance.spent += 2 * nodes
        budget.check(
            self.path,
            f"animation data walked for the long channels of sequence '{self.seq.label}' (over all sequences)",
            self.allowance.spent,
            budget.animation_walk_bytes,
            "bytes",
        )
        longest = int((frames + SPARE_STEPS - steps).max())
        block = 1 << max(4, min(12, (max(longest, 1).bit_length() + 1) // 2))  # about √longest
        index = np.int32 if nodes < (1 << 30) else np.int64
        readable = np.arange(nodes, dtype=index)
        jump = np.empty(nodes + 1, dtype=index)
        np.add(readable, window[0::2], out=jump[:nodes], dtype=index)
        jump[:nodes] += 1  # header i: its valid shorts, then the next header
        jump[:nodes][jump[:nodes] >= nodes] = nodes
        frames_on = np.full(nodes + 1, _FAR, dtype=index)
        tail = window[1::2]
        frames_on[: len(tail)] = tail  # a header whose second byte is past the window stays unreadable (_FAR)
        jump[len(tail) : nodes] = nodes
        jump[nodes] = nodes  # past the end: stays there, covering _FAR frames
        del readable, tail
        for _ in range(block.bit_length() - 1):  # 2^k spans on → 2^(k+1)
            frames_on += frames_on[jump]
            np.minimum(frames_on, _FAR, out=frames_on)
            jump = jump[jump]
        node = (ptr - lo) // 2
        blocks = []
        while len(chan):
            blocks.append((chan, lo + 2 * node, cov, steps))
            covered = cov + frames_on[node]
            whole = covered < frames  # the whole block is needed and the chain goes on after it
            chan, cov, steps = chan[whole], covered[whole], steps[whole] + block
            node = jump[node[whole]].astype(np.int64)
            self._check_spare(steps, lo + 2 * node)
        chan, ptr, cov, steps = (np.concatenate(column) for column in zip(*blocks, strict=True))
        return chan, ptr, cov, steps, steps + block

    def _expand(self, count: int) -> np.ndarray:
        """The spans' frames into a (count, frames) table; the spans whose values lie past the end of the file
        break their channel."""
        frames, raw, size = self.frames, self.raw, self.size
        out = np.zeros((count, frames), dtype=np.float64)
        if not self.spans:
            return out
        channel, start, valid, total, at = (np.concatenate(column) for column in zip(*self.spans, strict=True))
        self.spans = []
        length = np.minimum(total, frames - start)
        keep = (length > 0) & ~self.broken[channel]
        channel, start, valid, at, length = channel[keep], start[keep], valid[keep], at[keep], length[keep]
        # per frame of every span (the spans laid end to end): its place in the span, and from that the byte it
        # reads and its cell in ``out``; each span's own numbers spread by ``repeat`` (cheaper than gathering)
        element = np.arange(int(length.sum()), dtype=np.int64)
        place = element - np.repeat(np.cumsum(length) - length, length)
        # frame k of a span: its k-th value while k < valid, else the last (index ``valid``; with no values at all
        # that is the span header itself, as the engine reads it)
        byte = np.minimum(place + 1, np.repeat(valid, length))
        byte *= 2
        byte += np.repeat(at, length)
        cell = element + np.repeat(channel * frames + start - (np.cumsum(length) - length), length)
        past = byte + 2 > size
        if past.any():
            run = np.repeat(np.arange(len(length)), length)
            self.broken[channel[run[past]]] = True
            fine = ~self.broken[channel[run]]
            byte, cell = byte[fine], cell[fine]
        shorts = (raw.take(byte).astype(np.uint16) | (raw.take(byte + 1).astype(np.uint16) << 8)).view(np.int16)
        out.ravel()[cell] = shorts
        return out
