"""Add-on preferences: the user's own roots (game or mod folders an import may also read from, searched for
materials and textures after the model's own folders) and whether absolute texture paths are followed."""

from __future__ import annotations

import bpy
from bpy.props import BoolProperty, CollectionProperty, IntProperty, StringProperty

# The add-on's module name: the package two levels up (``<addon>.io_ms3d_mdl.blender``). When the code is loaded
# without its add-on entry (tests, scripts) there are no preferences and nothing extra is searched.
ADDON = __package__.rsplit(".", 2)[0] if __package__ and __package__.count(".") >= 2 else None


class IO_MS3D_MDL_search_root(bpy.types.PropertyGroup):
    path: StringProperty(name="Folder", subtype="DIR_PATH")  # type: ignore[valid-type]


class IO_MS3D_MDL_OT_search_root(bpy.types.Operator):
    """Add or remove a game/mod folder searched for Source materials"""

    bl_idname = "io_ms3d_mdl.search_root"
    bl_label = "Material Search Folder"
    bl_options = {"INTERNAL"}

    remove: IntProperty(default=-1)  # type: ignore[valid-type]

    def execute(self, context: bpy.types.Context) -> set[str]:
        prefs = context.preferences.addons[ADDON].preferences
        if self.remove >= 0:
            prefs.search_roots.remove(self.remove)
        else:
            prefs.search_roots.add()
        return {"FINISHED"}


class IO_MS3D_MDL_preferences(bpy.types.AddonPreferences):
    bl_idname = ADDON or "io_ms3d_mdl"

    search_roots: CollectionProperty(type=IO_MS3D_MDL_search_root)  # type: ignore[valid-type]
    allow_absolute_paths: BoolProperty(  # type: ignore[valid-type]
        name="Follow Absolute Texture Paths",
        description="Load textures that a model names by an absolute path (C:\\..., /...). Only for your own files: "
        "a downloaded model could name any image on this computer, and it would be embedded in exports. "
        "When off, only the file name is looked for in the model's folders",
        default=False,
    )

    def draw(self, context: bpy.types.Context) -> None:
        layout = self.layout
        layout.label(text="Game or mod folders (each holding materials/) searched for materials and textures.")
        layout.label(text="Imports read files only here, in the model's own folder and in its game folder.")
        for i, root in enumerate(self.search_roots):
            row = layout.row(align=True)
            row.prop(root, "path", text="")
            row.operator(IO_MS3D_MDL_OT_search_root.bl_idname, text="", icon="X").remove = i
        layout.operator(IO_MS3D_MDL_OT_search_root.bl_idname, text="Add Folder", icon="ADD")
        layout.prop(self, "allow_absolute_paths")


def _preferences(context: bpy.types.Context) -> bpy.types.AddonPreferences | None:
    addon = context.preferences.addons.get(ADDON) if ADDON else None
    return addon.preferences if addon is not None else None


def search_roots(context: bpy.types.Context) -> tuple[str, ...]:
    prefs = _preferences(context)
    return tuple(bpy.path.abspath(r.path) for r in prefs.search_roots if r.path) if prefs else ()


def allow_absolute_paths(context: bpy.types.Context) -> bool:
    prefs = _preferences(context)
    return bool(prefs and prefs.allow_absolute_paths)


CLASSES = (IO_MS3D_MDL_search_root, IO_MS3D_MDL_OT_search_root, IO_MS3D_MDL_preferences) if ADDON else ()
