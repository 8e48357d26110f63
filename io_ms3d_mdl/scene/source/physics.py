"""A ``.phy``'s collision solids as wireframe mesh objects in a hidden "physics" collection. No ``bpy``.

One object per solid, its convex pieces joined. A ragdoll's solids are stored in their bones' spaces (notes §1.14,
§6 item 21): each is moved by its bone's bind pose into model space and follows that bone. A prop's single solid
is in the model's space as its first animation poses it (the collision model is compiled in that pose: a cube whose
idle turns its root bone has a hull turned the same way); it is put back into the bind pose and follows the root
bone, so it sits exactly on the model again when that first frame plays. The text section's mass, surface, damping
and the joint limits of the ragdoll constraint that hangs the solid from its parent are kept as custom properties.
"""

from __future__ import annotations

import math
import os

import numpy as np

from ...budget import current_budget
from ...errors import BudgetExceeded, FormatError
from ...formats.binary import renumbered
from ...formats.source.animation import SkippedAnimation, decode_animation
from ...formats.source.model import MdlFile
from ...formats.source.phy import PhyFile, PhySolid
from ..rotations import compose, quaternion_to_matrix
from ..types import CollectionData, MeshData, ObjectData, SceneData
from .animation import SECTION_COST, section_count

CONSTRAINT_KEYS = ("xmin", "xmax", "xfriction", "ymin", "ymax", "yfriction", "zmin", "zmax", "zfriction")


def add_collision(
    scene: SceneData, mdl: MdlFile, ani: tuple[bytes, str] | None, phy: PhyFile, world: np.ndarray, scale: float
) -> None:
    """:func:`add_physics` for a model, where a problem of any kind with the ``.phy`` costs only the collision
    objects, with one warning (a work budget the file exceeds still stops the import: that is the user's call)."""
    objects, collections, warnings = len(scene.objects), len(scene.collections), len(scene.warnings)
    try:
        names = [b.name for b in scene.skeleton.bones] if scene.skeleton else []
        pose = first_pose(mdl, ani) if len(phy.solids) == 1 else None
        add_physics(scene, phy, world, names, mdl.bone_names, scale, mdl.checksum, pose)
    except BudgetExceeded:
        raise
    except Exception as exc:
        del scene.objects[objects:], scene.collections[collections:]
        scene.warnings.truncate(warnings)
        reason = exc.message if isinstance(exc, FormatError) else f"{type(exc).__name__}: {exc}"
        scene.warnings.add(f"the collision model was not imported: {reason}")


def add_physics(
    scene: SceneData,
    phy: PhyFile,
    world: np.ndarray,
    bone_names: list[str],
    file_bone_names: list[str],
    scale: float,
    checksum: int,
    prop_pose: np.ndarray | None = None,
) -> None:
    """``world``: each bone's bind pose in model space (Source units); ``bone_names``: the skeleton's names in
    Blender (empty when the model has no armature); ``file_bone_names``: the model's own names, to match solids;
    ``prop_pose``: the root bone's transform in the first frame of the first animation (see :func:`first_pose`)."""
    scene.warnings.extend(phy.warnings)
    if phy.checksum != checksum:
        scene.warnings.add(f"the physics file (.phy) checksum {phy.checksum} does not match the model's {checksum}")
    lookup = {name.lower(): i for i, name in reversed(list(enumerate(file_bone_names)))}
    collection = CollectionData(f"{scene.name} physics", hidden=True, props=_collection_props(phy), collision=True)
    budget = current_budget()
    vertices, triangles = scene.vertex_count, scene.triangle_count  # kept as running totals: thousands of solids
    keys_of = [phy.solid_keys(solid.index) for solid in phy.solids]
    names = [str(keys.get("name", "") or "") for keys in keys_of]
    bones = [_bone_of(s, n, lookup, len(world), len(phy.solids)) for s, n in zip(phy.solids, names, strict=True)]
    placements = np.array([world[b] if b >= 0 else np.eye(4) for b in bones], dtype=np.float64).reshape(-1, 4, 4)
    if len(phy.solids) == 1 and bones[0] == 0 and prop_pose is not None:
        placements[0] = world[0] @ _rigid_inverse(prop_pose)
    meshes = _solid_meshes(phy.solids, placements, scale, [n or f"solid {i}" for i, n in enumerate(names)])
    for solid, keys, name, bone, mesh in zip(phy.solids, keys_of, names, bones, meshes, strict=True):
        if mesh is None:
            scene.warnings.add(f"physics solid {solid.index} ('{name}') has no usable triangles; skipped")
            continue
        vertices, triangles = vertices + len(mesh.positions), triangles + len(mesh.triangles)
        budget.check(phy.path, "vertices over all objects", vertices, budget.vertices)
        budget.check(phy.path, "triangles over all objects", triangles, budget.triangles)
        obj = ObjectData(
            mesh.name,
            mesh,
            props=_solid_props(phy, solid, keys),
            bone=bone_names[bone] if 0 <= bone < len(bone_names) else None,
            display="WIRE",
            collision=True,
        )
        scene.objects.append(obj)
        collection.objects.append(len(scene.objects) - 1)
    scene.collections.append(collection)


def _rigid_inverse(pose: np.ndarray) -> np.ndarray:
    """The inverse of a rotation-and-translation 4×4 (``first_pose``'s, from a normalised quaternion), without
    LAPACK: its first call after Blender resets its settings costs milliseconds, more than a small prop's import."""
    out = np.eye(4)
    out[:3, :3] = pose[:3, :3].T
    out[:3, 3] = -pose[:3, :3].T @ pose[:3, 3]
    return out


def first_pose(mdl: MdlFile, ani: tuple[bytes, str] | None) -> np.ndarray | None:
    """The root bone's transform in frame 0 of the model's first animation, or None (no such animation, or one
    that cannot be decoded: the bind pose is used then)."""
    if not mdl.animations or not len(mdl.bones):
        return None
    anim = mdl.animations[0]
    if (
        max(anim.num_frames, 0) * len(mdl.bones) + SECTION_COST * (section_count(anim) - 1)
        > current_budget().animation_bone_frames
    ):
        return None  # more than one animation may cost: the bind pose will do
    try:
        decoded = decode_animation(mdl, 0, *(ani or (None, None)))
    except (FormatError, SkippedAnimation):
        return None
    if decoded.delta:
        return None
    return compose(quaternion_to_matrix(decoded.rotations[:1, 0]), decoded.positions[:1, 0])[0]


def _bone_of(solid: PhySolid, name: str, lookup: dict[str, int], bones: int, solids: int) -> int:
    """The solid's bone: by the text section's name (ragdolls name solids after bones), else the bone the pieces
    store, else the root (a prop's solid is in the model's root bone space)."""
    found = lookup.get(name.lower())
    if found is None and solids > 1 and 0 <= solid.bone < bones:
        found = solid.bone
    if found is None:
        found = 0
    return found if found < bones else -1


def _solid_meshes(
    solids: list[PhySolid], placements: np.ndarray, scale: float, names: list[str]
) -> list[MeshData | None]:
    """Each solid's pieces as one mesh placed by its matrix, all solids at once (a handful of numpy calls per
    solid cost more than their few dozen points). Pieces share their points in the file: equal points of a solid
    are merged so it is one connected mesh; two pieces touching along a face would give that face twice, and one
    is kept (Blender rejects duplicate faces). None for a solid with no usable triangle."""
    usable = [
        (s, piece)
        for s, solid in enumerate(solids)
        for piece in solid.pieces
        if len(piece.triangles) and np.isfinite(piece.points).all()
    ]
    out: list[MeshData | None] = [None] * len(solids)
    if not usable:
        return out
    solid_of = np.array([s for s, _ in usable])
    point_counts = [len(piece.points) for _, piece in usable]
    offsets = np.cumsum([0, *point_counts[:-1]]).tolist()
    point_owner = np.repeat(solid_of, point_counts)
    raw = np.concatenate([piece.points for _, piece in usable]).astype(np.float64)
    model = np.empty_like(raw)
    point_ends = np.cumsum(np.bincount(point_owner, minlength=len(solids))).tolist()
    for s, (start, end) in enumerate(zip([0, *point_ends[:-1]], point_ends, strict=True)):
        if end > start:  # one product per solid, as a solid alone would be placed (same bits, same point order)
            model[start:end] = raw[start:end] @ placements[s, :3, :3].T + placements[s, :3, 3]
    model += 0.0  # -0.0 becomes 0.0: rows are compared by their bytes
    # Rows of (solid, x, y, z) compared as bytes: equal points merge within a solid, never across solids, and each
    # solid's points stay together (sorted by their coordinates' bytes, as one solid alone would be).
    _, first, inverse = np.unique(
        _rows(np.c_[point_owner.astype(np.float64), model]), return_index=True, return_inverse=True
    )
    unique = model[first]
    triangles = inverse.reshape(-1)[
        np.concatenate([piece.triangles.astype(np.int64) + o for (_, piece), o in zip(usable, offsets, strict=True)])
    ]
    tri_owner = np.repeat(solid_of, [len(piece.triangles) for _, piece in usable])
    a, b, c = triangles.T
    solid = (a != b) & (b != c) & (a != c)
    triangles, tri_owner = triangles[solid], tri_owner[solid]
    _, first = np.unique(_rows(np.sort(triangles, axis=1)), return_index=True)
    keep = np.sort(first)
    triangles, tri_owner = triangles[keep], tri_owner[keep]
    if not len(triangles):
        return out
    used, compact = renumbered(triangles, len(unique))
    per_solid = np.bincount(tri_owner, minlength=len(solids))
    ends = np.cumsum(per_solid).tolist()
    for s, (count, end) in enumerate(zip(per_solid.tolist(), ends, strict=True)):
        if not count:
            continue
        local = compact[end - count : end]
        low, high = int(local.min()), int(local.max())  # a solid's vertices are one run of ``used``
        out[s] = MeshData(
            name=names[s],
            positions=np.ascontiguousarray(unique[used[low : high + 1]] * scale, dtype=np.float32),
            triangles=np.ascontiguousarray(local - low, dtype=np.int32),
        )
    return out


def _rows(array: np.ndarray) -> np.ndarray:
    """Each row as one opaque value, so ``np.unique`` compares whole rows (several times faster than ``axis=0``)."""
    array = np.ascontiguousarray(array)
    return array.view(np.dtype((np.void, array.dtype.itemsize * array.shape[1]))).ravel()


def _solid_props(phy: PhyFile, solid: PhySolid, keys: dict) -> dict:
    props: dict = {"source_phy_solid": solid.index, "source_phy_pieces": len(solid.pieces)}
    for key, value in keys.items():
        if isinstance(value, str) and key != "index":
            props[f"source_phy_{key}"] = _value(value)
    constraint = phy.constraint_of(solid.index)
    if constraint:
        parent = _number(constraint.get("parent"))
        if parent is not None:
            parent_name = phy.solid_keys(int(parent)).get("name")
            props["source_constraint_parent"] = str(parent_name) if isinstance(parent_name, str) else int(parent)
        for key in CONSTRAINT_KEYS:
            number = _number(constraint.get(key))
            if number is not None:
                props[f"source_constraint_{key}"] = number
    return props


def _collection_props(phy: PhyFile) -> dict:
    props: dict = {"source_phy_solids": phy.solid_count, "source_phy_checksum": phy.checksum}
    if phy.path:
        props["source_phy"] = os.path.basename(phy.path)
    for key, value in phy.block("editparams").items():
        if isinstance(value, str):
            props[f"source_phy_{key}"] = _value(value)
    pairs = phy.block("collisionrules").get("collisionpair")
    if pairs:
        props["source_phy_collisionpairs"] = [str(p) for p in (pairs if isinstance(pairs, list) else [pairs])][:4096]
    return props


def _number(value) -> float | None:
    if value is None:  # an absent key (most constraint keys): no exception to raise and catch
        return None
    try:
        number = float(str(value).strip())
    except ValueError:
        return None
    return number if math.isfinite(number) else None


def _value(text: str) -> float | str:
    if text[:1].isalpha():  # a word (a name, a surface): float() reads none but nan and inf, kept as text anyway
        return text[:1024]
    number = _number(text)
    return number if number is not None else text[:1024]
