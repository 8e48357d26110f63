"""``scripts/bench_floor.py`` compares our import with a lean builder as the floor of the API: that floor only
means something if the lean builder makes what the import makes. It does: the same meshes (vertices, faces,
material slots, UV layers), materials, images, bones and vertex groups."""

from __future__ import annotations

import sys

import pytest
from conftest import ROOT, bpy, sample_path

sys.path.insert(0, str(ROOT / "scripts"))


def _made() -> dict:
    meshes = sorted(
        (
            len(o.data.vertices),
            len(o.data.polygons),
            len(o.data.materials),
            len(o.data.uv_layers),
            tuple(g.name for g in o.vertex_groups),
            tuple(m.type for m in o.modifiers),
        )
        for o in bpy.data.objects
        if o.type == "MESH"
    )
    return {
        "meshes": meshes,
        "materials": len(bpy.data.materials),
        "images": len(bpy.data.images),
        "bones": sorted(b.name for a in bpy.data.armatures for b in a.bones),
    }


@pytest.mark.parametrize(
    "kind, relative",
    [
        ("ms3d", "soulsheng__ms3d-render/Model.ms3d"),
        ("ms3d", "nemox-tut10/rock.ms3d"),
        ("source", "Igrium__portal_nrtx/models/props_pipes/pipe02_45degree01.mdl"),
        ("source", "Lambdagon__lambdas-weapon-pack/models/player/civilian.mdl"),
    ],
)
def test_the_lean_builder_makes_what_an_import_makes(blender, kind, relative):
    import bench_floor

    from io_ms3d_mdl.blender.material import ImageLoader
    from io_ms3d_mdl.errors import Warnings
    from io_ms3d_mdl.scene.load import load_ms3d, load_source
    from io_ms3d_mdl.scene.ms3d.convert import Ms3dOptions
    from io_ms3d_mdl.scene.source.convert import SourceOptions

    path = str(sample_path(kind, relative))
    if kind == "ms3d":
        scene = load_ms3d(path, Ms3dOptions(import_animation=False))
        bpy.ops.import_scene.ms3d(filepath=path, import_animation=False)
    else:
        scene = load_source(path, SourceOptions(import_animations=False))
        bpy.ops.import_scene.source_mdl(filepath=path, import_animations=False)
    imported = _made()
    bpy.ops.wm.read_factory_settings(use_empty=True)
    bench_floor.lean_build(bpy.context, scene, ImageLoader(Warnings()).get)
    assert _made() == imported
    assert imported["meshes"]
