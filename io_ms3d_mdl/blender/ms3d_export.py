"""File > Export > MilkShape 3D (.ms3d): Blender → :mod:`.scene_reader` → :mod:`..scene.ms3d.export` → writer."""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field

import bpy
from bpy.props import BoolProperty, EnumProperty, FloatProperty, StringProperty
from bpy_extras.io_utils import ExportHelper, orientation_helper

from ..filesystem.replace_file import WriteRefused, replace_file, replace_files
from ..formats.ms3d.writer import ms3d_chunks
from ..scene.ms3d.export import ExportError, Ms3dExportOptions, scene_to_ms3d_parts
from ..scene.ms3d.split import part_path
from .operator_ui import draw_panel, report_warnings
from .scene_reader import ReadOptions, read_scene


@dataclass
class ExportResult:
    path: str
    vertices: int = 0  # over all files (a split export writes a vertex two parts use in both)
    triangles: int = 0
    groups: int = 0
    joints: int = 0
    keys: int = 0
    seconds: float = 0.0
    warnings: list[str] = field(default_factory=list)
    paths: list[str] = field(default_factory=list)  # every file written: ``path``, then a split's other parts

    def summary(self) -> str:
        names = [os.path.basename(p) for p in self.paths or [self.path]]
        what = names[0] if len(names) == 1 else f"{len(names)} files ({', '.join(names)})"
        return (
            f"Exported {what}: {self.vertices:,} vertices, {self.triangles:,} triangles, "
            f"{self.groups} groups, {self.joints} joints, {self.keys:,} keys in {self.seconds:.2f} s"
        )


def export_ms3d(
    context: bpy.types.Context, path: str, read: ReadOptions, write: Ms3dExportOptions | None = None
) -> ExportResult:
    """Export and write ``path`` (replaced in one step; nothing is written on failure). With ``write.split``, a
    scene past MilkShape's limits goes to ``path`` and ``NAME_2.ms3d``… beside it, all or none, each of those
    new (an existing one is refused: only ``path`` was chosen). Raises :class:`ExportError` or
    :class:`WriteRefused` with a message for the user."""
    start = time.perf_counter()
    if context.object is not None and context.object.mode != "OBJECT":
        bpy.ops.object.mode_set(mode="OBJECT")  # edit-mode changes reach the mesh only in object mode
    read = ReadOptions(read.selection_only, read.apply_modifiers, read.animation, os.path.dirname(path))
    scene = read_scene(context, read)
    models = scene_to_ms3d_parts(scene, write or Ms3dExportOptions())
    try:
        files = [(part_path(path, n), ms3d_chunks(m)) for n, m in enumerate(models, 1)]
    except ValueError as exc:
        raise ExportError(str(exc)) from None
    if len(files) == 1:
        replace_file(path, files[0][1])
    else:
        replace_files(files, replaceable=[path])
    joints = models[0].joints
    return ExportResult(
        path,
        sum(len(m.vertices) for m in models),
        sum(len(m.triangles) for m in models),
        sum(len(m.groups) for m in models),
        len(joints),
        sum(len(j.rotation_keys) + len(j.position_keys) for j in joints),
        time.perf_counter() - start,
        list(scene.warnings),
        [p for p, _ in files],
    )


@orientation_helper(axis_forward="Z", axis_up="Y")
class EXPORT_SCENE_OT_ms3d(bpy.types.Operator, ExportHelper):
    """Export the scene (or the selection) as a MilkShape 3D model (.ms3d)"""

    bl_idname = "export_scene.ms3d"
    bl_label = "Export MilkShape 3D"
    bl_options = {"PRESET"}  # noqa: RUF012 (Blender reads a plain set)

    filename_ext = ".ms3d"
    filter_glob: StringProperty(default="*.ms3d", options={"HIDDEN"})  # type: ignore[valid-type]

    use_selection: BoolProperty(  # type: ignore[valid-type]
        name="Selected Only", description="Export the selected objects only", default=False
    )
    scale: FloatProperty(  # type: ignore[valid-type]
        name="Scale",
        description="Blender units per MilkShape unit, as on import (the file gets coordinates divided by this)",
        default=1.0,
        min=1e-6,
        max=1e6,
        soft_min=0.001,
        soft_max=1000.0,
    )
    apply_modifiers: BoolProperty(  # type: ignore[valid-type]
        name="Apply Modifiers",
        description="Export meshes as their modifiers make them (Armature modifiers excepted: the rest pose)",
        default=True,
    )
    groups: EnumProperty(  # type: ignore[valid-type]
        name="Groups",
        items=(
            ("OBJECT", "Per Object", "One MilkShape group per object (and per material of an object)"),
            ("MATERIAL", "Per Material", "One MilkShape group per material"),
        ),
        default="OBJECT",
    )
    animation: EnumProperty(  # type: ignore[valid-type]
        name="Animation",
        items=(
            ("NONE", "None", "Joints only, no keys"),
            ("ACTIVE", "Active Action", "The armature's active action (and its clips)"),
            ("ALL", "All Actions", "Every action of the armature, one after another, each a clip in the comment"),
        ),
        default="ACTIVE",
    )
    split_files: BoolProperty(  # type: ignore[valid-type]
        name="Split Over Limits",
        description=(
            "A scene past MilkShape's limits (65,534 vertices or triangles, 255 groups, 128 materials) is written "
            "as several files, NAME.ms3d, NAME_2.ms3d, …, each within them, instead of refused (each file has "
            "the whole skeleton; an existing NAME_2.ms3d… is never replaced)"
        ),
        default=False,
    )
    too_many_influences: EnumProperty(  # type: ignore[valid-type]
        name="Weight Limit",
        description="MilkShape 3D holds four joint weights a vertex: what to do with a vertex that has more",
        items=(
            ("DROP", "Drop Smallest", "Keep a vertex's four largest joint weights (one warning)"),
            ("ERROR", "Refuse", "Stop the export, naming the object"),
        ),
        default="DROP",
    )

    def draw(self, context: bpy.types.Context) -> None:
        layout = self.layout
        layout.use_property_split = True
        layout.use_property_decorate = False
        for name in ("use_selection", "apply_modifiers", "groups", "split_files"):
            layout.prop(self, name)
        draw_panel(layout, self, "Transform", ("scale", "axis_forward", "axis_up"))
        draw_panel(layout, self, "Armature", ("animation", "too_many_influences"))

    def execute(self, context: bpy.types.Context) -> set[str]:
        read = ReadOptions(self.use_selection, self.apply_modifiers, self.animation)
        write = Ms3dExportOptions(
            self.scale, self.axis_forward, self.axis_up, self.groups, self.too_many_influences, split=self.split_files
        )
        try:
            result = export_ms3d(context, self.filepath, read, write)
        except (ExportError, WriteRefused) as exc:
            self.report({"ERROR"}, f"{os.path.basename(self.filepath)}: {exc}")
            return {"CANCELLED"}
        report_warnings(self, result.warnings)
        self.report({"INFO"}, result.summary())
        return {"FINISHED"}


def menu_export(self, context: bpy.types.Context) -> None:
    self.layout.operator(EXPORT_SCENE_OT_ms3d.bl_idname, text="MilkShape 3D (.ms3d)")


CLASSES = (EXPORT_SCENE_OT_ms3d,)
