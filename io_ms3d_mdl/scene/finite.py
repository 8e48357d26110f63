"""Corrupt files can hold NaN or infinity in any float; Blender accepts them and then draws nothing sensible
(bounding boxes, normals and F-curves all break) or refuses them with an exception. Readers repair the fields they
know (MilkShape does, with precise warnings); this pass over the finished scene is the one guard every float
reaches Blender through: geometry, skins, bones, keys, empties (attachments, hitboxes, eyeballs), materials (VMT
values), flex controller ranges, timing, markers, clips and custom properties."""

from __future__ import annotations

import math

import numpy as np

from .types import ActionData, MaterialData, SceneData

IDENTITY_QUATERNION = np.array([1.0, 0.0, 0.0, 0.0])
MAX_BONE_LENGTH = 1e6
MAX_COORDINATE = 1e9  # beyond it, float32 maths on the matrix (parenting, decomposition) overflows
HALF_MAX = 65504.0  # the largest finite half float: what HDR texture formats (BC6H, RGBA16F) can hold
PIXEL_WARNING = (
    "texture pixels that were not usable numbers (NaN, infinity, or beyond the half-float range) were replaced "
    "by 0 or clamped to ±65504"
)


def _rigid(matrix: np.ndarray) -> tuple[np.ndarray, int]:
    """A placement Blender can decompose: the nearest rotation to the 3×3 part (identity when it is degenerate or
    not finite) and a bounded translation. A file's "rotation" of zeros and 10²⁶ would become NaN in Blender."""
    m = np.array(matrix, dtype=np.float64)
    if not np.isfinite(m).all():
        return np.eye(4), 1
    rotation = m[:3, :3]
    if _usual(m[None])[0]:
        m[3] = (0.0, 0.0, 0.0, 1.0)  # as written below (no -0.0 kept)
        return m, 0  # the usual case, without a decomposition: already its own nearest rotation
    u, s, vt = np.linalg.svd(rotation)
    if s[0] == 0.0 or s[2] < 1e-6 * s[0]:
        nearest = np.eye(3)
    else:
        nearest = u @ vt
        if np.linalg.det(nearest) < 0:
            nearest = u @ np.diag([1.0, 1.0, -1.0]) @ vt
    keep = np.allclose(nearest, rotation, atol=1e-4)  # a real rotation, as stored (float32 rounding)
    out = np.eye(4)
    out[:3, :3] = rotation if keep else nearest
    out[:3, 3] = np.clip(m[:3, 3], -MAX_COORDINATE, MAX_COORDINATE)
    return out, int(not keep or not np.array_equal(out[:3, 3], m[:3, 3]))


def _placements(matrices: list[np.ndarray]) -> tuple[list[np.ndarray], int]:
    """Every matrix through :func:`_rigid`, the usual case (see :func:`_usual`) recognised for all at once: one
    matrix at a time cost more than the rest of the pass on a model with a few dozen attachments and hitboxes."""
    if not matrices:
        return [], 0
    stacked = np.array(matrices, dtype=np.float64).reshape(-1, 4, 4)
    finite = np.isfinite(stacked).all(axis=(1, 2))
    usual = finite & _usual(np.where(finite[:, None, None], stacked, np.eye(4)))  # the others go through _rigid
    stacked[:, 3] = (0.0, 0.0, 0.0, 1.0)  # as ``_rigid`` writes it (no -0.0 kept)
    out, count = [], 0
    for i, ok in enumerate(usual.tolist()):
        if ok:
            out.append(stacked[i])
        else:
            matrix, bad = _rigid(matrices[i])
            out.append(matrix)
            count += bad
    return out, count


def _usual(matrices: np.ndarray) -> np.ndarray:
    """Which of the finite (N, 4, 4) ``matrices`` are already what ``_rigid`` makes of them: a proper rotation, a
    bounded translation and the last row ``0 0 0 1``. The rotation test is well within the tolerance ``_rigid``
    keeps stored rotations by: ``RᵀR`` within 1e-5 of the identity puts the nearest rotation within about 1e-5 of
    ``R``, and ``_rigid`` keeps ``R`` up to 1e-4."""
    rotation = matrices[:, :3, :3]
    with np.errstate(over="ignore", invalid="ignore"):  # huge entries: not orthonormal, whatever overflows
        gram = np.einsum("nji,njk->nik", rotation, rotation)
        return (
            (np.abs(gram - np.eye(3)).max(axis=(1, 2)) < 1e-5)
            & (np.linalg.det(rotation) > 0)
            & (np.abs(matrices[:, :3, 3]).max(axis=1) <= MAX_COORDINATE)
            & (matrices[:, 3] == (0.0, 0.0, 0.0, 1.0)).all(axis=1)
        )


def _zero_non_finite(array: np.ndarray | None) -> int:
    if array is None or array.dtype.kind != "f":
        return 0
    if math.isfinite(array.sum()):  # NaN and infinity survive a sum: one reduction, no mask, for clean arrays
        return 0
    bad = ~np.isfinite(array)
    count = int(bad.sum())
    if count:
        array[bad] = 0.0
    return count


def finite_pixels(pixels: np.ndarray) -> int:
    """Float texture pixels, in place: NaN becomes 0, anything beyond the finite half-float range (infinities
    included) ±65504. Returns how many values changed (0 for integer pixels, which are always usable). Every
    decoder's float pixels pass here before they reach Blender: a signed BC6H block can decode to -inf, and
    Blender would draw (and bake, and export) it as such."""
    if pixels.dtype.kind != "f":
        return 0
    with np.errstate(invalid="ignore"):
        count = pixels.size - int(np.count_nonzero(np.abs(pixels) <= HALF_MAX))  # NaN compares False
    if count:
        np.nan_to_num(pixels, copy=False, nan=0.0)
        np.clip(pixels, -HALF_MAX, HALF_MAX, out=pixels)
    return count


def _quaternions(array: np.ndarray) -> int:
    """Replaced whole: a quaternion with one zeroed element is no longer the rotation the file meant either."""
    finite = np.isfinite(array)
    if finite.all():
        return 0
    bad = ~finite.all(axis=1)
    count = int(bad.sum())
    if count:
        array[bad] = IDENTITY_QUATERNION
    return count


def _channels(action: ActionData, finite: set[int]) -> int:
    """An action's keys. Converters gather them into a few arrays (for many actions at once) and hand out views:
    when the arrays behind every view are finite, so is every view, one check per array instead of four per bone
    (70 ms of a 130-action import). Otherwise, or with arrays of their own, each is repaired as before. ``finite``
    holds the arrays already found finite, for the next actions. An action whose keys are packed (its channels
    views of them) is checked through those few arrays, not its channels one by one."""
    packed, channels = action.packed, action.channels
    if packed is not None:
        whole = [packed.rotation_frames, packed.location_frames, packed.rotations, packed.locations]
        if _all_finite(whole, finite):
            return 0
    kinds = (
        ([c.rotation_frames for c in channels], _zero_non_finite),
        ([c.location_frames for c in channels], _zero_non_finite),
        ([c.rotations for c in channels], _quaternions),
        ([c.locations for c in channels], _zero_non_finite),
    )
    count = 0
    for arrays, repair in kinds:
        if not _all_finite(arrays, finite):
            count += sum(repair(a) for a in arrays)
    return count


def _all_finite(arrays: list[np.ndarray], finite: set[int]) -> bool:
    """Whether every array is finite, looking at each distinct array behind them once (an array of their own
    stands for itself), and not again when ``finite`` holds it (the ids of arrays found finite)."""
    behind: dict[int, np.ndarray] = {}
    for a in arrays:
        if a is None:
            continue
        base = a.base if isinstance(a.base, np.ndarray) and a.base.dtype == a.dtype else a
        behind[id(base)] = base
    for key, base in behind.items():
        if key not in finite and base.dtype.kind == "f" and not np.isfinite(base).all():
            return False
    finite.update(behind)
    return True


def _number(value: float, fallback: float) -> tuple[float, int]:
    return (value, 0) if math.isfinite(value) else (fallback, 1)


def _numbers(values: tuple[float, ...], fallback: float) -> tuple[tuple[float, ...], int]:
    bad = sum(not math.isfinite(v) for v in values)
    return (values, 0) if not bad else (tuple(v if math.isfinite(v) else fallback for v in values), bad)


_PLAIN = (str, int, bool)  # property values that hold no float


def _props(props: dict) -> int:
    """Custom properties hold numbers from files too (fps, radii, ranges): the same guard, in lists as well."""
    count = 0
    for key, value in props.items():
        if type(value) in _PLAIN:  # most are; a model has a hundred such dicts
            continue
        if isinstance(value, float) and not math.isfinite(value):
            props[key], count = 0.0, count + 1
        elif isinstance(value, list):
            for i, item in enumerate(value):
                if isinstance(item, float) and not math.isfinite(item):
                    value[i], count = 0.0, count + 1
                elif isinstance(item, dict):
                    count += _props(item)
        elif isinstance(value, dict):
            count += _props(value)
    return count


def _material_values(material: MaterialData) -> int:
    count = 0
    for name, fallback in (("alpha", 1.0), ("roughness", 0.5), ("specular_level", 0.5), ("emission_strength", 0.0)):
        value, bad = _number(getattr(material, name), fallback)
        setattr(material, name, value)
        count += bad
    for name, fallback in (("base_color", 1.0), ("specular_tint", 1.0), ("emission_color", 0.0)):
        values, bad = _numbers(tuple(getattr(material, name)), fallback)
        setattr(material, name, values)
        count += bad
    if material.alpha_clip is not None and not math.isfinite(material.alpha_clip):
        material.alpha_clip, count = 0.5, count + 1
    return count + _props(material.props)


def _timing(scene: SceneData) -> int:
    """Scene rate and range, clips and markers: a value that is not a number cannot be placed on a timeline."""
    count = 0
    if scene.fps is not None and not math.isfinite(scene.fps):
        scene.fps, count = None, count + 1
    if scene.frame_range is not None and not all(math.isfinite(f) for f in scene.frame_range):
        scene.frame_range, count = None, count + 1
    clips = [c for c in scene.clips if math.isfinite(c.start) and math.isfinite(c.end)]
    count += len(scene.clips) - len(clips)
    scene.clips = clips
    for action in scene.actions:
        markers = [(n, f) for n, f in action.markers if math.isfinite(f)]
        count += len(action.markers) - len(markers)
        action.markers = markers
        if not all(math.isfinite(f) for f in action.frame_range):
            action.frame_range, count = (0.0, 0.0), count + 1
        count += _props(action.props)
    return count


def _bones(bones: list) -> int:
    """Rest matrices and lengths, checked together (one bone at a time cost more than the rest of the pass)."""
    if not bones:
        return 0
    matrices = np.stack([b.matrix for b in bones])
    lengths = np.array([b.length for b in bones], dtype=np.float64)
    broken = ~np.isfinite(matrices).all(axis=(1, 2))
    far = ~broken & (np.abs(np.nan_to_num(matrices[:, :3, 3])).max(axis=1) > MAX_COORDINATE)
    long = ~np.isfinite(lengths) | (lengths > MAX_BONE_LENGTH)
    count = 0
    for i in np.flatnonzero(broken | far | long).tolist():
        bone = bones[i]
        if broken[i]:
            bone.matrix = np.eye(4)
        elif far[i]:
            bone.matrix = bone.matrix.copy()
            bone.matrix[:3, 3] = np.clip(bone.matrix[:3, 3], -MAX_COORDINATE, MAX_COORDINATE)
        if long[i]:  # its square overflows Blender's float32 maths: a broken bone
            bone.length = 1.0 if not np.isfinite(bone.length) else MAX_BONE_LENGTH
        count += int(broken[i]) + int(far[i]) + int(long[i])
    return count + sum(_props(b.props) for b in bones if b.props)


def replace_non_finite(scene: SceneData) -> None:
    # Sums of huge or broken arrays overflow or meet inf - inf: those arrays are repaired, without a warning.
    with np.errstate(over="ignore", invalid="ignore"):
        _replace_non_finite(scene)


def _replace_non_finite(scene: SceneData) -> None:
    count = _timing(scene) + _props(scene.props) + sum(_material_values(m) for m in scene.materials)
    for obj in scene.objects:
        mesh = obj.mesh
        for array in (
            mesh.positions,
            mesh.uvs,
            mesh.uvs2,
            mesh.normals,
            mesh.vertex_normals,
            *(p for _, p in mesh.shape_keys),
        ):
            count += _zero_non_finite(array)
        if obj.skin is not None:
            count += _zero_non_finite(obj.skin.weights)
        for name, (low, high) in list(obj.controls.items()):
            if not (math.isfinite(low) and math.isfinite(high)):
                obj.controls[name], count = (0.0, 1.0), count + 1
        count += _props(obj.props)
    placements, count_placed = _placements([empty.matrix for empty in scene.empties])
    count += count_placed
    for empty, placement in zip(scene.empties, placements, strict=True):
        empty.matrix = placement
        empty.size, bad = _number(empty.size, 1.0)
        empty.scale, bad_scale = _numbers(tuple(empty.scale), 1.0)
        bounded = tuple(min(max(v, -MAX_COORDINATE), MAX_COORDINATE) for v in empty.scale)  # float32 maths
        bad_scale += bounded != empty.scale
        empty.scale = bounded
        if abs(empty.size) > MAX_COORDINATE:
            empty.size, bad = MAX_COORDINATE, bad + 1
        count += bad + bad_scale + _props(empty.props)
    if scene.skeleton is not None:
        count += _bones(scene.skeleton.bones)
    finite: set[int] = set()
    for action in scene.actions:
        count += _channels(action, finite)
    if count:
        scene.warnings.add(
            f"{count} values in the file were not usable numbers (NaN, infinity, or beyond what Blender can hold); "
            "replaced by 0, the identity rotation or the nearest usable value"
        )
