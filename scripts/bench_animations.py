"""Animations on demand, measured: a model importing with the default sequence only vs with animations off vs with
all of them, one pick from the list, and the import time against the number of included animations (1 → 2,000),
which must stay flat for the default import.

    python scripts/bench_animations.py [--runs 5] [--json out.json]      (with the bpy wheel)

Synthetic models come from the test writer (a character including a model with N animations of 30 frames over
its two bones); civilian.mdl from the shared samples when present. Medians of ``--runs``; ratios in the same run.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

CIVILIAN = ROOT.parent / "shared/samples/source/Lambdagon__lambdas-weapon-pack/models/player/civilian.mdl"


def model_with_includes(folder: Path, count: int) -> Path:
    """``models/test/model.mdl`` including ``models/test/anims.mdl``, which holds ``count`` 30-frame animations."""
    from source_writer import SAnimation, SNode, character_spec, write_source

    turn = ("rle", [[0] * 30, [0] * 30, list(range(0, 30 * 40, 40))])
    anims = [SAnimation(f"anim{i:04d}", 30, [SNode(1, turn)]) for i in range(count)]
    game = folder / "game" / "models" / "test"
    write_source(character_spec(includes=[], animations=anims), game, "anims")
    own = [SAnimation("idle", 30, [SNode(1, turn)])]
    return write_source(character_spec(includes=["models/test/anims.mdl"], animations=own), game, "model")


def timed(bpy, path: Path, runs: int, **options) -> float:
    times = []
    for _ in range(runs):
        bpy.ops.wm.read_factory_settings(use_empty=True)
        start = time.perf_counter()
        assert bpy.ops.import_scene.source_mdl(filepath=str(path), **options) == {"FINISHED"}
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def pick(bpy, path: Path, runs: int) -> float:
    """Median time of building and playing one not-yet-built animation from the list (after a default import)."""
    times = []
    bpy.ops.wm.read_factory_settings(use_empty=True)
    bpy.ops.import_scene.source_mdl(filepath=str(path))
    collection = bpy.data.collections[path.stem]
    names = [item.name for item in collection.io_ms3d_mdl_animations][1 : runs + 1]
    for name in names:
        start = time.perf_counter()
        bpy.ops.io_ms3d_mdl.source_play_animation(model=collection.name, animation=name)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--json")
    args = parser.parse_args()
    import bpy

    from io_ms3d_mdl import blender as addon

    addon.register()
    out: dict = {"curve": [], "models": {}}
    try:
        with tempfile.TemporaryDirectory() as tmp:
            header = ("included", "default s", "off s", "all s", "default/off", "all/default")
            print(" ".join(f"{h:>{w}}" for h, w in zip(header, (9, 10, 8, 8, 12, 12), strict=True)))
            for count in (1, 10, 100, 500, 1000, 2000):
                path = model_with_includes(Path(tmp) / str(count), count)
                default, off = timed(bpy, path, args.runs), timed(bpy, path, args.runs, animations="NONE")
                everything = timed(bpy, path, max(1, args.runs // 2), animations="ALL")
                print(
                    f"{count:>9} {default:>10.3f} {off:>8.3f} {everything:>8.3f} {default / off:>12.2f} "
                    f"{everything / default:>12.1f}"
                )
                out["curve"].append({"included": count, "default": default, "none": off, "all": everything})
            models = [("synthetic, 2,000 included", path)]
            models += [("civilian.mdl", CIVILIAN)] if CIVILIAN.exists() else []
            for label, model in models:
                row = {
                    "default": timed(bpy, model, args.runs),
                    "off": timed(bpy, model, args.runs, import_animations=False),
                    "all": timed(bpy, model, max(1, args.runs // 2), animations="ALL"),
                    "pick": pick(bpy, model, args.runs),
                }
                out["models"][label] = row
                print(
                    f"{label}: default {row['default']:.3f} s = {row['default'] / row['off']:.2f}× animations off; "
                    f"all {row['all']:.2f} s; one pick {row['pick'] * 1000:.0f} ms"
                )
    finally:
        addon.unregister()
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=2))
    return 0


if __name__ == "__main__":
    from bench_report import leave

    leave(main())
