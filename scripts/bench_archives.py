"""What reading models from archives costs: mounting a large VPK directory, a lookup, and a model imported from an
archive against the same model from loose files.

    python scripts/bench_archives.py [--runs 15] [--entries 100000] [--blender] [--output FILE.md]

- **mount**: a synthetic ``_dir.vpk`` of ``--entries`` entries, ten to a folder, ``.vtf`` and ``.vmt`` (the size
  and shape of a real ``tf2_textures_dir.vpk``), mounted afresh each run (the session cache emptied); then one of
  as many folders, one entry each (mounting must be linear in folders as in entries);
- **lookup**: a name looked up in the mounted directory (folders already asked about once: each folder's table is
  built on first use);
- **import**: the same files loose in a folder and packed in a two-part VPK (``tests/archive_writer.py``), read and
  converted by ``scene.load.load_source`` (the importer's whole work before Blender builds anything), taking turns;
  with ``--blender`` also the whole ``import_scene.source_mdl`` in Blender (after a factory reset each run).

Figures are medians of ``--runs`` (the fastest run too for the mount); ratios are archive / loose.
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

from bench_report import report_tables

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "scripts"))

from archive_writer import WEntry, write_vpk  # noqa: E402

from io_ms3d_mdl import access  # noqa: E402
from io_ms3d_mdl.filesystem import mounts  # noqa: E402
from io_ms3d_mdl.scene.load import load_source  # noqa: E402

SAMPLES = ROOT.parent / "shared" / "samples"
MODELS = [  # (folder holding models/ and materials/, model below it)
    (SAMPLES / "source" / "Igrium__portal_nrtx", "models/props_pipes/pipe02_45degree01.mdl"),
    (SAMPLES / "source" / "GoodFishMan__mercenaries", "models/player/scout.mdl"),
]
KNIFE = SAMPLES / "vpk" / "SirPlease__L4D2-Competitive-Rework" / "addons" / "knife.vpk"


def mount_figures(entries: int, runs: int, tmp: Path) -> list[str]:
    folders = max(1, entries // 10)
    names = [
        f"materials/models/set{i // 10 % 1000:03d}/folder{i % folders:05d}/texture_{i}.{'vtf' if i % 2 else 'vmt'}"
        for i in range(entries)
    ]
    path = write_vpk(tmp / "big", "tf2_textures", [WEntry(n, b"", part=0) for n in names])
    times = []
    for _ in range(runs):
        mounts.forget_archives()
        start = time.perf_counter()
        archive = mounts.mount_archive(str(path))
        times.append(time.perf_counter() - start)
    rng = random.Random(1)
    for name in names[:folders]:  # each folder's table once
        archive.find(name.rsplit("/", 1)[0] + "/x.vtf")
    asked = [n.upper() if rng.random() < 0.5 else n for n in rng.sample(names, min(20_000, entries))]
    start = time.perf_counter()
    found = sum(archive.find(n) is not None for n in asked)
    lookup = (time.perf_counter() - start) / len(asked)
    assert found == len(asked)
    spread = write_vpk(
        tmp / "spread", "spread", [WEntry(f"materials/f{i:06d}/t.vtf", b"", part=0) for i in range(entries)]
    )
    spread_times = []
    for _ in range(runs):
        mounts.forget_archives()
        start = time.perf_counter()
        mounts.mount_archive(str(spread))
        spread_times.append(time.perf_counter() - start)
    return [
        f"| mount a {entries:,}-entry `_dir.vpk` ({path.stat().st_size / 1e6:.1f} MB tree) | "
        f"{statistics.median(times) * 1000:.1f} ms (fastest {min(times) * 1000:.1f} ms) |",
        f"| mount a `_dir.vpk` of {entries:,} folders, one entry each ({spread.stat().st_size / 1e6:.1f} MB tree) | "
        f"{statistics.median(spread_times) * 1000:.1f} ms (fastest {min(spread_times) * 1000:.1f} ms) |",
        f"| one lookup (any case), folders already built | {lookup * 1e6:.2f} µs |",
    ]


def packed(folder: Path, tmp: Path, stem: str) -> Path:
    """Every file below ``folder`` in a VPK: small files in the directory file, the rest in two parts."""
    files = sorted(p for p in folder.rglob("*") if p.is_file())
    entries = []
    for i, p in enumerate(files):
        data = p.read_bytes()
        entries.append(WEntry(p.relative_to(folder).as_posix(), data, part=0x7FFF if len(data) < 4096 else i % 2))
    return write_vpk(tmp / stem, stem, entries, version=2)


def alternate(fns: dict[str, object], runs: int) -> dict[str, tuple[float, float]]:
    """(median, fastest) seconds of each function, taking turns; a warm-up call first (the archive mounted and
    its entries' CRCs checked, files in the page cache: a session's second import of the model)."""
    times: dict[str, list[float]] = {k: [] for k in fns}
    for fn in fns.values():
        fn()
    for _ in range(runs):
        for name, fn in fns.items():
            access.clear_cache()  # as every import starts
            start = time.perf_counter()
            fn()
            times[name].append(time.perf_counter() - start)
    return {k: (statistics.median(v), min(v)) for k, v in times.items()}


def row(label: str, what: str, t: dict[str, tuple[float, float]]) -> str:
    (loose, loose_min), (inside, inside_min) = t["loose"], t["archive"]
    return (
        f"| `{label}` {what} | {loose * 1000:.1f} ms | {inside * 1000:.1f} ms | {inside / loose:.2f}× | "
        f"{inside_min / loose_min:.2f}× |"
    )


def import_figures(runs: int, tmp: Path, blender: bool) -> list[str]:
    cases = []
    for folder, model in MODELS:
        if (folder / model).is_file():
            archive = packed(folder, tmp, folder.name.split("__")[-1].replace("-", "_"))
            cases.append((model, str(folder / model), os.path.join(str(archive), *model.split("/"))))
    if KNIFE.is_file():  # the real archive, against its own files extracted
        model = "models/v_models/v_knife_t.mdl"
        archive = mounts.mount_archive(str(KNIFE))
        for name in archive.entries():
            target = tmp / "knife" / name
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(archive.read(archive.find(name)))
        cases.append((model, str(tmp / "knife" / model), os.path.join(str(KNIFE), *model.split("/"))))
    rows = []
    for label, loose, inside in cases:
        t = alternate({"loose": lambda p=loose: load_source(p), "archive": lambda p=inside: load_source(p)}, runs)
        rows.append(row(label, "read + convert", t))
        if blender:
            import bpy

            def imported(path: str) -> None:
                bpy.ops.wm.read_factory_settings(use_empty=True)
                bpy.ops.import_scene.source_mdl(filepath=path)

            t = alternate({"loose": lambda p=loose: imported(p), "archive": lambda p=inside: imported(p)}, runs)
            rows.append(row(label, "whole Blender import", t))
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--entries", type=int, default=100_000)
    parser.add_argument("--blender", action="store_true", help="also time the whole import in Blender (needs bpy)")
    parser.add_argument("--output", metavar="FILE.md")
    args = parser.parse_args()
    if args.blender:
        try:
            import bpy  # noqa: F401
        except ImportError:
            import bootstrap

            return bootstrap.rerun_with_bpy(__file__)
        from io_ms3d_mdl import blender as addon

        addon.register()
    tmp = Path(tempfile.mkdtemp(prefix="bench_archives_"))
    try:
        out = [f"Python {sys.version.split()[0]}, median of {args.runs} runs\n", "| archives | time |", "|---|---|"]
        out += mount_figures(args.entries, args.runs, tmp)
        out += ["", "| model | loose files | in a VPK | ratio (median) | ratio (fastest) |", "|---|---|---|---|---|"]
        out += import_figures(args.runs, tmp, args.blender)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return report_tables(out, args.output)


if __name__ == "__main__":
    from bench_report import leave

    leave(main())
