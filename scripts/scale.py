"""Scale curve: synthetic models at 1×, 10×, 100× and 1000× a small sample, each imported in a fresh process.

    python scripts/scale.py [--factors 1 10 100 1000] [--output FILE.md]

"1×" is the size of a small shared sample: for MilkShape a ribbon of 66 vertices in one group, 10 joints and 30
keyframes per joint; for Source one body part of a 32×32 grid (1,024 vertices), 8 bones and a 30-frame
animation. ×k multiplies every part: MilkShape vertices (up to the format's 16-bit limit: 65,534 at 1000×) and
keys per joint; Source body parts (1,000 at 1000×, a million vertices) and animation frames. Each import runs in
its own process through the real operator; peak memory is that process's high-water mark (VmHWM).
Time per unit of size (vertices + keys) staying flat down the table is what "linear" means here.
"""

from __future__ import annotations

import argparse
import json
import math
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

MS3D_UNIT_VERTICES, MS3D_JOINTS, MS3D_UNIT_KEYS = 66, 10, 30
SOURCE_GRID, SOURCE_BONES, SOURCE_UNIT_FRAMES = 32, 8, 30


def make_ms3d(k: int, path: Path) -> dict[str, int]:
    """A two-row ribbon (vertices = 2 × length, triangles = vertices − 2, both within MilkShape's 16-bit counts)
    skinned along a chain of joints, each joint keyed on every frame."""
    from ms3d_writer import Group, Joint, Material, Ms3dSpec, Triangle, Vertex, write_ms3d

    length = min(MS3D_UNIT_VERTICES * k, 65534) // 2
    keys = MS3D_UNIT_KEYS * k
    vertices = [
        Vertex((float(i), float(row), 0.0), bone_id=min(MS3D_JOINTS - 1, i * MS3D_JOINTS // length))
        for i in range(length)
        for row in (0, 1)
    ]
    triangles = []
    for i in range(length - 1):
        a, b, c, d = 2 * i, 2 * i + 1, 2 * i + 2, 2 * i + 3
        for idx in ((a, c, b), (b, c, d)):
            triangles.append(Triangle(idx, normals=((0.0, 0.0, 1.0),) * 3, s=(0.0,) * 3, t=(0.0,) * 3))
    step = 1 / 30
    joints = [
        Joint(
            f"j{j}",
            f"j{j - 1}" if j else "",
            position=(length / MS3D_JOINTS if j else 0.0, 0.0, 0.0),
            rotation_keys=[((f + 1) * step, (0.0, 0.0, 0.3 * math.sin(f / 10 + j))) for f in range(keys)],
            position_keys=[((f + 1) * step, (0.0, 0.01 * math.cos(f / 7), 0.0)) for f in range(keys)],
        )
        for j in range(MS3D_JOINTS)
    ]
    spec = Ms3dSpec(
        vertices=vertices,
        triangles=triangles,
        groups=[Group("ribbon", list(range(len(triangles))), 0)],
        materials=[Material("ribbon")],
        joints=joints,
        fps=30.0,
        total_frames=keys + 1,
    )
    path.write_bytes(write_ms3d(spec))
    return {"vertices": len(vertices), "keys": 2 * keys * MS3D_JOINTS}


def make_source(k: int, path: Path) -> dict[str, int]:
    """k body parts, each one grid mesh on its own bone of a chain, and one animation of 30·k frames."""
    from source_writer import SAnimation, SBodyPart, SBone, SMesh, SModel, SNode, SourceSpec, SVertex, write_source

    n = SOURCE_GRID
    triangles = [
        t
        for r in range(n - 1)
        for c in range(n - 1)
        for t in (
            (r * n + c, r * n + c + 1, (r + 1) * n + c),
            (r * n + c + 1, (r + 1) * n + c + 1, (r + 1) * n + c),
        )
    ]
    parts = []
    for p in range(k):
        bone = p % SOURCE_BONES
        verts = [
            SVertex((float(x), float(y), float(p)), uv=(x / n, y / n), bones=(bone,))
            for y in range(n)
            for x in range(n)
        ]
        parts.append(SBodyPart(f"part{p}", [SModel(f"part{p}", [SMesh(0, verts, triangles)])]))
    frames = SOURCE_UNIT_FRAMES * k
    bones = [SBone(f"b{b}", b - 1, pos=(0.0, 0.0, 4.0 if b else 0.0)) for b in range(SOURCE_BONES)]
    wave = [int(200 * math.sin(f / 15)) for f in range(frames)]
    nodes = [SNode(b, ("rle", [wave, [0] * frames, wave]), None) for b in range(1, SOURCE_BONES)]
    spec = SourceSpec(body_parts=parts, bones=bones, animations=[SAnimation("wave", frames, nodes, section_frames=64)])
    write_source(spec, path.parent, path.stem)
    return {"vertices": n * n * k, "keys": frames * (SOURCE_BONES - 1) * 2}


CHILD = r"""
import json, os, sys, time
root, path = sys.argv[1], sys.argv[2]
sys.path.insert(0, os.path.join(root, "scripts"))

def status_mb(field):  # per process image (unlike ru_maxrss, which a child inherits from its parent)
    with open("/proc/self/status") as f:
        return next(int(x.split()[1]) for x in f if x.startswith(field + ":")) / 1024

import bpy
from addon_entry import load_addon
addon = load_addon()
addon.register()
bpy.ops.wm.read_factory_settings(use_empty=True)
before = status_mb("VmRSS")
op = bpy.ops.import_scene.ms3d if path.endswith(".ms3d") else bpy.ops.import_scene.source_mdl
started = time.perf_counter()
result = op(filepath=path)
seconds = time.perf_counter() - started
print("RESULT " + json.dumps({"result": sorted(result), "seconds": seconds, "peak_mb": status_mb("VmHWM"),
      "base_mb": before, "objects": len(bpy.data.objects), "actions": len(bpy.data.actions),
      "blender": bpy.app.version_string}), flush=True)
os._exit(0)
"""


def measure(path: Path) -> dict:
    out = subprocess.run(
        [sys.executable, "-c", CHILD, str(ROOT), str(path)], capture_output=True, text=True, check=False
    )
    line = next((x for x in out.stdout.splitlines() if x.startswith("RESULT ")), None)
    if line is None:
        raise RuntimeError(f"import of {path.name} failed:\n{out.stdout[-2000:]}\n{out.stderr[-2000:]}")
    return json.loads(line[7:])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--factors", type=int, nargs="+", default=[1, 10, 100, 1000])
    parser.add_argument("--output", type=Path, help="also write the markdown table here")
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for fmt, make, suffix in (("MilkShape", make_ms3d, ".ms3d"), ("Source", make_source, ".mdl")):
            for k in args.factors:
                path = Path(tmp) / f"scale_{k}{suffix}"
                started = time.perf_counter()
                size = make(k, path)
                made = time.perf_counter() - started
                m = measure(path)
                if m["result"] != ["FINISHED"] or m["actions"] < 1:
                    raise RuntimeError(f"{path.name}: {m['result']}, {m['actions']} actions")
                units = size["vertices"] + size["keys"]
                rows.append((fmt, k, size, m, units))
                print(
                    f"{fmt} ×{k}: {size} made in {made:.1f} s, imported in {m['seconds']:.2f} s, "
                    f"peak {m['peak_mb']:.0f} MB",
                    flush=True,
                )
    lines = [
        f"Blender {rows[0][3]['blender']}; a fresh process per import; µs per unit = import time / (vertices + keys).",
        "",
        "| format | × | vertices | keys | objects | import s | µs per unit | peak RSS MB | import added MB |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for fmt, k, size, m, units in rows:
        peak, grown = m["peak_mb"], m["peak_mb"] - m["base_mb"]
        lines.append(
            f"| {fmt} | {k} | {size['vertices']:,} | {size['keys']:,} | {m['objects']:,} | {m['seconds']:.2f} "
            f"| {m['seconds'] / units * 1e6:.2f} | {peak:.0f} | {grown:.0f} |"
        )
    text = "\n".join(lines)
    print(text)
    if args.output:
        args.output.write_text(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
