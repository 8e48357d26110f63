"""Turn a read :class:`Ms3dModel` into a :class:`SceneData`: objects per group (or one object), per-corner UVs
and normals, sharp edges from smoothing groups, materials as Principled values. No ``bpy``.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass

import numpy as np

from ...access import is_absolute_name, shown
from ...formats.ms3d.model import Ms3dMaterial, Ms3dModel
from ..axes import axis_conversion_matrix, transform_points
from ..decoded_textures import TextureDecoder
from ..finite import replace_non_finite
from ..slots import cap_material_slots
from ..topology import classify_faces, clean_normals, compact, sharp_edges_from_groups
from ..types import ImageRef, MaterialData, MeshData, ObjectData, SceneData, SkinData
from .armature import build_action, build_skeleton, parse_clips
from .rig import effective_fps, hierarchy, skin_weights
from .texture_search import find_texture

MODE_HAS_ALPHA = 0x40  # material mode flag: the texture's alpha channel is used


@dataclass(frozen=True)
class Ms3dOptions:
    scale: float = 1.0
    # File axes that become Blender's forward (+Y) and up (+Z). MilkShape is Y-up and its models usually
    # face -Z; forward "Z" turns them toward Blender's Front view (notes §2.5).
    axis_forward: str = "Z"
    axis_up: str = "Y"
    split_groups: bool = True  # one object per group; False: one object with a material slot per material
    use_normals: bool = True  # stored per-corner normals become custom normals
    use_smoothing_groups: bool = True  # smoothing-group borders become sharp edges
    find_textures: bool = True
    import_animation: bool = True
    bone_tails: str = "CHILD"  # "CHILD": bones point at their children; "AXIS": along each joint's local +X
    search_roots: tuple[str, ...] = ()  # more folders textures may be found in (the user's, from the preferences)
    mounts: tuple[str, ...] = ()  # mounted game folders and archives (filesystem/__init__.py)
    allow_absolute_paths: bool = False  # follow absolute texture paths (the user's own files; off: base name only)
    work_limit: float = 1.0  # scales every work budget (budget.py)


def ms3d_to_scene(model: Ms3dModel, options: Ms3dOptions = Ms3dOptions()) -> SceneData:
    stem = os.path.splitext(os.path.basename(model.path or "ms3d"))[0]
    model_dir = os.path.dirname(os.path.abspath(model.path)) if model.path else os.getcwd()
    scene = SceneData(name=stem, props=_model_props(model))
    scene.warnings.extend(model.warnings)
    matrix = axis_conversion_matrix(options.axis_forward, options.axis_up)

    material_of_group = []
    for gi, group in enumerate(model.groups):
        index = group.material_index
        if index >= len(model.materials) or index < -1:
            scene.warnings.add(
                f"group '{group.name}' (#{gi}) uses material {index} but the file has only "
                f"{len(model.materials)} material(s); it gets none"
            )
            index = -1
        material_of_group.append(index)

    used_materials = sorted({m for m in material_of_group if m >= 0})
    scene_material = {}
    textures = TextureDecoder(scene.warnings)  # PCX skins: decoded here, Blender has no reader for them
    for mi in used_materials:
        scene_material[mi] = len(scene.materials)
        scene.materials.append(
            _material(model.materials[mi], mi, stem, model_dir if options.find_textures else None, scene, textures)
        )

    in_any_group = np.zeros(len(model.triangles), dtype=bool)
    for group in model.groups:
        in_any_group[group.triangle_indices] = True
    if not in_any_group.all():
        scene.warnings.add(f"{int((~in_any_group).sum())} triangles belong to no group and were skipped")

    if options.split_groups:
        for gi, group in enumerate(model.groups):
            name = group.name or f"{stem}_group{gi}"
            if len(group.triangle_indices) == 0:
                scene.warnings.add(f"group '{name}' has no triangles; no object was made for it")
                continue
            mat = material_of_group[gi]
            slots = [scene_material[mat]] if mat >= 0 else []
            tri_rows = group.triangle_indices.astype(np.int64)
            mesh = _mesh(model, name, tri_rows, np.zeros(len(tri_rows), np.int32), slots, matrix, options, scene)
            if len(mesh.triangles) == 0:
                scene.warnings.add(f"group '{name}' has no usable triangles; no object was made for it")
                continue
            props = {"ms3d_group_index": gi, "ms3d_group_flags": group.flags}
            if group.comment:
                props["ms3d_comment"] = group.comment
            scene.objects.append(ObjectData(name, mesh, props))
    elif model.groups and any(len(g.triangle_indices) for g in model.groups):
        rows, slot_of_row, slots = [], [], []
        slot_for: dict[int, int] = {}
        for gi, group in enumerate(model.groups):
            mat = material_of_group[gi]
            if mat not in slot_for:
                slot_for[mat] = len(slots)
                slots.append(scene_material[mat] if mat >= 0 else None)
            rows.append(group.triangle_indices.astype(np.int64))
            slot_of_row.append(np.full(len(group.triangle_indices), slot_for[mat], np.int32))
        mesh = _mesh(model, stem, np.concatenate(rows), np.concatenate(slot_of_row), slots, matrix, options, scene)
        if slots == [None]:
            mesh.materials = []
        if len(mesh.triangles):
            scene.objects.append(ObjectData(stem, mesh, {}))

    if not scene.objects and not model.joints:
        scene.warnings.add("the model has no usable triangles; only an empty collection was made")
    if model.joints:
        _add_rig(model, scene, matrix, options, stem)
    cap_material_slots(scene)
    replace_non_finite(scene)
    return scene


def _add_rig(model: Ms3dModel, scene: SceneData, matrix: np.ndarray, options: Ms3dOptions, stem: str) -> None:
    """Armature, per-object skin weights, the action, clips, and the scene timing the keys need."""
    rig = hierarchy(model, scene.warnings, keys=options.import_animation)
    scene.skeleton, bone_of_joint, x = build_skeleton(model, rig, matrix, options.scale, options.bone_tails, stem)
    joint_ids, weights = skin_weights(model)
    bone_ids = np.where(joint_ids >= 0, bone_of_joint[np.maximum(joint_ids, 0)], -1).astype(np.int32)
    for obj in scene.objects:
        rows = obj.mesh.source_vertices
        if (weights[rows] > 0).any():
            obj.skin = SkinData(np.ascontiguousarray(bone_ids[rows]), np.ascontiguousarray(weights[rows]))
    if not options.import_animation:
        return
    action = build_action(rig, x, bone_of_joint, options.scale, stem, scene.warnings)
    scene.clips = parse_clips(model.model_comment)
    scene.fps = effective_fps(model)
    if action is not None:
        scene.actions.append(action)
        first, last = action.frame_range
        scene.frame_range = (min(1.0, math.floor(first)), max(float(model.total_frames), float(math.ceil(last))))


def _mesh(
    model: Ms3dModel,
    name: str,
    tri_rows: np.ndarray,
    slot_of_row: np.ndarray,
    slots: list[int | None],
    matrix: np.ndarray,
    options: Ms3dOptions,
    scene: SceneData,
) -> MeshData:
    whole = len(tri_rows) == len(model.triangles) and bool((tri_rows == np.arange(len(tri_rows))).all())
    records = model.triangles if whole else model.triangles[tri_rows]  # no copy in the common one-group case
    tris = records["indices"].astype(np.int64)
    faces = classify_faces(tris)
    if faces.degenerate:
        scene.warnings.add(f"'{name}': {faces.degenerate} degenerate triangles (a repeated vertex) were skipped")
    if faces.duplicates:
        scene.warnings.add(f"'{name}': {faces.duplicates} duplicate triangles were skipped")
    keep = faces.keep
    if not keep.all():
        records, tris = records[keep], tris[keep]
    new_tris, source = compact(tris, len(model.vertices), faces.back_faces[keep])

    positions = transform_points(model.vertices["position"][source], matrix, options.scale)
    positions = finite(positions, f"'{name}': vertex positions", scene)
    uvs = np.empty((len(records), 3, 2), dtype=np.float32)
    uvs[..., 0] = records["s"]
    with np.errstate(invalid="ignore"):
        uvs[..., 1] = 1.0 - records["t"]
    uvs = finite(uvs, f"'{name}': texture coordinates", scene)
    normals = None
    if options.use_normals:
        normals = clean_normals(records["normals"].reshape(-1, 3))
        if normals is not None:
            normals = transform_points(normals, matrix)
    sharp = None
    if options.use_smoothing_groups:
        sharp = sharp_edges_from_groups(new_tris, records["smoothing_group"])
    return MeshData(
        name=name,
        positions=positions,
        triangles=np.ascontiguousarray(new_tris, dtype=np.int32),
        uvs=uvs.reshape(-1, 2),
        normals=normals,
        material_indices=np.ascontiguousarray(slot_of_row[keep], dtype=np.int32),
        materials=list(slots),
        sharp_edges=sharp,
        source_vertices=source,
    )


def finite(values: np.ndarray, what: str, scene: SceneData) -> np.ndarray:
    """Non-finite numbers (NaN, infinity) would break Blender's drawing and maths: zero them, and say so."""
    with np.errstate(invalid="ignore"):
        broken = ~np.isfinite(values)
    if not broken.any():
        return values
    scene.warnings.add(f"{what}: {int(broken.sum())} values were not finite numbers (or overflowed); set to 0")
    out = np.array(values, dtype=np.float32)
    out[broken] = 0.0
    return out


def _roughness_from_shininess(shininess: float) -> float:
    """Phong exponent (0..128) to a GGX roughness with a matching highlight size: alpha = sqrt(2 / (n + 2))."""
    n = min(max(shininess, 0.0), 128.0)
    return float(np.sqrt(np.sqrt(2.0 / (n + 2.0))))


def _material(
    mat: Ms3dMaterial, index: int, stem: str, model_dir: str | None, scene: SceneData, textures: TextureDecoder
) -> MaterialData:
    name = mat.name or f"{stem}_material{index}"
    diffuse = np.clip(mat.diffuse[:3], 0.0, 1.0)
    specular = np.clip(mat.specular[:3], 0.0, 1.0)
    emissive = np.clip(mat.emissive[:3], 0.0, None)
    spec_max = float(specular.max())
    alpha = float(np.clip(mat.transparency, 0.0, 1.0))

    def image(raw: str, what: str) -> ImageRef | None:
        if not raw.strip():
            return None
        resolved = find_texture(raw, model_dir) if model_dir is not None else None
        if model_dir is not None and resolved is None:
            absolute = is_absolute_name(raw)
            hint = " (absolute paths are followed only when allowed in the preferences)" if absolute else ""
            scene.warnings.add(f"material '{shown(name)}': {what} '{shown(raw)}' was not found{hint}")
        return textures.attach(ImageRef(raw, resolved))

    props: dict = {
        "ms3d_material_index": index,  # its place in the file, which an export keeps
        "ms3d_ambient": [float(x) for x in mat.ambient],
        # As stored, so an unchanged material exports the same numbers (the Principled values clip them).
        "ms3d_diffuse": [float(x) for x in mat.diffuse],
        "ms3d_specular": [float(x) for x in mat.specular],
        "ms3d_emissive": [float(x) for x in mat.emissive],
        "ms3d_shininess": mat.shininess,
        "ms3d_transparency": mat.transparency,
        "ms3d_mode": mat.mode,
    }
    for key, raw in (("ms3d_texture", mat.texture), ("ms3d_alphamap", mat.alphamap)):
        if raw:
            props[key] = raw
    if mat.comment:
        props["ms3d_comment"] = mat.comment
    base = image(mat.texture, "texture")
    alpha_map = image(mat.alphamap, "alpha map")
    return MaterialData(
        name=name,
        base_color=tuple(float(x) for x in diffuse),
        alpha=alpha,
        roughness=_roughness_from_shininess(mat.shininess),
        specular_level=0.5 * spec_max,
        specular_tint=tuple(float(x) for x in (specular / spec_max if spec_max > 0 else np.ones(3))),
        emission_color=tuple(float(x) for x in emissive),
        emission_strength=1.0 if float(emissive.max()) > 0 else 0.0,
        base_texture=base,
        alpha_texture=alpha_map,
        use_texture_alpha=bool(mat.mode & MODE_HAS_ALPHA) and base is not None and alpha_map is None,
        props=props,
    )


def _model_props(model: Ms3dModel) -> dict:
    props: dict = {
        "ms3d_version": model.version,
        "ms3d_fps": model.fps,
        "ms3d_total_frames": model.total_frames,
        "ms3d_current_time": model.current_time,
    }
    if model.vertex_extra is not None:
        props["ms3d_vertex_extra"] = model.vertex_extra.sub_version
    props["ms3d_extended_blocks"] = len(model.extended_blocks)  # how many of the four optional blocks it had
    if model.path:
        props["ms3d_source"] = os.path.basename(model.path)
    if model.model_comment:
        props["ms3d_model_comment"] = model.model_comment
    if model.model_extra:
        props["ms3d_joint_size"] = model.model_extra.joint_size
        props["ms3d_transparency_mode"] = model.model_extra.transparency_mode
        props["ms3d_alpha_ref"] = model.model_extra.alpha_ref
    return props
