"""File > Import operators and drag-and-drop handlers."""

from __future__ import annotations

import os

import bpy
from bpy.props import BoolProperty, CollectionProperty, EnumProperty, FloatProperty, IntProperty, StringProperty
from bpy_extras.io_utils import ImportHelper, orientation_helper, poll_file_object_drop

from ..scene.load import load_ms3d, load_source
from ..scene.ms3d.convert import Ms3dOptions
from ..scene.source.convert import INCH, SourceOptions
from .importer import ImportResult, import_files
from .material import texture_output
from .operator_ui import Sections, draw_sections, report_warnings
from .preferences import allow_absolute_paths, mounted_games, search_roots


class _MultiFileImport(ImportHelper):
    """Shared by the importers: several files from the browser, one dropped file with an options popup."""

    work_limit: FloatProperty(  # type: ignore[valid-type]
        name="Work Limit",
        description="Multiplies every work budget (file size, decoded frames, vertices, pixels). A file beyond its "
        "budget is refused with a message naming the limit; raise this only for files you trust",
        default=1.0,
        min=0.01,
        max=1000.0,
        soft_max=100.0,
    )
    files: CollectionProperty(type=bpy.types.OperatorFileListElement, options={"HIDDEN", "SKIP_SAVE"})  # type: ignore[valid-type]
    directory: StringProperty(subtype="DIR_PATH", options={"HIDDEN", "SKIP_SAVE"})  # type: ignore[valid-type]

    def invoke(self, context: bpy.types.Context, event: bpy.types.Event) -> set[str]:
        return self.invoke_popup(context)

    def selected_paths(self) -> list[str]:
        names = [f.name for f in self.files if f.name]
        if names and self.directory:
            return [os.path.join(self.directory, n) for n in names]
        return [self.filepath]

    def report_results(self, results: list[ImportResult]) -> set[str]:
        any_ok = any(r.ok for r in results)
        for r in results:
            name = os.path.basename(r.path)
            report_warnings(self, r.warnings, f"{name}: ")
            # An ERROR report makes bpy.ops raise; keep it for when nothing could be imported.
            self.report({"INFO"} if r.ok else ({"WARNING"} if any_ok else {"ERROR"}), r.summary())
        return {"FINISHED"} if any_ok else {"CANCELLED"}


@orientation_helper(axis_forward="Z", axis_up="Y")
class IMPORT_SCENE_OT_ms3d(bpy.types.Operator, _MultiFileImport):
    """Import MilkShape 3D models (.ms3d)"""

    bl_idname = "import_scene.ms3d"
    bl_label = "Import MilkShape 3D"
    bl_options = {"REGISTER", "UNDO", "PRESET"}

    filename_ext = ".ms3d"
    filter_glob: StringProperty(default="*.ms3d", options={"HIDDEN"})  # type: ignore[valid-type]

    scale: FloatProperty(  # type: ignore[valid-type]
        name="Scale",
        description="Multiply every coordinate by this",
        default=1.0,
        min=1e-6,
        max=1e6,
        soft_min=0.001,
        soft_max=1000.0,
    )
    split_groups: EnumProperty(  # type: ignore[valid-type]
        name="Objects",
        items=(
            ("GROUPS", "One per Group", "One object per MilkShape group, named after it"),
            ("SINGLE", "Single Object", "One object for the whole model, with a material slot per material"),
        ),
        default="GROUPS",
    )
    use_normals: BoolProperty(  # type: ignore[valid-type]
        name="Stored Normals", description="Use the file's per-corner normals as custom normals", default=True
    )
    use_smoothing_groups: BoolProperty(  # type: ignore[valid-type]
        name="Smoothing Groups", description="Mark edges between different smoothing groups sharp", default=True
    )
    import_animation: BoolProperty(  # type: ignore[valid-type]
        name="Animation",
        description="Import the keyframes as an action, set the scene's frame rate and range, and mark named clips",
        default=True,
    )
    bone_tails: EnumProperty(  # type: ignore[valid-type]
        name="Bone Tails",
        items=(
            ("CHILD", "Toward Child", "Bones point at their children, so the rig reads like a skeleton"),
            ("AXIS", "Joint Axis", "Bones point along each joint's local X axis"),
        ),
        description="How bones are drawn; the deformation is identical either way",
        default="CHILD",
    )
    find_textures: BoolProperty(  # type: ignore[valid-type]
        name="Find Textures",
        description="Look for texture files next to the model and in a Textures folder (case-insensitive)",
        default=True,
    )

    def import_options(self) -> Ms3dOptions:
        return Ms3dOptions(
            scale=self.scale,
            axis_forward=self.axis_forward,
            axis_up=self.axis_up,
            split_groups=self.split_groups == "GROUPS",
            use_normals=self.use_normals,
            use_smoothing_groups=self.use_smoothing_groups,
            find_textures=self.find_textures,
            import_animation=self.import_animation,
            bone_tails=self.bone_tails,
            search_roots=search_roots(bpy.context),
            mounts=mounted_games(bpy.context),
            allow_absolute_paths=allow_absolute_paths(bpy.context),
            work_limit=self.work_limit,
        )

    def execute(self, context: bpy.types.Context) -> set[str]:
        options = self.import_options()
        results = import_files(context, self.selected_paths(), lambda path: load_ms3d(path, options))
        return self.report_results(results)

    def draw(self, context: bpy.types.Context) -> None:
        draw_sections(self.layout, self, MS3D_SECTIONS)


MS3D_SECTIONS: Sections = (
    ("Transform", ("scale", "axis_forward", "axis_up")),
    ("Geometry", ("split_groups", "use_normals", "use_smoothing_groups")),
    ("Materials", ("find_textures",)),
    ("Armature", ("bone_tails", "import_animation")),
    ("Limits", ("work_limit",)),
)


UNIT_SCALES = {"INCHES": INCH, "HAMMER": 0.01905, "SOURCE": 1.0}


@orientation_helper(axis_forward="Y", axis_up="Z")
class IMPORT_SCENE_OT_source_mdl(bpy.types.Operator, _MultiFileImport):
    """Import Valve Source models (.mdl with .vvd and .vtx)"""

    bl_idname = "import_scene.source_mdl"
    bl_label = "Import Source Model"
    bl_options = {"REGISTER", "UNDO", "PRESET"}

    filename_ext = ".mdl"
    filter_glob: StringProperty(default="*.mdl", options={"HIDDEN"})  # type: ignore[valid-type]

    units: EnumProperty(  # type: ignore[valid-type]
        name="Units",
        items=(
            ("INCHES", "Inches", "Metres from Source's physics units: 1 unit = 1 inch = 0.0254 m"),
            ("HAMMER", "Hammer", "Metres at Hammer's scale: 16 units per foot, 0.01905 m per unit, as SourceIO uses"),
            ("SOURCE", "Unscaled", "Keep Source units as they are (1 unit = 1 Blender unit)"),
            ("CUSTOM", "Custom", "Use the Scale below"),
        ),
        description="How Source units become Blender metres",
        default="INCHES",
    )
    scale: FloatProperty(  # type: ignore[valid-type]
        name="Scale",
        description="Metres per Source unit (used when Units is Custom)",
        default=INCH,
        min=1e-6,
        max=1e6,
        soft_min=0.001,
        soft_max=100.0,
        precision=5,
        step=0.1,
    )
    lod: IntProperty(
        name="LOD", description="Level of detail to import (0 is the most detailed)", default=0, min=0, max=7
    )  # type: ignore[valid-type]
    all_lods: BoolProperty(
        name="All LODs", description="Import every LOD, the lower ones into hidden collections", default=False
    )  # type: ignore[valid-type]
    bone_orientation: EnumProperty(  # type: ignore[valid-type]
        name="Bones",
        items=(
            ("CHILD", "Toward Child", "Bones point at their children, as artists expect"),
            ("SOURCE", "Source Axes", "Keep each bone's Source orientation (for round trips)"),
        ),
        default="CHILD",
    )
    armature_for_static_props: BoolProperty(  # type: ignore[valid-type]
        name="Rig Props",
        description="Give single-bone models (static props) an armature too; by default they import as plain meshes",
        default=False,
    )
    import_attachments: BoolProperty(  # type: ignore[valid-type]
        name="Attachments",
        description="Attachment points and eyeballs as empties following their bones",
        default=True,
    )
    import_hitboxes: BoolProperty(  # type: ignore[valid-type]
        name="Hitboxes", description="Hitboxes as box empties following their bones", default=False
    )
    import_physics: BoolProperty(  # type: ignore[valid-type]
        name="Collision",
        description="The .phy collision solids as wireframe meshes following their bones, in a hidden collection",
        default=True,
    )
    import_animations: BoolProperty(  # type: ignore[valid-type]
        name="Animations",
        description="Offer the model's animations (its own, its .ani file's and its includes') in the Source panel's "
        "list, where a click builds and plays one",
        default=True,
    )
    animations: EnumProperty(  # type: ignore[valid-type]
        name="Build",
        description="Which animations become actions during the import (the others build when picked in the list)",
        items=(
            ("DEFAULT", "Default", "Only the default sequence (what the game plays first): fastest"),
            ("OWN", "Own", "The model's own animations (and its .ani file's), one NLA track each"),
            ("ALL", "All", "Also those of its included models: for conversions that need every action"),
            ("NONE", "None", "Build nothing now; pick animations from the list later"),
        ),
        default="DEFAULT",
    )
    find_materials: BoolProperty(  # type: ignore[valid-type]
        name="Game Materials",
        description="Build materials from the VMT and VTF files under the model's game folder and the folders listed "
        "in the add-on's preferences",
        default=True,
    )
    texture_output: EnumProperty(  # type: ignore[valid-type]
        name="Textures",
        items=(
            ("PACK", "Pack into .blend", "Decoded textures are packed into the .blend file"),
            (
                "PNG",
                "PNG Files",
                "Decoded textures are written as PNG files into a 'textures' folder beside the .blend "
                "(packed when the .blend is not saved yet)",
            ),
        ),
        default="PACK",
    )

    def import_options(self) -> SourceOptions:
        return SourceOptions(
            scale=UNIT_SCALES.get(self.units, self.scale),
            lod=-1 if self.all_lods else self.lod,
            bone_orientation=self.bone_orientation,
            import_attachments=self.import_attachments,
            import_hitboxes=self.import_hitboxes,
            import_physics=self.import_physics,
            armature_for_static_props=self.armature_for_static_props,
            import_animations=self.import_animations,
            animations=self.animations,
            find_materials=self.find_materials,
            search_roots=search_roots(bpy.context),
            mounts=mounted_games(bpy.context),
            work_limit=self.work_limit,
            axis_forward=self.axis_forward,
            axis_up=self.axis_up,
        )

    def execute(self, context: bpy.types.Context) -> set[str]:
        options = self.import_options()
        png_folder = None
        if self.texture_output == "PNG" and bpy.data.filepath:
            png_folder = os.path.join(os.path.dirname(bpy.data.filepath), "textures")
        with texture_output(png_folder):
            results = import_files(context, self.selected_paths(), lambda p: load_source(p, options))
        return self.report_results(results)

    def draw(self, context: bpy.types.Context) -> None:
        draw_sections(self.layout, self, SOURCE_SECTIONS)


# The game browser shows these options too, in this order (game_browser.py).
SOURCE_SECTIONS: Sections = (
    ("Transform", ("units", "scale", "axis_forward", "axis_up")),
    ("Geometry", ("lod", "all_lods")),
    ("Armature", ("bone_orientation", "armature_for_static_props", "import_animations", "animations")),
    ("Materials", ("find_materials", "texture_output")),
    ("Extras", ("import_attachments", "import_hitboxes", "import_physics")),
    ("Limits", ("work_limit",)),
)


class _DropOnViewport:
    """Both file handlers accept files dropped on the 3D Viewport (and the Outliner), as Blender's own do."""

    @classmethod
    def poll_drop(cls, context: bpy.types.Context) -> bool:
        return poll_file_object_drop(context)


class IO_FH_source_mdl(bpy.types.FileHandler, _DropOnViewport):
    bl_idname = "IO_FH_source_mdl"
    bl_label = "Source Model"
    bl_import_operator = "import_scene.source_mdl"
    bl_file_extensions = ".mdl"


class IO_FH_ms3d(bpy.types.FileHandler, _DropOnViewport):
    bl_idname = "IO_FH_ms3d"
    bl_label = "MilkShape 3D"
    bl_import_operator = "import_scene.ms3d"
    bl_file_extensions = ".ms3d"


def menu_import(self: bpy.types.Menu, context: bpy.types.Context) -> None:
    self.layout.operator(IMPORT_SCENE_OT_ms3d.bl_idname, text="MilkShape 3D (.ms3d)")
    self.layout.operator(IMPORT_SCENE_OT_source_mdl.bl_idname, text="Source Model (.mdl)")
    self.layout.operator("io_ms3d_mdl.browse_game_models", text="Game Models (Source, VPK, GMA)...")


CLASSES = (IMPORT_SCENE_OT_ms3d, IO_FH_ms3d, IMPORT_SCENE_OT_source_mdl, IO_FH_source_mdl)
