"""Redundant keys dropped within a stated tolerance: every original frame of every sample animation is reproduced
by linear interpolation between the keys kept, against the per-frame keys of the per-bone conversion it replaced
(kept below, verbatim but for names)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from conftest import sample_files

from io_ms3d_mdl.formats.source.animation import DecodedAnimation
from io_ms3d_mdl.scene.load import load_source
from io_ms3d_mdl.scene.rotations import (
    canonical_sign,
    conjugate,
    left_matrix,
    make_continuous,
    matrix_to_quaternion,
    multiply,
    quaternion_to_matrix,
    right_matrix,
)
from io_ms3d_mdl.scene.source import animation as source_animation
from io_ms3d_mdl.scene.source.animation import LOCATION_TOLERANCE, ROTATION_TOLERANCE, _needed_keys
from io_ms3d_mdl.scene.source.convert import INCH, SourceOptions
from io_ms3d_mdl.scene.types import ActionData, BoneChannels

SLOP = 1e-12  # float64 rounding of the interpolation itself

# --- the per-bone conversion as it was before vectorising (the reference: a key on every frame) -------------------


def legacy_action(
    anim: DecodedAnimation, rest_rot: np.ndarray, rest_pos: np.ndarray, x: np.ndarray, scale: float, frame_scale: float
) -> ActionData:
    frames = np.arange(len(anim.rotations), dtype=np.float64) * frame_scale
    channels = []
    bones = np.nonzero(anim.animated)[0] if anim.delta else np.arange(len(anim.animated))
    for bone in bones.tolist():
        rot = quaternion_to_matrix(anim.rotations[:, bone])
        pos = anim.positions[:, bone]
        if anim.delta:
            local_rot, local_pos = rot, pos
        else:
            local_rot = np.einsum("ji,fjk->fik", rest_rot[bone], rot)
            local_pos = (pos - rest_pos[bone]) @ rest_rot[bone]
        xb = x[bone]
        quats = make_continuous(matrix_to_quaternion(np.einsum("ji,fjk,kl->fil", xb, local_rot, xb)))
        locs = scale * (local_pos @ xb)
        rf, rq = legacy_collapse(frames, quats)
        lf, lv = legacy_collapse(frames, locs)
        channels.append(BoneChannels(bone, rf, rq, lf, lv))
    return ActionData(anim.name, channels, (0.0, float(frames[-1]) if len(frames) else 0.0), additive=anim.delta)


def legacy_actions(
    anims: list[DecodedAnimation],
    frame_scales: list[float],
    rest_rot: np.ndarray,
    rest_pos: np.ndarray,
    x: np.ndarray,
    scale: float,
) -> list[ActionData]:
    return [legacy_action(a, rest_rot, rest_pos, x, scale, f) for a, f in zip(anims, frame_scales, strict=True)]


def legacy_collapse(frames: np.ndarray, values: np.ndarray, tolerance: float = 1e-7) -> tuple[np.ndarray, np.ndarray]:
    if len(values) > 1 and np.abs(values - values[0]).max() <= tolerance:
        return frames[:1], values[:1]
    return frames, values


# --- helpers ----------------------------------------------------------------------------------------------------


def dense_and_reduced(path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[list[ActionData], list[ActionData]]:
    """Every action of a model as built now, and as the per-bone conversion built it (a key on every frame)."""
    options = SourceOptions(animations="ALL")
    reduced = load_source(str(path), options).actions
    with monkeypatch.context() as patch:
        patch.setattr(source_animation, "build_channels", legacy_actions)
        dense = load_source(str(path), options).actions
    return dense, reduced


def played(key_frames: np.ndarray, keys: np.ndarray, frames: np.ndarray) -> np.ndarray:
    """What linear interpolation between keys gives at ``frames`` (held before the first and after the last)."""
    return np.stack([np.interp(frames, key_frames, keys[:, i]) for i in range(keys.shape[1])], axis=1)


def worst_errors(dense: ActionData, reduced: ActionData) -> tuple[float, float, int, int]:
    """Largest rotation and location error over every frame of every bone, and the keys written by each."""
    assert [c.bone for c in dense.channels] == [c.bone for c in reduced.channels], dense.name
    if not dense.channels:  # a delta animation that moves nothing
        return 0.0, 0.0, 0, 0
    # Every original frame: a reference channel that moves has a key on each (constant ones hold a single key).
    frames = max((f for c in dense.channels for f in (c.rotation_frames, c.location_frames)), key=len)
    rot = loc = 0.0
    for d, r in zip(dense.channels, reduced.channels, strict=True):
        full_rot, full_loc = (
            played(d.rotation_frames, d.rotations, frames),
            played(d.location_frames, d.locations, frames),
        )
        rot = max(rot, float(np.abs(played(r.rotation_frames, r.rotations, frames) - full_rot).max()))
        loc = max(loc, float(np.abs(played(r.location_frames, r.locations, frames) - full_loc).max()))
    dense_keys = sum(4 * len(c.rotation_frames) + 3 * len(c.location_frames) for c in dense.channels)
    kept_keys = sum(4 * len(c.rotation_frames) + 3 * len(c.location_frames) for c in reduced.channels)
    return rot, loc, dense_keys, kept_keys


def animated_samples() -> list[Path]:
    return [p for p in sample_files("source", "*.mdl") if load_source(str(p)).animations]


# --- every sample animation -------------------------------------------------------------------------------------


@pytest.mark.long
def test_every_original_frame_stays_within_the_tolerance(monkeypatch):
    checked = 0
    totals = {}
    for path in animated_samples():
        dense, reduced = dense_and_reduced(path, monkeypatch)
        assert [a.name for a in dense] == [a.name for a in reduced] and dense
        kept = written = 0
        for d, r in zip(dense, reduced, strict=True):
            rot, loc, dense_keys, kept_keys = worst_errors(d, r)
            assert rot <= ROTATION_TOLERANCE + SLOP, (path.name, d.name, rot)
            assert loc <= LOCATION_TOLERANCE * INCH + SLOP, (path.name, d.name, loc)
            assert r.frame_range == d.frame_range and r.additive == d.additive
            written += dense_keys
            kept += kept_keys
            checked += 1
        totals[path.name] = (kept, written)
    # scout, monster_cube, civilian (+ includes), its animations, ...; coverage/: cremator, the galil (frame-major)
    assert checked == 2 + 11 + 130 + 129 + 97 + 10 + (1 + 9)
    # Redundant keys do go: a quarter of civilian's, over half of monster_cube's (measured 0.72 and 0.42).
    assert totals["civilian.mdl"][0] < 0.8 * totals["civilian.mdl"][1]
    assert totals["monster_cube.mdl"][0] < 0.5 * totals["monster_cube.mdl"][1]


# --- the selection itself ---------------------------------------------------------------------------------------


def test_constant_and_linear_channels_keep_their_ends():
    frames = np.arange(30.0)
    line = np.stack([0.5 * frames, 2.0 - frames / 7.0, np.full(30, 3.0)], axis=1)
    still = np.tile([1.0, 2.0, 3.0], (30, 1)) + 1e-6 * np.sin(frames)[:, None]
    keep = _needed_keys(np.stack([line, still]), 1e-5)
    assert np.flatnonzero(keep[0]).tolist() == [0, 29]
    assert np.flatnonzero(keep[1]).tolist() == [0]


def test_a_slow_curve_is_not_dropped_whole():
    """Every frame of a gentle parabola is within the tolerance of its neighbours' midpoint, yet dropping them all
    would miss the middle by far more: keys come back until every frame is within the tolerance."""
    frames = np.arange(101.0)
    tolerance = 1e-5
    bend = 1.5 * tolerance / 50**2 * ((frames - 50) ** 2)  # second differences: 1.2e-9, chord error 1.5e-5
    values = np.stack([bend, np.zeros(101)], axis=1)[None]
    keep = _needed_keys(values, tolerance)
    kept = np.flatnonzero(keep[0])
    assert 2 < len(kept) < 20
    error = np.abs(np.interp(frames, frames[kept], bend[kept]) - bend).max()
    assert error <= tolerance


def test_noise_keeps_every_key_and_channels_stay_apart():
    rng = np.random.default_rng(7)
    noise = rng.normal(scale=1e-3, size=(40, 4))
    steps = np.repeat(np.arange(4.0), 10)[:, None] * np.ones((1, 4))  # holds, then jumps
    keep = _needed_keys(np.stack([noise, steps]), 1e-5)
    assert keep[0].all()
    assert np.flatnonzero(keep[1]).tolist() == [0, 9, 10, 19, 20, 29, 30, 39]


def test_channels_with_values_that_are_no_numbers_keep_every_key():
    values = np.zeros((3, 5, 3))
    values[0, 2, 1] = np.nan
    values[1, 4, 0] = np.inf
    keep = _needed_keys(values, 1e-5)
    assert keep[0].all() and keep[1].all() and np.flatnonzero(keep[2]).tolist() == [0]


@pytest.mark.parametrize("frames", [1, 2, 3])
def test_short_channels(frames):
    values = np.arange(frames * 3, dtype=np.float64).reshape(1, frames, 3) ** 2
    keep = _needed_keys(values, 1e-5)
    assert keep[0, 0] and keep.sum() == frames  # a bend in three frames keeps its middle


def test_quaternion_products_compose_like_matrices():
    """``a ⊗ b`` is ``R(a)·R(b)``; the sandwich of conversion as one 4×4 matrix; the sign a matrix gives."""
    rng = np.random.default_rng(3)
    a, b, c = (q / np.linalg.norm(q, axis=1, keepdims=True) for q in rng.normal(size=(3, 50, 4)))
    np.testing.assert_allclose(
        quaternion_to_matrix(multiply(a, b)), quaternion_to_matrix(a) @ quaternion_to_matrix(b), atol=1e-12
    )
    sandwich = left_matrix(conjugate(a)) @ right_matrix(c)
    expected = quaternion_to_matrix(a).swapaxes(1, 2) @ quaternion_to_matrix(b) @ quaternion_to_matrix(c)
    np.testing.assert_allclose(quaternion_to_matrix(np.einsum("nij,nj->ni", sandwich, b)), expected, atol=1e-12)
    signs = canonical_sign(b)
    np.testing.assert_allclose(b * signs[:, None], matrix_to_quaternion(quaternion_to_matrix(b)), atol=1e-12)


# --- many animations at once --------------------------------------------------------------------------------------


def clips(rng: np.random.Generator, lengths: list[int], width: int) -> list[np.ndarray]:
    """(3, F, width) per clip: a slow curve, noise or a hold, a value that is not a number now and then."""
    out = []
    for n in lengths:
        t = np.arange(n, dtype=np.float64)[None, :, None]
        values = np.concatenate(
            [
                1e-5 * rng.normal() * (t - n / 2) ** 2 / max(n, 1) + rng.normal(size=(1, 1, width)),
                rng.normal(scale=rng.choice([0.0, 1e-6, 1e-3]), size=(1, n, width)),
                np.repeat(rng.normal(size=(1, 1, width)), n, axis=1),
            ]
        )
        if rng.random() < 0.2:
            values[rng.integers(3), rng.integers(n), rng.integers(width)] = np.nan
        out.append(values)
    return out


def test_clips_end_to_end_reduce_and_turn_as_each_alone():
    """Keys chosen for clips laid end to end, and sign continuity, are exactly those of each clip alone."""
    rng = np.random.default_rng(11)
    for _ in range(30):
        lengths = rng.integers(1, 40, size=rng.integers(1, 8)).tolist()
        parts = clips(rng, lengths, 4)
        starts = np.cumsum(lengths) - lengths
        together = _needed_keys(np.concatenate(parts, axis=1), 1e-5, starts)
        alone = np.concatenate([_needed_keys(p, 1e-5) for p in parts], axis=1)
        np.testing.assert_array_equal(together, alone)
        quats = np.concatenate([rng.normal(size=(3, n, 4)) for n in lengths], axis=1)
        each = [make_continuous(quats[:, s : s + n]) for s, n in zip(starts, lengths, strict=True)]
        np.testing.assert_array_equal(make_continuous(quats, starts), np.concatenate(each, axis=1))


def test_actions_made_together_equal_actions_made_alone():
    """Every animation of male_postures (deltas keying different bones, and full poses) converted in one pass and
    one by one: the same keys, values within float64 rounding."""
    from test_keys_decode import load

    from io_ms3d_mdl.formats.source.animation import decode_animations

    (path,) = [p for p in sample_files("source", "*.mdl") if p.name == "male_postures.mdl"]
    mdl, ani = load(path)
    anims = decode_animations(mdl, list(range(len(mdl.animations))), *ani)
    assert all(isinstance(a, DecodedAnimation) for a in anims) and {a.delta for a in anims} == {False, True}
    rest_rot = quaternion_to_matrix(mdl.bones["quat"].astype(np.float64)[:, [3, 0, 1, 2]])
    rest = (rest_rot, mdl.bones["pos"].astype(np.float64), np.tile(np.eye(3), (len(mdl.bones), 1, 1)), 0.0254)
    scales = [30.0 / a.fps for a in anims]
    together = source_animation.build_channels(anims, scales, *rest)
    for anim, scale, built in zip(anims, scales, together, strict=True):
        (alone,) = source_animation.build_channels([anim], [scale], *rest)
        assert (built.name, built.frame_range, built.additive) == (alone.name, alone.frame_range, alone.additive)
        assert [c.bone for c in built.channels] == [c.bone for c in alone.channels]
        for b, a in zip(built.channels, alone.channels, strict=True):
            np.testing.assert_array_equal(b.rotation_frames, a.rotation_frames)
            np.testing.assert_array_equal(b.location_frames, a.location_frames)
            np.testing.assert_allclose(b.rotations, a.rotations, rtol=0, atol=1e-12)
            np.testing.assert_allclose(b.locations, a.locations, rtol=0, atol=1e-12)
