"""File › Export › Source Model Sources (.qc): an imported Source or GoldSrc model, as the user left it in Blender,
back to the QC and SMD/VTA (BMP) files ``studiomdl`` compiles.

The decompiler (``io_ms3d_mdl.decompile``) runs on the model's original file (the path its collection keeps, in an
archive or not), with the reference meshes, body-part options and material names replaced by the Blender objects'
(``decompile.source.edits``): everything the user cannot edit in Blender (hit boxes, sequences with their events,
IK, physics, flex rules) comes from the file, through the very code a plain decompile runs. The objects are read
by the MilkShape export's reader (``scene_reader``) and turned back into Source units and axes by the scale and axes
the import recorded on the collection.

Nothing half-written is left: the files are made in a hidden folder beside the target and moved into place only
when the whole export has succeeded.
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
from contextlib import contextmanager
from pathlib import Path

import bpy
import numpy as np
from bpy.props import BoolProperty, StringProperty
from bpy_extras.io_utils import ExportHelper

from ..decompile import DecompileOptions, decompile
from ..decompile.source.edits import SourceEdits, join
from ..decompile.source.new_actions import BlenderRig
from ..decompile.source.skeleton_edits import MOVED
from ..errors import FormatError
from ..scene.axes import axis_conversion_matrix
from ..scene.ms3d.export import ExportError
from ..scene.types import MeshData, ObjectData, SceneData, SkinData
from .action_keys import stored_step
from .armature import imported_rest
from .bone_identity import BoneIdentities, bone_identities
from .decompile_button import model_file
from .preferences import mounted_games, search_roots
from .scene_builder import find_layer_collection
from .scene_reader import ReadOptions, read_objects, uniform_scale
from .source_switch import body_parts, model_collection, own_objects, skin_refs

ENGINE_VERSIONS = (10, *range(44, 60))  # GoldSrc's MDL version, then Source's


def source_model(context: bpy.types.Context) -> bpy.types.Collection | None:
    """The imported Source or GoldSrc model the active object or collection belongs to."""
    model = model_collection(context)
    try:
        return model if model is not None and int(model["source_version"]) in ENGINE_VERSIONS else None
    except (TypeError, ValueError):
        return None


def gather(context: bpy.types.Context, model: bpy.types.Collection) -> SourceEdits:
    """The model's body-part options, meshes and material names as Blender holds them, in Source units and axes."""
    scale = model.get("source_import_scale")
    axes = model.get("source_import_axes")
    if not scale or axes is None:
        raise ExportError(f"'{model.name}' was imported by an older version that did not record its scale and axes")
    turn = axis_conversion_matrix(str(axes[0]), str(axes[1]))
    known = {n for family in model.get("source_skins", []) for n in family}
    edits = SourceEdits()
    _renamed_in_skins(model, known, edits.renamed)
    table = _skin_table(model, edits.notes)
    wanted: list[tuple[tuple[int, int, int], list[bpy.types.Object]]] = []
    for part in body_parts(model):
        b = int(part["source_bodypart"])
        while len(edits.options) <= b:
            edits.options.append([])
        for m, option in enumerate(part.children):
            meshes = [o for o in option.objects if o.type == "MESH"]
            edits.options[b].append(str(option.get("source_model") or (meshes[0].name if meshes else option.name)))
            if meshes:
                wanted.append(((b, m, 0), meshes))
            for child in option.children:
                if "source_lod" in child:
                    edits.lods = True
                    lod = [o for o in child.objects if o.type == "MESH"]
                    if lod:
                        wanted.append(((b, m, int(child["source_lod"])), lod))
    armatures = [o for o in own_objects(model) if o.type == "ARMATURE"]
    armature = armatures[0] if len(armatures) == 1 else None
    every = [o for _, objects in wanted for o in objects]
    if not every:
        raise ExportError(f"'{model.name}' has no mesh object in its body-part collections")
    ids = _identities(armature, float(scale)) if armature is not None else BoneIdentities()
    deleted = _deleted_bones(armature, ids) if armature is not None else []
    with _all_shown(context, model):
        animation = "ALL" if armature is not None else "NONE"
        # an imported action left as imported is written from the file: its channels are read only when bones
        # were deleted (Blender then poses their children without them, so every one of the model's is written)
        options = ReadOptions(
            animation=animation, shape_keys=True, extra_groups=tuple(deleted), unchanged_channels=bool(deleted)
        )
        scene = read_objects(context, every, armature, options)
    if armature is not None:
        rig = _rig_names(armature, ids, [b.name for b in scene.skeleton.bones], edits)
        edits.bones = rig + deleted  # (weights on a deleted bone's vertex group are read past the skeleton's)
        edits.deleted = deleted
        world = np.array(armature.matrix_world, np.float64)
        _unscaled_keys(scene, world)
        edits.actions = [a for a in scene.actions if not _imported(bpy.data.actions.get(a.name))]
        _edited_actions(scene, edits, every_own=bool(deleted))
        if (edits.actions or edits.edited) and np.linalg.matrix_rank(world[:3, :3]) < 3:
            # (its poses have no place in the file's frames: every bone's rest is flat, none has an inverse)
            raise ExportError(
                f"armature '{armature.name}': its transform flattens it (a scale of 0 on some axis), so its actions"
                " cannot be written; give it a scale other than 0"
            )
        edits.rig = BlenderRig(
            rig,
            np.array([b.parent for b in scene.skeleton.bones], np.int64),
            np.array([b.matrix for b in scene.skeleton.bones], np.float64),
            turn,
            float(scale),
            float(scene.fps or 30.0),
            _imported_rest(armature, [ids.made.get(b.name, "") for b in scene.skeleton.bones]),
            world,
        )
    read = iter(scene.objects)
    for key, objects in wanted:
        parts = []
        for obj in objects:
            data = _to_source(next(read), turn, float(scale))
            parts.append((data, _slot_names(obj, known, edits.renamed, table)))
        edits.meshes[key] = join(parts, objects[0].name)
    edits.skins = _edited_skins(model, table, known, edits.renamed)
    return edits


def _unscaled_keys(scene: SceneData, world: np.ndarray) -> None:
    """The reader's location keys are in world units (× the armature object's uniform scale, for the MilkShape
    export's unscaled bones); an action is posed from the rig's rests, which carry that scale, so each key is taken
    back to the bone's own units, as Blender poses it."""
    scale = uniform_scale(world)
    if scale != 1.0:
        for action in scene.actions:
            for channel in action.channels:
                channel.locations = channel.locations / scale


def _imported_rest(armature: bpy.types.Object, names: list[str]) -> np.ndarray:
    """(B, 4, 4) world-space: each bone's rest as the import made it, NaN for a bone it did not make (an unmoved
    bone's equals the reader's matrix bit for bit: the same float32 values through the same product)."""
    made = imported_rest(armature.data)
    world = np.array(armature.matrix_world, np.float64)
    out = np.full((len(names), 4, 4), np.nan)
    for i, name in enumerate(names):
        if name in made:
            out[i] = world @ made[name]
    return out


def _identities(armature: bpy.types.Object, scale: float) -> BoneIdentities:
    """The bones the import made, under their names now; a rest within the tolerance of a moved bone's is the
    import's (``skeleton_edits.MOVED``, of the model's size)."""
    made = imported_rest(armature.data)
    reach = max((float(np.abs(m[:3, 3]).max()) for m in made.values()), default=0.0)
    return bone_identities(armature.data, MOVED * max(reach, scale))


def _deleted_bones(armature: bpy.types.Object, ids: BoneIdentities) -> list[str]:
    """The bones the import made that the armature no longer has (deleted in edit mode), by their names at import
    (a renamed bone is still the import's: ``bone_identity``)."""
    kept = set(ids.made.values())
    now = {str(b["source_name"]) for b in armature.data.bones if "source_name" in b}  # (a repeated file name)
    return [n for n in imported_rest(armature.data) if n not in kept and n not in now]


def _rig_names(armature: bpy.types.Object, ids: BoneIdentities, names: list[str], edits: SourceEdits) -> list[str]:
    """Each bone by the name the export gives it: its file's name (``source_name`` where Blender's differs), or,
    renamed in Blender, its new name (``edits.renamed_bones`` maps the file's name to it)."""
    out = []
    for name in names:
        bone = armature.data.bones[name]
        then = ids.made.get(name)
        file_name = str(bone.get("source_name", then if then is not None else name))
        if then is None or then == name:
            out.append(file_name)
            continue
        edits.renamed_bones[file_name] = name
        if name in ids.guessed:
            edits.guessed_bones.append(file_name)
        out.append(name)
    return out


def _renamed_in_skins(model: bpy.types.Collection, known: set[str], renamed: dict[str, str]) -> None:
    """A skin-table material no longer under its import name: renamed, found by its texture (it may be used by
    no mesh's slot, only by another family)."""
    names = [n for family in model.get("source_skins", []) for n in family]
    textures = [t for family in model.get("source_skin_textures", []) for t in family]
    for name, texture in zip(names, textures, strict=False):
        if not texture or name in bpy.data.materials or texture in renamed:
            continue
        now = [m for m in bpy.data.materials if m.get("source_texture") == texture and m.name not in known]
        if len(now) == 1:
            renamed[texture] = now[0].name


def _edited_actions(scene: SceneData, edits: SourceEdits, every_own: bool = False) -> None:
    """The imported actions whose keys the user changed: the model's own are written from Blender (keeping the
    sequence's events, activity and everything else from the file); a delta or an included model's is noted.
    ``every_own``: every one of the model's own (bones were deleted: Blender poses their children without them)."""
    for data in scene.actions:
        action = bpy.data.actions.get(data.name)
        if not _imported(action):
            continue
        if not data.keys_changed:
            if every_own and not action.get("source_include") and not action.get("source_delta"):
                edits.edited[str(action["source_animation"])] = (data, _step(action, scene))
            continue
        name = str(action["source_animation"])
        if action.get("source_include"):
            edits.notes.append(
                f"action '{action.name}': changed, but its animation '{name}' comes from the included model"
                f" '{action['source_include']}'; the QC includes that model's own (a copy under a new name is a new"
                " sequence)"
            )
        elif action.get("source_delta"):
            edits.notes.append(
                f"action '{action.name}': changed, but '{name}' is a delta animation; the file's is written"
                " (a copy under a new name is a new sequence)"
            )
        else:
            edits.edited[name] = (data, _step(action, scene))


def _step(action: bpy.types.Action, scene: SceneData) -> float:
    """The Blender frames one of the file's frames spans in an imported action."""
    fps = float(action.get("source_fps") or 0.0)
    return float(stored_step(action) or ((scene.fps or 30.0) / fps if fps > 0 else 1.0))


def _imported(action: bpy.types.Action | None) -> bool:
    """An action the import made from a file's animation (named after it, or that name numbered by Blender when a
    second import asked for it): the file's own data is written for it. A copy renamed is a new action."""
    made = action.get("source_animation") if action is not None else None
    return made is not None and re.fullmatch(re.escape(str(made)) + r"(\.\d{3,})?", action.name) is not None


def _slot_names(
    obj: bpy.types.Object, known: set[str], renamed: dict[str, str], table: list[list[bpy.types.Material | None]]
) -> list[str]:
    """Each slot's material as the SMD names it: family 0's material of the slot's skin-table column (the slot shows
    the active family's; a $texturegroup's first row is what the meshes name), else the slot's own."""
    names = []
    refs = skin_refs(obj)
    for i, slot in enumerate(obj.material_slots):
        mat = slot.material
        if mat is None:
            raise ExportError(f"'{obj.name}': material slot {i + 1} is empty (an SMD names a material per face)")
        ref = refs[i] if i < len(refs) else -1
        if table and 0 <= ref < len(table[0]) and table[0][ref] is not None:
            mat = table[0][ref]
        names.append(_smd_name(mat, known, renamed))
    return names


def _smd_name(mat: bpy.types.Material, known: set[str], renamed: dict[str, str]) -> str:
    """A material as the SMD and QC name it: the file's texture for an imported material kept as it was, the
    Blender name for a renamed or new one (a renamed one recorded in ``renamed``)."""
    texture = mat.get("source_texture")
    if texture is None or mat.name in known:
        return str(texture if texture is not None else mat.name)
    renamed[str(texture)] = mat.name
    return mat.name


def _skin_table(model: bpy.types.Collection, notes: list[str]) -> list[list[bpy.types.Material | None]]:
    """The skin families as Blender holds them: the collection's table of material names (a family may have been
    added to it from Python), a renamed material found by its texture, and the active family's columns as the
    slots now show them (a material swapped in a slot is that family's change). None: a material that is gone."""
    names = model.get("source_skins") or []
    textures = model.get("source_skin_textures") or []
    by_texture: dict[str, list[bpy.types.Material]] = {}
    for mat in bpy.data.materials:
        if mat.get("source_texture") is not None:
            by_texture.setdefault(str(mat["source_texture"]), []).append(mat)
    table = []
    for f, row in enumerate(names):
        texture_row = list(textures[f]) if f < len(textures) else []
        out = []
        for c, name in enumerate(row):
            mat = bpy.data.materials.get(str(name))
            texture = str(texture_row[c]) if c < len(texture_row) else ""
            if mat is None and texture and len(by_texture.get(texture, [])) == 1:
                mat = by_texture[texture][0]  # renamed since the import
            out.append(mat)
        table.append(out)
    active = int(model.get("source_skin", 0) or 0)
    if not 0 <= active < len(table):
        return table
    swapped: dict[int, bpy.types.Material] = {}
    for obj in own_objects(model):
        for slot, ref in zip(obj.material_slots, skin_refs(obj), strict=False):
            mat = slot.material
            if mat is None or not 0 <= ref < len(table[active]) or mat == table[active][ref]:
                continue
            if swapped.setdefault(ref, mat) != mat:
                notes.append(
                    f"skin family {active}, column {ref}: slots show both '{swapped[ref].name}' and '{mat.name}';"
                    f" '{swapped[ref].name}' is exported"
                )
    for ref, mat in swapped.items():
        table[active][ref] = mat
    return table


def _edited_skins(
    model: bpy.types.Collection,
    table: list[list[bpy.types.Material | None]],
    known: set[str],
    renamed: dict[str, str],
) -> list[list[str]] | None:
    """The skin families by the names the QC gives them, or None when they are the file's (a renamed material
    alone is not an edit of the table: the decompiler renames it everywhere)."""
    textures = [[str(t) for t in row] for row in model.get("source_skin_textures") or []]
    given = [[str(n) for n in row] for row in model.get("source_skins") or []]

    def name(f: int, c: int, mat: bpy.types.Material | None) -> str:
        if mat is not None:
            return _smd_name(mat, known, renamed)
        if f < len(textures) and c < len(textures[f]):
            return textures[f][c]  # a material gone from Blender: the file's
        return given[f][c]  # a family added from Python, naming a material Blender does not have

    named = [[name(f, c, m) for c, m in enumerate(row)] for f, row in enumerate(table)]
    file_table = [[renamed.get(t, t) for t in row] for row in textures]
    return None if named == file_table else named


def _to_source(obj: ObjectData, turn: np.ndarray, scale: float) -> ObjectData:
    """World space (the import's axes and scale) back to Source's: ``source = turnᵀ · world / scale``."""
    m = obj.mesh

    def points(p: np.ndarray) -> np.ndarray:
        return (np.asarray(p, np.float64) @ turn / scale).astype(np.float32)

    mesh = MeshData(
        name=m.name,
        positions=points(m.positions),
        triangles=m.triangles,
        uvs=m.uvs,
        normals=(np.asarray(m.normals, np.float64) @ turn).astype(np.float32) if m.normals is not None else None,
        material_indices=m.material_indices,
        shape_keys=[(n, points(k)) for n, k in m.shape_keys],
    )
    for what, values in (("vertex", mesh.positions), ("shape key", [k for _, k in mesh.shape_keys])):
        if len(values) and not np.isfinite(np.asarray(values)).all():
            raise ExportError(f"'{obj.name}': a {what} position is not a finite number")
    skin = None if obj.skin is None else SkinData(obj.skin.bone_indices, obj.skin.weights)
    return ObjectData(obj.name, mesh, obj.props, skin=skin)


@contextmanager
def _all_shown(context: bpy.types.Context, model: bpy.types.Collection):
    """Every collection of the model shown while it is read (a hidden option is still exported); as before after."""
    changed = []
    stack = [model]
    while stack:
        coll = stack.pop()
        stack.extend(coll.children)
        layer = find_layer_collection(context.view_layer.layer_collection, coll)
        if layer is not None and (layer.hide_viewport or layer.exclude):
            changed.append((layer, layer.hide_viewport, layer.exclude))
            layer.exclude = False
            layer.hide_viewport = False
    try:
        yield
    finally:
        for layer, hidden, excluded in reversed(changed):
            layer.exclude = excluded
            layer.hide_viewport = hidden


def export_source(context: bpy.types.Context, model: bpy.types.Collection, target: str, overwrite: bool = False):
    """The model's sources into the folder ``target``: written in a hidden folder beside it and moved into place
    once every file is made, so a failure leaves nothing behind. Returns the decompile's result."""
    source = model_file(model)
    if not source:
        raise ExportError(f"'{model.name}' does not record the file it was imported from")
    edits = gather(context, model)
    target_path = Path(os.path.abspath(target))
    target_path.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{target_path.name}.", suffix=".partial", dir=target_path.parent))
    try:
        options = DecompileOptions(search_roots=search_roots(context), mounts=mounted_games(context), edits=edits)
        result = decompile(source, str(staging), options)
        _publish(staging, target_path, result.files, overwrite)
        result.out_dir = str(target_path)
        return result
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def _publish(staging: Path, target: Path, files: list[str], overwrite: bool) -> None:
    """Each made file into ``target``; an existing file is an error (before anything moves) unless ``overwrite``."""
    if target.is_symlink():
        raise ExportError(f"'{target}' is a link; choose a real folder")
    target.mkdir(exist_ok=True)
    if not overwrite:
        taken = [f for f in files if os.path.lexists(target / f)]
        if taken:
            raise ExportError(f"'{target / taken[0]}' exists (export with Overwrite to replace it)")
    real = target.resolve()
    for relative in files:  # every place checked before any file moves: all of the export or none of it
        folder = (target / relative).parent
        if folder.resolve() != (real / relative).parent:  # a folder inside that is a link
            raise ExportError(f"'{folder}' is a link; the export does not write through links")
        _check_nothing_in_the_way(target, target / relative)
    moved: list[Path] = []  # new files, taken back if a move fails (a disk that fills, a permission)
    try:
        for relative in files:
            destination = target / relative
            new = not os.path.lexists(destination)
            destination.parent.mkdir(parents=True, exist_ok=True)
            os.replace(staging / relative, destination)
            if new:
                moved.append(destination)
    except OSError:
        for path in moved:
            path.unlink(missing_ok=True)
        raise


def _check_nothing_in_the_way(target: Path, destination: Path) -> None:
    """A file where the export makes a folder, or a folder where it writes a file, is refused (before any file
    moves: it would fail half-way)."""
    folder = destination.parent
    while folder != target:
        if os.path.lexists(folder) and not folder.is_dir():
            raise ExportError(f"'{folder}' is a file where the export makes a folder (move it, or choose another)")
        folder = folder.parent
    if destination.is_dir() and not destination.is_symlink():
        raise ExportError(f"'{destination}' is a folder where the export writes a file (move it, or choose another)")


class IO_MS3D_MDL_OT_export_source(bpy.types.Operator, ExportHelper):
    """Export the active imported Source model as it is now in Blender: QC and SMD/VTA files for studiomdl, with
    everything Blender does not show (hit boxes, sequences, events, IK, physics, flex rules) from the original file"""

    bl_idname = "export_scene.source_qc"
    bl_label = "Export Source Model Sources"
    bl_options = {"PRESET"}  # noqa: RUF012 - Blender reads a set

    filename_ext = ".qc"
    filter_glob: StringProperty(default="*.qc", options={"HIDDEN"})  # type: ignore[valid-type]
    overwrite: BoolProperty(  # type: ignore[valid-type]
        name="Overwrite", description="Replace files already in the model's folder (default: keep them and stop)"
    )

    @classmethod
    def poll(cls, context: bpy.types.Context) -> bool:
        if source_model(context) is None:
            cls.poll_message_set("the active object or collection is not part of an imported Source or GoldSrc model")
            return False
        return True

    def invoke(self, context: bpy.types.Context, event: bpy.types.Event) -> set[str]:
        model = source_model(context)
        if model is not None and not self.filepath:
            self.filepath = bpy.path.ensure_ext(Path(str(model_file(model) or model.name)).stem, ".qc")
        return super().invoke(context, event)

    def execute(self, context: bpy.types.Context) -> set[str]:
        model = source_model(context)
        if model is None:
            self.report({"ERROR"}, "Select an object of an imported Source or GoldSrc model (its collection)")
            return {"CANCELLED"}
        # The files go into the chosen file's folder; the QC is named after the model's file, as a decompile's
        target = os.path.dirname(os.path.abspath(bpy.path.abspath(self.filepath)))
        try:
            result = export_source(context, model, target, self.overwrite)
        except (ExportError, FormatError) as exc:
            self.report({"ERROR"}, f"Export failed: {exc}")
            return {"CANCELLED"}
        except Exception as exc:  # one message, never a traceback in the user's face
            self.report({"ERROR"}, f"Export failed: '{model.name}': {type(exc).__name__}: {exc}")
            return {"CANCELLED"}
        for warning in result.warnings:
            self.report({"WARNING"}, warning)
        self.report({"INFO"}, f"Exported {model.name}: {len(result.files)} files in {target} (QC: {result.qc})")
        return {"FINISHED"}


def menu_export(self, context: bpy.types.Context) -> None:
    self.layout.operator(IO_MS3D_MDL_OT_export_source.bl_idname, text="Source Model Sources (.qc)")


CLASSES = (IO_MS3D_MDL_OT_export_source,)
