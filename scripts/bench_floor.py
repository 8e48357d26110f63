"""How close a Python importer can come to Blender's C++ OBJ importer on small models: the floor of the API.

    python scripts/bench_floor.py [--runs 15] [--output FILE.md] [MODEL ...]

For every model under 500 triangles that ``bench.py`` times (MilkShape samples over 5 kB, small Source props), in
one Blender process, alternating, each after a factory reset, against ``wm.obj_import`` of the same geometry:

- **ours**: the whole import (animations off), and **our builder** alone from the scene already read;
- **lean builder**: the fewest ``bpy`` calls that make the same kinds of datablocks from the same scene — a
  collection; meshes by ``foreach_set`` with UVs and material slots; one Principled material each with its image
  node; for rigs an armature in edit mode and the file's weights as vertex groups with an Armature modifier. It
  leaves out what our builder adds on top: custom normals, sharp edges, material values, custom properties, bone
  colours, attachments and hitboxes. Collision solids (``.phy``) it makes as an importer must: in a hidden child
  collection, drawn as wire, each following its bone. On a small model, where each kind of datablock is made a
  handful of times, that is about the least an importer making them can do (not on a large rig: civilian.mdl's
  thousands of distinct weights, added one value at a time, take it to 1.8× where our builder is at 1.05×);
- **reading**: our reading and converting alone, just after a factory reset as in an import, against the OBJ
  importer's *whole* import.

Figures are the fastest of ``--runs`` (the least disturbed by the machine), as ratios to the OBJ importer.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import statistics
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import bench
import numpy as np
from bench_report import report_tables

if TYPE_CHECKING:
    import bpy

    from io_ms3d_mdl.scene.types import SceneData


def small_models() -> list[Path]:
    """The models under 500 triangles of ``bench.py``'s import table."""
    ms3d = sorted((bench.SAMPLES / "ms3d").rglob("*.ms3d"), key=lambda p: p.stat().st_size)
    source = [bench.SAMPLES / "source" / r for r in bench.SMALL_SOURCE]
    files = [f for f in ms3d if f.stat().st_size > 5000] + [f for f in source if f.is_file()]
    return [f for f in files if bench.load_scene(f).triangle_count < 500]


def lean_build(context: bpy.types.Context, scene: SceneData, images: Callable) -> None:
    """The datablocks an import of ``scene`` makes, by the fewest calls (see the module's docstring)."""
    import bpy
    from mathutils import Matrix

    from io_ms3d_mdl.blender.operator_call import run_operator

    collection = bpy.data.collections.new(scene.name)
    context.scene.collection.children.link(collection)
    armature = None
    if scene.skeleton is not None:
        data = bpy.data.armatures.new(scene.skeleton.name)
        armature = bpy.data.objects.new(scene.skeleton.name, data)
        collection.objects.link(armature)
        context.view_layer.objects.active = armature
        run_operator("object.mode_set", mode="EDIT")
        made = []
        for bone in scene.skeleton.bones:
            eb = data.edit_bones.new(bone.name)
            eb.tail = (0.0, max(bone.length, 1e-3), 0.0)
            eb.matrix = Matrix(bone.matrix.tolist())
            if bone.parent >= 0:
                eb.parent = made[bone.parent]
            made.append(eb)
        run_operator("object.mode_set", mode="OBJECT")
    materials = []
    for m in scene.materials:
        mat = bpy.data.materials.new(m.name)
        if mat.node_tree is None:
            mat.use_nodes = True
        if m.base_texture is not None:
            tree = mat.node_tree
            node = tree.nodes.new("ShaderNodeTexImage")
            bsdf = next(n for n in tree.nodes if n.bl_idname == "ShaderNodeBsdfPrincipled")
            tree.links.new(node.outputs["Color"], bsdf.inputs["Base Color"])
            node.image = images(m.base_texture)
        materials.append(mat)
    solids = None
    for data in scene.objects:
        d = data.mesh
        me = bpy.data.meshes.new(data.name)
        nv, nt = len(d.positions), len(d.triangles)
        me.vertices.add(nv)
        me.loops.add(nt * 3)
        me.polygons.add(nt)
        me.attributes["position"].data.foreach_set("vector", np.ravel(d.positions).astype(np.float32))
        me.attributes[".corner_vert"].data.foreach_set("value", np.ravel(d.triangles).astype(np.int32))
        me.polygons.foreach_set("loop_start", np.arange(0, nt * 3, 3, dtype=np.int32))
        me.update(calc_edges=True)
        if d.material_indices is not None and d.material_indices.any():
            me.attributes.new("material_index", "INT", "FACE").data.foreach_set(
                "value", d.material_indices.astype(np.int32)
            )
        if d.uvs is not None:
            uvs = np.ravel(d.uvs).astype(np.float32)
            me.attributes.new("UVMap", "FLOAT2", "CORNER").data.foreach_set("vector", uvs)
        me.shade_smooth()
        for slot in d.materials:
            me.materials.append(materials[slot] if slot is not None else None)
        obj = bpy.data.objects.new(data.name, me)
        if data.collision:
            if solids is None:
                solids = bpy.data.collections.new(f"{scene.name} physics")
                collection.children.link(solids)
                solids.hide_render = True
                _layer_of(context.view_layer.layer_collection, solids).hide_viewport = True
            solids.objects.link(obj)
            obj.display_type = "WIRE"
        else:
            collection.objects.link(obj)
        if armature is not None and data.skin is not None:
            _lean_weights(obj, scene, data.skin)
            obj.modifiers.new("Armature", "ARMATURE").object = armature
            obj.parent = armature
        elif armature is not None and data.bone in armature.data.bones:  # a solid following its bone
            obj.parent = armature
            obj.parent_type = "BONE"
            obj.parent_bone = data.bone
            bone = armature.data.bones[data.bone]
            obj.matrix_basis = (bone.matrix_local @ Matrix.Translation((0.0, bone.length, 0.0))).inverted_safe()


def _layer_of(layer: bpy.types.LayerCollection, collection: bpy.types.Collection) -> bpy.types.LayerCollection:
    if layer.collection == collection:
        return layer
    return next(found for child in layer.children if (found := _layer_of(child, collection)) is not None)


def _lean_weights(obj: bpy.types.Object, scene: SceneData, skin: object) -> None:
    """One group per bone used, one ``add`` per distinct weight of that bone."""
    ids, weights = skin.bone_indices.ravel(), skin.weights.ravel()
    vertices = np.repeat(np.arange(len(skin.bone_indices)), skin.bone_indices.shape[1])
    used = (ids >= 0) & (ids < len(scene.skeleton.bones)) & (weights > 0)
    ids, weights, vertices = ids[used], weights[used], vertices[used]
    for bone in np.unique(ids).tolist():
        group = obj.vertex_groups.new(name=scene.skeleton.bones[bone].name)
        mine = ids == bone
        for weight in np.unique(weights[mine]).tolist():
            group.add(vertices[mine & (weights == weight)].tolist(), weight, "REPLACE")


def measure(runs: int, work: Path, models: list[Path] | None = None) -> list[tuple[str, int, dict[str, float]]]:
    import bpy
    from addon_entry import load_addon

    addon = load_addon()
    addon.register()
    package = addon.__name__ + ".io_ms3d_mdl"
    loads = importlib.import_module(package + ".scene.load")
    access = importlib.import_module(package + ".access")
    material = importlib.import_module(package + ".blender.material")
    errors = importlib.import_module(package + ".errors")
    options = bench.static_options(package)
    ops = {
        ".ms3d": lambda p: bpy.ops.import_scene.ms3d(filepath=str(p), import_animation=False),
        ".mdl": lambda p: bpy.ops.import_scene.source_mdl(filepath=str(p), import_animations=False),
    }
    state: dict[str, SceneData] = {}

    class IO_MS3D_MDL_OT_bench_lean_build(bpy.types.Operator):
        bl_idname = "io_ms3d_mdl.bench_lean_build"
        bl_label = "Lean Build (benchmark)"
        bl_options = {"REGISTER", "UNDO"}  # noqa: RUF012 - Blender reads the class attribute

        def execute(self, context: bpy.types.Context) -> set[str]:
            lean_build(context, state["scene"], material.ImageLoader(errors.Warnings()).get)
            return {"FINISHED"}

    build_only = bench._build_only_operator(package)
    for cls in (build_only, IO_MS3D_MDL_OT_bench_lean_build):
        bpy.utils.register_class(cls)
    rows = []
    try:
        for path in models or small_models():
            suffix = path.suffix.lower()
            obj = work / (path.stem + ".obj")
            bench.write_obj(bench.load_scene(path), obj)
            scene = loads.LOADERS[suffix](str(path), options[suffix])
            state["scene"] = bench._BUILD_ONLY["scene"] = scene

            def read(p: Path = path, s: str = suffix) -> None:
                access.clear_cache()  # as each import starts
                loads.LOADERS[s](str(p), options[s])

            times = bench.time_each(
                {
                    "ours": lambda p=path, s=suffix: ops[s](p),
                    "builder": bpy.ops.io_ms3d_mdl.bench_build_only,
                    "lean": bpy.ops.io_ms3d_mdl.bench_lean_build,
                    "reading": read,
                    "obj": lambda o=obj: bpy.ops.wm.obj_import(filepath=str(o), forward_axis="Y", up_axis="Z"),
                },
                runs,
                setup=lambda: bpy.ops.wm.read_factory_settings(use_empty=True),
                pick=min,
            )
            rows.append((path.name, scene.triangle_count, times))
    finally:
        for cls in (build_only, IO_MS3D_MDL_OT_bench_lean_build):
            bpy.utils.unregister_class(cls)
        addon.unregister()
    return rows


def table(rows: list[tuple[str, int, dict[str, float]]]) -> list[str]:
    out = [
        "| file | faces | ours | our builder | lean builder | reading | lean builder + reading | OBJ ms |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    ratios = []
    for name, faces, t in rows:
        r = {k: v / t["obj"] for k, v in t.items()}
        r["floor"] = r["lean"] + r["reading"]
        ratios.append(r)
        cells = " | ".join(f"{r[k]:.2f}" for k in ("ours", "builder", "lean", "reading", "floor"))
        out.append(f"| {name} | {faces:,} | {cells} | {t['obj'] * 1000:.2f} |")
    medians = " | ".join(
        f"**{statistics.median(r[k] for r in ratios):.2f}**" for k in ("ours", "builder", "lean", "reading", "floor")
    )
    out.append(f"| **median** | | {medians} | |")
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--output", help="also write the markdown table to this file")
    parser.add_argument("models", nargs="*", type=Path, help="these models instead of the small ones")
    args = parser.parse_args()
    if importlib.util.find_spec("bpy") is None:
        import bootstrap

        return bootstrap.rerun_with_bpy(__file__)
    import bpy

    with tempfile.TemporaryDirectory() as tmp:
        rows = measure(args.runs, Path(tmp), [p.resolve() for p in args.models])
    out = [f"Blender {bpy.app.version_string}, fastest of {args.runs}, ratios to `wm.obj_import`\n", *table(rows)]
    return report_tables(out, args.output)


if __name__ == "__main__":
    from bench_report import leave

    leave(main())
