"""Assemble a GoldSrc model into a :class:`SceneData`, the way the engine draws it. No ``bpy``.

Vertices and normals are stored in the space of their one bone: they are placed by the bones' default values (the
rest pose), as the engine places them. Every body part becomes a collection with one child per model (only the
first shown), and the skin table switches textures, as for Source models, so the same panel and operators work.
Command-list triangles are clockwise seen from the front (the engine culls the other side): they are reversed.
"""

from __future__ import annotations

import os

import numpy as np

from ...formats.binary import renumbered
from ...formats.goldsrc.model import GsFile, GsModel
from ...formats.goldsrc.structs import TEXTURE_FLAGS
from ..decoded_textures import PixelAllowance
from ..names import option_name, unique_names
from ..rotations import compose, euler_xyz_to_matrix
from ..source.convert import SourceOptions
from ..studio_scene import finish_scene, rebuild_props
from ..studio_skeleton import rest_world, studio_skeleton
from ..types import (
    CollectionData,
    EmptyData,
    ImageRef,
    IndexedImage,
    MaterialData,
    MeshData,
    ObjectData,
    SceneData,
    SkeletonData,
    SkinData,
)
from .animation import add_goldsrc_animations

MASKED_CLIP = 0.5


def goldsrc_to_scene(gs: GsFile, options: SourceOptions | None = None) -> SceneData:
    options = options or SourceOptions()
    with np.errstate(all="ignore"):  # a stranger's NaN and infinity are replaced (and reported) at the end
        return _scene(gs, options)


def _scene(gs: GsFile, options: SourceOptions) -> SceneData:
    stem = os.path.splitext(os.path.basename(gs.path or gs.name or "model"))[0]
    scene = SceneData(name=stem, props=_model_props(gs))
    # What an export back to QC undoes (blender/source_export.py): the import's scale and axes.
    scene.props.update(source_import_scale=options.scale, source_import_axes=[options.axis_forward, options.axis_up])
    scene.warnings.extend(gs.warnings)
    world = bone_world(gs)
    if len(gs.bones):
        scene.skeleton, axes = goldsrc_skeleton(gs, options, stem, world)
        if options.import_animations and gs.sequences:
            add_goldsrc_animations(gs, axes, options.scale, scene, options.animations)
            scene.props.update(rebuild_props(gs.path, options, scene))
    _materials(gs, scene)
    _body_parts(gs, world, options, scene)
    if options.import_attachments:
        _attachments(gs, world, options, scene)
    if options.import_hitboxes:
        _hitboxes(gs, world, options, scene)
    finish_scene(scene, options)
    return scene


def _model_props(gs: GsFile) -> dict:
    props = {
        "source_version": 10,
        "source_engine": "GoldSrc",
        "source_name": gs.name,
        "source_flags": gs.flags,
        "source_sequence_groups": [g.name for g in gs.groups],
    }
    if len(gs.controllers):  # listed, not applied: at rest (zero) unless a game moves them
        props["source_bone_controllers"] = [
            {
                "bone": gs.bone_names[c["bone"]] if 0 <= c["bone"] < len(gs.bone_names) else "",
                "type": int(c["type"]),
                "start": float(c["start"]),
                "end": float(c["end"]),
                "index": int(c["index"]),
            }
            for c in gs.controllers
        ]
    if gs.path:
        props["source_source"] = os.path.basename(gs.path)
        props["source_file"] = os.path.abspath(gs.path)  # what Decompile… reads again
    if gs.texture_file:
        props["source_texture_file"] = os.path.basename(gs.texture_file)
    return props


def local_matrices(values: np.ndarray) -> np.ndarray:
    """(…, 6) position and Euler angles → (…, 4, 4) ``T(position)·Rz·Ry·Rx`` (the engine's AngleQuaternion)."""
    return compose(euler_xyz_to_matrix(values[..., 3:]), values[..., :3])


def bone_world(gs: GsFile) -> np.ndarray:
    """Each bone's rest matrix in model space: its parents' and its own default values."""
    local = local_matrices(gs.bones["value"].astype(np.float64)) if len(gs.bones) else np.zeros((0, 4, 4))
    return rest_world(local, gs.bones["parent"].tolist())


def goldsrc_skeleton(
    gs: GsFile, options: SourceOptions, name: str, world: np.ndarray | None = None
) -> tuple[SkeletonData, np.ndarray]:
    """The skeleton, and each bone's frame in its GoldSrc bone space (pose channels are written in it)."""
    world = bone_world(gs) if world is None else world
    props = [{"source_flags": f} for f in gs.bones["flags"].tolist()]
    parents = gs.bones["parent"]
    return studio_skeleton(name, world, parents, gs.bone_names, props, options.scale, options.bone_orientation)


def _materials(gs: GsFile, scene: SceneData) -> None:
    """One material per texture, its pixels decoded from the file (palette applied)."""
    allowance = PixelAllowance()
    names = unique_names([os.path.splitext(t.name)[0] or f"texture{i}" for i, t in enumerate(gs.textures)], "texture")
    for texture, name in zip(gs.textures, names, strict=True):
        ref = ImageRef(texture.name, None, loadable=False)
        refusal = allowance.refusal(texture.name)
        if refusal:
            scene.warnings.add(refusal)
        elif texture.indices is not None and texture.width * texture.height <= allowance.limit():
            ref.indexed = IndexedImage(texture.indices, texture.rgba_palette())
            allowance.spend(texture.width * texture.height)
        flags = texture.flags
        material = MaterialData(
            name=name,
            base_color=(1.0, 1.0, 1.0),
            roughness=1.0,
            specular_level=0.0,
            base_texture=ref,
            props={
                "source_texture": texture.name,
                "source_texture_flags": flags,
                "source_texture_flag_names": [n for bit, n in TEXTURE_FLAGS.items() if flags & bit],
            },
        )
        if flags & 64:  # masked: palette index 255 is a hole
            material.use_texture_alpha = True
            material.alpha_clip = MASKED_CLIP
        if flags & 32:  # additive
            material.additive = True
        if flags & 2:  # chrome: the texture is mapped by the view, as a reflection
            material.reflection_mapped = True
        if flags & 4:  # fullbright: not lit
            material.emission_color = (1.0, 1.0, 1.0)
            material.emission_strength = 1.0
        scene.materials.append(material)
    count = len(gs.textures)
    for family in gs.skins.tolist():
        scene.skin_families.append([t if 0 <= t < count else -1 for t in family])


def _body_parts(gs: GsFile, world: np.ndarray, options: SourceOptions, scene: SceneData) -> None:
    for b, part in enumerate(gs.body_parts):
        part_name = part.name or f"bodypart{b}"
        names = [option_name(part_name, m.name, i) for i, m in enumerate(part.models)]
        children = [
            CollectionData(names[i], hidden=i > 0, props={"source_model": m.name, "source_option": i})
            for i, m in enumerate(part.models)
        ]
        collection = CollectionData(
            part_name,
            children=children,
            props={"source_bodypart": b, "source_bodypart_base": part.base},
        )
        for m, model in enumerate(part.models):
            stem = os.path.splitext(model.name)[0]
            obj = _model_object(
                gs, model, world, options, scene, stem if stem.lower() not in ("", "blank") else names[m]
            )
            if obj is None:
                continue
            obj.props.update({"source_bodypart": b, "source_option": m})
            scene.objects.append(obj)
            children[m].objects.append(len(scene.objects) - 1)
        scene.collections.append(collection)


def _model_object(
    gs: GsFile, model: GsModel, world: np.ndarray, options: SourceOptions, scene: SceneData, name: str
) -> ObjectData | None:
    meshes = [mesh for mesh in model.meshes if len(mesh.corners)]
    if not meshes:
        return None
    corners = np.concatenate([mesh.corners for mesh in meshes]).astype(np.int64)
    corners = corners.reshape(-1, 3, 4)[:, ::-1].reshape(-1, 4)  # counter-clockwise, as Blender's front faces
    refs = np.repeat([mesh.skinref for mesh in meshes], [len(mesh.corners) // 3 for mesh in meshes])
    tris = corners[:, 0].reshape(-1, 3)
    solid = (tris[:, 0] != tris[:, 1]) & (tris[:, 1] != tris[:, 2]) & (tris[:, 0] != tris[:, 2])
    if not solid.all():
        scene.degenerate_triangles += int((~solid).sum())
        tris, refs = tris[solid], refs[solid]
        corners = corners.reshape(-1, 3, 4)[solid].reshape(-1, 4)
        if not len(tris):
            return None
    used, triangles = renumbered(tris.ravel(), len(model.vertices))
    triangles = triangles.reshape(-1, 3)
    rest = world[model.vertex_bones[used]]
    positions = (rest[:, :3, :3] @ model.vertices[used, :, None].astype(np.float64))[:, :, 0] + rest[:, :3, 3]
    # each stored normal turned once by its bone, then spread over the corners that use it
    turned = (world[model.normal_bones, :3, :3] @ model.normals[:, :, None].astype(np.float64))[:, :, 0]
    normals = turned[corners[:, 1]]
    family0 = scene.skin_families[0] if scene.skin_families else []
    # the texture refs in order of first use, and each triangle's slot among them (per triangle, in numpy)
    distinct, first, inverse = np.unique(refs, return_index=True, return_inverse=True)
    by_use = np.argsort(first, kind="stable")
    slot_refs = distinct[by_use].tolist()
    slot_of = np.empty(len(distinct), np.int32)
    slot_of[by_use] = np.arange(len(distinct), dtype=np.int32)
    size = np.ones((max(len(family0), 1), 2))
    for r, t in enumerate(family0):
        if t >= 0:
            size[r] = (gs.textures[t].width, gs.textures[t].height)
    corner_refs = np.repeat(refs, 3)
    known = (corner_refs >= 0) & (corner_refs < len(family0))
    wh = np.where(known[:, None], size[np.clip(corner_refs, 0, len(size) - 1)], 1.0)
    uvs = np.empty((len(corners), 2), dtype=np.float32)
    uvs[:, 0] = corners[:, 2] / wh[:, 0]
    uvs[:, 1] = 1.0 - corners[:, 3] / wh[:, 1]
    mesh = MeshData(
        name=name,
        positions=np.ascontiguousarray(positions * options.scale, dtype=np.float32),
        triangles=np.ascontiguousarray(triangles, dtype=np.int32),
        uvs=uvs,
        normals=np.ascontiguousarray(normals, dtype=np.float32),
        material_indices=slot_of[inverse.ravel()] if len(slot_refs) > 1 else np.zeros(len(triangles), np.int32),
        materials=[family0[r] if 0 <= r < len(family0) and family0[r] >= 0 else None for r in slot_refs],
        source_vertices=used.astype(np.int32),
        material_refs=slot_refs,
    )
    obj = ObjectData(name, mesh, props={"source_model": model.name})
    if scene.skeleton is not None:
        ids = np.full((len(used), 4), -1, np.int32)
        weights = np.zeros((len(used), 4), np.float32)
        ids[:, 0] = model.vertex_bones[used]
        weights[:, 0] = 1.0
        obj.skin = SkinData(ids, weights)
    return obj


def _attachments(gs: GsFile, world: np.ndarray, options: SourceOptions, scene: SceneData) -> None:
    names = [b.name for b in scene.skeleton.bones] if scene.skeleton else []
    for i, att in enumerate(gs.attachments):
        inside = 0 <= att.bone < len(world)
        matrix = world[att.bone] @ compose(np.eye(3), att.origin) if inside else compose(np.eye(3), att.origin)
        matrix[:3, 3] *= options.scale
        scene.empties.append(
            EmptyData(
                att.name or f"attachment{i}",
                matrix,
                names[att.bone] if inside and att.bone < len(names) else None,
                "ARROWS",
                max(2.0 * options.scale, 1e-4),
                collection="attachments",
            )
        )


def _hitboxes(gs: GsFile, world: np.ndarray, options: SourceOptions, scene: SceneData) -> None:
    names = [b.name for b in scene.skeleton.bones] if scene.skeleton else []
    for i, box in enumerate(gs.hitboxes):
        bone = int(box["bone"])
        if not 0 <= bone < len(world):
            continue
        low, high = box["bbmin"].astype(np.float64), box["bbmax"].astype(np.float64)
        matrix = world[bone] @ compose(np.eye(3), (low + high) / 2.0)
        matrix[:3, 3] *= options.scale
        half = tuple(float(h) for h in np.maximum((high - low) / 2.0 * options.scale, 1e-6))
        scene.empties.append(
            EmptyData(
                f"hitbox{i}",
                matrix,
                names[bone] if bone < len(names) else None,
                "CUBE",
                1.0,
                half,
                collection="hitboxes",
                props={"source_hitbox_group": int(box["group"])},
            )
        )
