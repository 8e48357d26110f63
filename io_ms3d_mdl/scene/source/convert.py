"""Assemble a Source model (MDL + VVD + VTX records) into a :class:`SceneData`. No ``bpy``.

The recipe of notes §1.13: triangles of the chosen VTX LOD map to the VVD pool through
``model.vertexindex/48 + mesh.vertexoffset + origMeshVertID``; vertices are deduplicated by that index (so
strip groups that repeat a vertex do not tear the mesh), compacted to what the LOD uses, and the winding is
reversed (VTX triangles are clockwise). Every body part becomes a collection with one child per option, only the
first shown, so the choices read like the game's body groups.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import numpy as np

from ...access import current, game_root
from ...budget import current_budget
from ...formats.binary import renumbered
from ...formats.source.includes import Included
from ...formats.source.model import MdlFile, MdlModel, VtxFile, VtxLod, VvdFile
from ...formats.source.phy import PhyFile
from ..names import option_name
from ..rotations import compose, quaternion_to_matrix
from ..studio_scene import finish_scene, rebuild_props
from ..studio_skeleton import rest_world, studio_skeleton
from ..topology import classify_faces, compact
from ..types import (
    CollectionData,
    EmptyData,
    MaterialData,
    MeshData,
    ObjectData,
    SceneData,
    SkeletonData,
    SkinData,
)
from .animation import add_source_animations
from .flex import add_shape_keys
from .flex import rule_work as flex_rule_work
from .materials import add_materials
from .physics import add_collision

INCH = 0.0254  # Source units are inches for physics; one unit in metres
STATIC_PROP = 0x10


@dataclass(frozen=True)
class SourceOptions:
    scale: float = INCH
    lod: int = 0  # which VTX LOD to build; -1: every LOD (the others hidden)
    bone_orientation: str = "CHILD"  # "CHILD": bones point at children; "SOURCE": Source's bone axes as stored
    import_attachments: bool = True
    import_hitboxes: bool = False
    armature_for_static_props: bool = False  # single-bone models get an armature too
    import_animations: bool = True
    animations: str = "DEFAULT"  # which get actions at import: NONE, DEFAULT (sequence), OWN, ALL (with includes)
    find_materials: bool = True  # VMT/VTF from the game tree; False: one plain material per texture name
    search_roots: tuple[str, ...] = ()  # extra game or mod folders to search after the model's own
    # Mounted game folders and archives (the user's enabled games; CLI --game/--vpk), searched after the model's
    # own game and before search_roots (see filesystem/__init__.py).
    mounts: tuple[str, ...] = ()
    work_limit: float = 1.0  # scales every work budget (budget.py)
    # The model's axes that become Blender's forward (+Y) and up (+Z). Source's own (Y, Z) by default, for round
    # trips; characters face Source's +X, so forward "-X" turns their face to Blender's Front view.
    axis_forward: str = "Y"
    axis_up: str = "Z"
    import_physics: bool = True  # the .phy collision solids, in a hidden collection


def source_to_scene(
    mdl: MdlFile,
    vvd: VvdFile | None,
    vtx: VtxFile | None,
    options: SourceOptions = SourceOptions(),
    ani: tuple[bytes, str] | None = None,
    includes: list[Included] = (),
    phy: PhyFile | None = None,
) -> SceneData:
    """``ani``: the ``.ani`` file's bytes and path, when the model keeps animation blocks there; ``includes``: the
    models named by ``$includemodel``, already loaded (see ``formats.source.includes``); ``phy``: the collision
    model (``formats.source.phy``), if any."""
    stem = os.path.splitext(os.path.basename(mdl.path or mdl.name or "model"))[0]
    scene = SceneData(name=stem, props=_model_props(mdl))
    # What an export back to Source undoes (blender/source_export.py): the import's scale and axes.
    scene.props.update(source_import_scale=options.scale, source_import_axes=[options.axis_forward, options.axis_up])
    scene.warnings.extend(mdl.warnings)
    if (vvd is None or vtx is None) and any(m.num_vertices for bp in mdl.body_parts for m in bp.models):
        missing = " and ".join(n for n, f in ((".vvd", vvd), (".vtx", vtx)) if f is None)
        scene.warnings.add(f"the {missing} file is missing: only the skeleton and attachments were imported")
        vvd = vtx = None
    for what, other in (("vertex file (.vvd)", vvd), ("mesh file (.vtx)", vtx)):
        if other is not None and other.checksum != mdl.checksum:
            scene.warnings.add(f"the {what} checksum {other.checksum} does not match the model's {mdl.checksum}")

    world = _bone_world(mdl)
    wants_armature = len(mdl.bones) > 1 or options.armature_for_static_props  # one bone: a static prop
    if len(mdl.bones) and wants_armature:
        scene.skeleton, bone_axes = _skeleton(mdl, world, options, stem)
        if options.import_animations:
            add_source_animations(mdl, ani, bone_axes, options.scale, scene, includes, options.animations)
            scene.props.update(rebuild_props(mdl.path, options, scene))

    _materials(mdl, scene, options)
    if vvd is not None and vtx is not None:
        _body_parts(mdl, vvd, vtx, options, scene)
    else:
        scene.collections = [
            _empty_body_part(bp.name, [m.name for m in bp.models], bp.base, b) for b, bp in enumerate(mdl.body_parts)
        ]
    if options.import_attachments:
        _attachments(mdl, world, options, scene)
        _eyeballs(mdl, world, options, scene)
    if options.import_hitboxes:
        _hitboxes(mdl, world, options, scene)
    if phy is not None and options.import_physics:
        add_collision(scene, mdl, ani, phy, world, options.scale)
    finish_scene(scene, options)
    return scene


def source_skeleton(mdl: MdlFile, options: SourceOptions) -> tuple[SkeletonData, np.ndarray]:
    """The skeleton exactly as the import made it, and each bone's frame in its Source bone space (pose channels
    are written in it): what building one more animation later needs."""
    return _skeleton(mdl, _bone_world(mdl), options, "")


def _model_props(mdl: MdlFile) -> dict:
    return {
        "source_version": mdl.version,
        "source_name": mdl.name,
        "source_checksum": mdl.checksum,
        "source_cdmaterials": list(mdl.cd_materials),
        "source_includes": list(mdl.include_models),
        "source_static_prop": mdl.is_static_prop,
        **({"source_source": os.path.basename(mdl.path)} if mdl.path else {}),
        **({"source_file": os.path.abspath(mdl.path)} if mdl.path else {}),  # what Decompile… reads again
    }


def _stored_normals(normals: np.ndarray) -> np.ndarray | None:
    """The pool's normals, or None (Blender computes them) where the file keeps none it can read: Bloodlines'
    compressed vertices leave them zero."""
    if len(normals) and not normals.any():
        return None
    return np.ascontiguousarray(normals, dtype=np.float32)


def _bone_world(mdl: MdlFile) -> np.ndarray:
    """Bind pose: ``world = world[parent]·T(pos)·R(quat)`` (equal to inverse(poseToBone), notes §1.4)."""
    bones = mdl.bones
    quat = bones["quat"].astype(np.float64)[:, [3, 0, 1, 2]]  # stored x, y, z, w
    local = compose(quaternion_to_matrix(quat), bones["pos"].astype(np.float64)) if len(bones) else np.zeros((0, 4, 4))
    return rest_world(local, bones["parent"].tolist())


def _skeleton(mdl: MdlFile, world: np.ndarray, options: SourceOptions, name: str) -> tuple[SkeletonData, np.ndarray]:
    """The skeleton, and ``X`` (B, 3, 3): each bone's frame in its Source bone space (for pose channels)."""
    flags, proctypes = mdl.bones["flags"].tolist(), mdl.bones["proctype"].tolist()
    props = [{"source_flags": f, "source_proctype": p} for f, p in zip(flags, proctypes, strict=True)]
    parents = mdl.bones["parent"]
    return studio_skeleton(name, world, parents, mdl.bone_names, props, options.scale, options.bone_orientation)


def _materials(mdl: MdlFile, scene: SceneData, options: SourceOptions) -> None:
    """One material per texture (from its VMT when found); skin families map skin-table columns to them."""
    root = game_root(mdl.path) if mdl.path else None
    confinement = current(mdl.path)
    roots = list(confinement.lookup) or [r for r in (root, *options.search_roots) if r]
    if options.find_materials and roots:
        add_materials(scene, mdl.textures, mdl.cd_materials, roots, confinement)
    else:
        for texture in mdl.textures:
            name = texture.replace("\\", "/").rsplit("/", 1)[-1] or "material"
            scene.materials.append(
                MaterialData(name=name, base_color=(0.8, 0.8, 0.8), props={"source_texture": texture})
            )
    count = len(mdl.textures)
    for family in mdl.skins.tolist():
        scene.skin_families.append([t if 0 <= t < count else -1 for t in family])


def _empty_body_part(name: str, options: list[str], base: int, index: int) -> CollectionData:
    name = name or f"bodypart{index}"
    children = [CollectionData(option_name(name, o, i), hidden=i > 0) for i, o in enumerate(options)]
    return CollectionData(name, children=children, props={"source_bodypart": index, "source_bodypart_base": base})


def _model_stem(model: str, option: str) -> str:
    """A mesh object is named after its model (``metal_box``), as the option's collection says which choice it is."""
    return os.path.splitext(model)[0] or option


def _body_parts(mdl: MdlFile, vvd: VvdFile, vtx: VtxFile, options: SourceOptions, scene: SceneData) -> None:
    if len(vtx.body_parts) != len(mdl.body_parts) or any(
        len(v) != len(m.models) for v, m in zip(vtx.body_parts, mdl.body_parts, strict=False)
    ):
        scene.warnings.add("the .vtx file's body parts do not match the model's; its meshes were not imported")
        scene.collections = [
            _empty_body_part(bp.name, [m.name for m in bp.models], bp.base, b) for b, bp in enumerate(mdl.body_parts)
        ]
        return
    for b, bp in enumerate(mdl.body_parts):
        part = _empty_body_part(bp.name, [m.name for m in bp.models], bp.base, b)
        for m, model in enumerate(bp.models):
            option = part.children[m]
            option.props = {"source_model": model.name, "source_option": m}
            if model.num_vertices == 0:
                continue
            lods = vtx.body_parts[b][m]
            if not lods:
                scene.warnings.add(f"'{option.name}': the .vtx file has no levels of detail for it; not imported")
                continue
            wanted = range(len(lods)) if options.lod < 0 else [min(options.lod, len(lods) - 1)]
            for k in wanted:
                if lods[k] is None:  # a caller's mistake, not the file's: read_vtx was given another ``lod``
                    raise ValueError(f"level of detail {k} of '{option.name}' was not read from the .vtx")
                obj = _model_object(
                    mdl,
                    model,
                    lods[k],
                    vvd,
                    options,
                    scene,
                    f"{_model_stem(model.name, option.name)}{'' if k == 0 else f'_lod{k}'}",
                )
                if obj is None:
                    continue
                obj.props.update({"source_bodypart": b, "source_option": m, "source_lod": k})
                scene.objects.append(obj)
                if options.lod < 0 and k > 0:
                    lod_coll = next((c for c in option.children if c.props.get("source_lod") == k), None)
                    if lod_coll is None:
                        lod_coll = CollectionData(f"{option.name} LOD{k}", hidden=True, props={"source_lod": k})
                        option.children.append(lod_coll)
                    lod_coll.objects.append(len(scene.objects) - 1)
                else:
                    option.objects.append(len(scene.objects) - 1)
        scene.collections.append(part)


def _model_object(
    mdl: MdlFile,
    model: MdlModel,
    lod: VtxLod,
    vvd: VvdFile,
    options: SourceOptions,
    scene: SceneData,
    name: str,
) -> ObjectData | None:
    pool = vvd.vertices
    tris, group_refs = [], []
    for mesh, vmesh in zip(model.meshes, lod.meshes, strict=False):
        base = model.vertex_index + mesh.vertex_offset
        for group in vmesh.strip_groups:
            if len(group.triangles) == 0:
                continue
            tris.append(np.add(group.vertices[group.triangles[:, ::-1]], base, dtype=np.int64))  # clockwise in the file
            group_refs.append(mesh.material)
    if not tris:
        return None
    tris_global = np.concatenate(tris)
    group_sizes = [len(t) for t in tris]
    budget = current_budget()
    budget.check(mdl.path, "triangles over all objects", scene.triangle_count + len(tris_global), budget.triangles)
    if int(tris_global.max()) >= len(pool) or int(tris_global.min()) < 0:
        scene.warnings.add(f"'{name}': triangles point past the {len(pool)} vertices of the .vvd; skipped")
        return None
    # A triangle that repeats a vertex has no area; Blender's custom-normal code crashes on such faces (found by
    # fuzzing), and validate() would delete them anyway.
    a, b, c = tris_global.T
    solid = (a != b) & (b != c) & (a != c)
    dropped = not solid.all()
    live_refs = group_refs
    if dropped:
        scene.degenerate_triangles += int((~solid).sum())
        tris_global = tris_global[solid]
        if not len(tris_global):
            return None
        alive = np.add.reduceat(solid, np.cumsum([0, *group_sizes[:-1]])) > 0  # groups that keep a triangle
        live_refs = [r for r, keep in zip(group_refs, alive.tolist(), strict=True) if keep]
    # Slots in order of first use: each strip group is one material's, so worked out per group, not per triangle.
    slot_refs = list(dict.fromkeys(live_refs))
    place = {r: i for i, r in enumerate(slot_refs)}
    slot_of_triangle = np.repeat(np.array([place.get(r, 0) for r in group_refs], dtype=np.int32), group_sizes)
    if dropped:
        slot_of_triangle = slot_of_triangle[solid]  # a dropped group's placeholder 0 goes with its triangles
    # The pool vertices this LOD uses, in pool order, renumbered from 0 (indices bounded by the pool, checked above).
    used, triangles = renumbered(tris_global, len(pool))
    back = classify_faces(triangles).back_faces
    if back.any():  # a reversed copy of a triangle (double-sided): its own vertices (see _own_vertices)
        used, triangles = _own_vertices(used, triangles, back)
    budget.check(mdl.path, "vertices over all objects", scene.vertex_count + len(used), budget.vertices)
    verts = np.take(pool, used)  # not pool[used]: numpy indexes structured records field by field, 20× slower
    family0 = scene.skin_families[0] if scene.skin_families else []
    slots = [family0[r] if 0 <= r < len(family0) and family0[r] >= 0 else None for r in slot_refs]
    corners = triangles.ravel()
    mesh = MeshData(
        name=name,
        positions=np.ascontiguousarray(verts["pos"] * options.scale, dtype=np.float32),
        triangles=triangles,
        uvs=np.take(_flipped_uvs(verts["uv"]), corners, axis=0),  # flipped per vertex, spread over the corners
        vertex_normals=_stored_normals(verts["normal"]),
        material_indices=slot_of_triangle,
        materials=slots,
        source_vertices=used.astype(np.int32),
        material_refs=slot_refs,
        colors=np.ascontiguousarray(vvd.colors[used]) if vvd.colors is not None else None,
        uvs2=np.take(_flipped_uvs(vvd.uv2[used]), corners, axis=0) if vvd.uv2 is not None else None,
    )
    obj = ObjectData(name, mesh)
    # Each shape key stores every vertex: check before the keys are made.
    flexes = [f for m in model.meshes for f in m.flexes]
    keys = {f.desc for f in flexes} | {f.pair for f in flexes if f.pair}
    keyed = sum(len(o.mesh.positions) * len(o.mesh.shape_keys) for o in scene.objects) + len(used) * len(keys)
    budget.check(mdl.path, "shape keys × vertices over all objects", keyed, budget.shape_key_vertices)
    if keys:  # each object with shape keys works through every flex rule (its drivers read its own keys)
        runs = sum(1 for o in scene.objects if o.mesh.shape_keys) + 1
        rule_work = runs * flex_rule_work(mdl.flex_rules)
        budget.check(mdl.path, "flex rule work over all objects", rule_work, budget.flex_rule_work, unit="units")
    add_shape_keys(mdl, model, obj, used, options.scale)
    if scene.skeleton is not None:
        # Four slots (Blender's skin layout), the fourth always empty; slots past numbones or naming no bone are
        # empty too.
        ids = np.full((len(verts), 4), -1, np.int32)
        weights = np.zeros((len(verts), 4), np.float32)
        ids[:, :3] = verts["bones"]
        weights[:, :3] = verts["weights"]
        bad = (np.arange(4) >= verts["numbones"][:, None]) | (ids >= len(scene.skeleton.bones))
        ids[bad], weights[bad] = -1, 0.0
        obj.skin = SkinData(ids, weights)
    return obj


def _own_vertices(used: np.ndarray, triangles: np.ndarray, back: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The ``back`` triangles (reversed copies of others) on copies of their vertices, appended: two triangles on
    the same three vertices make a closed pair whose corners Blender puts in one smooth fan with opposite face
    normals, where no custom normal can be held (the file's came out up to 1.07 off); apart, each keeps the file's
    normal, as the game shows it. ``used`` (each vertex's pool index) follows; the copies repeat their pool index."""
    triangles, order = compact(triangles, len(used), back)
    return used[order], triangles


def _flipped_uvs(uv: np.ndarray) -> np.ndarray:
    """Source's V runs down the texture, Blender's up."""
    out = np.array(uv, dtype=np.float32)
    out[:, 1] = 1.0 - out[:, 1]
    return out


def _attachments(mdl: MdlFile, world: np.ndarray, options: SourceOptions, scene: SceneData) -> None:
    names = [b.name for b in scene.skeleton.bones] if scene.skeleton else []
    size = max(2.0 * options.scale, 1e-4)
    for att in mdl.attachments:
        local = np.eye(4)
        local[:3, :] = att.matrix
        matrix = (world[att.bone] @ local) if att.bone >= 0 and len(world) else local
        matrix[:3, 3] *= options.scale
        bone = names[att.bone] if 0 <= att.bone < len(names) else None
        scene.empties.append(
            EmptyData(
                att.name or "attachment",
                matrix,
                bone,
                "ARROWS",
                size,
                collection="attachments",
                props={"source_attachment_flags": att.flags},
            )
        )


def _eyeballs(mdl: MdlFile, world: np.ndarray, options: SourceOptions, scene: SceneData) -> None:
    """Eyeballs as sphere empties on their bones (their centre is given in the bone's space)."""
    names = [b.name for b in scene.skeleton.bones] if scene.skeleton else []
    for bp in mdl.body_parts:
        for model in bp.models:
            for i, eye in enumerate(model.eyeballs):
                if not 0 <= eye.bone < len(world):
                    continue
                matrix = world[eye.bone] @ compose(np.eye(3), eye.origin)
                matrix[:3, 3] *= options.scale
                scene.empties.append(
                    EmptyData(
                        eye.name or f"eyeball{i}",
                        matrix,
                        names[eye.bone] if eye.bone < len(names) else None,
                        "SPHERE",
                        max(eye.radius * options.scale, 1e-4),
                        collection="eyeballs",
                        props={"source_eyeball_radius": eye.radius},
                    )
                )


def _hitboxes(mdl: MdlFile, world: np.ndarray, options: SourceOptions, scene: SceneData) -> None:
    names = [b.name for b in scene.skeleton.bones] if scene.skeleton else []
    for set_name, boxes in mdl.hitbox_sets.items():
        for i, box in enumerate(boxes):
            if not 0 <= box.bone < len(world):
                continue
            center = np.eye(4)
            center[:3, 3] = (box.bbmin + box.bbmax) / 2.0
            matrix = world[box.bone] @ center
            matrix[:3, 3] *= options.scale
            half = tuple(float(h) for h in np.maximum((box.bbmax - box.bbmin) / 2.0 * options.scale, 1e-6))
            scene.empties.append(
                EmptyData(
                    box.name or f"{set_name}_hitbox{i}",
                    matrix,
                    names[box.bone] if box.bone < len(names) else None,
                    "CUBE",
                    1.0,
                    half,
                    collection="hitboxes",
                    props={"source_hitbox_group": box.group},
                )
            )
