"""Benchmarks, always side by side with a peer in the same process and run; reports ratios (medians).

    python scripts/bench.py [--runs 7] [--output FILE.md]

(a) Parse: our MS3D reader (and reader + scene conversion) against Assimp's MS3D loader (``assimp-py``) on
    every shared sample and on a large synthetic model.
(b) Import: our full File > Import against Blender's C++ OBJ importer (``wm.obj_import``) loading an OBJ + MTL of
    the same model (positions, per-corner UVs and normals, one object per group, same materials and textures).

(c) Keyframes: the dwarf's action written our way (``keyframe_points.add`` + ``foreach_set``) against the same
    keys written with one ``keyframe_insert`` per key, on the same armature.

Runs A and B alternate so drift hits both; ratios are ours / peer (below 1.0 means we are faster).
"""

from __future__ import annotations

import argparse
import gc
import importlib.util
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SAMPLES = Path(os.environ.get("IO_MS3D_MDL_SHARED", ROOT.parent / "shared")) / "samples" / "ms3d"
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))


def median_pair(
    a: Callable[[], object], b: Callable[[], object], runs: int, setup: Callable[[], object] = lambda: None
) -> tuple[float, float]:
    """Median seconds of ``a`` and ``b``, alternating; ``setup`` runs untimed before every timed call."""
    ta, tb = [], []
    for fn in (a, b):  # warm-up: file cache, first-call imports
        setup()
        fn()
    for _ in range(runs):
        for fn, times in ((a, ta), (b, tb)):
            setup()
            gc.collect()
            start = time.perf_counter()
            fn()
            times.append(time.perf_counter() - start)
    return statistics.median(ta), statistics.median(tb)


def large_model(path: Path, n: int = 181) -> Path:
    """An n×n-vertex grid in one group with UVs and analytic normals; n=181 gives 64,800 triangles, near the
    16-bit triangle limit."""
    import numpy as np
    from ms3d_writer import Group, Material, Ms3dSpec, Triangle, Vertex, write_ms3d

    xs, zs = np.meshgrid(np.linspace(-10, 10, n), np.linspace(-10, 10, n))
    ys = np.sin(xs) * np.cos(zs)
    normal = np.stack([-np.cos(xs) * np.cos(zs), np.ones_like(xs), np.sin(xs) * np.sin(zs)], axis=-1).reshape(-1, 3)
    normal /= np.linalg.norm(normal, axis=1, keepdims=True)
    verts = [Vertex(tuple(float(c) for c in p)) for p in np.stack([xs, ys, zs], axis=-1).reshape(-1, 3)]
    tris = []
    for r in range(n - 1):
        for c in range(n - 1):
            a, b, d, e = r * n + c, r * n + c + 1, (r + 1) * n + c, (r + 1) * n + c + 1
            for idx in ((a, d, b), (b, d, e)):
                uv = [((i % n) / (n - 1), (i // n) / (n - 1)) for i in idx]
                tris.append(
                    Triangle(
                        idx,
                        normals=tuple(tuple(normal[i]) for i in idx),
                        s=tuple(u for u, _ in uv),
                        t=tuple(v for _, v in uv),
                        smoothing_group=1,
                    )
                )
    spec = Ms3dSpec(
        vertices=verts, triangles=tris, groups=[Group("grid", list(range(len(tris))), 0)], materials=[Material("grid")]
    )
    path.write_bytes(write_ms3d(spec))
    return path


def write_obj(ms3d_path: Path, obj_path: Path) -> None:
    """The same model as our import builds, in OBJ + MTL: objects per group, per-corner UVs and normals, and the
    same materials with the same texture files (so both importers create materials and images)."""
    import numpy as np

    from io_ms3d_mdl.formats.ms3d import read_ms3d
    from io_ms3d_mdl.scene.from_ms3d import ms3d_to_scene

    model = read_ms3d(ms3d_path)
    scene = ms3d_to_scene(model)
    mtl = []
    for mat in scene.materials:
        mtl += [f"newmtl {mat.name}", "Kd {:.4f} {:.4f} {:.4f}".format(*mat.base_color), f"d {mat.alpha:.4f}"]
        if mat.base_texture is not None and mat.base_texture.resolved_path:
            mtl.append(f"map_Kd {mat.base_texture.resolved_path}")
    obj_path.with_suffix(".mtl").write_text("\n".join(mtl) + "\n")
    names = {m.name: m for m in scene.materials}
    lines = [f"mtllib {obj_path.with_suffix('.mtl').name}"]
    pos = model.vertices["position"]
    lines += [f"v {x:.6f} {y:.6f} {z:.6f}" for x, y, z in pos]
    tri = model.triangles
    st = np.stack([tri["s"], 1.0 - tri["t"]], axis=2).reshape(-1, 2)
    lines += [f"vt {u:.6f} {v:.6f}" for u, v in st]
    lines += [f"vn {x:.6f} {y:.6f} {z:.6f}" for x, y, z in tri["normals"].reshape(-1, 3)]
    for gi, group in enumerate(model.groups):
        lines.append(f"o {group.name or f'group{gi}'}")
        index = group.material_index
        mat_name = model.materials[index].name if 0 <= index < len(model.materials) else ""
        if mat_name in names:
            lines.append(f"usemtl {mat_name}")
        for t in group.triangle_indices.tolist():
            idx = tri["indices"][t]
            lines.append("f " + " ".join(f"{int(idx[k]) + 1}/{3 * t + k + 1}/{3 * t + k + 1}" for k in range(3)))
    obj_path.write_text("\n".join(lines) + "\n")


def bench_parse(files: list[Path], runs: int) -> list[tuple[str, int, float, float, float]]:
    import assimp_py

    from io_ms3d_mdl.formats.ms3d import read_ms3d
    from io_ms3d_mdl.scene.from_ms3d import ms3d_to_scene

    rows = []
    for path in files:
        try:
            assimp_py.import_file(str(path), 0)
        except Exception as exc:
            print(f"  {path.name}: Assimp cannot load it ({type(exc).__name__}: {exc}); skipped", file=sys.stderr)
            continue
        ours, peer = median_pair(lambda p=path: read_ms3d(p), lambda p=path: assimp_py.import_file(str(p), 0), runs)
        full, _ = median_pair(lambda p=path: ms3d_to_scene(read_ms3d(p)), lambda: None, runs)
        rows.append((path.name, path.stat().st_size, ours / peer, full / peer, peer))
    return rows


def bench_import(files: list[Path], runs: int, workdir: Path) -> list[tuple[str, int, float, float]]:
    import bpy

    spec = importlib.util.spec_from_file_location(
        "io_ms3d_mdl_addon", ROOT / "__init__.py", submodule_search_locations=[str(ROOT)]
    )
    addon = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = addon
    spec.loader.exec_module(addon)
    addon.register()

    def empty() -> None:
        bpy.ops.wm.read_factory_settings(use_empty=True)

    rows = []
    for path in files:
        obj = workdir / (path.stem + ".obj")
        write_obj(path, obj)
        ours, peer = median_pair(
            lambda p=path: bpy.ops.import_scene.ms3d(filepath=str(p)),
            lambda o=obj: bpy.ops.wm.obj_import(filepath=str(o)),
            runs,
            setup=empty,
        )
        empty()
        bpy.ops.import_scene.ms3d(filepath=str(path))
        tris = sum(len(o.data.polygons) for o in bpy.data.objects if o.type == "MESH")
        rows.append((path.name, tris, ours / peer, peer))
    addon.unregister()
    return rows


def bench_keys(path: Path, runs: int) -> tuple[int, float, float]:
    """Keys written per second, ours and one ``keyframe_insert`` per key, building the same action."""
    import bpy

    from io_ms3d_mdl.blender.animation import build_action
    from io_ms3d_mdl.blender.armature import build_armature
    from io_ms3d_mdl.formats.ms3d import read_ms3d
    from io_ms3d_mdl.scene.from_ms3d import ms3d_to_scene

    scene = ms3d_to_scene(read_ms3d(path))
    skeleton, (action,) = scene.skeleton, scene.actions
    state: dict = {}

    def setup() -> None:
        bpy.ops.wm.read_factory_settings(use_empty=True)
        collection = bpy.data.collections.new("bench")
        bpy.context.scene.collection.children.link(collection)
        state["arm"] = build_armature(bpy.context, collection, skeleton)

    def ours() -> None:
        build_action(state["arm"], action, skeleton)

    def one_call_per_key() -> None:
        arm = state["arm"]
        arm.animation_data_create().action = bpy.data.actions.new("baseline")
        for ch in action.channels:
            bone = arm.pose.bones[skeleton.bones[ch.bone].name]
            for frame, q in zip(ch.rotation_frames.tolist(), ch.rotations.tolist(), strict=True):
                bone.rotation_quaternion = q
                for i in range(4):
                    bone.keyframe_insert("rotation_quaternion", index=i, frame=frame, group=bone.name)
            for frame, v in zip(ch.location_frames.tolist(), ch.locations.tolist(), strict=True):
                bone.location = v
                for i in range(3):
                    bone.keyframe_insert("location", index=i, frame=frame, group=bone.name)

    keys = sum(4 * len(c.rotation_frames) + 3 * len(c.location_frames) for c in action.channels)
    a, b = median_pair(ours, one_call_per_key, runs, setup=setup)
    return keys, keys / a, keys / b


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--output", help="also write the markdown tables to this file")
    args = parser.parse_args()
    if importlib.util.find_spec("bpy") is None:
        venv = subprocess.run(
            ["bash", "-c", 'source "$0/scripts/_env.sh" && venv_for 5.0', str(ROOT)],
            check=True,
            capture_output=True,
            text=True,
        ).stdout.strip()
        return subprocess.call([os.path.join(venv, "bin", "python"), __file__, *sys.argv[1:]])
    import bpy

    out: list[str] = []
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        files = sorted(SAMPLES.rglob("*.ms3d"), key=lambda p: p.stat().st_size) if SAMPLES.is_dir() else []
        # Assimp 5.4.3 refuses MS3D files with more than 32,767 triangles, so parsing is compared on a 32k grid.
        mid = large_model(work / "grid_32k_tris.ms3d", 128)
        big = large_model(work / "grid_65k_tris.ms3d", 181)
        out.append(f"Blender {bpy.app.version_string}, Python {sys.version.split()[0]}, median of {args.runs} runs\n")
        out.append("### Parse: ours / Assimp (assimp-py 1.1.0, no post-processing)\n")
        out.append("| file | bytes | read ÷ Assimp | read + scene ÷ Assimp | Assimp ms |")
        out.append("|---|---:|---:|---:|---:|")
        parse_rows = bench_parse([*files, mid], args.runs)
        for name, size, r1, r2, peer in parse_rows:
            out.append(f"| {name} | {size:,} | {r1:.2f} | {r2:.2f} | {peer * 1000:.2f} |")
        out.append(
            f"| **median** | | **{statistics.median(r[2] for r in parse_rows):.2f}** | "
            f"**{statistics.median(r[3] for r in parse_rows):.2f}** | |"
        )
        out.append("\n### Import into Blender: ours / `wm.obj_import` on the same geometry\n")
        out.append("| file | faces | ours ÷ OBJ importer | OBJ ms |")
        out.append("|---|---:|---:|---:|")
        import_rows = bench_import([*(f for f in files if f.stat().st_size > 5000), mid, big], args.runs, work)
        for name, tris, ratio, peer in import_rows:
            out.append(f"| {name} | {tris:,} | {ratio:.2f} | {peer * 1000:.1f} |")
        out.append(f"| **median** | | **{statistics.median(r[2] for r in import_rows):.2f}** | |")
        dwarf = SAMPLES / "akadjoker__H3DView" / "media" / "dwarf.ms3d"
        if dwarf.is_file():
            keys, ours, baseline = bench_keys(dwarf, max(3, args.runs // 3))
            out.append("\n### Keyframes: dwarf.ms3d's action (44 bones), ours vs one `keyframe_insert` per key\n")
            out.append("| keyframe points | ours keys/s | `keyframe_insert` keys/s | speed-up |")
            out.append("|---:|---:|---:|---:|")
            out.append(f"| {keys:,} | {ours:,.0f} | {baseline:,.0f} | {ours / baseline:,.0f}× |")
    text = "\n".join(out) + "\n"
    print("\n" + text)
    if args.output:
        Path(args.output).write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
