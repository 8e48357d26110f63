"""What one bulk RNA call costs in this Blender: the calls an import makes per F-curve (and, for comparison, per
mesh), timed alone, so that rates measured on different Blenders can be told apart from our code's.

    python scripts/bench_rna_calls.py [--runs 9] [--output FILE.md]      (with the bpy wheel; once per version)

Each figure is the median over ``--runs`` of one call's mean time across 400 F-curves of an action assigned to an
object (or 400 calls on a one-vertex mesh), in µs. From 4.5 a curve reached by walking its channelbag (iterating or
indexing the collection) costs more in every ``foreach_set`` and ``foreach_get`` on its keys than one ``new`` or
``find`` returned: about 100 ns more a key (the 2,000-key rows), so 2 µs on a 20-key curve.
Curves hold 1 or 20 keys, as Bloodlines' reduced animations do (about five keys a curve). Per-frame import rates
fall with these costs: an F-curve of several keys takes four calls (``add``, ``co``, ``interpolation``,
``update()``), a lone key one.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import bpy  # noqa: E402
import numpy as np  # noqa: E402
from bench_report import leave, report_tables  # noqa: E402

CURVES = 400
KEYS = 20
LONG = 2_000  # keys of a long curve (the walk's cost grows with them)


def _curves(count: int, keys: int) -> list[bpy.types.FCurve]:
    """``count`` new F-curves of ``keys`` keys each, on an action assigned to a new object (through a slot where
    Blender has them, as an import makes them)."""
    from io_ms3d_mdl.blender.animation import curve_factory

    owner = bpy.data.objects.new("rna calls", None)
    action = bpy.data.actions.new("rna calls")
    new = curve_factory(action, owner)
    out = [new(f'["p{i}"]', 0, "g") for i in range(count)]
    for fcurve in out:
        fcurve.keyframe_points.add(keys)
    return out


def _per_call(calls: list[Callable[[], object]], runs: int) -> float:
    """The median over ``runs`` of the mean time of one of ``calls``, in µs."""
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        for call in calls:
            call()
        times.append((time.perf_counter() - start) / len(calls))
    return statistics.median(times) * 1e6


def measure(runs: int) -> dict[str, float]:
    """µs per call, by what it is. Curves are the ones ``new`` returned, except where they are reached by walking
    the action's curves (as a copied action's must be, or looked up by name)."""
    from io_ms3d_mdl.blender.animation import _fcurves

    out: dict[str, float] = {}
    linear = np.ones(KEYS, dtype=np.uint8)
    for keys in (1, KEYS):
        curves = _curves(CURVES, keys)
        pairs = np.arange(2 * keys, dtype=np.float32)  # frames 0, 2, 4...: sorted, as an import sets them
        points = [c.keyframe_points for c in curves]
        held = f"{keys} key{'s' * (keys > 1)}"
        out[f"`co`, {held}"] = _per_call([lambda p=p, v=pairs: p.foreach_set("co", v) for p in points], runs)
        out[f"`interpolation` (uint8), {held}"] = _per_call(
            [lambda p=p, v=linear[:keys]: p.foreach_set("interpolation", v) for p in points], runs
        )
        out[f"`foreach_get('co')`, {held}"] = _per_call(
            [lambda p=p, v=pairs: p.foreach_get("co", v) for p in points], runs
        )
        out[f"`update()`, {held}"] = _per_call([c.update for c in curves], runs)
    walked = [c.keyframe_points for c in _fcurves(curves[0].id_data)]  # the same curves, reached by a walk
    out[f"`co`, {KEYS} keys, a curve reached by walking its channelbag"] = _per_call(
        [lambda p=p, v=pairs: p.foreach_set("co", v) for p in walked], runs
    )
    out[f"`foreach_get('co')`, {KEYS} keys, reached by walking"] = _per_call(
        [lambda p=p, v=pairs: p.foreach_get("co", v) for p in walked], runs
    )
    # the walk's cost is per key, not per call: the same reads on curves of LONG keys, found and walked
    long_curves = _curves(CURVES // 10, LONG)
    long_pairs = np.empty(2 * LONG, dtype=np.float32)
    found = [c.keyframe_points for c in long_curves]
    long_walked = [c.keyframe_points for c in _fcurves(long_curves[0].id_data)]
    out[f"`foreach_get('co')`, {LONG:,} keys"] = _per_call(
        [lambda p=p, v=long_pairs: p.foreach_get("co", v) for p in found], runs
    )
    out[f"`foreach_get('co')`, {LONG:,} keys, reached by walking"] = _per_call(
        [lambda p=p, v=long_pairs: p.foreach_get("co", v) for p in long_walked], runs
    )
    grown = _curves(CURVES, 0)
    out["`keyframe_points.add(1)`"] = _per_call([lambda c=c: c.keyframe_points.add(1) for c in grown], runs)
    out["`fcurve.keyframe_points` (attribute)"] = _per_call([lambda c=c: c.keyframe_points for c in grown], runs)
    mesh = bpy.data.meshes.new("rna calls")
    mesh.vertices.add(1)
    one = np.zeros(3, dtype=np.float32)
    out["mesh `vertices.foreach_set('co')`, 1 vertex"] = _per_call(
        [lambda: mesh.vertices.foreach_set("co", one)] * CURVES, runs
    )
    out["mesh `vertices.foreach_get('co')`, 1 vertex"] = _per_call(
        [lambda: mesh.vertices.foreach_get("co", one)] * CURVES, runs
    )
    return out


def table(measured: dict[str, float]) -> list[str]:
    return [
        f"\n### One RNA call, bpy {bpy.app.version_string} (µs, median of runs over {CURVES} calls)\n",
        "| call | µs |",
        "|---|---:|",
        *(f"| {what} | {us:.2f} |" for what, us in measured.items()),
    ]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=9)
    parser.add_argument("--output", help="also write the markdown table to this file")
    args = parser.parse_args()
    bpy.ops.wm.read_factory_settings(use_empty=True)
    return report_tables(table(measure(args.runs)), args.output)


if __name__ == "__main__":
    leave(main())
