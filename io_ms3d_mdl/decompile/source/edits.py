"""What an export from Blender replaces in a Source decompile: the reference meshes, the body-part options and the
materials' names, read from the Blender objects (``blender/source_export.py``); everything else still comes from
the original file, through the same code as a plain decompile.

Blender stores some values more coarsely than the file (custom normals are quantised; positions are float32 after
the import's scale and axes): a value Blender gives back equal to the file's within that storage precision is the
file's value, so an unedited model writes the decompiler's bytes, and an edited one keeps every untouched vertex.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ...scene.ms3d.export import ExportError
from ...scene.types import ActionData, MeshData, ObjectData, SkinData

POSITION_TOLERANCE = 1e-5  # relative to the coordinate's size (float32 after scale and axes: ~1e-7)
NORMAL_TOLERANCE = 1e-2  # custom normals: quantised, and blended by Blender where it cannot keep them (~0.5°)
UV_TOLERANCE = 1e-6
WEIGHT_TOLERANCE = 1e-6


@dataclass
class SourceEdits:
    """The Blender side of a Source export, in Source units and axes (before a static prop's turn)."""

    # (body part, option, level of detail) -> the object, its slots' material names: every reference mesh there is
    # (an option of the file without an entry is written blank)
    meshes: dict[tuple[int, int, int], tuple[ObjectData, list[str]]] = field(default_factory=dict)
    # per body part, its options' names (an option past the file's own is added to the $bodygroup)
    options: list[list[str]] = field(default_factory=list)
    renamed: dict[str, str] = field(default_factory=dict)  # the file's texture name -> the Blender material's name
    # the skin families as Blender holds them (per family, per skin-table column, the material's name as the SMDs
    # name it), None when they are the file's
    skins: list[list[str]] | None = None
    bones: list[str] = field(default_factory=list)  # the skins' bone indices: these bones, by their file names
    # the file's bones the user deleted in Blender (their weights are read too: ``bones`` ends with them)
    deleted: list[str] = field(default_factory=list)
    # the file's bones the user renamed in Blender: file name -> the new name, which ``bones``, ``rig`` and the
    # written files give it (``renamed_bones``); those matched by rest alone (an older import) are in ``guessed``
    renamed_bones: dict[str, str] = field(default_factory=dict)
    guessed_bones: list[str] = field(default_factory=list)
    lods: bool = False  # Blender holds the lower levels of detail (else the file's are written as they are)
    actions: list[ActionData] = field(default_factory=list)  # the rig's actions; new ones become sequences
    # the model's own animations the user changed: file name -> the action, the Blender frames a file frame spans
    edited: dict[str, tuple[ActionData, float]] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)  # what the export could not carry over, for the warnings
    rig: object | None = None  # new_actions.BlenderRig: the armature the actions pose


def settle(edited: ObjectData, original: ObjectData | None) -> ObjectData:
    """``edited`` with every value Blender gave back equal (within its storage precision) to ``original``'s
    replaced by the original's, so untouched data keeps its exact bytes; a changed topology keeps Blender's."""
    if original is None:
        return edited
    e, o = edited.mesh, original.mesh
    tris = np.asarray(o.triangles, dtype=np.int64)
    if len(e.positions) != len(o.positions) or not np.array_equal(np.asarray(e.triangles, np.int64), tris):
        return edited
    ep = np.asarray(e.positions, np.float64)
    op = np.asarray(o.positions, np.float64)
    same = np.abs(ep - op) <= POSITION_TOLERANCE * np.maximum(1.0, np.abs(op))
    positions = np.where(same, o.positions, e.positions).astype(np.float32)

    normals, vertex_normals = e.normals, None
    original_normals = o.corner_normals()
    if normals is not None and original_normals is not None:
        close = (np.abs(np.asarray(normals, np.float64) - original_normals) <= NORMAL_TOLERANCE).all(axis=1)
        if close.all() and o.vertex_normals is not None:  # the file's one normal per vertex, as a decompile has it
            normals, vertex_normals = None, o.vertex_normals
        else:
            normals = np.where(close[:, None], original_normals, normals).astype(np.float32)
    uvs = e.uvs
    if uvs is not None and o.uvs is not None and np.shape(uvs) == np.shape(o.uvs):
        close = np.abs(np.asarray(uvs, np.float64) - np.asarray(o.uvs, np.float64)) <= UV_TOLERANCE
        uvs = np.where(close, o.uvs, uvs).astype(np.float32)

    mesh = MeshData(
        name=e.name,
        positions=positions,
        triangles=e.triangles,
        uvs=uvs,
        normals=normals,
        vertex_normals=vertex_normals,
        material_indices=e.material_indices,
        materials=e.materials,
        shape_keys=_settled_keys(e, o),
    )
    return ObjectData(edited.name, mesh, dict(edited.props), skin=_settled_skin(edited.skin, original.skin, len(ep)))


def _settled_keys(e: MeshData, o: MeshData) -> list[tuple[str, np.ndarray]]:
    originals = dict(o.shape_keys)
    keys = []
    for name, moved in e.shape_keys:
        before = originals.get(name)
        if before is not None and np.shape(before) == np.shape(moved):
            b = np.asarray(before, np.float64)
            same = np.abs(np.asarray(moved, np.float64) - b) <= POSITION_TOLERANCE * np.maximum(1.0, np.abs(b))
            moved = np.where(same, before, moved).astype(np.float32)
        keys.append((name, moved))
    return keys


def _dense(skin: SkinData | None, nv: int, bones: int) -> np.ndarray:
    dense = np.zeros((nv, bones), np.float64)
    if skin is None:
        dense[:, 0] = 1.0  # no skin: the SMD's bone 0 at full weight
        return dense
    ids = np.asarray(skin.bone_indices, np.int64)
    w = np.asarray(skin.weights, np.float64)
    rows = np.broadcast_to(np.arange(nv)[:, None], ids.shape)
    used = ids >= 0
    np.add.at(dense, (rows[used], ids[used]), w[used])
    return dense


def _settled_skin(edited: SkinData | None, original: SkinData | None, nv: int) -> SkinData | None:
    """Per vertex: the original's influences (in the file's order) where Blender's weights equal them."""
    if original is None and edited is None:
        return None
    if original is None:
        return edited
    ids = [np.asarray(s.bone_indices) for s in (edited, original) if s is not None]
    bones = max(int(i.max(initial=0)) for i in ids) + 1
    same = np.all(np.abs(_dense(edited, nv, bones) - _dense(original, nv, bones)) <= WEIGHT_TOLERANCE, axis=1)
    if same.all():
        return original
    if edited is None:
        edited = SkinData(np.zeros((nv, 1), np.int32), np.ones((nv, 1), np.float32))
    width = max(edited.bone_indices.shape[1], original.bone_indices.shape[1])

    def padded(skin: SkinData) -> tuple[np.ndarray, np.ndarray]:
        b = np.full((nv, width), -1, np.int32)
        w = np.zeros((nv, width), np.float32)
        b[:, : skin.bone_indices.shape[1]] = skin.bone_indices
        w[:, : skin.weights.shape[1]] = skin.weights
        return b, w

    eb, ew = padded(edited)
    ob, ow = padded(original)
    return SkinData(np.where(same[:, None], ob, eb), np.where(same[:, None], ow, ew))


def remap_bones(obj: ObjectData, names: list[str], file_bones: list[str]) -> ObjectData:
    """The skin's bone indices (into ``names``, Blender's bones by their file names) as the file's bone indices;
    a bone the file does not have is an error naming the object and the bone."""
    if obj.skin is None:
        return obj
    index = {n: i for i, n in enumerate(file_bones)}
    table = np.full(len(names) + 1, -1, np.int32)  # the last entry: an unused influence (-1)
    for i, n in enumerate(names):
        if n not in index:
            used = np.isin(np.asarray(obj.skin.bone_indices), [i]) & (np.asarray(obj.skin.weights) > 0)
            if used.any():
                raise ExportError(
                    f"'{obj.name}': vertices are weighted to bone '{n}', which the exported skeleton does not have"
                )
            continue
        table[i] = index[n]
    ids = np.asarray(obj.skin.bone_indices, np.int64)
    mapped = table[np.where(ids >= 0, ids, len(names))]
    weights = np.where(mapped >= 0, obj.skin.weights, 0.0).astype(np.float32)
    return ObjectData(obj.name, obj.mesh, obj.props, skin=SkinData(mapped.astype(np.int32), weights))


def join(objects: list[tuple[ObjectData, list[str]]], name: str) -> tuple[ObjectData, list[str]]:
    """Several Blender objects of one body-part option as the one mesh an option is; materials merged by name.
    Shape keys are kept only when every object has the same ones."""
    if len(objects) == 1:
        return objects[0]
    materials: dict[str, int] = {}
    positions, triangles, uvs, normals, slots, bones, weights = [], [], [], [], [], [], []
    offset = 0
    width = max((o.skin.bone_indices.shape[1] for o, _ in objects if o.skin is not None), default=1)
    for obj, names in objects:
        m = obj.mesh
        nv, nt = len(m.positions), len(m.triangles)
        positions.append(np.asarray(m.positions, np.float32))
        triangles.append(np.asarray(m.triangles, np.int64) + offset)
        offset += nv
        uvs.append(np.asarray(m.uvs, np.float32) if m.uvs is not None else np.zeros((nt * 3, 2), np.float32))
        corner = m.corner_normals()
        normals.append(np.asarray(corner, np.float32) if corner is not None else np.zeros((nt * 3, 3), np.float32))
        local = np.array([materials.setdefault(n, len(materials)) for n in (names or ["material"])], np.int64)
        index = np.asarray(m.material_indices, np.int64) if m.material_indices is not None else np.zeros(nt, np.int64)
        slots.append(local[np.clip(index, 0, len(local) - 1)])
        b = np.full((nv, width), -1, np.int32)
        w = np.zeros((nv, width), np.float32)
        if obj.skin is None:
            b[:, 0], w[:, 0] = 0, 1.0
        else:
            k = obj.skin.bone_indices.shape[1]
            b[:, :k], w[:, :k] = obj.skin.bone_indices, obj.skin.weights
        bones.append(b)
        weights.append(w)
    key_names = [[n for n, _ in o.mesh.shape_keys] for o, _ in objects]
    keys = []
    if key_names[0] and all(k == key_names[0] for k in key_names):
        for i, n in enumerate(key_names[0]):
            keys.append((n, np.concatenate([np.asarray(o.mesh.shape_keys[i][1], np.float32) for o, _ in objects])))
    mesh = MeshData(
        name=name,
        positions=np.concatenate(positions),
        triangles=np.concatenate(triangles).astype(np.int32),
        uvs=np.concatenate(uvs),
        normals=np.concatenate(normals),
        material_indices=np.concatenate(slots).astype(np.int32),
        shape_keys=keys,
    )
    skin = SkinData(np.concatenate(bones), np.concatenate(weights))
    return ObjectData(name, mesh, dict(objects[0][0].props), skin=skin), list(materials)
