"""Decode rates of the readers added for the rest of the formats, side by side with a peer where one exists.

    python scripts/bench_formats.py [--runs 15] [--output FILE.md]

- Frame-major animations (``STUDIO_FRAMEANIM``): the galil's nine from its ``.ani``, and a long synthetic one;
  no peer decodes them outside Blender, so the same motion stored as per-bone streams (v48) is the yardstick.
- Titanfall 2 (MDL 53) animations against the same motion written as v48 streams.
- PHY collision solids (every sample ``.phy``): MB/s and solids per second; no peer reads the solids.
- PCX skins against Pillow's compiled decoder (to an RGBA array, as we deliver).
- BC6H blocks (numpy) against imagecodecs' compiled decoder, and Blender's own DDS decoder when ``bpy`` imports
  (from the packed DDS to the first pixels read back).

Runs alternate between ours and the peer; figures are medians. Needs the shared samples and the dev dependencies.
"""

from __future__ import annotations

import argparse
import io
import math
import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
from bench_report import report_tables

ROOT = Path(__file__).resolve().parents[1]
SAMPLES = Path(os.environ.get("IO_MS3D_MDL_SHARED", ROOT.parent / "shared")) / "samples"
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

from io_ms3d_mdl.formats.source import read_mdl, read_mdl_bytes  # noqa: E402 - after the path set-up
from io_ms3d_mdl.formats.source.animation import decode_animation  # noqa: E402

GALIL = "coverage/source/NeXiDE__Counter-Strike-Oldschool-Offensive/models/weapons/v_rif_galilar_scoped"
PCX = [
    "coverage/ms3d/akadjoker__IrrlichtGameObject/new skin.pcx",
    "coverage/ms3d/akadjoker__IrrlichtGameObject/morbo/MORBO.pcx",
]


def median_pair(ours: Callable[[], object], peer: Callable[[], object] | None, runs: int) -> tuple[float, float]:
    """Median seconds of each, alternating, after one warm-up call of each."""
    times: dict[str, list[float]] = {"ours": [], "peer": []}
    jobs = [("ours", ours)] + ([("peer", peer)] if peer else [])
    for _, fn in jobs:
        fn()
    for _ in range(runs):
        for key, fn in jobs:
            start = time.perf_counter()
            fn()
            times[key].append(time.perf_counter() - start)
    return statistics.median(times["ours"]), statistics.median(times["peer"]) if peer else float("nan")


def decode_all(mdl, ani: tuple[bytes, str] | None) -> int:
    """Bone-frames decoded."""
    total = 0
    for i, anim in enumerate(mdl.animations):
        decoded = decode_animation(mdl, i, *(ani or (None, None)))
        total += decoded.rotations.shape[0] * decoded.rotations.shape[1]
        del anim
    return total


def animation_rows(runs: int) -> list[str]:
    from source_writer import SAnimation, SBone, SFrameBone, SNode, character_spec, write_mdl

    rows = []
    mdl = read_mdl(SAMPLES / (GALIL + ".mdl"))
    ani_path = SAMPLES / (GALIL + ".ani")
    ani = (ani_path.read_bytes(), str(ani_path))
    frames = decode_all(mdl, ani)
    ours, _ = median_pair(lambda: decode_all(mdl, ani), None, runs)
    rows.append(
        f"| galil, 9 frame-major animations (.ani, {len(ani[0]) / 1e3:.0f} kB) | {frames:,} | "
        f"{frames / ours / 1e6:.2f} M | {len(ani[0]) / ours / 1e6:.1f} | — |"
    )
    # The same long motion as frame-major, v53 and v48 streams (64 bones x 1,500 frames; every channel moving).
    bones = [SBone("root")] + [SBone(f"b{i}", i) for i in range(63)]
    count = 1500
    angles = [list(range(0, 3 * count, 3))] * 3
    nodes = [SNode(b, ("rle", angles), ("v48", (1.0, 2.0, 3.0))) for b in range(64)]
    turn = [(math.cos(f / 200), math.sin(f / 200), 0.0, 0.0) for f in range(count)]
    path = [(f / 10, 2.0, 3.0) for f in range(count)]
    frame_bones = {b: SFrameBone(("anim", turn), ("anim", path)) for b in range(64)}
    frame_major = SAnimation("long", count, [], frame_bones=frame_bones, section_frames=30)
    specs = {
        "v48 streams (yardstick)": character_spec(bones=bones, animations=[SAnimation("long", count, nodes)]),
        "v49 frame-major, 30-frame sections": character_spec(version=49, bones=bones, animations=[frame_major]),
        "v53 streams": character_spec(version=53, bones=bones, animations=[SAnimation("long", count, nodes)]),
    }
    base = None
    for label, spec in specs.items():
        model = read_mdl_bytes(write_mdl(spec), "long.mdl")
        took, _ = median_pair(lambda model=model: decode_animation(model, 0), None, runs)
        base = base or took
        rate = 64 * count / took / 1e6
        label = f"synthetic 64 bones × {count:,} frames, {label}"
        rows.append(f"| {label} | {64 * count:,} | {rate:.2f} M | — | {took / base:.2f} |")
    return rows


def phy_row(runs: int) -> str:
    from io_ms3d_mdl.formats.source.phy import read_phy_bytes

    files = [p for p in sorted(SAMPLES.rglob("*")) if p.suffix.lower() == ".phy"]
    blobs = [(p.read_bytes(), str(p)) for p in files]
    solids = sum(len(read_phy_bytes(*b).solids) for b in blobs)
    size = sum(len(b[0]) for b in blobs)
    took, _ = median_pair(lambda: [read_phy_bytes(*b) for b in blobs], None, runs)
    label = f"PHY, {len(files)} sample files, {solids} solids ({size / 1e3:.0f} kB)"
    return f"| {label} | {size / took / 1e6:.1f} MB/s, {solids / took / 1e3:.1f} k solids/s | — | — |"


def pcx_rows(runs: int) -> list[str]:
    from PIL import Image

    from io_ms3d_mdl.formats.images.pcx import decode_pcx

    rows = []
    for relative in PCX:
        data = (SAMPLES / relative).read_bytes()
        pixels = decode_pcx(data)
        mp = pixels.shape[0] * pixels.shape[1] / 1e6

        def pillow(data: bytes = data) -> np.ndarray:
            return np.asarray(Image.open(io.BytesIO(data)).convert("RGBA"))

        ours, peer = median_pair(lambda data=data: decode_pcx(data), pillow, runs)
        name = Path(relative).name
        label = f"PCX `{name}` ({pixels.shape[1]}×{pixels.shape[0]})"
        rows.append(f"| {label} | {mp / ours:.0f} MP/s | {mp / peer:.0f} MP/s | {ours / peer:.2f} |")
    return rows


def bc6h_rows(runs: int) -> list[str]:
    import imagecodecs
    from test_bc6h import random_blocks

    from io_ms3d_mdl.formats.source.bc6h import decode_bc6h

    size = 1024
    blocks = random_blocks((size // 4) ** 2, seed=7)
    rows = []
    for signed in (False, True):
        data = blocks.tobytes()

        def peer(data: bytes = data, signed: bool = signed) -> object:
            return imagecodecs.bcn_decode(data, -6 if signed else 6, shape=(size, size, 3))

        ours, theirs = median_pair(lambda signed=signed: decode_bc6h(blocks, signed), peer, runs)
        mp = size * size / 1e6
        label = "signed (Strata 71)" if signed else "unsigned (Titanfall 66)"
        peer_rate = f"{mp / theirs:.0f} MP/s"
        rows.append(
            f"| BC6H {label}, 1024² random blocks, numpy | {mp / ours:.1f} MP/s | {peer_rate} | {ours / theirs:.1f} |"
        )
        blender = blender_decode(blocks, signed, size, runs)
        if blender is not None:
            decoded = f"{mp / blender:.1f} MP/s"
            rows.append(f"| … through Blender's DDS decoder | {decoded} | {peer_rate} | {blender / theirs:.1f} |")
    return rows


def blender_decode(blocks: np.ndarray, signed: bool, size: int, runs: int) -> float | None:
    """Median seconds from the packed DDS to its first pixels read back (what showing the texture costs), or None
    without ``bpy``."""
    try:
        import bpy

        from io_ms3d_mdl.blender import dds
    except ImportError:
        return None
    from types import SimpleNamespace

    image = SimpleNamespace(
        format="BC6H_SF16" if signed else "BC6H_UF16", width=size, height=size, data=blocks.tobytes()
    )
    pixels = np.empty(size * size * 4, np.float32)

    def decode() -> None:
        loaded = dds.load("bench", image)
        loaded.pixels.foreach_get(pixels)
        bpy.data.images.remove(loaded)

    took, _ = median_pair(decode, None, runs)
    return took


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--output", help="also write the markdown tables to this file")
    args = parser.parse_args()
    if not SAMPLES.is_dir():
        print(f"error: the shared samples are not at {SAMPLES} (set IO_MS3D_MDL_SHARED)", file=sys.stderr)
        return 1
    out = [
        "| animations | bone-frames | bone-frames/s | MB/s | time ÷ v48 streams |",
        "|---|---:|---:|---:|---:|",
        *animation_rows(args.runs),
        "",
        "| reader (peer: Pillow for PCX, imagecodecs for BC6H) | ours | peer | ours ÷ peer (time) |",
        "|---|---:|---:|---:|",
        phy_row(args.runs),
        *pcx_rows(args.runs),
        *bc6h_rows(args.runs),
    ]
    return report_tables(out, args.output)


if __name__ == "__main__":
    from bench_report import leave

    leave(main())
