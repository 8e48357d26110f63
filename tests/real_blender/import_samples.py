"""Import real models with the installed extension's operators in a background Blender and describe the result.

Run by ``tests/test_real_blender.py`` (``test_operators_import_real_files``):

    blender --background --python-exit-code 1 --python tests/real_blender/import_samples.py -- OUT.json MODEL...

Each model is imported into an empty scene with ``bpy.ops.import_scene.ms3d`` or ``bpy.ops.import_scene.source_mdl``
as a user would from File > Import; OUT.json gets, per model, the operator's result and what it made. Any
exception fails the run (exit status 1).
"""

from __future__ import annotations

import json
import os
import sys

import bpy

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # Blender runs this file alone
from weight_summary import weight_summary

ADDON = "bl_ext.user_default.io_ms3d_mdl"

out_path, *models = sys.argv[sys.argv.index("--") + 1 :]
module = sys.modules.get(ADDON)
summary: dict = {
    "enabled": ADDON in bpy.context.preferences.addons,
    "module_file": getattr(module, "__file__", None),
    "operators": [hasattr(bpy.types, name) for name in ("IMPORT_SCENE_OT_ms3d", "IMPORT_SCENE_OT_source_mdl")],
    "models": {},
}
for path in models:
    bpy.ops.wm.read_homefile(use_empty=True)
    assert ADDON in bpy.context.preferences.addons, "the extension was disabled"
    operator = bpy.ops.import_scene.ms3d if path.lower().endswith(".ms3d") else bpy.ops.import_scene.source_mdl
    result = operator(filepath=path)
    collision = [o for o in bpy.data.objects if "source_phy_solid" in o]
    render = {o.data for o in bpy.data.objects if o.type == "MESH" and o not in collision}
    summary["models"][os.path.basename(path)] = {
        "result": sorted(result),
        "objects": len(bpy.data.objects),
        "meshes": len(render),
        "collision": [o.display_type for o in collision],
        "armatures": sum(o.type == "ARMATURE" for o in bpy.data.objects),
        "bones": sum(len(a.bones) for a in bpy.data.armatures),
        "actions": len(bpy.data.actions),
        "materials": sorted(m.name for m in bpy.data.materials),
        "images": {i.name: list(i.size) for i in bpy.data.images if i.type == "IMAGE"},
        "triangles": sum(len(p.vertices) - 2 for m in render for p in m.polygons),
        "source_models": sorted(c.name for c in bpy.data.collections if "source_version" in c),
        "weights": weight_summary(),
        "attributes": sorted({a.name for m in render for a in m.attributes if not a.name.startswith(".")}),
    }
with open(out_path, "w") as handle:
    json.dump(summary, handle, indent=2)
print("import_samples: done", flush=True)
