"""Decompile time and peak memory, side by side with our own import of the same file.

    python scripts/bench_decompile.py [--runs 3] [--output FILE.md]

Each measurement is a fresh process (so peak memory is that run's alone): ``io_ms3d_mdl.decompile`` of the model
into an empty folder (numpy only; every included model's animations too), and ``import_scene.source_mdl`` of the
same file with every animation built (``animations="ALL"``) in the bpy wheel. Times (wall, and the decompile's CPU
time, which a loaded machine inflates less; it counts both threads, the files being made and written by a
second one, so it may pass the wall time) are the work alone (not the interpreter's start, nor loading the
modules: the import's are loaded by ``register()`` before its clock starts, the decompiler's likewise), medians of
``--runs``; peak memory is the process's high-water mark (``VmHWM``), which
includes the interpreter, numpy and, for the import, Blender itself (its empty baseline is measured and shown).
Then a whole VPK through ``io-ms3d-mdl decompile --jobs 2``. Needs the bpy wheel for the import column (run it with
a pinned environment's python); Linux (``/proc``) for memory.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench_report import report_tables

ROOT = Path(__file__).resolve().parents[1]
SAMPLES = Path(os.environ.get("IO_MS3D_MDL_SHARED", ROOT.parent / "shared")) / "samples"
MODELS = [
    "source/Lambdagon__lambdas-weapon-pack/models/player/civilian.mdl",
    "source/GoodFishMan__mercenaries/models/player/scout.mdl",
    "source/siobhan-saoirse__l4d-nextbots/models/ghostanim.mdl",
    "source/Igrium__portal_nrtx/models/props/metal_box.mdl",
    "goldsrc/Pi0h1__halflife/models/hgrunt.mdl",
    "goldsrc/phoenixprojectsoftware__halflifeclassic/models/scientist.mdl",
    "goldsrc/Pi0h1__halflife/models/v_9mmar.mdl",
    "goldsrc/gloeyisk__CS16/models/hostage.mdl",
]
VPK = "vpk/SirPlease__L4D2-Competitive-Rework/addons/knife.vpk"
# Models from fetched snapshots of public repositories (``fetch`` puts them in ``../.mirror``), when present:
# (snapshot, folder taken out of it, model in that folder). A Counter-Strike: Source player whose includes hold
# 1,446 animations (1,382 of them in zs_player_shared.mdl, 2.0 MB), and that shared file alone.
MIRROR = Path(os.environ.get("IO_MS3D_MDL_MIRROR", ROOT.parent / ".mirror"))
MIRRORED = [
    ("FJH03+CSCZS_GameData", "models/player", "models/player/ct_gsg9.mdl"),
    ("FJH03+CSCZS_GameData", "models/player", "models/player/zs_player_shared.mdl"),
]

PEAK = """
def peak_mb():
    for line in open("/proc/self/status"):
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")
"""
DECOMPILE = (
    PEAK
    + """
import json, sys, tempfile, time
sys.path.insert(0, sys.argv[1])
from io_ms3d_mdl.decompile import decompile, decompilers
import importlib
for engine in ("source.model", "goldsrc"):  # the modules loaded first (as the import's are by register())
    importlib.import_module("io_ms3d_mdl.decompile." + engine)
decompilers()
with tempfile.TemporaryDirectory() as out:
    start, cpu = time.perf_counter(), time.process_time()
    result = decompile(sys.argv[2], out)
    seconds, cpu = time.perf_counter() - start, time.process_time() - cpu
print(json.dumps({"seconds": seconds, "cpu": cpu, "peak": peak_mb(), "files": len(result.files)}))
"""
)
IMPORT = (
    PEAK
    + """
import json, sys, time
sys.path.insert(0, sys.argv[1])
import bpy
from io_ms3d_mdl import blender
blender.register()
bpy.ops.wm.read_factory_settings(use_empty=True)
baseline = peak_mb()
start = time.perf_counter()
bpy.ops.import_scene.source_mdl(filepath=sys.argv[2], animations="ALL")
seconds = time.perf_counter() - start
print(json.dumps({"seconds": seconds, "peak": peak_mb(), "baseline": baseline, "actions": len(bpy.data.actions)}))
import os; os._exit(0)
"""
)


def child(code: str, model: Path) -> dict:
    done = subprocess.run(
        [sys.executable, "-c", code, str(ROOT), str(model)], capture_output=True, text=True, timeout=1800
    )
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    if done.returncode or not lines:
        raise SystemExit(f"{model}: the child failed:\n{done.stderr[-2000:]}")
    return json.loads(lines[-1])


def median_of(code: str, model: Path, runs: int) -> dict:
    results = [child(code, model) for _ in range(runs)]
    best = dict(results[0])
    best["seconds"] = statistics.median(r["seconds"] for r in results)
    if "cpu" in results[0]:
        best["cpu"] = statistics.median(r["cpu"] for r in results)
    best["peak"] = max(r["peak"] for r in results)
    return best


def mirrored(into: Path) -> list[Path]:
    """The models of ``MIRRORED`` whose snapshot is on this machine, taken out into ``into``."""
    found = []
    for repo, folder, model in MIRRORED:
        git_dir = MIRROR / repo / "repo"
        target = into / repo
        if not git_dir.is_dir():
            continue
        if not (target / model).is_file():
            target.mkdir(parents=True, exist_ok=True)
            tar = subprocess.run(
                ["git", f"--git-dir={git_dir}", "archive", "--format=tar", "HEAD", folder],
                capture_output=True,
                check=True,
            )
            subprocess.run(["tar", "-x", "-C", str(target)], input=tar.stdout, check=True)
        found.append(target / model)
    return found


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--import-runs", type=int, default=1)
    parser.add_argument("--output", type=Path)
    parser.add_argument("--only", nargs="*", default=[], help="model file names to measure (default: every one)")
    parser.add_argument("--no-vpk", action="store_true", help="leave out the whole-VPK run")
    args = parser.parse_args()
    try:
        import bpy  # noqa: F401

        has_bpy = True
    except ImportError:
        has_bpy = False
    rows = [
        "| model | decompile | its CPU time | its peak memory | files | our import (every animation) "
        "| its peak (Blender alone) |",
        "|---|---|---|---|---|---|---|",
    ]
    snapshots = tempfile.TemporaryDirectory()
    for model in [*(SAMPLES / relative for relative in MODELS), *mirrored(Path(snapshots.name))]:
        relative = model.name
        if args.only and relative not in args.only:
            continue
        if not model.is_file():
            rows.append(f"| {relative} | (sample absent) | | | | | |")
            continue
        ours = median_of(DECOMPILE, model, args.runs)
        cells = [model.name, f"{ours['seconds']:.3f} s", f"{ours['cpu']:.3f} s", f"{ours['peak']:.0f} MB"]
        cells.append(str(ours["files"]))
        if has_bpy:
            imp = median_of(IMPORT, model, args.import_runs)
            cells += [
                f"{imp['seconds']:.3f} s ({imp['actions']} actions)",
                f"{imp['peak']:.0f} MB ({imp['baseline']:.0f})",
            ]
        else:
            cells += ["(no bpy)", ""]
        rows.append("| " + " | ".join(cells) + " |")
        print(rows[-1], flush=True)
    vpk = SAMPLES / VPK
    if vpk.is_file() and not args.no_vpk:
        with tempfile.TemporaryDirectory() as out:
            start = time.perf_counter()
            done = subprocess.run(
                [sys.executable, "-m", "io_ms3d_mdl", "decompile", "--vpk", str(vpk), "-o", out, "--jobs", "2"],
                capture_output=True,
                text=True,
                cwd=ROOT,
                timeout=600,
            )
            seconds = time.perf_counter() - start
            report = json.loads((Path(out) / "report.json").read_text())
        ok = sum(r["status"] == "ok" for r in report["files"])
        rows.append(
            f"\nA whole VPK ({vpk.name}, {len(report['files'])} models, `--jobs 2`, the command from its start "
            f"to its exit): {seconds:.2f} s, {ok} decompiled (exit {done.returncode})."
        )
        print(rows[-1], flush=True)
    return report_tables(rows, args.output)


if __name__ == "__main__":
    from bench_report import leave

    leave(main())
