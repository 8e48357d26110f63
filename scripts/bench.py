"""Benchmarks, always side by side with a peer in the same process and run; reports ratios (medians).

    python scripts/bench.py [--runs 9] [--output FILE.md]

(a) MilkShape parse: our reader (and reader + scene conversion) against Assimp's MS3D loader (``assimp-py``)
    on every shared sample and a large synthetic grid.
(b) Source parse: our MDL + VVD + VTX readers against ``valvemdl`` reading the same three files.
(c) Import: our File > Import against Blender's C++ OBJ importer (``wm.obj_import``) loading an OBJ + MTL of the
    same objects (positions, per-corner UVs and normals, materials and texture files), for MilkShape samples,
    synthetic grids and the Source ``civilian.mdl``.
(d) Keyframes: dwarf.ms3d's action written our way (``keyframe_points.add`` + ``foreach_set``) against the same
    keys written with one ``keyframe_insert`` per key, on the same armature.

Runs A and B alternate so drift hits both; ratios are ours / peer (below 1.0 means we are faster).
"""

from __future__ import annotations

import argparse
import gc
import importlib.util
import io
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SAMPLES = Path(os.environ.get("IO_MS3D_MDL_SHARED", ROOT.parent / "shared")) / "samples"
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

from io_ms3d_mdl.scene.types import SceneData  # noqa: E402 - after the path set-up


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


def load_scene(path: Path) -> SceneData:
    from io_ms3d_mdl.formats.ms3d import read_ms3d
    from io_ms3d_mdl.scene.from_ms3d import ms3d_to_scene
    from io_ms3d_mdl.scene.from_source import SourceOptions
    from io_ms3d_mdl.scene.load import load_source

    if path.suffix.lower() == ".mdl":
        return load_source(str(path), SourceOptions())
    return ms3d_to_scene(read_ms3d(path))


def write_obj(scene: SceneData, obj_path: Path) -> None:
    """The same objects our import builds, in OBJ + MTL: positions, per-corner UVs and normals, the same materials
    and texture files. Coordinates are already in Blender's axes; import it with forward Y / up Z."""
    import numpy as np

    mtl = []
    for mat in scene.materials:
        mtl += [f"newmtl {mat.name}", "Kd {:.4f} {:.4f} {:.4f}".format(*mat.base_color), f"d {mat.alpha:.4f}"]
        if mat.base_texture is not None and mat.base_texture.resolved_path:
            mtl.append(f"map_Kd {os.path.relpath(mat.base_texture.resolved_path, obj_path.parent)}")
    obj_path.with_suffix(".mtl").write_text("\n".join(mtl) + "\n")
    lines = [f"mtllib {obj_path.with_suffix('.mtl').name}"]
    v_base = vt_base = 1
    for obj in scene.objects:
        mesh = obj.mesh
        lines.append(f"o {obj.name}")
        lines += [f"v {x:.6f} {y:.6f} {z:.6f}" for x, y, z in mesh.positions]
        uvs = mesh.uvs if mesh.uvs is not None else np.zeros((len(mesh.triangles) * 3, 2))
        normals = mesh.normals if mesh.normals is not None else np.tile((0.0, 0.0, 1.0), (len(uvs), 1))
        lines += [f"vt {u:.6f} {v:.6f}" for u, v in uvs]
        lines += [f"vn {x:.6f} {y:.6f} {z:.6f}" for x, y, z in normals]
        slots = mesh.material_indices if mesh.material_indices is not None else np.zeros(len(mesh.triangles), int)
        current = None
        for t, (tri, slot) in enumerate(zip(mesh.triangles.tolist(), slots.tolist(), strict=True)):
            material = mesh.materials[slot] if slot < len(mesh.materials) else None
            if material is not None and material != current:
                lines.append(f"usemtl {scene.materials[material].name}")
                current = material
            lines.append(
                "f " + " ".join(f"{tri[k] + v_base}/{3 * t + k + vt_base}/{3 * t + k + vt_base}" for k in range(3))
            )
        v_base += len(mesh.positions)
        vt_base += len(uvs)
    obj_path.write_text("\n".join(lines) + "\n")


def bench_ms3d_parse(files: list[Path], runs: int) -> list[tuple[str, int, float, float, float]]:
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


def bench_source_parse(files: list[Path], runs: int) -> list[tuple[str, int, float, float]]:
    """Our three readers against valvemdl reading the same MDL, VVD and VTX (its sidecar lookup is
    case-sensitive, so a model whose companions differ in case is reported, not timed)."""
    from valvemdl import Mdl

    from io_ms3d_mdl.formats.source import find_sidecars, read_mdl, read_vtx, read_vvd

    def ours(path: Path) -> None:
        read_mdl(path)
        sidecars = find_sidecars(str(path))
        if sidecars.vvd and sidecars.vtx:
            read_vvd(sidecars.vvd)
            read_vtx(sidecars.vtx)

    def peer(path: Path) -> None:
        model = Mdl(str(path))
        if find_sidecars(str(path)).vvd:
            model.vvd, model.vtx  # noqa: B018 - the properties parse the sidecars

    rows = []
    for path in files:
        try:
            peer(path)
        except Exception as exc:
            print(f"  {path.name}: valvemdl cannot load it ({type(exc).__name__}: {exc}); skipped", file=sys.stderr)
            continue
        a, b = median_pair(lambda p=path: ours(p), lambda p=path: peer(p), runs)
        size = sum(
            f.stat().st_size for f in path.parent.iterdir() if f.name.lower().startswith(path.stem.lower() + ".")
        )
        rows.append((path.name, size, a / b, b))
    return rows


def _fcurves(action: object) -> list:
    """An action's F-curves on 4.2 and on slotted actions (4.4+)."""
    if hasattr(action, "layers"):
        bags = [bag for layer in action.layers for strip in layer.strips for bag in strip.channelbags]
        return [fc for bag in bags for fc in bag.fcurves]
    return list(action.fcurves)


def bench_import(files: list[Path], runs: int, workdir: Path) -> list[tuple[str, int, str, float, float]]:
    import bpy
    from addon_entry import load_addon

    addon = load_addon()
    addon.register()
    try:

        def empty() -> None:
            bpy.ops.wm.read_factory_settings(use_empty=True)

        # The OBJ side is geometry: Source models are imported without their (included) animations here; animation
        # import is measured on its own below.
        ops = {
            ".ms3d": bpy.ops.import_scene.ms3d,
            ".mdl": lambda **kw: bpy.ops.import_scene.source_mdl(import_animations=False, **kw),
        }
        rows = []
        for path in files:
            obj = workdir / (path.stem + ".obj")
            write_obj(load_scene(path), obj)
            op = ops[path.suffix.lower()]
            ours, peer = median_pair(
                lambda p=path, op=op: op(filepath=str(p)),
                lambda o=obj: bpy.ops.wm.obj_import(filepath=str(o), forward_axis="Y", up_axis="Z"),
                runs,
                setup=empty,
            )
            empty()
            op(filepath=str(path))
            tris = sum(len(o.data.polygons) for o in bpy.data.objects if o.type == "MESH")
            bones = sum(len(o.data.bones) for o in bpy.data.objects if o.type == "ARMATURE")
            keys = sum(len(fc.keyframe_points) for a in bpy.data.actions for fc in _fcurves(a))
            extra = (f"{bones} bones, weights" + (f", {keys:,} keys" if keys else "")) if bones else "—"
            rows.append((path.name, tris, extra, ours / peer, peer))
        return rows
    finally:
        addon.unregister()


def bench_keys(path: Path, runs: int) -> tuple[int, float, float]:
    """Keys written per second, ours and one ``keyframe_insert`` per key, building the same actions (all of the
    model's: one for a MilkShape file, every animation of a Source model)."""
    import bpy

    from io_ms3d_mdl.blender.animation import build_action
    from io_ms3d_mdl.blender.armature import build_armature

    scene = load_scene(path)
    skeleton, actions = scene.skeleton, scene.actions
    state: dict = {}

    def setup() -> None:
        bpy.ops.wm.read_factory_settings(use_empty=True)
        collection = bpy.data.collections.new("bench")
        bpy.context.scene.collection.children.link(collection)
        state["arm"] = build_armature(bpy.context, collection, skeleton)

    def ours() -> None:
        for action in actions:
            build_action(state["arm"], action, skeleton)

    def one_call_per_key() -> None:
        for action in actions:
            one_action_per_key(action)

    def one_action_per_key(action) -> None:
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

    keys = sum(4 * len(c.rotation_frames) + 3 * len(c.location_frames) for a in actions for c in a.channels)
    a, b = median_pair(ours, one_call_per_key, runs, setup=setup)
    return keys, keys / a, keys / b


def bench_decode(paths: list[Path], runs: int) -> tuple[int, float]:
    """Bone poses (one bone, one frame: a rotation and a position) decoded per second over every animation."""
    from io_ms3d_mdl.formats.source import read_mdl
    from io_ms3d_mdl.formats.source.animation import decode_animation
    from io_ms3d_mdl.formats.source.includes import load_ani

    models = [(read_mdl(p), p) for p in paths]
    loaded = [(m, load_ani(str(p), m)) for m, p in models]

    def decode_all() -> int:
        return sum(
            decode_animation(m, i, *(ani or (None, None))).rotations.shape[0] * len(m.bones)
            for m, ani in loaded
            for i in range(len(m.animations))
        )

    poses = decode_all()
    seconds, _ = median_pair(decode_all, lambda: None, runs)
    return poses, poses / seconds


def bench_vtf(paths: list[Path], runs: int) -> tuple[int, float, float]:
    """Megapixels per second decoding every texture srctools can read: ours and srctools (the reference)."""
    from srctools.vtf import VTF

    from io_ms3d_mdl.formats.source.vtf import read_vtf_bytes

    blobs = []
    for path in paths:
        data = path.read_bytes()
        try:
            VTF.read(io.BytesIO(data)).get().load()
        except KeyError:  # a format the reference cannot read either
            continue
        blobs.append(data)

    def ours() -> None:
        for data in blobs:
            read_vtf_bytes(data)

    def reference() -> None:
        for data in blobs:
            VTF.read(io.BytesIO(data)).get().load()

    pixels = sum(image.width * image.height for image in (read_vtf_bytes(d) for d in blobs))
    a, b = median_pair(ours, reference, runs)
    return len(blobs), pixels / a / 1e6, pixels / b / 1e6


def keys_table(what: str, measured: tuple[int, float, float]) -> list[str]:
    keys, ours, baseline = measured
    return [
        f"\n### Keyframes: {what}, ours vs one `keyframe_insert` per key\n",
        "| keyframe points | ours keys/s | `keyframe_insert` keys/s | speed-up |",
        "|---:|---:|---:|---:|",
        f"| {keys:,} | {ours:,.0f} | {baseline:,.0f} | {ours / baseline:,.0f}× |",
    ]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=9)
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
    median = statistics.median
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        ms3d = sorted((SAMPLES / "ms3d").rglob("*.ms3d"), key=lambda p: p.stat().st_size) if SAMPLES.is_dir() else []
        # Assimp 5.4.3 refuses MS3D files with more than 32,767 triangles, so parsing is compared on a 32k grid.
        mid = large_model(work / "grid_32k_tris.ms3d", 128)
        big = large_model(work / "grid_65k_tris.ms3d", 181)
        out.append(f"Blender {bpy.app.version_string}, Python {sys.version.split()[0]}, median of {args.runs} runs\n")

        out += [
            "### MilkShape parse: ours / Assimp (assimp-py 1.1.0, no post-processing)\n",
            "| file | bytes | read ÷ Assimp | read + scene ÷ Assimp | Assimp ms |",
            "|---|---:|---:|---:|---:|",
        ]
        rows = bench_ms3d_parse([*ms3d, mid], args.runs)
        out += [f"| {n} | {s:,} | {a:.2f} | {b:.2f} | {p * 1000:.2f} |" for n, s, a, b, p in rows]
        out.append(f"| **median** | | **{median(r[2] for r in rows):.2f}** | **{median(r[3] for r in rows):.2f}** | |")

        source = sorted((SAMPLES / "source").rglob("*.mdl")) if SAMPLES.is_dir() else []
        out += [
            "\n### Source parse: ours / valvemdl 0.0.2 (MDL + VVD + VTX)\n",
            "| model | bytes (all files) | ours ÷ valvemdl | valvemdl ms |",
            "|---|---:|---:|---:|",
        ]
        rows = bench_source_parse(source, args.runs)
        out += [f"| {n} | {s:,} | {a:.3f} | {p * 1000:.1f} |" for n, s, a, p in rows]
        if rows:
            out.append(f"| **median** | | **{median(r[2] for r in rows):.3f}** | |")

        out += [
            "\n### Import into Blender: ours / `wm.obj_import` on the same geometry\n",
            "| file | faces | ours also builds | ours ÷ OBJ importer | OBJ ms |",
            "|---|---:|---|---:|---:|",
        ]
        civilian = SAMPLES / "source/Lambdagon__lambdas-weapon-pack/models/player/civilian.mdl"
        files = [*(f for f in ms3d if f.stat().st_size > 5000), mid, big, *([civilian] if civilian.is_file() else [])]
        rows = bench_import(files, args.runs, work)
        out += [f"| {n} | {t:,} | {x} | {r:.2f} | {p * 1000:.1f} |" for n, t, x, r, p in rows]
        out.append(f"| **median, models without a rig** | | | **{median(r[3] for r in rows if r[2] == '—'):.2f}** | |")
        out.append(f"| **median, all** | | | **{median(r[3] for r in rows):.2f}** | |")

        textures = sorted((SAMPLES / "source").rglob("*.vtf")) if SAMPLES.is_dir() else []
        if textures:
            count, ours_mp, ref_mp = bench_vtf(textures, args.runs)
            out += [
                "\n### VTF decoding: ours vs srctools 2.7.0 (the sample textures it can read)\n",
                "| textures | ours MP/s | srctools MP/s | ours ÷ srctools time |",
                "|---:|---:|---:|---:|",
                f"| {count} | {ours_mp:,.1f} | {ref_mp:,.1f} | {ref_mp / ours_mp:.2f} |",
            ]
        dwarf = SAMPLES / "ms3d/akadjoker__H3DView/media/dwarf.ms3d"
        if dwarf.is_file():
            out += keys_table("dwarf.ms3d's action (44 bones)", bench_keys(dwarf, max(3, args.runs // 3)))
        anims = [
            SAMPLES / "source" / r
            for r in (
                "Lambdagon__lambdas-weapon-pack/models/player/civilian_animations.mdl",
                "bobthecorn2000__Half-Life-2-Brennan/models/humans/male_postures.mdl",
                "siobhan-saoirse__l4d-nextbots/models/ghostanim.mdl",
            )
        ]
        if all(p.is_file() for p in anims):
            poses, rate = bench_decode(anims, args.runs)
            out += [
                "\n### Source animation decoding (236 animations of three models, .ani blocks included)\n",
                "| bone poses decoded | bone poses per second |",
                "|---:|---:|",
                f"| {poses:,} | {rate:,.0f} |",
            ]
            postures = anims[1]
            keys, ours, baseline = bench_keys(postures, max(3, args.runs // 3))
            out += keys_table("male_postures.mdl's 97 actions", (keys, ours, baseline))
            from io_ms3d_mdl.blender import register, unregister

            register()
            try:
                times = []
                for _ in range(3):
                    bpy.ops.wm.read_factory_settings(use_empty=True)
                    start = time.perf_counter()
                    bpy.ops.import_scene.source_mdl(filepath=str(postures))
                    times.append(time.perf_counter() - start)
                out.append(
                    f"\nWhole import of male_postures.mdl (97 actions): {statistics.median(times):.2f} s "
                    f"(median of 3); the same keys through `keyframe_insert` alone take {keys / baseline:.1f} s."
                )
            finally:
                unregister()
    text = "\n".join(out) + "\n"
    print("\n" + text)
    if args.output:
        Path(args.output).write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
