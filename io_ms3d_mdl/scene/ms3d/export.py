"""A :class:`SceneData` (what the Blender-side reader, or an importer, made) as an :class:`Ms3dModel` to write:
the inverse of :mod:`.convert` and :mod:`.armature`. No ``bpy``.

- positions ``p_file = Cᵀ·p / scale``, normals ``Cᵀ·n``, UVs ``t = 1 − v`` (C: the axis conversion);
- joints: a bone's rest frame is ``Q = C·R·X`` (R: the joint's world rotation, X: the bone's turn from the
  joint's axes), so ``R = Cᵀ·Q·Xᵀ``; a bone our import made keeps its stored joint values (and so its X), a new
  bone gets the import's "Joint Axis" X; local reference values are ``G_parent⁻¹·G``;
- keys: a pose basis ``B`` is ``Xᵀ·T(scale·k)·R(key)·X``, so ``R(key) = X·B_rot·Xᵀ`` and ``k = X·B_loc / scale``;
  time = frame / fps;
- weights: up to four influences on MilkShape's 0–100 scale (largest remainder, so they sum to 100); more are
  dropped smallest first with one warning (or refused);
- smoothing groups: faces joined across edges that are not sharp share a group.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from ...errors import Warnings
from ...formats.binary import columns_falling
from ...formats.ms3d import structs
from ...formats.ms3d.model import (
    Ms3dGroup,
    Ms3dJoint,
    Ms3dMaterial,
    Ms3dModel,
    Ms3dModelExtra,
    Ms3dVertexExtra,
)
from ...formats.text import encode_text
from ..axes import axis_conversion_matrix
from ..names import unique_names
from ..rotations import (
    compose,
    conjugate,
    euler_xyz_to_matrix,
    matrix_to_euler_xyz,
    matrix_to_quaternion,
    quaternion_to_euler_xyz,
    rows_times,
    rows_times_float32,
)
from ..types import ActionData, ClipData, MaterialData, ObjectData, SceneData
from .armature import JOINT_AXIS_TO_BONE, parse_clips
from .limits import (
    MAX_GROUPS,
    MAX_JOINTS,
    MAX_MATERIALS,
    MAX_TRIANGLES,
    MAX_VERTICES,
    ExportError,
    check_limit,
)
from .split import WideModel, narrow, split_model
from .stored import check_stored

MAX_INFLUENCES = 4
DEFAULT_JOINT_FLAGS = 8  # what MilkShape 1.8 writes for a joint nobody selected


@dataclass(frozen=True)
class Ms3dExportOptions:
    scale: float = 1.0  # Blender units per MilkShape unit, as on import (the file gets positions / scale)
    axis_forward: str = "Z"  # the file axes Blender's +Y and +Z came from (the import's defaults)
    axis_up: str = "Y"
    groups: str = "OBJECT"  # "OBJECT": a group per object (and material); "MATERIAL": a group per material
    too_many_influences: str = "DROP"  # "DROP": keep the four largest, one warning; "ERROR": refuse
    fit_names: bool = False  # names past 32 bytes: cut and numbered (one warning) instead of refused
    split: bool = False  # past the vertex, triangle, group or material limits: several files (split.py), not refused


@dataclass
class _Group:
    name: str
    material: int  # index into the model's materials, -1 for none
    flags: int = 0
    comment: str | None = None
    triangles: list[np.ndarray] = field(default_factory=list)  # rows into the model's triangles


def scene_to_ms3d(scene: SceneData, options: Ms3dExportOptions = Ms3dExportOptions()) -> Ms3dModel:
    """The model to write as one file; raises :class:`ExportError` for what the format cannot hold (whatever
    ``options.split`` says). Warnings go to ``scene.warnings``."""
    return narrow(wide_model(scene, options, refuse=True))


def scene_to_ms3d_parts(scene: SceneData, options: Ms3dExportOptions = Ms3dExportOptions()) -> list[Ms3dModel]:
    """The models to write: the one of :func:`scene_to_ms3d`, or with ``options.split`` as many as the vertex,
    triangle, group and material limits need (:mod:`.split`; one when the scene fits). Past 128 joints, or
    anything else the format cannot hold, is refused either way."""
    if not options.split:
        return [scene_to_ms3d(scene, options)]
    return split_model(wide_model(scene, options, refuse=False))


def wide_model(scene: SceneData, options: Ms3dExportOptions = Ms3dExportOptions(), refuse: bool = False) -> WideModel:
    """Every record of the export, before the file's limits (indices wide, :class:`.split.WideModel`); ``refuse``:
    past a limit is an :class:`ExportError`, said as early as it can be known (before the work)."""
    warnings = scene.warnings
    check_stored(scene)
    axes = axis_conversion_matrix(options.axis_forward, options.axis_up)
    # A scene turned as a whole (Source's axes) is turned first: that is where Blender shows it.
    turn = np.asarray(scene.root_matrix, dtype=np.float64) if scene.root_matrix is not None else np.eye(3)
    to_file = axes.T @ turn / options.scale  # p_file = to_file @ p
    joints, x = _joints(scene, axes, options.scale, turn)
    materials, material_of = _materials(scene, refuse)

    parts = [(i, o) for i, o in enumerate(scene.objects) if len(o.mesh.triangles)]
    for faceless in [o.name for o in scene.objects if not len(o.mesh.triangles)]:
        warnings.add(f"object '{faceless}' has no faces; MilkShape 3D groups hold triangles, so it is left out")
    parts.sort(key=lambda p: (p[1].props.get("ms3d_group_index", math.inf), p[0]))
    offsets = np.cumsum([0] + [len(o.mesh.positions) for _, o in parts])
    vertex_count, triangle_count = int(offsets[-1]), sum(len(o.mesh.triangles) for _, o in parts)
    if refuse:
        check_limit(vertex_count, MAX_VERTICES, "vertices")
        check_limit(triangle_count, MAX_TRIANGLES, "triangles")

    vertices = np.zeros(vertex_count, dtype=structs.VERTEX)
    triangles = np.zeros(triangle_count, dtype=structs.TRIANGLE)
    indices = np.zeros((triangle_count, 3), dtype=np.int64)  # the records' uint16 field is filled by narrow()
    extra = Ms3dVertexExtra(
        sub_version=int(scene.props.get("ms3d_vertex_extra", 2)) if scene.props.get("ms3d_vertex_extra") else 2,
        bone_ids=np.full((vertex_count, 3), -1, dtype=np.int16),
        weights=np.zeros((vertex_count, 3), dtype=np.uint8),
        extra=np.zeros(vertex_count, dtype=np.uint32),
        extra2=np.zeros(vertex_count, dtype=np.uint32),
    )
    vertices["bone_id"] = 255
    groups: dict[tuple, _Group] = {}
    dropped: dict[str, int] = {}  # object name -> vertices that lost influences
    first_tri = 0
    for (_, obj), start in zip(parts, offsets[:-1].tolist(), strict=True):
        mesh = obj.mesh
        nv, nt = len(mesh.positions), len(mesh.triangles)
        rows = slice(start, start + nv)
        with np.errstate(over="ignore", invalid="ignore"):  # (past float32: infinite, refused just below)
            vertices["position"][rows] = rows_times(mesh.positions, to_file.T)
        tris = np.asarray(mesh.triangles, dtype=np.int64)
        records = triangles[first_tri : first_tri + nt]
        indices[first_tri : first_tri + nt] = tris + start
        normals = mesh.corner_normals()
        if normals is not None:
            turned = rows_times_float32(np.reshape(normals, (-1, 3)), (axes.T @ turn).T)
            records["normals"] = turned.reshape(nt, 3, 3)
        if mesh.uvs is not None:
            uv = np.asarray(mesh.uvs, dtype=np.float64).reshape(nt, 3, 2)
            records["s"], records["t"] = uv[..., 0], 1.0 - uv[..., 1]
        _check_finite(obj.name, vertices["position"][rows], records)
        records["smoothing_group"] = smoothing_groups(tris, mesh.sharp_edges, nv)
        if obj.skin is not None and joints:
            lost = _weights(obj, vertices[rows], extra, rows, options, warnings)
            if lost:
                dropped[obj.name] = dropped.get(obj.name, 0) + lost
        slots = mesh.material_indices if mesh.material_indices is not None else np.zeros(nt, np.int32)
        slots = np.asarray(slots, dtype=np.int64)
        for slot in np.unique(slots).tolist():
            scene_index = mesh.materials[slot] if 0 <= slot < len(mesh.materials) else None
            material = material_of.get(scene_index, -1) if scene_index is not None else -1
            key = (material,) if options.groups == "MATERIAL" else (id(obj), material)
            if key not in groups:
                groups[key] = _new_group(obj, scene, scene_index, material, options, len(np.unique(slots)) > 1)
            groups[key].triangles.append(first_tri + np.flatnonzero(slots == slot))
        first_tri += nt
    if dropped:
        total = sum(dropped.values())
        named = ", ".join(f"'{name}' {count:,}" for name, count in list(dropped.items())[:3])
        rest = len(dropped) - 3
        more = f" and {rest:,} more {_plural(rest, 'object', 'objects')}" if rest > 0 else ""
        warnings.add(
            f"{total:,} {_plural(total, 'vertex', 'vertices')} had more than {MAX_INFLUENCES} joint influences "
            f"({named}{more}); the smallest were dropped and the rest rescaled"
        )
    if refuse:
        check_limit(len(groups), MAX_GROUPS, "groups")
    ms3d_groups = [
        Ms3dGroup(g.name, g.flags, np.concatenate(g.triangles).astype(np.int64), g.material, g.comment)
        for g in groups.values()
    ]

    fps = _fps(scene)
    clips = _clips(scene)
    _key_joints(scene, joints, x, fps, options.scale, clips)
    props = scene.props
    model = Ms3dModel(
        path=None,
        version=4,
        vertices=vertices,
        triangles=triangles,
        groups=ms3d_groups,
        materials=materials,
        fps=fps,
        current_time=float(props.get("ms3d_current_time", 0.0)),
        total_frames=_total_frames(scene, joints, fps),
        joints=joints,
        model_comment=_model_comment(scene, clips),
        vertex_extra=extra,
        model_extra=Ms3dModelExtra(
            float(props.get("ms3d_joint_size", _joint_size(scene, options.scale))),
            int(props.get("ms3d_transparency_mode", 0)),
            float(props.get("ms3d_alpha_ref", 0.5)),
        ),
        warnings=Warnings(),
    )
    model.extended_blocks = _extended_blocks(model, props.get("ms3d_extended_blocks"))
    _fit_names(model, scene, options.fit_names)
    if not joints:
        model.vertex_extra.bone_ids[:] = -1
    return WideModel(model, indices)


def _check_finite(name: str, positions: np.ndarray, triangles: np.ndarray) -> None:
    """Refuse NaN or infinity in an object's coordinates (what Blender's float32 holds may pass the file's after
    the scale): MilkShape and every reader would show garbage or nothing."""
    for what, values in (
        ("vertex positions", positions),
        ("normals", triangles["normals"]),
        ("UVs", np.stack([triangles["s"], triangles["t"]], axis=-1)),
    ):
        bad = ~np.isfinite(values)
        if bad.any():
            raise ExportError(
                f"object '{name}': {int(bad.any(axis=-1).sum()):,} of its {what} are not finite numbers (NaN or "
                "infinity, or too large for the file's 32-bit floats at this scale); fix the mesh or the scale"
            )


def _extended_blocks(model: Ms3dModel, stored: int | None) -> list[str]:
    """All four optional blocks for a new model; as many as the imported file had when nothing needs more."""
    every = ["comments", "vertex extra", "joint extra", "model extra"]
    if stored is None:
        return every
    needed = 0
    commented = [*model.groups, *model.materials, *model.joints]
    if model.model_comment is not None or any(item.comment is not None for item in commented):
        needed = 1
    extra = model.vertex_extra
    if extra is not None and (extra.weights.any() or (extra.bone_ids >= 0).any()):
        needed = 2
    if any(j.color is not None and np.any(j.color) for j in model.joints):
        needed = 3
    return every[: max(needed, min(int(stored), 4))]


def _fit_names(model: Ms3dModel, scene: SceneData, fit: bool) -> None:
    """Every name inside its 32-byte field: refused with the first one too long (naming its object, bone or
    material), or, with ``fit``, cut on a character boundary and numbered where two would meet (one warning)."""
    kinds = (
        ("group", model.groups, "object"),
        ("material", model.materials, "material"),
        ("joint", model.joints, "bone"),
    )
    changed = 0
    for kind, items, owner in kinds:
        names = [item.name for item in items]
        for name in names:
            size = len(encode_text(name))
            if size > structs.NAME_SIZE and not fit:
                raise ExportError(
                    f"{kind} name '{name}' ({owner} '{name}') is {size} bytes long; MilkShape 3D names hold at most "
                    f"{structs.NAME_SIZE} bytes: rename it"
                )
        if not fit or all(len(encode_text(n)) <= structs.NAME_SIZE for n in names):
            continue
        fitted = unique_names(names, kind, limit=structs.NAME_SIZE)
        renamed = dict(zip(names, fitted, strict=True))
        changed += sum(a != b for a, b in zip(names, fitted, strict=True))
        for item, name in zip(items, fitted, strict=True):
            item.name = name
        if kind == "joint":
            for joint in model.joints:
                joint.parent_name = renamed.get(joint.parent_name, joint.parent_name)
    if changed:
        scene.warnings.add(
            f"{changed} {_plural(changed, 'name was', 'names were')} cut to fit MilkShape's {structs.NAME_SIZE} bytes"
        )


def _plural(count: int, one: str, many: str) -> str:
    return one if count == 1 else many


def _new_group(
    obj: ObjectData, scene: SceneData, scene_index: int | None, material: int, options: Ms3dExportOptions, split: bool
) -> _Group:
    if options.groups == "MATERIAL":
        name = scene.materials[scene_index].name if scene_index is not None else "no material"
        return _Group(name, material)
    name = obj.name
    if split:  # one object with several materials: a group per material, named after both
        suffix = scene.materials[scene_index].name if scene_index is not None else "none"
        name = f"{obj.name}_{suffix}"
    flags = int(obj.props.get("ms3d_group_flags", 0)) & 0xFF
    return _Group(name, material, flags, obj.props.get("ms3d_comment"))


def smoothing_groups(tris: np.ndarray, sharp_edges: np.ndarray | None, vertex_count: int) -> np.ndarray:
    """(T,) MilkShape smoothing groups 1..32: faces that meet across an edge that is not sharp share one; regions
    apart get different ones as long as 32 go round (a neighbouring region may repeat a number beyond that)."""
    nt = len(tris)
    if nt == 0:
        return np.zeros(0, np.uint8)
    if sharp_edges is None or len(sharp_edges) == 0:
        return np.ones(nt, np.uint8)
    span = max(vertex_count, 1)
    edges = np.sort(np.stack([tris, np.roll(tris, -1, axis=1)], axis=2).reshape(-1, 2), axis=1)
    keys = edges[:, 0] * span + edges[:, 1]
    sharp = np.sort(np.asarray(sharp_edges, dtype=np.int64), axis=1)
    soft = ~np.isin(keys, sharp[:, 0] * span + sharp[:, 1])
    face = np.repeat(np.arange(nt), 3)[soft]
    keys = keys[soft]
    order = np.argsort(keys, kind="stable")
    keys, face = keys[order], face[order]
    same = keys[1:] == keys[:-1]
    a, b = face[:-1][same], face[1:][same]  # faces sharing a soft edge
    label = np.arange(nt)
    while True:  # label propagation with pointer jumping: every region ends with its smallest face index
        low = np.minimum(label[a], label[b])
        new = label.copy()
        np.minimum.at(new, a, low)
        np.minimum.at(new, b, low)
        new = new[new]
        if (new == label).all():
            break
        label = new
    _, region = np.unique(label, return_inverse=True)
    return (region % 32 + 1).astype(np.uint8)


def _weights(
    obj: ObjectData,
    vertices: np.ndarray,
    extra: Ms3dVertexExtra,
    rows: slice,
    options: Ms3dExportOptions,
    warnings: Warnings,
) -> int:
    """Fill the vertex and vertex-extra records of one object; returns how many vertices lost influences. The
    work goes slot by slot, on (slots, vertices) arrays: numpy steps along a row of 4 or 5 numbers 10-20x slower."""
    skin = obj.skin
    ids = np.asarray(skin.bone_indices).T
    # Slots past the last one any vertex uses are left out of the work (a rig of two weights a vertex: half of
    # it) and come back as unused ones at the end: they could take no point of rounding, as every point goes to a
    # slot with a fraction, before any slot whose fraction is 0.
    in_use = np.flatnonzero((ids >= 0).any(axis=1))
    used = int(in_use[-1]) + 1 if len(in_use) else 0
    ids = np.ascontiguousarray(ids[:used], dtype=np.int64)
    weights = np.where(ids >= 0, np.asarray(skin.weights).T[:used].astype(np.float64), 0.0)
    if not columns_falling(weights):  # (the Blender reader's are: largest first)
        order = np.argsort(-weights, axis=0, kind="stable")
        ids = np.take_along_axis(ids, order, axis=0)
        weights = np.take_along_axis(weights, order, axis=0)
    over = (weights[MAX_INFLUENCES:] > 0).any(axis=0) if len(weights) > MAX_INFLUENCES else None
    lost = int(over.sum()) if over is not None else 0
    if lost and options.too_many_influences == "ERROR":
        raise ExportError(
            f"object '{obj.name}': {lost:,} {_plural(lost, 'vertex has', 'vertices have')} more than "
            f"{MAX_INFLUENCES} joint influences, which "
            "MilkShape 3D cannot hold (limit them, or let the export drop the smallest)"
        )
    ids, weights = ids[:MAX_INFLUENCES], weights[:MAX_INFLUENCES]
    total = weights.sum(axis=0)  # (slot after slot, as a row's sum adds them)
    weighted = total > 0
    scale = np.divide(100.0, total, out=np.zeros_like(total), where=weighted)
    percent = weights * scale
    if not weighted.all():
        percent = np.where(weighted, percent, 0.0)
    whole = np.floor(percent)
    short = np.where(weighted, 100 - whole.sum(axis=0), 0).astype(np.int64)
    # Largest remainder: the ``short`` slots with the biggest fractions get one more.
    whole += _stable_rank(whole - percent) < short
    np.putmask(ids, whole <= 0, -1)
    np.putmask(whole, ids < 0, 0.0)
    # Keep slots in falling order after rounding (a slot rounded to 0 leaves the list).
    if not columns_falling(whole):
        order = np.argsort(-whole, axis=0, kind="stable")
        ids, whole = np.take_along_axis(ids, order, axis=0), np.take_along_axis(whole, order, axis=0)
    whole = whole.astype(np.uint8)
    if len(ids) < MAX_INFLUENCES:  # (the slots left out: unused)
        pad = MAX_INFLUENCES - len(ids)
        ids = np.pad(ids, ((0, pad), (0, 0)), constant_values=-1)
        whole = np.pad(whole, ((0, pad), (0, 0)))
    vertices["bone_id"] = np.where(ids[0] >= 0, ids[0], 255).astype(np.uint8)
    single = (whole[0] == 100) | (ids[0] < 0)
    # All zero: 100 % on the primary joint, as MilkShape 1.8 writes it.
    extra.weights[rows] = np.where(single, 0, whole[:3]).T
    extra.bone_ids[rows] = np.where(single, -1, ids[1:]).T.astype(np.int16)
    return lost


def _stable_rank(keys: np.ndarray) -> np.ndarray:
    """Each entry's place among its vertex's slots (``keys``: slots, vertices) sorted ascending, equal ones in slot
    order (NaN last): a double stable ``argsort``, as one comparison per pair of slots (a fraction of its time)."""
    keys = np.where(np.isnan(keys), np.inf, keys)  # (keys are in (-1, 0] or NaN)
    rank = np.zeros(keys.shape, dtype=np.int64)
    for i in range(len(keys)):
        for j in range(i + 1, len(keys)):
            j_first = keys[j] < keys[i]  # (equal: i, the earlier slot, first)
            rank[i] += j_first
            rank[j] += ~j_first
    return rank


def _joints(scene: SceneData, axes: np.ndarray, scale: float, turn: np.ndarray) -> tuple[list[Ms3dJoint], np.ndarray]:
    """Joints from the skeleton's rest matrices, and each joint's X (the turn from its axes to its bone's)."""
    skeleton = scene.skeleton
    if skeleton is None or not skeleton.bones:
        return [], np.zeros((0, 3, 3))
    bones = skeleton.bones
    check_limit(len(bones), MAX_JOINTS, "joints")
    count = len(bones)
    rest = np.array([b.matrix for b in bones], dtype=np.float64)
    rest[:, :3, :] = np.einsum("ij,njk->nik", turn, rest[:, :3, :])
    q = _orthonormal(rest[:, :3, :3])
    heads = rest[:, :3, 3] @ axes / scale  # t = Cᵀ·h / scale (row vectors)
    parent = np.array([b.parent for b in bones], dtype=np.int64)
    # A new bone's joint comes from its own rest frame; only a bone our import made (its stored values) depends on
    # its parent's, so those are settled one by one, parents first, and the others together.
    r_fresh = axes.T @ q @ JOINT_AXIS_TO_BONE.T
    stored_world = compose(r_fresh, heads)
    x = np.swapaxes(axes @ r_fresh, 1, 2) @ q
    local_rot = np.empty((count, 3))
    local_pos = np.empty((count, 3))
    fresh = np.ones(count, dtype=bool)
    for j, bone in enumerate(bones):  # parents first (SkeletonData's order); a bone, not a vertex or key
        stored = _stored_local(bone.props)
        if stored is None:
            continue
        rotation, position = stored
        g_parent = stored_world[parent[j]] if parent[j] >= 0 else np.eye(4)
        candidate = g_parent @ compose(euler_xyz_to_matrix(rotation), position)
        tolerance = 1e-4 * max(1.0, float(np.abs(heads[j]).max()))
        if np.abs(candidate[:3, 3] - heads[j]).max() <= tolerance:
            local_rot[j], local_pos[j] = rotation, position  # the import's own values, unchanged
            stored_world[j] = candidate
            x[j] = (axes @ candidate[:3, :3].copy()).T @ q[j]
            fresh[j] = False
    g_parent = np.where((parent >= 0)[:, None, None], stored_world[parent], np.eye(4))[fresh]
    local = np.linalg.inv(g_parent) @ stored_world[fresh]
    local_rot[fresh] = matrix_to_euler_xyz(local[:, :3, :3])
    local_pos[fresh] = local[:, :3, 3]
    names = [str(b.props.get("ms3d_name", b.name)) for b in bones]
    joints = []
    empty = np.zeros(0, dtype=structs.KEY)
    for j, bone in enumerate(bones):
        color = np.asarray(bone.color, dtype=np.float32) if bone.color is not None else None
        stored_color = bone.props.get("ms3d_color")
        if stored_color is not None and (
            color is None or np.abs(np.clip(stored_color, 0.0, 1.0) - color).max() <= 1.0 / 255.0
        ):
            color = np.asarray(stored_color, dtype=np.float32)  # Blender keeps bone colours as bytes
        joints.append(
            Ms3dJoint(
                name=names[j],
                parent_name=names[parent[j]] if parent[j] >= 0 else str(bone.props.get("ms3d_missing_parent", "")),
                flags=int(bone.props.get("ms3d_flags", DEFAULT_JOINT_FLAGS)),
                rotation=local_rot[j].astype(np.float32),
                position=local_pos[j].astype(np.float32),
                rotation_keys=empty,
                position_keys=empty,
                comment=bone.props.get("ms3d_comment"),
                color=color,
            )
        )
    return joints, x


def _stored_local(props: dict) -> tuple[np.ndarray, np.ndarray] | None:
    rotation, position = props.get("ms3d_rotation"), props.get("ms3d_position")
    if rotation is None or position is None:
        return None
    return np.asarray(rotation, dtype=np.float32).astype(np.float64), np.asarray(position, np.float32).astype(
        np.float64
    )


def _orthonormal(m: np.ndarray) -> np.ndarray:
    """The nearest rotations (a scaled armature's bones carry its scale)."""
    u, _, vt = np.linalg.svd(m)
    r = u @ vt
    flip = np.linalg.det(r) < 0
    u[flip, :, -1] *= -1
    return u @ vt


def _fps(scene: SceneData) -> float:
    fps = scene.fps if scene.fps else scene.props.get("ms3d_fps", 24.0)
    stored = scene.props.get("ms3d_fps")
    if stored is not None and abs(float(stored) - float(fps)) < 1e-6 * max(1.0, float(fps)):
        return float(stored)
    return float(fps)


def _clips(scene: SceneData) -> list[ClipData]:
    """The clips to list: the scene's, and each action as one when several are exported one after another."""
    return list(scene.clips)


def _key_joints(
    scene: SceneData, joints: list[Ms3dJoint], x: np.ndarray, fps: float, scale: float, clips: list[ClipData]
) -> None:
    """Every action's keys into the joints' channels, actions laid one after another on the timeline."""
    if not joints or not scene.actions:
        return
    rate = 1.0 / fps if fps > 0 else 1.0
    rot_parts: list[list[np.ndarray]] = [[] for _ in joints]
    pos_parts: list[list[np.ndarray]] = [[] for _ in joints]
    offset = 0.0
    several = len(scene.actions) > 1
    for action in scene.actions:
        start, end = action.frame_range
        shift = offset - start + 1.0 if several else 0.0  # each action starts on the frame after the last
        _action_keys(action, x, scale, shift, rate, rot_parts, pos_parts, [j.name for j in joints])
        if several:
            clips.append(ClipData(action.name, start + shift, end + shift, bool(action.props.get("loop", False))))
            offset = end + shift
    for joint, rot, pos in zip(joints, rot_parts, pos_parts, strict=True):
        joint.rotation_keys = np.concatenate(rot) if rot else np.zeros(0, dtype=structs.KEY)
        joint.position_keys = np.concatenate(pos) if pos else np.zeros(0, dtype=structs.KEY)


def _action_keys(
    action: ActionData,
    x: np.ndarray,
    scale: float,
    shift: float,
    rate: float,
    rot_parts: list[list[np.ndarray]],
    pos_parts: list[list[np.ndarray]],
    names: list[str],
) -> None:
    """One action's channels, all keys of a kind converted in one numpy pass; a key that is not a finite number
    (a NaN or infinite value or frame) is refused, naming the action and bone."""
    channels = [c for c in action.channels if 0 <= c.bone < len(x)]
    if not channels:
        return
    rot_counts = [len(c.rotation_frames) for c in channels]
    if sum(rot_counts):
        bone = np.repeat([c.bone for c in channels], rot_counts)
        quats = np.concatenate([np.reshape(c.rotations, (-1, 4)) for c in channels]).astype(np.float64)
        quats /= np.sqrt(np.einsum("ij,ij->i", quats, quats))[:, None]
        turn = matrix_to_quaternion(x)[bone]  # X as a quaternion: X·B·Xᵀ is turn·b·turn⁻¹
        key_rotations = _hamilton(_hamilton(turn, quats), conjugate(turn))
        keys = np.empty(len(bone), dtype=structs.KEY)
        keys["time"] = (np.concatenate([c.rotation_frames for c in channels]) + shift) * rate
        keys["value"] = quaternion_to_euler_xyz(key_rotations)
        _check_keys(keys, bone, action.name, "rotation", names)
        for c, part in zip(channels, np.split(keys, np.cumsum(rot_counts)[:-1]), strict=True):
            if len(part):
                rot_parts[c.bone].append(part)
    pos_counts = [len(c.location_frames) for c in channels]
    if sum(pos_counts):
        bone = np.repeat([c.bone for c in channels], pos_counts)
        locations = np.concatenate([np.reshape(c.locations, (-1, 3)) for c in channels])
        keys = np.empty(len(bone), dtype=structs.KEY)
        keys["time"] = (np.concatenate([c.location_frames for c in channels]) + shift) * rate
        keys["value"] = (x[bone] @ locations[:, :, None])[:, :, 0] / scale  # X·l / scale
        _check_keys(keys, bone, action.name, "location", names)
        for c, part in zip(channels, np.split(keys, np.cumsum(pos_counts)[:-1]), strict=True):
            if len(part):
                pos_parts[c.bone].append(part)


def _check_keys(keys: np.ndarray, bone: np.ndarray, action: str, what: str, names: list[str]) -> None:
    # Every field is a float32: one sum over them all is finite exactly when each is (a float64 sum of float32
    # values cannot overflow), a pass over contiguous memory instead of masks over the record's strided fields
    if math.isfinite(float(keys.view(np.float32).sum(dtype=np.float64))):
        return
    bad = ~(np.isfinite(keys["time"]) & np.isfinite(keys["value"]).all(axis=1))
    if bad.any():
        first = int(np.argmax(bad))
        raise ExportError(
            f"action '{action}': {int(bad.sum()):,} {what} keys of bone '{names[bone[first]]}' and others are not "
            "finite numbers (NaN or infinity in the frame or the value); fix or delete those keys"
        )


def _hamilton(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """(N, 4) products ``a ⊗ b`` component by component: a long key list's in a few passes."""
    aw, ax, ay, az = a.T
    bw, bx, by, bz = b.T
    out = np.empty(np.broadcast_shapes(a.shape, b.shape))
    out[:, 0] = aw * bw - ax * bx - ay * by - az * bz
    out[:, 1] = aw * bx + ax * bw + ay * bz - az * by
    out[:, 2] = aw * by - ax * bz + ay * bw + az * bx
    out[:, 3] = aw * bz + ax * by - ay * bx + az * bw
    return out


def _total_frames(scene: SceneData, joints: list[Ms3dJoint], fps: float) -> int:
    stored = scene.props.get("ms3d_total_frames")
    if stored is not None:
        return int(stored)
    last = 0.0
    for joint in joints:
        for keys in (joint.rotation_keys, joint.position_keys):
            if len(keys):
                last = max(last, float(keys["time"].max()) * fps)
    if scene.frame_range is not None:
        last = max(last, float(scene.frame_range[1]))
    frames = math.ceil(last) if math.isfinite(last) else 0
    if frames > 2**31 - 1:
        raise ExportError(f"the animation ends at frame {last:.6g}; MilkShape 3D counts frames in 32 bits")
    return frames


def _model_comment(scene: SceneData, clips: list[ClipData]) -> str | None:
    """The stored comment when it still lists the clips the scene has, else the clips in the importer's format."""
    stored = scene.props.get("ms3d_model_comment")
    if not clips:
        return stored
    if stored is not None and _same_clips(parse_clips(stored), clips):
        return stored
    lines = [f"Name={c.name}, Start={_number(c.start)}, End={_number(c.end)}, Loop={c.loop}" for c in clips]
    return "\r\n".join(lines)


def _same_clips(a: list[ClipData], b: list[ClipData]) -> bool:
    return len(a) == len(b) and all(
        (p.name, p.loop) == (q.name, q.loop) and abs(p.start - q.start) < 1e-6 and abs(p.end - q.end) < 1e-6
        for p, q in zip(a, b, strict=True)
    )


def _number(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else f"{value:g}"


def _joint_size(scene: SceneData, scale: float) -> float:
    if scene.skeleton is None or not scene.skeleton.bones:
        return 1.0
    return float(np.median([b.length for b in scene.skeleton.bones])) / scale


def _materials(scene: SceneData, refuse: bool) -> tuple[list[Ms3dMaterial], dict[int, int]]:
    """The materials some triangle uses, in scene order; ``{scene index: model index}``; ``refuse``: past the
    limit is an :class:`ExportError`."""
    first_use: dict[int, int] = {}
    for o in scene.objects:
        for s in _used_slots(o):
            if s is not None:
                first_use.setdefault(s, len(first_use))
    used = sorted(first_use, key=lambda s: (scene.materials[s].props.get("ms3d_material_index", 1 << 30), first_use[s]))
    if refuse:
        check_limit(len(used), MAX_MATERIALS, "materials")
    out, index = [], {}
    for si in used:
        index[si] = len(out)
        out.append(_material(scene.materials[si]))
    return out, index


def _used_slots(obj: ObjectData) -> list[int | None]:
    mesh = obj.mesh
    if not len(mesh.triangles) or not mesh.materials:
        return []
    slots = np.unique(mesh.material_indices) if mesh.material_indices is not None else np.zeros(1, np.int64)
    return [mesh.materials[s] for s in slots.tolist() if 0 <= s < len(mesh.materials)]


def shininess_from_roughness(roughness: float) -> float:
    """The inverse of the import's ``roughness = (2 / (n + 2)) ** 0.25``, inside MilkShape's 0..128."""
    r = min(max(float(roughness), 1e-3), 1.0)
    return float(min(max(2.0 / r**4 - 2.0, 0.0), 128.0))


def _material(data: MaterialData) -> Ms3dMaterial:
    props = data.props
    alpha = float(data.alpha)
    diffuse = np.array([*data.base_color, alpha], dtype=np.float32)
    specular = np.array([*(2.0 * data.specular_level * np.asarray(data.specular_tint)), 1.0], dtype=np.float32)
    emissive = np.array([*(np.asarray(data.emission_color) * data.emission_strength), 1.0], dtype=np.float32)
    ambient = np.array(props.get("ms3d_ambient", (0.2, 0.2, 0.2, 1.0)), dtype=np.float32)
    shininess = shininess_from_roughness(data.roughness)
    stored_shininess = props.get("ms3d_shininess")
    if stored_shininess is not None and abs(shininess_roughness(stored_shininess) - data.roughness) < 1e-4:
        shininess = float(stored_shininess)
    diffuse = _kept(props.get("ms3d_diffuse"), diffuse, 1.0)
    specular = _kept(props.get("ms3d_specular"), specular, 1.0)
    emissive = _kept(props.get("ms3d_emissive"), emissive, np.inf)
    transparency = alpha
    stored_transparency = props.get("ms3d_transparency")
    if stored_transparency is not None and abs(min(max(stored_transparency, 0.0), 1.0) - alpha) < 1e-6:
        transparency = float(stored_transparency)
    mode = int(props.get("ms3d_mode", 0x40 if data.use_texture_alpha else 0))
    texture = _texture_path(data.base_texture, props.get("ms3d_texture"))
    alphamap = _texture_path(data.alpha_texture, props.get("ms3d_alphamap"))
    for what, path in (("texture", texture), ("alpha map", alphamap)):
        if len(encode_text(path)) > structs.PATH_SIZE:
            raise ExportError(
                f"material '{data.name}': its {what} path '{path}' is longer than MilkShape's {structs.PATH_SIZE} bytes"
            )
    return Ms3dMaterial(
        name=data.name,
        ambient=ambient,
        diffuse=diffuse,
        specular=specular,
        emissive=emissive,
        shininess=shininess,
        transparency=transparency,
        mode=mode,
        texture=texture,
        alphamap=alphamap,
        comment=props.get("ms3d_comment"),
    )


def shininess_roughness(shininess: float) -> float:
    n = min(max(float(shininess), 0.0), 128.0)
    return float(np.sqrt(np.sqrt(2.0 / (n + 2.0))))


def _kept(stored, derived: np.ndarray, high: float) -> np.ndarray:
    """The colour the import stored, when what the scene holds is still what the import made of it (its RGB
    clipped to 0..``high``); else the scene's."""
    if stored is None or len(stored) != 4:
        return derived
    stored = np.asarray(stored, dtype=np.float32)
    if np.abs(np.clip(stored[:3], 0.0, high) - derived[:3]).max() < 1e-4:
        return stored
    return derived


def _texture_path(image, stored: str | None) -> str:
    """The path the import read (when the material still shows that file), else the image's own."""
    if image is None:
        return ""
    raw = image.raw_path or ""
    if stored and _stem(stored) == _stem(raw):
        return stored
    return raw


def _stem(path: str) -> str:
    """A file's name without folder or extension, in lower case (the import may hold a decoded PCX as a PNG)."""
    name = path.replace("\\", "/").rsplit("/", 1)[-1].lower()
    return name.split(".", 1)[0] if "." in name else name
