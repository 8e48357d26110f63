"""Blender Source Tools (GPL, never part of the project) as the independent reader of what the decompiler writes.

``scripts/oracle_bst.py`` puts its add-on in the per-user cache; :func:`require_bst` finds it there (or where
``IO_MS3D_MDL_BST`` points) and skips with the way to set it up when it is absent (``IO_MS3D_MDL_REQUIRE_BST=1``
makes that a failure, for CI). Everything here runs inside the bpy wheel.

The space both sides are compared in: Source's own. Blender Source Tools builds a QC with ``upAxis`` Z (its default;
our QCs write no ``$upaxis``), so its up-axis matrix is the identity and one Source unit is one Blender unit; its
armature's bones are the SMD's frames exactly (it poses the reference frame and applies it as the rest pose). Our
import is asked for the same: ``units='SOURCE'`` (scale 1), Source's forward and up (the default), and
``bone_orientation='SOURCE'`` (each bone's Source axes), so every matrix on both sides is the same quantity: a bone's
frame in model space, at rest and per frame. Meshes are compared per triangle corner in world space (position,
normal, UV, weights by bone name), order-free; shape keys per corner too.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pytest
from conftest import script_module

_registered: dict[str, object] = {}


def _setup_script():
    return script_module("oracle_bst")


def bst_folder() -> Path | None:
    """The folder holding ``io_scene_valvesource``: ``$IO_MS3D_MDL_BST`` (that folder, or the add-on folder itself),
    else the pinned commit's copy in the cache, else any copy there."""
    given = os.environ.get("IO_MS3D_MDL_BST")
    if given:
        path = Path(given)
        if (path / "io_scene_valvesource" / "__init__.py").is_file():
            return path
        if path.name == "io_scene_valvesource" and (path / "__init__.py").is_file():
            return path.parent
        return None
    pinned = _setup_script().target()
    if (pinned / "io_scene_valvesource" / "__init__.py").is_file():
        return pinned
    found = sorted(pinned.parent.glob("BlenderSourceTools-*/io_scene_valvesource/__init__.py"))
    return found[-1].parents[1] if found else None


def missing_bst() -> str:
    """Why Blender Source Tools is not there, and how to set it up."""
    where = os.environ.get("IO_MS3D_MDL_BST") or _setup_script().target()
    return (
        f"Blender Source Tools not found at {where}: run `python scripts/oracle_bst.py` (network) or "
        "`python scripts/oracle_bst.py PATH_TO_A_CLONE`, or set IO_MS3D_MDL_BST"
    )


def optional_bst() -> Path | None:
    """Its folder, or None when it is not set up (the caller leaves out what needs it and says so); a failure
    instead where it must be there (``IO_MS3D_MDL_REQUIRE_BST=1``, CI)."""
    folder = bst_folder()
    if folder is None and os.environ.get("IO_MS3D_MDL_REQUIRE_BST"):
        pytest.fail(missing_bst())
    return folder


def require_bst() -> Path:
    folder = optional_bst()
    if folder is None:
        pytest.skip(missing_bst())
    return folder


def enable_bst(folder: Path):
    """Import and register the add-on once per session (its classes survive factory resets)."""
    if "module" in _registered:
        return _registered["module"]
    if str(folder) not in sys.path:
        sys.path.insert(0, str(folder))
    import io_scene_valvesource

    io_scene_valvesource.register()
    _registered["module"] = io_scene_valvesource
    return io_scene_valvesource


# --- what a scene holds, as arrays ----------------------------------------------------------------------------


@dataclass
class Triangles:
    """Triangle corners in world space: (T, 3, 3) positions and normals, (T, 3, 2) UVs, per corner {bone: weight},
    material names, and per shape key name (T, 3, 3) positions."""

    positions: np.ndarray
    normals: np.ndarray
    uvs: np.ndarray
    weights: list[list[dict[str, float]]]
    materials: list[str]
    shapes: dict[str, np.ndarray] = field(default_factory=dict)


def triangles(objects) -> Triangles:
    """Every triangle of these mesh objects (their own data, undeformed, placed by their world matrices)."""
    parts = []
    for obj in objects:
        mesh = obj.data
        mesh.calc_loop_triangles()
        count = len(mesh.loop_triangles)
        if not count:
            continue
        loops = np.empty(count * 3, dtype=np.int64)
        mesh.loop_triangles.foreach_get("loops", loops)
        verts = np.empty(count * 3, dtype=np.int64)
        mesh.loop_triangles.foreach_get("vertices", verts)
        matrix = np.array(obj.matrix_world)
        co = np.empty(len(mesh.vertices) * 3)
        mesh.vertices.foreach_get("co", co)
        co = co.reshape(-1, 3) @ matrix[:3, :3].T + matrix[:3, 3]
        normals = np.array([tuple(n.vector) for n in mesh.corner_normals]).reshape(-1, 3) @ matrix[:3, :3].T
        normals /= np.maximum(np.linalg.norm(normals, axis=1, keepdims=True), 1e-12)
        uv = np.zeros((len(mesh.loops), 2))
        if mesh.uv_layers.active is not None:
            flat = np.empty(len(mesh.loops) * 2)
            mesh.uv_layers.active.data.foreach_get("uv", flat)
            uv = flat.reshape(-1, 2)
        groups = {g.index: g.name for g in obj.vertex_groups}
        per_vertex = [{groups[g.group]: g.weight for g in v.groups if g.weight > 0} for v in mesh.vertices]
        polys = np.empty(count, dtype=np.int64)
        mesh.loop_triangles.foreach_get("polygon_index", polys)
        slots = np.empty(len(mesh.polygons), dtype=np.int64)
        mesh.polygons.foreach_get("material_index", slots)
        names = [(s.material.name if s.material else "") for s in obj.material_slots] or [""]
        shapes = {}
        if mesh.shape_keys is not None:
            for key in mesh.shape_keys.key_blocks[1:]:
                flat = np.empty(len(mesh.vertices) * 3)
                key.data.foreach_get("co", flat)
                shapes[key.name] = (flat.reshape(-1, 3) @ matrix[:3, :3].T + matrix[:3, 3])[verts].reshape(-1, 3, 3)
        parts.append(
            (
                co[verts].reshape(-1, 3, 3),
                normals[loops].reshape(-1, 3, 3),
                uv[loops].reshape(-1, 3, 2),
                [[normalized(per_vertex[v]) for v in tri] for tri in verts.reshape(-1, 3).tolist()],
                [names[min(slots[p], len(names) - 1)] for p in polys.tolist()],
                shapes,
            )
        )
    if not parts:
        return Triangles(np.zeros((0, 3, 3)), np.zeros((0, 3, 3)), np.zeros((0, 3, 2)), [], [])
    all_shapes: dict[str, np.ndarray] = {}
    for name in {n for part in parts for n in part[5]}:  # a key missing on a mesh is its basis there
        all_shapes[name] = np.concatenate([part[5].get(name, part[0]) for part in parts])
    return Triangles(
        np.concatenate([p[0] for p in parts]),
        np.concatenate([p[1] for p in parts]),
        np.concatenate([p[2] for p in parts]),
        [w for p in parts for w in p[3]],
        [m for p in parts for m in p[4]],
        all_shapes,
    )


def normalized(weights: dict[str, float]) -> dict[str, float]:
    total = sum(weights.values())
    return {k: v / total for k, v in weights.items()} if total > 0 else {}


def rest_matrices(armature) -> dict[str, np.ndarray]:
    """Each bone's rest frame in world space."""
    world = np.array(armature.matrix_world)
    return {bone.name: world @ np.array(bone.matrix_local) for bone in armature.data.bones}


def pose_matrices(armature, frames: list[float]) -> dict[str, np.ndarray]:
    """Each bone's posed frame in world space at each of ``frames``: (F, 4, 4) per bone name."""
    import bpy

    scene = bpy.context.scene
    world = np.array(armature.matrix_world)
    names = [b.name for b in armature.pose.bones]
    out = np.empty((len(frames), len(names), 4, 4))
    flat = np.empty(len(names) * 16, dtype=np.float32)
    for i, frame in enumerate(frames):
        whole = int(np.floor(frame))
        scene.frame_set(whole, subframe=float(frame - whole))
        armature.pose.bones.foreach_get("matrix", flat)
        out[i] = world @ flat.reshape(-1, 4, 4).transpose(0, 2, 1)
    return {name: out[:, k] for k, name in enumerate(names)}


# --- Blender Source Tools' side -------------------------------------------------------------------------------


@dataclass
class BstModel:
    armature: object | None
    meshes: dict[str, object]  # by SMD/VTA file stem
    animations: dict[str, object]  # SMD stem -> activate(): makes that animation the armature's
    messages: list[str] = field(default_factory=list)


def import_qc(qc: Path, skeleton: Path | None = None, rot_mode: str = "XYZ") -> BstModel:
    """Blender Source Tools' QC import of ``qc`` (and every SMD/VTA it names) into the current scene. Its QC import
    makes an armature only from a reference mesh: for an animation-only QC, ``skeleton`` (one of its animation
    SMDs) is imported first, which makes the armature from its nodes and first frame, and the QC's animations are
    then read onto that armature (the active object), as a user would do it. ``rot_mode``: its importer's rotation
    keys, Euler (``XYZ``, its default) or ``QUATERNION``."""
    import bpy

    enable_bst(require_bst())
    before = set(bpy.data.objects)
    actions_before = set(bpy.data.actions)
    if skeleton is not None:
        if bpy.ops.import_scene.smd(filepath=str(skeleton), boneMode="NONE", rotMode=rot_mode) != {"FINISHED"}:
            raise AssertionError(f"Blender Source Tools could not import {skeleton}")
        made = next(o for o in bpy.data.objects if o not in before and o.type == "ARMATURE")
        bpy.context.view_layer.objects.active = made
        made.select_set(True)
    result = bpy.ops.import_scene.smd(filepath=str(qc), boneMode="NONE", doAnim=True, rotMode=rot_mode)
    if result != {"FINISHED"}:
        raise AssertionError(f"Blender Source Tools could not import {qc}: {result}")
    new = [o for o in bpy.data.objects if o not in before]
    armatures = [o for o in new if o.type == "ARMATURE"]
    meshes = {o.name: o for o in new if o.type == "MESH"}
    armature = armatures[0] if armatures else None
    return BstModel(armature, meshes, _bst_animations(armature, set(bpy.data.actions) - actions_before))


def _bst_animations(armature, actions) -> dict[str, object]:
    """With action slots (Blender 4.4+) BST puts every SMD in one action, one slot each named after the file;
    before, one action per SMD named after it."""
    found: dict[str, object] = {}
    if armature is None:
        return found
    anim = armature.animation_data
    for action in actions:
        slots = list(getattr(action, "slots", []))
        if slots and hasattr(anim, "action_slot"):
            for slot in slots:

                def use(action=action, slot=slot):
                    anim.action = action
                    anim.action_slot = slot

                found[slot.name_display] = use
        else:

            def use(action=action):
                anim.action = action

            found[action.name] = use
    return found


def bst_frames(armature) -> list[float]:
    """The frames of the active BST animation: 0 .. its last key."""
    anim = armature.animation_data
    action = anim.action
    keys = []
    if hasattr(anim, "action_slot") and anim.action_slot is not None and action.layers:
        bag = action.layers[0].strips[0].channelbag(anim.action_slot)
        curves = bag.fcurves if bag else []
    else:
        curves = action.fcurves
    for curve in curves:
        keys.extend(k.co.x for k in curve.keyframe_points)
    return [float(f) for f in range(int(min(keys)), round(max(keys)) + 1)] if keys else [0.0]


# --- comparing ------------------------------------------------------------------------------------------------


def match_triangles(
    ours: Triangles, theirs: Triangles, tolerance: float, uv_tolerance: float = 1e-4
) -> tuple[np.ndarray, np.ndarray]:
    """For each of our triangles, the index of the equal triangle of theirs and the rotation of its corners (winding
    kept), order-free; raises when a triangle has no partner within ``tolerance`` or the counts differ."""
    from mathutils.kdtree import KDTree

    if len(ours.positions) != len(theirs.positions):
        raise AssertionError(f"{len(ours.positions)} triangles here, {len(theirs.positions)} there")
    centres = theirs.positions.mean(axis=1)
    tree = KDTree(len(centres))
    for i, c in enumerate(centres.tolist()):
        tree.insert(c, i)
    tree.balance()
    used = np.zeros(len(centres), bool)
    partner = np.empty(len(ours.positions), dtype=np.int64)
    rotation = np.empty(len(ours.positions), dtype=np.int64)
    for i, tri in enumerate(ours.positions):
        best = None
        for _, j, _ in tree.find_range(tri.mean(axis=0).tolist(), tolerance * 3):
            if used[j]:
                continue
            for r in range(3):
                error = np.abs(np.roll(theirs.positions[j], -r, axis=0) - tri).max()
                uv_error = np.abs(np.roll(theirs.uvs[j], -r, axis=0) - ours.uvs[i]).max()
                if error <= tolerance and uv_error <= uv_tolerance and (best is None or error < best[0]):
                    best = (error, j, r)
        if best is None:
            j = int(np.linalg.norm(centres - tri.mean(axis=0), axis=1).argmin())
            nearest = min(
                (
                    np.abs(np.roll(theirs.positions[j], -r, axis=0) - tri).max(),
                    np.abs(np.roll(theirs.uvs[j], -r, axis=0) - ours.uvs[i]).max(),
                )
                for r in range(3)
            )
            raise AssertionError(
                f"our triangle {i} ({ours.materials[i]}) has no equal there: the nearest is {nearest[0]:.3g} units "
                f"away (tolerance {tolerance:.3g}), its UVs {nearest[1]:.3g} apart ({len(ours.positions)} triangles)"
            )
        used[best[1]] = True
        partner[i], rotation[i] = best[1], best[2]
    return partner, rotation


def compare_meshes(ours: Triangles, theirs: Triangles, size: float, uv_tolerance: float = 1e-4) -> None:
    """Positions within 1e-5 of the model's size, normals within 1e-2 (Blender stores custom normals quantised, in
    each corner's own normal space: up to about 5e-3 apart for the same normal in two meshes), UVs within
    ``uv_tolerance`` (1e-4),
    weights within 1e-3 by bone name, material names, and every shape key's corners within 1e-5 of the size."""
    tolerance = 1e-5 * size
    partner, rotation = match_triangles(ours, theirs, tolerance, uv_tolerance)
    corners = (np.arange(3)[None, :] + rotation[:, None]) % 3
    normals = theirs.normals[partner[:, None], corners]
    worst = np.abs(normals - ours.normals).max(initial=0)
    assert worst <= 1e-2, f"normals differ by {worst}"
    for i, j in enumerate(partner.tolist()):
        assert ours.materials[i] == theirs.materials[j], f"triangle {i}: {ours.materials[i]} vs {theirs.materials[j]}"
        for k in range(3):
            a, b = ours.weights[i][k], theirs.weights[j][corners[i, k]]
            if set(a) != set(b) or any(abs(a[n] - b[n]) > 1e-3 for n in a):
                raise AssertionError(f"triangle {i} corner {k}: weights {a} vs {b}")
    assert set(ours.shapes) == set(theirs.shapes), f"shape keys {sorted(ours.shapes)} vs {sorted(theirs.shapes)}"
    for name, ours_shape in ours.shapes.items():
        theirs_shape = theirs.shapes[name][partner[:, None], corners]
        worst = np.abs(theirs_shape - ours_shape).max(initial=0)
        assert worst <= tolerance, f"shape key {name!r} differs by {worst}"


REST_TURN = 5e-4  # Blender keeps a bone's rest as head, tail and roll (float32): a bone along ±Z loses ~1e-4 there


def compare_rest(ours: dict[str, np.ndarray], theirs: dict[str, np.ndarray], size: float) -> None:
    """Heads within 1e-5 of the model's size; rotations within REST_TURN (both sides' bones went through Blender's
    head/tail/roll, whose roll is ill-conditioned for bones along ±Z)."""
    assert set(ours) == set(theirs), f"bones {sorted(set(ours) ^ set(theirs))} are on one side only"
    for name, matrix in ours.items():
        other = theirs[name]
        moved = np.abs(matrix[:3, 3] - other[:3, 3]).max()
        turned = np.abs(matrix[:3, :3] - other[:3, :3]).max()
        assert moved <= 1e-5 * size and turned <= REST_TURN, (
            f"bone {name}: rest differs by {moved} (size {size}), {turned} in rotation"
        )


def compare_poses(ours: dict[str, np.ndarray], theirs: dict[str, np.ndarray], size: float, what: str) -> None:
    """Every frame of every bone: positions within 1e-4 of the model's size, rotations within REST_TURN (a posed
    frame is built on the rest frame, with its head/tail/roll precision)."""
    for name, frames in ours.items():
        other = theirs[name]
        moved = np.abs(frames[:, :3, 3] - other[:, :3, 3]).max(axis=1)
        turned = np.abs(frames[:, :3, :3] - other[:, :3, :3]).max(axis=(1, 2))
        bad = np.flatnonzero((moved > 1e-4 * max(size, 1.0)) | (turned > REST_TURN))
        if len(bad):
            f = int(bad[0])
            raise AssertionError(
                f"{what}: bone {name} frame {f} differs by {moved[f]:.3g} units, {turned[f]:.3g} in rotation "
                f"({len(bad)} frames differ)"
            )
