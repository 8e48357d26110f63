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
frames are then filled in one gather. Many sequences (a decompile's) walk together, their files' bytes end to end
(:func:`decode_sequences`): a model's hundred short sequences cost a few walks' numpy calls, not a hundred; one
whose chains would leap is decoded alone, as the import decodes each (:func:`decode_sequence`).

A channel whose chain runs past the end of its file (CS 1.6's hostage.mdl has such channels in every group file)
holds its default value, as the bones that name it are reported by the caller; the sequence still plays.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np

from ...budget import current_budget
from ...errors import BudgetExceeded, FormatError
from . import structs as S
from .model import GsFile, GsSequence

CHANNELS = 6
SPARE_STEPS = 64  # empty spans (total 0) a channel may hold beyond one per frame before it is refused
LOCKSTEP = 2 * SPARE_STEPS  # spans walked one turn each before a chain leaps (so a 1-frame sequence never leaps)
EXPAND = 1 << 16  # span frames filled at a time (their temporaries stay small: no fresh pages to fault in)
_FAR = 1 << 29  # frames "covered" by a block that reaches an unreadable header: it never counts as a full block


@dataclass
class DecodedSequence:
    positions: np.ndarray  # (blends, frames, bones, 3) float64, in the parent bone's space
    angles: np.ndarray  # (blends, frames, bones, 3) float64 radians (applied Z·Y·X, X first)
    held: np.ndarray  # (blends, bones, 6) bool: channels whose data runs past the end of the file (default value)
    values: np.ndarray  # (blends, frames, bones, 6): positions then angles (the two above are views of it)


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
    (result,), _ = _decode(gs, [seq], allowance or WalkAllowance(), alone=True)  # (alone, errors are raised)
    assert isinstance(result, DecodedSequence)
    return result


def decode_sequences(
    gs: GsFile, seqs: list[GsSequence], allowance: WalkAllowance | None = None
) -> tuple[list[DecodedSequence | FormatError], np.ndarray]:
    """Several sequences, each decoded or the reason it could not be (a budget passed is raised), and the
    (rows, bones, 6) array their arrays are views of, laid end to end. Their channels are walked together, whatever
    file holds them: numpy's cost per call, not the data, is what a short sequence costs. A sequence whose chains
    would leap, or that holds more spans than its frames can use, is decoded again alone (:func:`decode_sequence`),
    in order, so each ends as it would alone, with the same error and the same walk allowance spent."""
    allowance = allowance or WalkAllowance()
    results, values = _decode(gs, seqs, allowance, alone=False)
    for k, result in enumerate(results):
        if isinstance(result, _Refused):
            try:
                (alone,), _ = _decode(gs, [seqs[k]], allowance, alone=True)
            except BudgetExceeded:
                raise
            except FormatError as exc:
                alone = exc
            if isinstance(alone, DecodedSequence):
                result.values[...] = alone.values  # (its rows of the batch's array)
                alone = _decoded(result.values, alone.held)
            results[k] = alone
    return results, values  # type: ignore[return-value]


@dataclass
class _Refused:
    """A sequence the joint walk gave up on (to be decoded alone), and its rows of the batch's array."""

    values: np.ndarray


def _decoded(values: np.ndarray, held: np.ndarray) -> DecodedSequence:
    return DecodedSequence(values[..., :3], values[..., 3:], held, values)


def _decode(
    gs: GsFile, seqs: list[GsSequence], allowance: WalkAllowance, alone: bool
) -> tuple[list[DecodedSequence | FormatError | _Refused], np.ndarray]:
    """The sequences' channels walked together into one (rows, bones, 6) array (``alone``: a single sequence,
    its long chains leaping and its errors raised, as the engine's walk of one sequence)."""
    bones = gs.bones
    nb = len(bones)
    budget = current_budget()
    results: list[DecodedSequence | FormatError | _Refused | None] = [None] * len(seqs)
    planned, files = [], {}  # (k, file, first row); each file's bytes once (by its id)
    rows = 0
    for k, seq in enumerate(seqs):
        try:
            data, path = sequence_data(gs, seq)
            frames, blends = seq.numframes, seq.numblends
            if frames < 1 or blends < 1:
                raise FormatError(path, seq.offset, f"sequence '{seq.label}' has {frames} frames and {blends} blends")
            if seq.animindex < 0 or seq.animindex + blends * nb * S.ANIM.itemsize > len(data):
                raise FormatError(  # (a blend count no file holds stops here)
                    path, seq.animindex, f"the animation table of sequence '{seq.label}' runs past the end of the file"
                )
        except BudgetExceeded:
            raise
        except FormatError as exc:
            if alone:
                raise
            results[k] = exc
            continue
        budget.check(
            path,
            f"frames × bones × blends of sequence '{seq.label}'",
            frames * nb * blends,
            budget.animation_bone_frames,
        )
        if id(data) not in files:
            files[id(data)] = (len(files), data, path)
        planned.append((k, files[id(data)][0], rows))
        rows += blends * frames
    values = np.zeros((rows, nb, CHANNELS), dtype=np.float64)  # the raw shorts first
    if planned:
        raw, ends = _joined([data for _, data, _ in files.values()])
        paths = [path for _, _, path in files.values()]
        sequences = [seqs[k] for k, _, _ in planned]
        walk = _Walk(raw, sequences, ends, paths, allowance if alone else None)
        walk.walk(values.reshape(-1), [file for _, file, _ in planned], [row for _, _, row in planned], nb)
        values *= bones["scale"].astype(np.float64)
        values += bones["value"].astype(np.float64)
        for p, (k, _, row) in enumerate(planned):
            seq = sequences[p]
            mine = values[row : row + seq.numblends * seq.numframes].reshape(seq.numblends, seq.numframes, nb, CHANNELS)
            results[k] = _Refused(mine) if walk.refused[p] else _decoded(mine, walk.held(p))
    return results, values  # type: ignore[return-value]


def _joined(files: list[bytes]) -> tuple[np.ndarray, np.ndarray]:
    """The files' bytes end to end (one file: itself, no copy), and where each ends."""
    ends = np.cumsum([len(data) for data in files])
    if len(files) == 1:
        return np.frombuffer(files[0], dtype=np.uint8), ends
    return np.concatenate([np.frombuffer(data, dtype=np.uint8) for data in files]), ends


class _Walk:
    """The span chains of some sequences' channels, over the bytes of their files laid end to end. Alone (one
    sequence, its ``allowance`` given) a long chain leaps and a chain with spans to spare is an error; together,
    either only marks its sequence ``refused``, for the caller to decode it alone."""

    def __init__(
        self,
        raw: np.ndarray,
        seqs: list[GsSequence],
        ends: np.ndarray,
        paths: list[str | None],
        allowance: WalkAllowance | None,
    ):
        self.raw, self.seqs, self.file_ends, self.allowance = raw, seqs, ends, allowance
        self.size, self.path, self.seq = len(raw), paths[0], seqs[0]  # (alone: its file, its sequence)
        self.refused = np.zeros(len(seqs), dtype=bool)
        self.spans: list[tuple[np.ndarray, ...]] = []  # (channel, first frame, valid, total, header byte)

    def walk(self, out: np.ndarray, files: list[int], rows: list[int], bones: int) -> None:
        """The raw shorts of every stored channel into ``out`` (flat: the (rows, bones, 6) array of the batch),
        sequence ``p`` from row ``rows[p]`` on, its table in file ``files[p]``."""
        per = self.per = bones * CHANNELS
        frames = np.array([seq.numframes for seq in self.seqs], dtype=np.int64)
        counts = np.array([seq.numblends for seq in self.seqs], dtype=np.int64) * per
        file = np.array(files, dtype=np.int64)
        starts = np.concatenate([[0], self.file_ends[:-1]])[file]
        table = starts + np.array([seq.animindex for seq in self.seqs], dtype=np.int64)
        self.first = np.cumsum(counts) - counts  # each sequence's first channel
        owner = np.repeat(np.arange(len(self.seqs)), counts)
        k = np.arange(int(counts.sum()), dtype=np.int64) - self.first[owner]  # the channel in its sequence
        word = table[owner] + 2 * k
        offsets = self.raw.take(word).astype(np.int64) | (self.raw.take(word + 1).astype(np.int64) << 8)
        stored = np.flatnonzero(offsets)
        self.held_all = np.zeros(len(k), dtype=bool)
        owner, k, word = owner[stored], k[stored], word[stored]
        heads = word - 2 * (k % CHANNELS) + offsets[stored]  # the bone's record, then the channel's offset
        self.owner, self.frames, self.ends = owner, frames[owner], self.file_ends[file][owner]
        self.broken = np.zeros(len(stored), dtype=bool)
        if len(stored):
            self._walk_chains(heads)
            cells = (np.array(rows, dtype=np.int64)[owner] + k // per * self.frames) * per + k % per
            self._expand(out, cells, per)
        self.held_all[stored] = self.broken

    def held(self, p: int) -> np.ndarray:
        """(blends, bones, 6) the channels of sequence ``p`` whose data runs past the end of its file."""
        blends = self.seqs[p].numblends
        mine = self.held_all[self.first[p] : self.first[p] + blends * self.per]
        return mine.reshape(blends, self.per // CHANNELS, CHANNELS)

    def _walk_chains(self, heads: np.ndarray) -> None:
        """The spans of the chains starting at byte ``heads``; those running past the end of their file are
        ``broken``."""
        count = len(heads)
        zero = np.zeros(count, dtype=np.int64)
        stop = np.full(count, LOCKSTEP, np.int64)
        if self.allowance is None:  # together: a chain of more spans than its frames and one spare is left to a
            np.minimum(stop, self.frames + 2, out=stop)  # walk alone (what is held per channel stays that small)
        left = self._lockstep(np.arange(count), heads, zero, zero, stop)
        if len(left[0]):
            for parity in (0, 1):
                mine = left[1] % 2 == parity
                if mine.any():
                    self._lockstep(*self._leap(*(a[mine] for a in left)))

    def _lockstep(self, chan, ptr, cov, steps, stop) -> tuple[np.ndarray, ...]:
        """Walk each chain one span a turn until it covers every frame, runs past the end of its file (broken) or
        reaches step ``stop``; (channel, pointer, covered, steps, stop) of the chains stopped short (together:
        none, their sequences refused)."""
        raw, frames, ends = self.raw, self.frames, self.ends
        stopped = []
        while len(chan):
            out = ptr + 2 > ends[chan]
            if out.any():
                self.broken[chan[out]] = True
                chan, ptr, cov, steps, stop = (a[~out] for a in (chan, ptr, cov, steps, stop))
                if not len(chan):
                    break
            valid = raw[ptr].astype(np.int64)
            total = raw[ptr + 1].astype(np.int64)
            self.spans.append((chan, cov, valid, total, ptr))
            cov, ptr, steps = cov + total, ptr + 2 * (valid + 1), steps + 1
            going = cov < frames[chan]
            halt = going & (steps >= stop)
            if halt.any():
                if self.allowance is None:  # (and its sequence's other chains go no further)
                    self.refused[self.owner[chan[halt]]] = True
                    going &= ~self.refused[self.owner[chan]]
                else:
                    stopped.append((chan[halt], ptr[halt], cov[halt], steps[halt], stop[halt]))
                going &= ~halt
            if not going.all():  # (most turns, every chain goes on: no copies)
                chan, ptr, cov, steps, stop = (a[going] for a in (chan, ptr, cov, steps, stop))
            self._check_spare(chan, steps, ptr)
        if not stopped:
            return (np.zeros(0, np.int64),) * 5
        return tuple(np.concatenate(column) for column in zip(*stopped, strict=True))

    def _check_spare(self, chan: np.ndarray, steps: np.ndarray, ptr: np.ndarray) -> None:
        over = steps > self.frames[chan] + SPARE_STEPS
        if over.any():
            if self.allowance is None:
                self.refused[self.owner[chan[over]]] = True
                return
            raise FormatError(
                self.path,
                int(ptr[np.argmax(over)]),
                f"animation values of sequence '{self.seq.label}' hold more spans than its {self.seq.numframes} "
                "frames can use",
            )

    def _leap(self, chan, ptr, cov, steps, _stop) -> tuple[np.ndarray, ...]:
        """Chains (all starting on one parity of byte) cut into blocks of ``B`` spans: where each block starts,
        found by jumping ``B`` spans a turn through a table built by doubling over the bytes they may cross.
        Returns the blocks as walkers for :meth:`_lockstep`, each to stop after its ``B`` spans."""
        raw, frames = self.raw, self.seq.numframes
        out = ptr + 2 > self.ends[chan]  # (stopped on a span that ends past its file: the chain breaks there)
        if out.any():
            self.broken[chan[out]] = True
            chan, ptr, cov, steps = chan[~out], ptr[~out], cov[~out], steps[~out]
            if not len(chan):
                return (np.zeros(0, np.int64),) * 5
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
            self._check_spare(chan, steps, lo + 2 * node)
        chan, ptr, cov, steps = (np.concatenate(column) for column in zip(*blocks, strict=True))
        return chan, ptr, cov, steps, steps + block

    def _expand(self, out: np.ndarray, cells: np.ndarray, stride: int) -> None:
        """The spans' frames into ``out`` (flat), frame ``f`` of channel ``c`` at ``cells[c] + f × stride``; a
        channel with a span whose values lie past the end of its file is broken (held at its default: all zero)."""
        if not self.spans:
            return
        channel, start, valid, total, at = (np.concatenate(column) for column in zip(*self.spans, strict=True))
        self.spans = []
        length = np.minimum(total, self.frames[channel] - start)
        keep = (length > 0) & ~self.refused[self.owner[channel]]
        channel, start, valid, at, length = channel[keep], start[keep], valid[keep], at[keep], length[keep]
        # the last byte a span reads is its frame length - 1's (below): past the end of its file, the channel breaks
        past = at + 2 * np.minimum(length, valid) + 2 > self.ends[channel]
        if past.any():
            self.broken[channel[past]] = True
        keep = ~self.broken[channel]
        if not keep.all():
            channel, start, valid, at, length = channel[keep], start[keep], valid[keep], at[keep], length[keep]
        target = cells[channel] + start * stride  # each span's first cell
        ends = np.cumsum(length)
        cuts = [0, *np.searchsorted(ends, range(EXPAND, int(ends[-1]) if len(ends) else 0, EXPAND)).tolist(), len(ends)]
        for lo, hi in itertools.pairwise(cuts):  # (about EXPAND frames at a time)
            if lo < hi:
                self._fill(out, valid[lo:hi], at[lo:hi], length[lo:hi], target[lo:hi], stride)

    def _fill(
        self, out: np.ndarray, valid: np.ndarray, at: np.ndarray, length: np.ndarray, target: np.ndarray, stride: int
    ) -> None:
        """Some spans' frames into ``out``: per frame of every span (the spans laid end to end), its place in the
        span, and from that the byte it reads and its cell; each span's own numbers spread by ``repeat`` (cheaper
        than gathering)."""
        place = np.arange(int(length.sum()), dtype=np.int64)
        place -= np.repeat(np.cumsum(length) - length, length)
        # frame k of a span: its k-th value while k < valid, else the last (index ``valid``; with no values at all
        # that is the span header itself, as the engine reads it)
        byte = np.minimum(place + 1, np.repeat(valid, length))
        byte *= 2
        byte += np.repeat(at, length)
        place *= stride
        place += np.repeat(target, length)
        raw = self.raw
        shorts = (raw.take(byte).astype(np.uint16) | (raw.take(byte + 1).astype(np.uint16) << 8)).view(np.int16)
        out[place] = shorts
