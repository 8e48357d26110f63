"""GoldSrc (Half-Life 1) import speed, side by side with Blender's OBJ importer on the same geometry.

    python scripts/bench_goldsrc.py [--runs 5] [--output FILE.md]

- Import with the default sequence: our File > Import (``import_scene.source_mdl``) against ``wm.obj_import``
  loading an OBJ + MTL of the same objects (positions, per-corner UVs and normals, materials, the same textures as
  PNG files), for a synthetic 2,000-triangle character with 80 sequences (``tests/goldsrc_writer.py``) and the
  sample characters.
- Every sequence: bone poses (frames × bones, every blend) decoded and converted to pose channels per second
  (``load_source(..., animations="ALL")``, the scene without Blender), and the whole import building every action.

Runs alternate between ours and the peer; figures are medians. Needs the bpy wheel (re-runs itself under the 5.0
environment otherwise).
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from bench_report import report_tables

ROOT = Path(__file__).resolve().parents[1]
SAMPLES = Path(os.environ.get("IO_MS3D_MDL_SHARED", ROOT.parent / "shared")) / "samples" / "goldsrc"
sys.path[:0] = [str(ROOT), str(ROOT / "tests"), str(ROOT / "scripts")]

CHARACTERS = [
    "Pi0h1__halflife/models/hgrunt.mdl",
    "phoenixprojectsoftware__halflifeclassic/models/scientist.mdl",
]


def synthetic_character(folder: Path, triangles: int = 2000, sequences: int = 80, frames: int = 30) -> Path:
    """A 30-bone character of ``triangles`` strip triangles over 4 textures of 256², with ``sequences`` sequences
    of ``frames`` frames whose rotations (and the root's position) move every frame, as captured motion does."""
    from goldsrc_writer import GBodyPart, GBone, GMesh, GModel, GSequence, GSpec, GTexture, write_model_files

    rng = np.random.default_rng(7)
    bones = [GBone("root", -1)] + [GBone(f"bone{i}", (i - 1) // 2, (0, 0, 3.0, 0, 0, 0)) for i in range(1, 30)]
    strips, per = 20, triangles // 20
    verts, vbones, commands_by_mesh = [], [], [[] for _ in range(4)]
    for s in range(strips):
        base = len(verts)
        for k in range(per + 2):
            verts.append((float(k % 2), float(k // 2), float(s)))
            vbones.append(int(rng.integers(0, 30)))
        row = [(base + k, base + k, (k * 7) % 256, (s * 12) % 256) for k in range(per + 2)]
        commands_by_mesh[s % 4].append((1, row))
    meshes = [GMesh(m, commands) for m, commands in enumerate(commands_by_mesh)]
    model = GModel("body", verts, vbones, [(0.0, 0.0, 1.0)] * len(verts), vbones, meshes)
    t = np.arange(frames)
    seqs = []
    for q in range(sequences):
        blend = []
        for b in range(30):
            phase = rng.uniform(0, 6.28, 3)
            rotations = [list((2000 * np.sin(t / 5 + p)).astype(int)) for p in phase]
            position = [list((50 * np.sin(t / 7 + p)).astype(int)) for p in phase] if b == 0 else [None] * 3
            blend.append([*position, *rotations])
        seqs.append(GSequence(f"seq{q:02d}", frames, [blend], fps=30, flags=1))
    spec = GSpec(
        "bench.mdl",
        bones,
        [GBodyPart("body", [model])],
        [GTexture(f"skin{i}.bmp", 256, 256, 0, i) for i in range(4)],
        [[0, 1, 2, 3]],
        seqs,
    )
    return write_model_files(spec, folder / "models", "bench")


def obj_of(path: Path, folder: Path) -> Path:
    """The same objects as an OBJ + MTL with the textures as PNG files beside it."""
    from bench import write_obj

    from io_ms3d_mdl.blender.packed_image import png_bytes
    from io_ms3d_mdl.scene.load import load_source
    from io_ms3d_mdl.scene.source.convert import SourceOptions

    scene = load_source(str(path), SourceOptions(import_animations=False))
    for i, mat in enumerate(scene.materials):
        ref = mat.base_texture
        if ref is not None and ref.pixels is not None:
            png = folder / f"{path.stem}_{i}.png"
            png.write_bytes(png_bytes(ref.pixels))
            ref.resolved_path = str(png)
    obj = folder / (path.stem + ".obj")
    write_obj(scene, obj)
    return obj


def import_rows(paths: list[Path], runs: int, folder: Path) -> list[str]:
    import importlib

    import bpy
    from addon_entry import load_addon
    from bench import _BUILD_ONLY, _build_only_operator, median_pair

    addon = load_addon()
    addon.register()
    package = addon.__name__ + ".io_ms3d_mdl"
    loads = importlib.import_module(package + ".scene.load")
    options = importlib.import_module(package + ".scene.source.convert").SourceOptions()
    build_only = _build_only_operator(package)
    bpy.utils.register_class(build_only)
    rows = []
    try:

        def empty() -> None:
            bpy.ops.wm.read_factory_settings(use_empty=True)

        for path in paths:
            obj = obj_of(path, folder)
            ours, peer = median_pair(
                lambda p=path: bpy.ops.import_scene.source_mdl(filepath=str(p)),
                lambda o=obj: bpy.ops.wm.obj_import(filepath=str(o), forward_axis="Y", up_axis="Z"),
                runs,
                setup=empty,
            )
            _BUILD_ONLY["scene"] = loads.load_source(str(path), options)
            built, again = median_pair(
                bpy.ops.io_ms3d_mdl.bench_build_only,
                lambda o=obj: bpy.ops.wm.obj_import(filepath=str(o), forward_axis="Y", up_axis="Z"),
                runs,
                setup=empty,
            )
            empty()
            bpy.ops.import_scene.source_mdl(filepath=str(path))
            tris = sum(len(o.data.polygons) for o in bpy.data.objects if o.type == "MESH")
            bones = sum(len(o.data.bones) for o in bpy.data.objects if o.type == "ARMATURE")
            rows.append(
                f"| {path.name} | {tris:,} | {bones} bones, the first sequence | {ours / peer:.2f} | "
                f"{built / again:.2f} | {ours * 1000:.0f} | {peer * 1000:.0f} |"
            )
        all_rows = []
        for path in paths:
            times, poses = [], 0
            for _ in range(runs):
                empty()
                start = time.perf_counter()
                bpy.ops.import_scene.source_mdl(filepath=str(path), animations="ALL")
                times.append(time.perf_counter() - start)
            arm = next(o for o in bpy.data.objects if o.type == "ARMATURE")
            poses = sum(int(a["source_frames"]) for a in bpy.data.actions if "source_frames" in a) * len(arm.data.bones)
            all_rows.append((path.name, poses, statistics.median(times)))
        return rows, all_rows
    finally:
        bpy.utils.unregister_class(build_only)
        addon.unregister()


def scene_rates(paths: list[Path], runs: int) -> list[tuple[str, int, int, float]]:
    """(name, actions, bone poses, seconds) of building every sequence's action data without Blender."""
    from io_ms3d_mdl.scene.load import load_source
    from io_ms3d_mdl.scene.source.convert import SourceOptions

    out = []
    for path in paths:
        times = []
        scene = None
        for _ in range(runs + 1):
            start = time.perf_counter()
            scene = load_source(str(path), SourceOptions(animations="ALL"))
            times.append(time.perf_counter() - start)
        base = []
        for _ in range(runs + 1):
            start = time.perf_counter()
            load_source(str(path), SourceOptions(import_animations=False))
            base.append(time.perf_counter() - start)
        bones = len(scene.skeleton.bones)
        poses = sum(int(a.props["source_frames"]) for a in scene.actions) * bones
        seconds = statistics.median(times[1:]) - statistics.median(base[1:])
        out.append((path.name, len(scene.actions), poses, seconds))
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--output", help="also write the markdown tables to this file")
    args = parser.parse_args()
    if importlib.util.find_spec("bpy") is None:
        import bootstrap

        return bootstrap.rerun_with_bpy(__file__)
    with tempfile.TemporaryDirectory() as work:
        folder = Path(work)
        paths = [synthetic_character(folder)] + [SAMPLES / c for c in CHARACTERS if (SAMPLES / c).exists()]
        rates = scene_rates(paths, args.runs)
        rows, all_rows = import_rows(paths, args.runs, folder)
    out = [
        "### GoldSrc import: ours / `wm.obj_import` on the same geometry (default sequence built)\n",
        "| file | faces | ours also builds | ours ÷ OBJ importer | build only ÷ OBJ | ours ms | OBJ ms |",
        "|---|---:|---|---:|---:|---:|---:|",
        *rows,
        "\n### GoldSrc: every sequence (every blend)\n",
        "| file | actions | bone poses | decode + convert (no Blender): poses/s | whole import with every action: s |",
        "|---|---:|---:|---:|---:|",
    ]
    seconds = {name: s for name, _, s in all_rows}
    for name, actions, poses, s in rates:
        out.append(f"| {name} | {actions} | {poses:,} | {poses / s:,.0f} | {seconds[name]:.2f} |")
    return report_tables(out, args.output)


if __name__ == "__main__":
    from bench_report import leave

    leave(main())
