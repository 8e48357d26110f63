"""Bounds-checked reads of many offsets at once, and Source's ``mstudioanimvalue_t`` RLE value streams, shared by
the node (44–49) and Titanfall 2 (v53) animation decoders: streams of every bone and channel are walked together,
one run per step, never frame by frame."""

from __future__ import annotations

import numpy as np

from ..binary import Cursor, run_layout


def check_reads(cur: Cursor, offsets: np.ndarray, nbytes: np.ndarray | int, what: str) -> None:
    """Every ``nbytes`` read at ``offsets`` lies inside the data, or the first that does not is reported."""
    bad = (offsets < 0) | (offsets + nbytes > cur.size)
    if bad.any():
        i = int(np.argmax(bad))
        size = int(np.broadcast_to(nbytes, bad.shape)[i])
        raise cur.error(
            f"{what}: {size} bytes at offset {int(offsets[i])} run past the end of the {cur.size}-byte file",
            int(offsets[i]),
        )


def gather(cur: Cursor, offsets: np.ndarray, nbytes: int, what: str) -> np.ndarray:
    """(N, nbytes) raw bytes at each offset, bounds-checked first; ``.view`` gives little-endian words."""
    check_reads(cur, offsets, nbytes, what)
    return np.frombuffer(cur.data, np.uint8)[offsets[:, None] + np.arange(nbytes)]


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
        check_reads(cur, offset, 2, "animation value run")
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
    data (as the SDK reads them all), checked once for all runs.

    Only the values a run shows are read (a quarter of the frames, as runs mostly repeat); with the runs in the
    order of the frames they cover, the frames are those values each repeated for as long as it holds."""
    total = int(lengths.sum())
    if not runs:
        return np.zeros(total)
    track, first, span, valid, at = (np.concatenate(column) for column in zip(*runs, strict=True))
    check_reads(cur, at, 2 * valid, "animation values")
    filled = (valid > 0) & (span > 0)  # a stream of no frames still has a run read (and checked), covering none
    dest = ((np.cumsum(lengths) - lengths)[track] + first)[filled]  # where each run's frames go
    order = np.argsort(dest, kind="stable")
    dest, span, valid, at = dest[order], span[filled][order], valid[filled][order], at[filled][order]
    shown = np.minimum(valid, span)
    run, k = run_layout(shown)
    byte = at[run] + 2 * k
    words = buf[byte].astype(np.uint16) | (buf[byte + 1].astype(np.uint16) << np.uint16(8))
    held = np.ones(len(words), dtype=np.int64)
    held[np.cumsum(shown) - 1] += span - shown  # a run's last value holds for the frames it does not store
    frames = np.repeat(words.view(np.int16).astype(np.float64), held)
    if len(dest) and dest[0] == 0 and dest[-1] + span[-1] == total and (dest[1:] == dest[:-1] + span[:-1]).all():
        return frames  # every frame covered, in order (a damaged stream leaves gaps: those hold 0)
    out = np.zeros(total)
    out[np.repeat(dest - (np.cumsum(span) - span), span) + np.arange(len(frames))] = frames
    return out


def value_tracks(cur: Cursor, pointers: np.ndarray, length: int, scale: np.ndarray) -> np.ndarray:
    """(N,) value pointers → (N, length, 3): see :func:`value_streams`, all of one length."""
    lengths = np.full(len(pointers), length, dtype=np.int64)
    return value_streams(cur, pointers, lengths, scale).reshape(len(pointers), length, 3)


def value_streams(cur: Cursor, pointers: np.ndarray, lengths: np.ndarray, scale: np.ndarray) -> np.ndarray:
    """(N,) value pointers and frame counts → (sum of lengths, 3), pointer by pointer: the three RLE streams each
    names (offsets relative to the pointer; ≤ 0 means the axis is 0), times the bone's per-axis ``scale`` (N, 3);
    frames are local to the section."""
    offsets = gather(cur, pointers, 6, "animation value offsets").view("<i2").astype(np.int64)
    values = np.zeros((int(lengths.sum()), 3))
    used = offsets > 0
    if used.any():
        which, axis = np.nonzero(used)
        streams = rle_streams(cur, pointers[which] + offsets[which, axis], lengths[which])
        run, step = run_layout(lengths[which])
        rows = (np.cumsum(lengths) - lengths)[which][run] + step
        values[rows, axis[run]] = streams * scale[which, axis][run]
    return values
