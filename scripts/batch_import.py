"""Convert whole folders of models headless: one .blend or .glb per model, or everything into one .blend.

    python scripts/batch_import.py [options] FILES_OR_FOLDERS...                     (with the bpy wheel)
    blender --background --python scripts/batch_import.py -- [options] FILES_OR_FOLDERS...

Folders are searched recursively for .ms3d and .mdl files. ``--jobs N`` converts in N worker processes. Progress
(done/total, current file, time left) goes to stderr, a summary table to stdout and a JSON report (status,
warnings, counts and seconds per file) to ``--report``. A file that fails does not stop the others; the exit status
is 1 when any file failed.
"""

from __future__ import annotations

import argparse
import json
import os
import queue
import subprocess
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))  # Blender's --python does not put the script's folder on the path

from addon_entry import load_addon  # noqa: E402 - after the path set-up

EXTENSIONS = {".ms3d", ".mdl"}


def collect(inputs: list[str]) -> list[Path]:
    files: list[Path] = []
    for item in inputs:
        path = Path(item)
        if path.is_dir():
            files += sorted(p for p in path.rglob("*") if p.is_file() and p.suffix.lower() in EXTENSIONS)
        elif path.is_file():
            files.append(path)
        else:
            files.append(path)  # reported as failed: it does not exist
    return [f.resolve() for f in files]


def output_name(path: Path, inputs: list[Path], extension: str) -> str:
    """``stem.ext``, prefixed with its folder when two inputs share a stem."""
    same = [p for p in inputs if p.stem.lower() == path.stem.lower()]
    return (f"{path.parent.name}_{path.stem}" if len(same) > 1 else path.stem) + extension


# --- the Blender side: runs in a worker (or in the only process) ---------------------------------------------


def convert(
    paths: list[Path], all_inputs: list[Path], out_dir: Path | None, fmt: str, single: Path | None, emit
) -> None:
    import bpy

    addon = load_addon()
    addon.register()
    package = sys.modules["io_ms3d_mdl_addon.io_ms3d_mdl.blender.importer"]
    ops = sys.modules["io_ms3d_mdl_addon.io_ms3d_mdl.blender.operators"]
    ms3d = sys.modules["io_ms3d_mdl_addon.io_ms3d_mdl.scene.from_ms3d"]
    reader = sys.modules["io_ms3d_mdl_addon.io_ms3d_mdl.formats.ms3d"]
    source = sys.modules["io_ms3d_mdl_addon.io_ms3d_mdl.scene.from_source"]
    loaders = {
        ".ms3d": lambda p: ms3d.ms3d_to_scene(reader.read_ms3d(p), ms3d.Ms3dOptions()),
        ".mdl": lambda p: ops.load_source(p, source.SourceOptions()),
    }
    try:
        bpy.ops.wm.read_factory_settings(use_empty=True)
        for path in paths:
            start = time.perf_counter()
            record = {"file": str(path), "status": "ok", "warnings": [], "seconds": 0.0}
            try:
                if single is None:
                    bpy.ops.wm.read_factory_settings(use_empty=True)
                loader = loaders.get(path.suffix.lower())
                if loader is None or not path.is_file():
                    raise FileNotFoundError(f"{path.name}: not a readable .ms3d or .mdl file")
                (result,) = package.import_files(bpy.context, [str(path)], loader)
                record["warnings"] = result.warnings
                record.update(
                    objects=len(result.objects),
                    vertices=result.vertices,
                    triangles=result.triangles,
                    materials=result.materials,
                    bones=result.bones,
                    actions=result.actions,
                )
                if not result.ok:
                    record.update(status="failed", error=result.error)
                elif single is None:
                    target = out_dir / output_name(path, all_inputs, "." + fmt)
                    if fmt == "glb":
                        bpy.ops.export_scene.gltf(filepath=str(target), export_format="GLB")
                    else:
                        bpy.ops.wm.save_as_mainfile(filepath=str(target), compress=True)
                    record["output"] = str(target)
            except Exception as exc:
                record.update(status="failed", error=f"{type(exc).__name__}: {exc}")
            record["seconds"] = round(time.perf_counter() - start, 3)
            emit(record)
        if single is not None:
            bpy.ops.wm.save_as_mainfile(filepath=str(single), compress=True)
    finally:
        addon.unregister()  # the bpy module hangs or crashes at exit with classes still registered


# --- the driver ---------------------------------------------------------------------------------------------


def worker_command(args: list[str]) -> list[str]:
    """Run this script again: with the same Python when bpy is a module, through Blender when inside Blender.
    (The parent never imports the bpy module itself: it only waits for workers, and the module does not take
    being loaded and torn down idle well.)"""
    bpy = sys.modules.get("bpy")  # already loaded when this runs inside Blender
    if bpy is not None and bpy.app.binary_path:
        return [
            bpy.app.binary_path,
            "--background",
            "--factory-startup",
            "--python-exit-code",
            "1",
            "--python",
            __file__,
            "--",
            *args,
        ]
    return [sys.executable, __file__, *args]


def parse(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("inputs", nargs="+", help="model files and folders (searched recursively)")
    parser.add_argument("-o", "--output-dir", default="converted", help="where the .blend/.glb files go")
    parser.add_argument("--format", choices=("blend", "glb"), default="blend")
    parser.add_argument("--single", metavar="FILE.blend", help="import everything into this one .blend")
    parser.add_argument("--jobs", type=int, default=1, help="worker processes (ignored with --single)")
    parser.add_argument("--report", help="JSON report path (default: OUTPUT_DIR/report.json)")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    return parser.parse_args(argv)


def main(argv: list[str]) -> int:
    args = parse(argv)
    inputs = collect(args.inputs)
    out_dir = Path(args.output_dir).resolve()
    single = Path(args.single).resolve() if args.single else None
    if args.worker:  # one JSON line per file on stdout, for the parent
        convert(inputs, inputs, out_dir, args.format, single, lambda r: print("RESULT " + json.dumps(r), flush=True))
        return 0
    if not inputs:
        print("no .ms3d or .mdl files found", file=sys.stderr)
        return 1
    out_dir.mkdir(parents=True, exist_ok=True)
    results: list[dict] = []
    started = time.perf_counter()

    def progress(record: dict) -> None:
        results.append(record)
        done, total = len(results), len(inputs)
        elapsed = time.perf_counter() - started
        left = elapsed / done * (total - done)
        mark = "ok" if record["status"] == "ok" else "FAILED"
        print(
            f"[{done}/{total}] {Path(record['file']).name}: {mark} (about {left:.0f} s left)",
            file=sys.stderr,
            flush=True,
        )

    jobs = 1 if single else max(1, min(args.jobs, len(inputs)))
    if jobs == 1:
        convert(inputs, inputs, out_dir, args.format, single, progress)
    else:
        shares = [inputs[i::jobs] for i in range(jobs)]
        common = ["--output-dir", str(out_dir), "--format", args.format]
        events: queue.Queue = queue.Queue()

        def read(share: list[Path]) -> None:
            """One thread per worker, so progress shows as soon as any worker finishes a file."""
            proc = subprocess.Popen(
                worker_command(["--worker", *common, *map(str, share)]),
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
                text=True,
            )
            seen = set()
            for line in proc.stdout:
                if line.startswith("RESULT "):
                    record = json.loads(line[7:])
                    seen.add(record["file"])
                    events.put(record)
            proc.wait()
            for path in share:  # a worker that died takes its remaining files with it: report them
                if str(path) not in seen:
                    events.put(
                        {
                            "file": str(path),
                            "status": "failed",
                            "warnings": [],
                            "seconds": 0.0,
                            "error": f"worker exited with status {proc.returncode}",
                        }
                    )

        threads = [threading.Thread(target=read, args=(share,), daemon=True) for share in shares]
        for thread in threads:
            thread.start()
        for _ in inputs:
            progress(events.get())
        for thread in threads:
            thread.join()
    report = Path(args.report) if args.report else out_dir / "report.json"
    report.write_text(json.dumps({"files": results, "seconds": round(time.perf_counter() - started, 3)}, indent=2))
    summary(results)
    print(f"\nreport: {report}")
    return 1 if any(r["status"] != "ok" for r in results) else 0


def summary(results: list[dict]) -> None:
    header = ("file", "status", "objects", "triangles", "bones", "actions", "warnings", "seconds")
    rows = [header] + [
        (
            Path(r["file"]).name,
            r["status"],
            str(r.get("objects", "")),
            str(r.get("triangles", "")),
            str(r.get("bones", "")),
            str(r.get("actions", "")),
            str(len(r["warnings"])),
            f"{r['seconds']:.2f}",
        )
        for r in sorted(results, key=lambda r: r["file"])
    ]
    widths = [max(len(row[i]) for row in rows) for i in range(len(header))]
    print()
    for row in rows:
        print("  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip())
    failed = [r for r in results if r["status"] != "ok"]
    print(f"\n{len(results) - len(failed)} of {len(results)} files converted")
    for r in failed:
        print(f"  {Path(r['file']).name}: {r.get('error', 'failed')}")


if __name__ == "__main__":
    argv = sys.argv[sys.argv.index("--") + 1 :] if "--" in sys.argv else sys.argv[1:]
    code = main(argv)
    bpy = sys.modules.get("bpy")
    if bpy is not None and not bpy.app.binary_path:
        # The bpy wheel can crash while tearing itself down after some exporters ran (seen with glTF on 4.2);
        # everything is written and flushed by now, so leave without that teardown.
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    sys.exit(code)
