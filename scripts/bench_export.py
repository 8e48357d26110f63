"""Export benchmark, side by side in one process: File > Export > MilkShape 3D against Blender's own C++ OBJ
exporter (``wm.obj_export``) on the same mesh, and the keys' rate. Reports medians and ratios.

    python scripts/bench_export.py [--runs 7] [--cpu] [--output FILE.md]   (also: bench.py --export-only)

(a) A grid of 64,800 triangles (the most MilkShape 3D holds is 65,534) with UVs, smooth normals, one material,
    and, in a second case, an armature of 64 bones weighting every vertex: our export (the operator, file written)
    against ``wm.obj_export`` of the same objects (UVs, normals, materials; the OBJ writes no weights).
(b) Source: metal_box and the rigged civilian imported, then File > Export > Source Model Sources (QC, reference,
    physics and animation SMDs, every file written) against ``wm.obj_export`` of the model's meshes; where
    ``scripts/oracle_bst.py`` set Blender Source Tools up, also against its SMD export of the same meshes.
(c) Keys: 64 bones keyed on every frame of 2,000 (rotation and location; 256,000 MilkShape keys): the export's
    time with them minus its time without, as MilkShape keys per second. The same for the Source export: an
    action made on civilian's 59 bones, written as one animation SMD (118,000 bone poses).
Runs alternate so drift hits both; ratio = ours / OBJ (below 1.0 means we are faster).
"""

from __future__ import annotations

import argparse
import copy
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SAMPLES = Path(os.environ.get("IO_MS3D_MDL_SHARED", ROOT.parent / "shared")) / "samples"
sys.path.insert(0, str(ROOT))

import bpy  # noqa: E402
import numpy as np  # noqa: E402
from bench_report import report_tables  # noqa: E402

from io_ms3d_mdl import blender as addon  # noqa: E402

CELLS = 180  # 180 x 180 quads = 64,800 triangles, 32,761 vertices
BONES = 64
FRAMES = 2000


def grid(rigged: bool) -> None:
    bpy.ops.wm.read_factory_settings(use_empty=True)
    bpy.ops.mesh.primitive_grid_add(x_subdivisions=CELLS, y_subdivisions=CELLS, size=10.0)
    obj = bpy.context.object
    obj.data.shade_smooth()
    obj.data.materials.append(bpy.data.materials.new("Grid"))
    if not rigged:
        return
    bpy.ops.object.armature_add()
    rig = bpy.context.object
    bpy.ops.object.mode_set(mode="EDIT")
    for bone in list(rig.data.edit_bones):
        rig.data.edit_bones.remove(bone)
    for i in range(BONES):
        bone = rig.data.edit_bones.new(f"B{i}")
        bone.head, bone.tail = (i * 0.1, 0, 0), (i * 0.1, 0, 1)
    bpy.ops.object.mode_set(mode="OBJECT")
    co = np.empty(len(obj.data.vertices) * 3, np.float32)
    obj.data.vertices.foreach_get("co", co)
    column = np.minimum(((co[0::3] + 5.0) / 10.0 * BONES).astype(int), BONES - 1)
    for i in range(BONES):  # two weights per vertex: its column's bone at 0.7, the next at 0.3
        obj.vertex_groups.new(name=f"B{i}").add(np.flatnonzero(column == i).tolist(), 0.7, "REPLACE")
    for i in range(BONES):
        obj.vertex_groups[f"B{i}"].add(np.flatnonzero(column == (i - 1) % BONES).tolist(), 0.3, "ADD")
    obj.modifiers.new("Armature", "ARMATURE").object = rig
    bpy.ops.object.select_all(action="SELECT")


def animate() -> int:
    """Every bone keyed on every frame, written in bulk; returns the MilkShape keys it makes."""
    rig = next(o for o in bpy.data.objects if o.type == "ARMATURE")
    key_every_frame(rig)
    return BONES * FRAMES * 2


def key_every_frame(rig: bpy.types.Object) -> None:
    """A new action, the armature's active one, keying each bone's rotation and location on every frame of
    ``FRAMES`` (made in bulk)."""
    from io_ms3d_mdl.blender.animation import curve_factory

    action = bpy.data.actions.new("Long")
    new = curve_factory(action, rig)
    frames = np.arange(1, FRAMES + 1, dtype=np.float32)
    for b, bone in enumerate(rig.pose.bones):
        for path, width in (("rotation_quaternion", 4), ("location", 3)):
            for i in range(width):
                curve = new(f'pose.bones["{bone.name}"].{path}', i, bone.name)
                values = np.sin(frames * 0.01 * (i + 1) + b) * 0.1 + (1.0 if path[0] == "r" and i == 0 else 0)
                co = np.empty(FRAMES * 2, np.float32)
                co[0::2], co[1::2] = frames, values
                curve.keyframe_points.add(FRAMES)
                curve.keyframe_points.foreach_set("co", co)
    rig.animation_data.action = action


def _joint_turns(scene):
    """Each joint's X, as the export computes it (its key conversion needs them)."""
    from io_ms3d_mdl.scene.axes import axis_conversion_matrix
    from io_ms3d_mdl.scene.ms3d import export

    return export._joints(scene, axis_conversion_matrix("Z", "Y"), 1.0, np.eye(3))[1]


CLOCK = time.perf_counter  # --cpu: time.process_time, this process's CPU time (a busy machine's waits left out)


def timed(call) -> float:
    start = CLOCK()
    call()
    return CLOCK() - start


SOURCE_MODELS = (  # imported, then exported to QC + SMD against the OBJ exporter on the same objects
    "Igrium__portal_nrtx/models/props/metal_box.mdl",
    "Lambdagon__lambdas-weapon-pack/models/player/civilian.mdl",
)


def export_tables(runs: int) -> list[str]:
    """(a), (b) and the Source export (an imported model's File > Export > Source Model Sources, every file
    written, against ``wm.obj_export`` of its meshes) as markdown lines."""
    addon.register()
    folder = Path(tempfile.mkdtemp())
    ours_file, obj_file = str(folder / "g.ms3d"), str(folder / "g.obj")
    out = [
        "\n### Export: ours / `wm.obj_export` on the same objects\n",
        "| what | triangles | ours ms | OBJ ms | ours ÷ OBJ |",
        "|---|---:|---:|---:|---:|",
    ]
    for rigged in (False, True):
        grid(rigged)
        a, b = _pair(lambda: bpy.ops.export_scene.ms3d(filepath=ours_file, animation="NONE"), obj_file, runs)
        label = f"MilkShape 3D, grid{' + 64 bones, 2 weights a vertex' if rigged else ''}"
        out.append(f"| {label} | 64,800 | {a * 1000:.1f} | {b * 1000:.1f} | {a / b:.2f} |")
    bst_notes: list[str] = []
    for relative in SOURCE_MODELS:
        path = SAMPLES / "source" / relative
        if not path.is_file():
            continue
        bpy.ops.wm.read_factory_settings(use_empty=True)
        bpy.ops.import_scene.source_mdl(filepath=str(path), import_physics=False)
        model = next(c for c in bpy.data.collections if "source_version" in c)
        meshes = [o for o in model.all_objects if o.type == "MESH"]
        bpy.context.view_layer.objects.active = next((o for o in model.all_objects if o.type == "ARMATURE"), meshes[0])
        for o in bpy.context.view_layer.objects:
            o.select_set(o in meshes)
        triangles = sum(len(o.data.loop_triangles) or len(o.data.polygons) for o in meshes)
        target = folder / path.stem / f"{path.stem}.qc"
        target.parent.mkdir(exist_ok=True)
        a, b = _pair(lambda t=str(target): bpy.ops.export_scene.source_qc(filepath=t, overwrite=True), obj_file, runs)
        label = f"Source QC + SMD, {path.name} (unedited)"
        out.append(f"| {label} | {triangles:,} | {a * 1000:.1f} | {b * 1000:.1f} | {a / b:.2f} |")
        bst = _bst_smd(meshes, folder / "bst", runs)
        if bst is not None:
            bst_notes.append(
                f"{path.name}: Blender Source Tools' SMD export of the same meshes {bst * 1000:.1f} ms, ours (the whole"
                f" QC + SMD set) {a * 1000:.1f} ms: ours ÷ theirs {a / bst:.2f}"
            )
    if bst_notes:
        peer = "Peer for the Source export (Blender Source Tools' SMD exporter, the one most people use): "
        out += ["", peer + "; ".join(bst_notes) + "."]
    source_keys = _source_keys_line(runs, folder)
    if source_keys:
        out += ["", source_keys]
    grid(True)
    out += ["", _keys_line(runs, animate())]
    addon.unregister()
    return out


def _source_keys_line(runs: int, folder: Path) -> str | None:
    """An action made in Blender on the rigged Source model (every bone keyed on every frame of ``FRAMES``), written
    by File > Export > Source Model Sources as one animation SMD: the export's time with it less its time without,
    as bone poses (an SMD line: a position and a rotation) and F-curve points per second."""
    path = SAMPLES / "source" / SOURCE_MODELS[-1]
    if not path.is_file():
        return None
    bpy.ops.wm.read_factory_settings(use_empty=True)
    bpy.ops.import_scene.source_mdl(filepath=str(path), import_physics=False)
    model = next(c for c in bpy.data.collections if "source_version" in c)
    rig = next(o for o in model.all_objects if o.type == "ARMATURE")
    bpy.context.view_layer.objects.active = rig
    target = folder / "keys" / f"{path.stem}.qc"
    target.parent.mkdir(exist_ok=True)
    export = lambda: bpy.ops.export_scene.source_qc(filepath=str(target), overwrite=True)  # noqa: E731
    export()
    without = statistics.median(timed(export) for _ in range(runs))
    key_every_frame(rig)
    export()
    with_keys = statistics.median(timed(export) for _ in range(runs))
    poses, points = len(rig.pose.bones) * FRAMES, len(rig.pose.bones) * 7 * FRAMES
    extra = with_keys - without
    return (
        f"Source keys: an action made in Blender on {path.name} ({len(rig.pose.bones)} bones keyed on every frame of"
        f" {FRAMES:,}: {points:,} F-curve points) exported as an animation SMD of {poses:,} bone poses in"
        f" {extra * 1000:.1f} ms more than the same export without it ({without * 1000:.1f} ms):"
        f" **{poses / extra / 1e6:.2f} M bone poses/s** (a position and a rotation each:"
        f" {2 * poses / extra / 1e6:.2f} M keys/s as MilkShape counts them), {points / extra / 1e6:.2f} M F-curve"
        " points/s."
    )


def _bst_smd(meshes: list, folder: Path, runs: int) -> float | None:
    """The median time of Blender Source Tools' SMD export (``export_scene.smd``, GPL, never part of the project) of
    the scene's meshes, where ``scripts/oracle_bst.py`` set it up; None where it did not. Its export ends with an
    undo step, which frees every Python reference to Blender data: the meshes are found again by name after it."""
    import importlib

    import oracle_bst  # (beside this script)

    target = oracle_bst.target()
    if not (target / "io_scene_valvesource" / "__init__.py").is_file():
        return None
    if str(target) not in sys.path:
        sys.path.insert(0, str(target))
    bst = importlib.import_module("io_scene_valvesource")
    if not hasattr(bpy.types.Scene, "vs"):
        bst.register()
    state = importlib.import_module("io_scene_valvesource.utils").State
    names = [o.name for o in meshes]
    active = bpy.context.view_layer.objects.active.name
    scene = bpy.context.scene
    scene.vs.export_path, scene.vs.export_format = str(folder), "SMD"

    def export() -> None:
        state.update_scene()
        bpy.ops.export_scene.smd(export_scene=True)
        for o in bpy.context.view_layer.objects:  # (the undo step made new objects: selected again by name)
            o.select_set(o.name in names)
        bpy.context.view_layer.objects.active = bpy.data.objects[active]

    export()
    return statistics.median(timed(export) for _ in range(runs))


def _pair(ours, obj_file: str, runs: int) -> tuple[float, float]:
    """Medians of our export and the OBJ exporter's (selected objects), alternating, after one warm-up each."""
    theirs = lambda: bpy.ops.wm.obj_export(filepath=obj_file, export_materials=True, export_selected_objects=True)  # noqa: E731
    ours(), theirs()
    a, b = [], []
    for _ in range(runs):
        a.append(timed(ours))
        b.append(timed(theirs))
    return statistics.median(a), statistics.median(b)


def _keys_line(runs: int, keys: int) -> str:
    curves_points = BONES * 7 * FRAMES
    from io_ms3d_mdl.blender import scene_reader
    from io_ms3d_mdl.formats.ms3d.writer import write_ms3d_bytes
    from io_ms3d_mdl.scene.ms3d import export
    from io_ms3d_mdl.scene.ms3d.export import scene_to_ms3d

    rig = next(o for o in bpy.data.objects if o.type == "ARMATURE")
    options = scene_reader.ReadOptions(animation="ACTIVE")
    reads, converts, writes = [], [], []
    for _ in range(runs):  # the key path alone: read the curves, convert, write (mesh and rig read once)
        scene = scene_reader.read_scene(bpy.context, scene_reader.ReadOptions(animation="NONE"))
        names = [b.name for b in scene.skeleton.bones]
        reads.append(timed(lambda: scene_reader._animation(bpy.context, rig, scene, names, options)))  # noqa: B023
        model = scene_to_ms3d(scene)
        joints = [copy.copy(j) for j in model.joints]
        x = _joint_turns(scene)
        converts.append(timed(lambda: export._key_joints(scene, joints, x, 24.0, 1.0, [])))  # noqa: B023
        model.joints = joints
        writes.append(timed(lambda: write_ms3d_bytes(model)))  # noqa: B023
    r, c, w = (statistics.median(t) for t in (reads, converts, writes))
    total = r + c + w
    return (
        f"MilkShape keys: {curves_points:,} F-curve points (64 bones × 2,000 frames) read in {r * 1000:.1f} ms, "
        f"{keys:,} MilkShape keys converted in {c * 1000:.1f} ms, written (with the mesh) in {w * 1000:.1f} ms: "
        f"**{keys / total / 1e6:.2f} M MilkShape keys/s**, {curves_points / total / 1e6:.2f} M F-curve points/s."
    )


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--cpu", action="store_true", help="time CPU used by this process instead of wall time")
    parser.add_argument("--output", help="also write the markdown tables to this file")
    args = parser.parse_args()
    global CLOCK
    if args.cpu:
        CLOCK = time.process_time
    out = [f"Blender {bpy.app.version_string}, Python {sys.version.split()[0]}, median of {args.runs} runs"]
    return report_tables(out + export_tables(args.runs), args.output)


if __name__ == "__main__":
    from bench_report import leave

    leave(main())
