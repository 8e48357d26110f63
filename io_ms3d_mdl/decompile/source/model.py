"""A Source model back to its QC and the SMD/VTA files it names (see ``decompile/__init__.py`` for the API).

Reads exactly what the import reads, through the same confinement and budget: the ``.mdl`` with its ``.vvd``,
``.vtx``, ``.phy``, ``.ani`` and ``$includemodel`` models (``formats.source``); meshes, weights, shape keys and
collision solids come from the import's own scene, in Source units and axes (``scene.source.convert``)."""

from __future__ import annotations

import os

import numpy as np

from ...errors import BudgetExceeded, FormatError
from ...formats.qc import QcWriter
from ...formats.smd import SmdSkeleton, SmdTriangles, write_smd
from ...formats.smd.writer import CORNER_BYTES
from ...formats.source import find_sidecars, read_mdl_bytes, read_mesh_companions, read_physics_companion
from ...formats.source.includes import load_ani, load_includes
from ...scene.rotations import matrix_to_quaternion
from ...scene.source.convert import SourceOptions, source_to_scene
from ..output import safe_stem
from ..registry import DecompileJob
from .angles import quaternion_to_euler
from .animations import default_turn, write_animations
from .bloodlines import VERSION as BLOODLINES
from .bloodlines import bloodlines_details
from .deleted_bones import deleted_note, fold_skin, moved_note
from .details import model_details
from .edits import SourceEdits, remap_bones, settle
from .eyelids import find_eyelids
from .flexes import write_flexes
from .geometry import STATIC_TURN, face_normals, merge, object_triangles
from .new_actions import edited_poses, local_pose, write_new_actions
from .qc import QcParts, bone_world, write_qc
from .renamed_bones import rename_bones
from .skeleton_edits import edited_skeleton, without_deleted
from .stored_names import restore_stored_names


def decompile_source(job: DecompileJob) -> None:
    options, result, output = job.options, job.result, job.output
    warnings = result.warnings
    mdl = read_mdl_bytes(job.data, job.path)
    result.version = mdl.version
    warnings.extend(mdl.warnings)
    sidecars = find_sidecars(job.path)
    vvd, vtx, notes = read_mesh_companions(mdl, sidecars, None if options.lods else 0)
    warnings.extend(notes)
    ani = load_ani(job.path, mdl)
    includes = load_includes(job.path, mdl, warnings) if options.include_animations else []
    phy = None
    if options.physics:
        try:
            phy = read_physics_companion(mdl, sidecars)
        except BudgetExceeded:
            raise
        except FormatError as exc:
            warnings.add(f"the collision model was not decompiled: {exc.message}")
    scene = source_to_scene(
        mdl,
        vvd,
        vtx,
        SourceOptions(
            scale=1.0,
            lod=-1 if options.lods else 0,
            armature_for_static_props=True,
            import_animations=False,
            find_materials=False,
            import_attachments=False,
            import_physics=phy is not None,
        ),
        ani,
        includes,
        phy,
    )
    warnings.extend(scene.warnings)
    if mdl.version == BLOODLINES:
        details = bloodlines_details(job.data, job.path, mdl)
    else:
        details = model_details(job.data, job.path, len(mdl.sequences), mdl.bones, tuple(mdl.animations))
    restore_stored_names(mdl, details)  # from here on, names carry the bytes the model stored
    edits = options.edits if isinstance(options.edits, SourceEdits) else None
    bone_names = rename_bones(list(mdl.bone_names), mdl.bones["parent"], edits)  # an export's, renamed in Blender
    if bone_names.renames:
        mdl.bone_names[:] = bone_names.names
        for inc in includes:  # (their animations find the model's bones by name)
            inc.mdl.bone_names[:] = [bone_names.name(n) for n in inc.mdl.bone_names]
    static = mdl.is_static_prop and len(mdl.bones) == 1
    turn = STATIC_TURN if static else None
    stem = safe_stem(os.path.splitext(os.path.basename(job.path))[0], "model")
    skeleton = SmdSkeleton(list(mdl.bone_names), mdl.bones["parent"].astype(np.int64))
    rest = np.concatenate(
        [
            mdl.bones["pos"].astype(np.float64),
            quaternion_to_euler(mdl.bones["quat"].astype(np.float64)[:, [3, 0, 1, 2]]),
        ],
        axis=1,
    )[None]
    parts = QcParts(mdl=mdl, details=details, stem=stem, turn=turn, vtx=vtx, bone_names=bone_names)
    world = bone_world(mdl)
    deleted = None
    full_skeleton, full_world = skeleton, world
    if edits is not None:  # an export: bones moved, made or deleted in Blender
        warnings.extend(edits.notes)  # (what Blender's side could not carry over)
        edited = edited_skeleton(skeleton, world, rest, edits.rig)
        if edited.new:
            warnings.add(
                f"{edited.new} bones made in Blender are in the SMDs (at their rest in the file's animations), e.g."
                f" '{edited.skeleton.names[-edited.new]}'"
            )
        edited = without_deleted(edited, bone_names.deleted)
        skeleton, world, rest, deleted = edited.skeleton, edited.world, edited.rest, edited.deleted
        full_skeleton, full_world = edited.whole.skeleton, edited.whole.world
        if deleted is not None:
            parts.deleted = deleted
            warnings.add(deleted_note(deleted))
        parts.skeleton, parts.rest = skeleton, rest

    # reference SMDs: one per body-part option and level of detail
    textures = mdl.textures
    family0 = mdl.skins[0].tolist() if len(mdl.skins) else []

    renamed = edits.renamed if edits is not None else {}
    parts.renamed = renamed
    parts.skins = edits.skins if edits is not None else None

    def material(ref: int) -> str:
        t = family0[ref] if 0 <= ref < len(family0) else ref
        name = textures[t] if 0 <= t < len(textures) else f"material{ref}"
        return renamed.get(name, name)

    by_option: dict[tuple[int, int, int], object] = {}
    for obj in scene.objects:
        if obj.collision or "source_bodypart" not in obj.props:
            continue
        key = (obj.props["source_bodypart"], obj.props["source_option"], obj.props["source_lod"])
        by_option[key] = obj
    originals = {key: (obj, [material(r) for r in obj.mesh.material_refs or []]) for key, obj in by_option.items()}
    written = originals
    if edits is not None:  # Blender's objects instead, each keeping the file's values it did not change
        bones = list(full_skeleton.names)
        written = {
            key: (settle(remap_bones(obj, edits.bones, bones), by_option.get(key)), names)
            for key, (obj, names) in edits.meshes.items()
        }
        if not edits.lods:  # the import left the lower levels of detail out: the file's are kept
            written.update({key: v for key, v in originals.items() if key[2] > 0 and key[0] < len(edits.options)})
        parts.options = edits.options
        if deleted is not None:
            warnings.extend(moved_note([obj for obj, _ in written.values()], deleted))
            written = {key: (fold_skin(obj, deleted), names) for key, (obj, names) in written.items()}
    for (b, m, k), (obj, names) in sorted(written.items()):
        model = mdl.body_parts[b].models[m] if m < len(mdl.body_parts[b].models) else None
        name = model.name if model is not None else edits.options[b][m]
        base = os.path.splitext(os.path.basename(name.replace("\\", "/")))[0] or f"{stem}_{b}_{m}"
        relative = output.name(base if k == 0 else f"{base}_lod{k}", ".smd")
        output.check(3 * CORNER_BYTES * len(obj.mesh.triangles), output.root / relative)  # before it is built
        triangles = object_triangles(obj, names, turn)
        with output.open(relative) as stream:
            stats = write_smd(stream, skeleton, rest, triangles)
        if stats.non_finite:
            warnings.add(f"'{relative}': {stats.non_finite} nan/inf values were written as 0")
        parts.references[(b, m, k)] = relative
        if options.flexes and k == 0 and obj.mesh.shape_keys and model is not None:
            lids = find_eyelids(mdl, details.eyeballs.get((b, m), []), warnings)
            parts.flexes[(b, m)] = write_flexes(mdl, model, obj, relative, skeleton, output, warnings, turn, lids)

    # physics
    solids = [o for o in scene.objects if o.collision]
    if solids and phy is not None:
        names = [b.name for b in scene.skeleton.bones] if scene.skeleton else []
        pieces = []
        for obj in solids:
            mesh = obj.mesh
            tris = np.asarray(mesh.triangles, dtype=np.int64)
            positions = np.asarray(mesh.positions, dtype=np.float64)[tris]
            if turn is not None:
                positions = positions @ turn.T
            bone = names.index(obj.bone) if obj.bone in names else 0
            bone = int(deleted.written[bone]) if deleted is not None else bone
            t = len(tris)
            pieces.append(
                SmdTriangles(
                    ["phy"],
                    np.zeros(t, np.int64),
                    positions,
                    face_normals(positions),
                    np.zeros((t, 3, 2)),
                    np.full((t, 3, 1), bone),
                    np.ones((t, 3, 1), np.float32),
                )
            )
        relative = output.name(f"{stem}_physics", ".smd")
        with output.open(relative) as stream:
            write_smd(stream, skeleton, rest, merge(pieces))
        parts.physics = relative
        parts.phy = phy
        parts.solids = solids

    # animations
    if options.animations:
        replaced = {}
        if edits is not None and edits.edited and edits.rig is not None:  # animations the user changed
            animations = [d.name for d in mdl.animations]
            replaced = edited_poses(edits.edited, animations, edits.rig, full_world, full_skeleton)
        parts.animations = write_animations(
            mdl,
            ani,
            includes,
            full_skeleton,
            output,
            warnings,
            replaced=replaced,
            added=_added_rest(full_world, full_skeleton, mdl),
            deleted=deleted,
        )
    if edits is not None and edits.actions and edits.rig is not None:  # actions made in Blender
        own = {d.name for d in mdl.animations} | {q.name for q in mdl.sequences}
        made = [a for a in edits.actions if a.name not in own]
        if made:
            roots = turn is None and np.any(mdl.bones["parent"] < 0)
            root_turn = default_turn(mdl, ani) if roots else None
            parts.new_sequences = write_new_actions(made, edits.rig, world, skeleton, root_turn, output, warnings)
    parts.definebone = options.definebone
    qc = QcWriter(output.checker(f"{stem}.qc"))
    write_qc(qc, parts, warnings)
    if qc.non_finite:
        warnings.add(f"the QC: {qc.non_finite} nan/inf values were written as 0")
    relative = output.name(stem, ".qc")
    output.write(relative, qc.encode())
    result.qc = relative


def _added_rest(world: np.ndarray, skeleton: SmdSkeleton, mdl) -> tuple[np.ndarray, np.ndarray] | None:
    """The bones past the file's (made in Blender) at their rest, local to their parents: (N, 3) positions and
    (N, 4) rotations, for every frame of the file's animations."""
    first = len(mdl.bones)
    if len(skeleton.names) == first:
        return None
    positions, matrices = local_pose(world[None], skeleton)
    return positions[0, first:], matrix_to_quaternion(matrices[0, first:])
