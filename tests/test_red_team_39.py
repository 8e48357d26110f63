"""Red team, round 39: the hot paths the speed round changed, fed crafted input. Each test pins what was found (a
traceback, a count or a text that differed from the code it replaced) or, where nothing was, the behaviour attacked.
"""

from __future__ import annotations

import io
import os
from pathlib import Path

import numpy as np
import pytest
from goldsrc_writer import GBone, GSequence, GSpec, write_model_files
from test_keys_decode import legacy_rle_track

from io_ms3d_mdl.errors import FormatError
from io_ms3d_mdl.filesystem.replace_file import WriteRefused, replace_file
from io_ms3d_mdl.formats.binary import Cursor, columns_falling, row_max
from io_ms3d_mdl.formats.float_text import digits_needed, float_chars, float_tokens
from io_ms3d_mdl.formats.goldsrc import decode_sequence, read_goldsrc
from io_ms3d_mdl.formats.goldsrc.animation import decode_sequences
from io_ms3d_mdl.formats.smd.writer import SmdSkeleton, SmdTriangles, write_smd
from io_ms3d_mdl.formats.source.animation_streams import rle_streams

# --- 1. Source RLE value streams -------------------------------------------------------------------------------------


def _outcome(decode):
    try:
        return decode()
    except FormatError as exc:
        return exc.message


@pytest.mark.parametrize(
    "data, starts, lengths",
    [
        (b"\x01\x01\x05\x00", [0], [0]),  # found: a stream of no frames whose run shows a value was an IndexError
        (b"\x03\x02\x01\x00\x02\x00\x03\x00\x00\x00", [0, 0, 8], [0, 0, 0]),  # (several, and one run covering none)
        (b"\x02\x05\xff\xff\x00\x80\x00\x00", [0], [7]),  # total > valid: the last (negative) value holds, then 0
        (b"\x05\x02\x01\x00\x02\x00\x03\x00\x04\x00\x05\x00\x01\x02\x07\x00", [0], [4]),  # valid > total
        (b"\x00\x00\x01\x01\x09\x00", [0, 2], [3, 1]),  # a run of total 0 ends the stream: the rest holds 0
        (b"\x02\x03\x01\x00", [0], [3]),  # values promised past the end of the data
        (b"\x01\x01\x01\x00\x01\xff", [0], [300]),  # a run reaching past the end of the data
        (b"\x01\x01\x01\x00", [-2, 3], [1, 1]),  # offsets before the data and inside a header
    ],
    ids=[
        "empty-stream",
        "empty-streams",
        "total-over-valid",
        "valid-over-total",
        "total-zero",
        "values-past-end",
        "run-past-end",
        "bad-offsets",
    ],
)
def test_rle_streams_decode_as_the_reference_or_fail_as_it(data, starts, lengths):
    """Each stream as the per-stream reference decodes it (the frames laid end to end), or an error naming the file
    where the reference has one (the walk reads every header before any value, so it may name a later offset),
    never a traceback. (The reference reads no header for a stream of no frames; the walk reads, and checks, one.)"""
    cur = Cursor(data, "hostile.mdl")
    got = _outcome(lambda: rle_streams(cur, np.array(starts), np.array(lengths)))

    def reference():
        return np.concatenate([legacy_rle_track(cur, s, n) for s, n in zip(starts, lengths, strict=True)])

    want = _outcome(reference)
    if isinstance(want, str):
        assert isinstance(got, str) and got.startswith("hostile.mdl: animation value") and "past the end" in got
    else:
        assert isinstance(got, np.ndarray) and np.array_equal(got, want), (got, want)


# --- 2. GoldSrc sequences decoded together and alone -----------------------------------------------------------------


def test_a_long_chain_stopped_past_the_end_of_its_file_holds_its_default(tmp_path):
    """Found (before this round too): a channel of more spans than are walked in step, whose last stepped span
    ends past the end of its group file, while another channel goes on, was an IndexError in the leaping walk
    (``index 654 is out of bounds``), alone and together. It breaks there, holding its default, like any chain
    running past the end of its file."""
    spans = b"\x01\x01\x05\x00"  # one frame, value 5
    none = [None] * 6
    broken = spans * 127 + b"\xff\x01"  # the 128th span promises 255 values: its end lies 510 bytes past the file
    seq = GSequence("long", 300, [[[spans * 200, broken, *none[2:]]]], group=1)
    bone = GBone("root", -1, (1, 2, 3, 0, 0, 0), (0.5,) * 6)
    gs = read_goldsrc(write_model_files(GSpec("m.mdl", [bone], sequences=[seq], groups=["", "m01.mdl"]), tmp_path))
    alone = decode_sequence(gs, gs.sequences[0])
    (together,), _ = decode_sequences(gs, gs.sequences)
    for decoded in (alone, together):
        assert decoded.held.ravel().tolist() == [False, True, False, False, False, False]
        assert np.array_equal(decoded.values[0, :, 0, :3], np.tile([3.5, 2.0, 3.0], (300, 1)))


def test_hostile_sequences_together_end_as_each_alone(tmp_path):
    """Zero frames, a table past the end, two sequences sharing one table, more blends than the data holds and
    spans covering nothing: together, each ends with the values or the error it has alone."""
    ramp = list(range(-4, 6))
    none = [None] * 6
    sequences = [
        GSequence("ramp", len(ramp), [[[ramp, None, ramp[::-1], *none[3:]]]]),
        GSequence("zero", 1, [[none]]),
        GSequence("shared", len(ramp), [[none]]),
        GSequence("blends", len(ramp), [[[ramp, *none[1:]]]], group=1),
        GSequence("stall", 3, [[[b"\x00\x00" * 80, *none[1:]]]], group=1),
    ]
    spec = GSpec("m.mdl", [GBone("root", -1, scale=(0.25,) * 6)], sequences=sequences, groups=["", "m01.mdl"])
    gs = read_goldsrc(write_model_files(spec, tmp_path))
    gs.sequences[1].numframes = 0
    gs.sequences[2].animindex = gs.sequences[0].animindex
    gs.sequences[3].numblends = 40
    alone = []
    for seq in gs.sequences:
        try:
            alone.append(decode_sequence(gs, seq))
        except FormatError as exc:
            alone.append(exc)
    together, _ = decode_sequences(gs, gs.sequences)
    assert [type(a).__name__ for a in alone] == ["DecodedSequence", "FormatError", "DecodedSequence"] + [
        "FormatError"
    ] * 2
    for one, joint in zip(alone, together, strict=True):
        if isinstance(one, FormatError):
            assert isinstance(joint, FormatError) and (joint.message, joint.offset) == (one.message, one.offset)
        else:
            assert np.array_equal(joint.values, one.values) and np.array_equal(joint.held, one.held)
    assert np.array_equal(together[2].values, together[0].values)


# --- 3. SMD lines shared by corners numbered by vertex ---------------------------------------------------------------


def _smd(fields, corners):
    out = io.BytesIO()
    skeleton = SmdSkeleton(["root"], np.array([-1]))
    triangles = SmdTriangles(["a"], np.zeros(len(fields[0]), np.int64), *fields, corners=corners)
    stats = write_smd(out, skeleton, np.zeros((1, 1, 6), np.float32), triangles)
    return out.getvalue(), stats.rows, stats.non_finite


@pytest.mark.parametrize(
    "corners",
    [
        lambda tris: tris[:, 0],  # found: (T,) numbers wrote the first T corners' lines only (a third of the text)
        lambda tris: np.concatenate([tris, tris]),  # found: an IndexError
        lambda tris: tris - 3,
        lambda tris: tris * 10**12,
        lambda tris: tris + 0.5,  # (not whole numbers: formatted corner by corner)
        lambda tris: tris,
    ],
    ids=["too-few", "too-many", "negative", "huge", "fractional", "by-vertex"],
)
def test_corner_numbers_write_the_text_and_counts_of_corners_alone(corners):
    """``SmdTriangles.corners`` that do not number the T × 3 corners by a whole number each are not used; the text
    and the counts are those written without them. Found too: a float64 position past float32's range (written as
    0, as it is no float32) was counted as non-finite per corner without corner numbers, and not at all with."""
    rng = np.random.default_rng(39)
    tris = rng.integers(0, 12, (20, 3))
    positions = rng.standard_normal((12, 3)) * 30
    positions[2] = (1e39, -1e300, np.nan)
    weights = rng.random((12, 2)).astype(np.float32)
    weights[5] = (np.inf, np.nan)
    fields = (positions[tris], rng.standard_normal((12, 3))[tris], rng.random((12, 2))[tris])
    bones = rng.integers(-1, 1, (12, 2))
    bones[5] = (0, 1)  # (the infinite weight is a link used, the nan one is no link: not written)
    fields += (bones[tris], weights[tris])
    with np.errstate(over="ignore"):
        alone, shared = _smd(fields, None), _smd(fields, corners(tris))
    assert shared == alone
    assert alone[2] == 3 * int((tris == 2).sum()) + int((tris == 5).sum())


# --- 4. float32 text --------------------------------------------------------------------------------------------------


def test_float_chars_is_the_shortest_round_tripping_percent_g_on_adversarial_values():
    """Subnormals, ±0, the largest float32, every power of ten and its neighbours, 9.9999995e±k, exact ties: the text
    is ``%.{p}g`` at the precision ``digits_needed`` finds and reads back as the value. p is the shortest of 6..9
    but where the shorter text lies exactly half a step away (a tie the margin does not trust: one digit more)."""
    powers = np.array([10.0**k for k in range(-43, 39)]).astype(np.float32).view(np.int32)
    values = [(powers[:, None] + np.arange(-2, 3, dtype=np.int32)).ravel().view(np.float32)]
    values.append(np.array([(10**p - 0.5) * 10.0 ** (k - p) for k in range(-40, 38, 7) for p in (6, 7, 8)]))
    values.append(np.array([0.0, -0.0, 1.4e-45, 1.1754942e-38, 1.1754944e-38, 3.4028235e38, 99999696.0, 1234567.5]))
    values.append(np.arange(1, 4000, 97, dtype=np.uint32).view(np.float32))  # subnormals
    flat = np.concatenate([np.asarray(v, np.float32) for v in values])
    flat = np.concatenate([flat, -flat])
    chars, bad = float_chars(flat)
    text = np.ascontiguousarray(chars).view(f"S{chars.shape[1]}").ravel().astype(str).tolist()
    assert bad == 0 and text == float_tokens(flat)[0].tolist()
    positive = np.abs(flat) + np.float32(0)
    for value, need, written in zip(flat.tolist(), digits_needed(positive).tolist(), text, strict=True):
        value = float(np.float32(value) + np.float32(0))
        assert written == f"%.{need}g" % value and float(np.float32(float(written))) == value
        shorter = f"%.{need - 1}g" % value
        if need > 6 and float(np.float32(float(shorter))) == value:  # only an exact tie may take a digit more
            step = abs(float(np.nextafter(np.float32(abs(value)), np.float32(0))) - abs(value))
            assert abs(float(shorter) - value) >= 0.4999 * step, (value, need)
    assert float_chars(np.array([np.nan, np.inf, -np.inf, -0.0]))[1] == 3


# --- 5. row_max and columns_falling -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "values",
    [np.zeros((0, 3)), np.array([[1.0], [-2.0]]), np.array([[np.nan, 1.0], [1.0, np.nan], [-0.0, 0.0]])],
    ids=["empty", "one-column", "nan"],
)
def test_row_max_and_columns_falling_are_numpys(values):
    assert np.array_equal(row_max(values), values.max(axis=1, initial=-np.inf), equal_nan=True)
    assert columns_falling(values) == bool(np.all(values[:-1] >= values[1:]))
    assert row_max(np.zeros((2, 0))).tolist() == [-np.inf, -np.inf]


# --- 6. replacing a file ----------------------------------------------------------------------------------------------


def test_replace_file_takes_any_bytes_like_object_and_leaves_no_partial(tmp_path):
    """Found: since the file is written in pieces, a bytearray or memoryview (a bytes-like object, as before) was
    taken for a list of pieces: a TypeError ('a bytes-like object is required, not int')."""
    target = tmp_path / "a.ms3d"
    target.write_bytes(b"old")
    for data in (bytearray(b"one"), memoryview(b"two"), [b"th", memoryview(b"ree")], b"four"):
        replace_file(target, data)
        assert target.read_bytes() == bytes(b"".join(bytes(d) for d in data) if isinstance(data, list) else data)
    assert [p.name for p in tmp_path.iterdir()] == ["a.ms3d"]
    (tmp_path / "folder.ms3d").mkdir()
    with pytest.raises(WriteRefused, match="not a regular file"):
        replace_file(tmp_path / "folder.ms3d", b"x")


# --- 6. the MilkShape export (Blender) --------------------------------------------------------------------------------


@pytest.mark.blender
def test_a_rigged_export_failing_mid_file_leaves_the_old_file_and_no_partial(blender, tmp_path, monkeypatch):
    """The rigged export writes its file in pieces: a write refused in the middle of them (a full disk) is one
    message naming the file, the old file stays as it was, and no hidden file is left beside it; exported twice in
    a row over itself, the file is the same bytes each time."""
    import errno

    from test_blender_ms3d_export_scratch import _column

    bpy = blender
    _column(bpy)
    path = tmp_path / "rig.ms3d"
    assert bpy.ops.export_scene.ms3d(filepath=str(path)) == {"FINISHED"}
    first = path.read_bytes()
    assert bpy.ops.export_scene.ms3d(filepath=str(path)) == {"FINISHED"}
    assert path.read_bytes() == first and [p.name for p in tmp_path.iterdir()] == ["rig.ms3d"]

    real = os.fdopen

    class Full:
        """The partial file, whose third piece finds the disk full."""

        def __init__(self, out):
            self.out, self.writes = out, 0

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            self.out.close()

        def write(self, chunk):
            self.writes += 1
            if self.writes == 3:
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
            return self.out.write(chunk)

        def flush(self):
            self.out.flush()

        def fileno(self):
            return self.out.fileno()

    def failing(fd, *args, **kwargs):
        return Full(real(fd, *args, **kwargs))

    monkeypatch.setattr(os, "fdopen", failing)
    with pytest.raises(RuntimeError) as caught:
        bpy.ops.export_scene.ms3d(filepath=str(path))
    assert "rig.ms3d could not be written" in str(caught.value) and "Traceback" not in str(caught.value)
    assert path.read_bytes() == first and [p.name for p in tmp_path.iterdir()] == ["rig.ms3d"]
    monkeypatch.undo()
    folder = Path(tmp_path / "folder.ms3d")
    folder.mkdir()
    with pytest.raises(RuntimeError, match="not a regular file"):
        bpy.ops.export_scene.ms3d(filepath=str(folder))
    assert folder.is_dir() and not any(folder.iterdir())


def test_a_replace_whose_helper_thread_cannot_start_still_succeeds(tmp_path, monkeypatch):
    """Found: the replaced file is let go of on a helper thread after the rename; when no thread can be started (a
    process limit, or Python shutting down) the RuntimeError escaped an export that had written its file, and the
    old file stayed open. It is closed in place instead."""
    import threading

    target = tmp_path / "a.ms3d"
    target.write_bytes(b"old")
    closed = []
    real_close = os.close

    def refuse(self):
        raise RuntimeError("can't start new thread")

    monkeypatch.setattr(threading.Thread, "start", refuse)
    monkeypatch.setattr(os, "close", lambda fd: (closed.append(fd), real_close(fd)))
    replace_file(target, [b"new"])
    assert target.read_bytes() == b"new" and len(closed) >= 1
    assert [p.name for p in tmp_path.iterdir()] == ["a.ms3d"]
