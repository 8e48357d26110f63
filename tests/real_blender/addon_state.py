"""Print (as ``STATE {json}``) whether the installed extension is enabled, where it loads from, what it registered.

blender --background --python-exit-code 1 --python tests/real_blender/addon_state.py
"""

import json
import sys

import bpy

ADDON = "bl_ext.user_default.io_ms3d_mdl"
CLASSES = (
    "IMPORT_SCENE_OT_ms3d",
    "IMPORT_SCENE_OT_source_mdl",
    "IO_MS3D_MDL_PT_source_object",
    "IO_MS3D_MDL_PT_source_collection",
    "IO_MS3D_MDL_PT_source_view3d",
    "IO_MS3D_MDL_OT_browse_game_models",
    "IO_MS3D_MDL_PT_game_models",
)
menu = bpy.types.TOPBAR_MT_file_import._dyn_ui_initialize()  # the functions appended to File > Import
state = {
    "enabled": ADDON in bpy.context.preferences.addons,
    "file": getattr(sys.modules.get(ADDON), "__file__", None),
    "classes": {name: hasattr(bpy.types, name) for name in CLASSES},
    "menu": any(getattr(f, "__module__", "").startswith(ADDON) for f in menu),
    "preferences": bool(ADDON in bpy.context.preferences.addons and bpy.context.preferences.addons[ADDON].preferences),
}
print("STATE", json.dumps(state), flush=True)
