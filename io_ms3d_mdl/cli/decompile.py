"""``io-ms3d-mdl decompile``: models back to the sources ``studiomdl`` compiles (QC, SMD, VTA; BMP for GoldSrc).

Blender-free: this command never imports ``bpy`` (``needs_blender.py``); it runs on any Python with numpy. Each
model gets its own folder, mirroring the input tree (``OUT/<path below the input folder>/<model name>/``, the model's
name with ``.mdl`` kept, or a number added, where two would share a folder); inside it the QC and every file it
names, written by ``io_ms3d_mdl.decompile`` (fresh files only, never through a link; the folders from ``OUT`` down
are reached one step at a time without following links, ``filesystem/no_links.py``).

The batch machinery is ``batch``'s: ``--vpk``/``--game`` mount archives and games (models named inside them, or
all of them), ``--jobs N`` decompiles in N processes, ``--shard I/N`` takes every N-th model, ``--resume`` skips
models an earlier report shows decompiled from the same input with the same options, and a JSON report
(``OUT/report.json``; ``report-I-of-N.json`` with ``--shard``) has one record per model: its folder, QC, files,
warnings and seconds, or the one-line reason it failed. A model that cannot be decompiled is one failed record; the
others go on. Exit status 1 when any failed, 2 for a usage error. ``batch --merge-reports`` joins shards' reports.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from multiprocessing import get_context
from pathlib import Path
from typing import Any

from .batch import UsageError, check_output_folder, check_shard, default_report_name, load_earlier, refuse_foreign
from .files import Found, Task, collect, output_paths, parse_shard, read_list, shard
from .import_flags import mounted_from
from .no_links import output_folder
from .progress import Progress
from .reports import ReportWriter, describe, failure, on_finished, records_by_file, stamp, summary

SUMMARY = "Decompile models back to QC, SMD and VTA (BMP for GoldSrc) for studiomdl: one folder per model, no Blender."
EXAMPLES = """examples:
  io-ms3d-mdl decompile models/player/civilian.mdl -o src/
  io-ms3d-mdl decompile models/ -o src/ --jobs 2                      # a whole tree, one folder per model
  io-ms3d-mdl decompile --vpk pak01_dir.vpk models/props -o src/       # models inside an archive
  io-ms3d-mdl decompile --game hl2 -o src/ --shard 1/4 --resume        # every model of a game, a quarter of them"""

FOLDER_MARK = ".decompiled"  # output_paths works on file names; the mark is taken off again


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("inputs", nargs="*", metavar="MODEL_OR_FOLDER", help=".mdl files, and folders searched")
    parser.add_argument("-o", "--output-dir", metavar="DIR", help="where the models' folders go (default: decompiled)")
    parser.add_argument("--overwrite", action="store_true", help="replace files that exist (default: fail the model)")
    parser.add_argument("--jobs", type=int, default=1, metavar="N", help="worker processes (default 1)")
    parser.add_argument("--report", metavar="FILE.json", help="JSON report path (default: OUTPUT_DIR/report.json)")
    parser.add_argument("--resume", action="store_true", help="skip models the report shows up to date")
    parser.add_argument("--shard", metavar="I/N", help="decompile only every N-th model, starting at the I-th")
    parser.add_argument("--files-from", metavar="LIST", help="also the paths in LIST, one a line (- for stdin)")
    parser.add_argument("--vpk", action="append", default=[], metavar="ARCHIVE", help="mount a VPK or GMA archive")
    parser.add_argument("--game", action="append", default=[], metavar="DIR", help="mount a game folder")
    parser.add_argument(
        "--root", action="append", default=[], metavar="DIR", help="a folder included models may also be read from"
    )
    parser.add_argument(
        "--work-limit",
        type=float,
        default=1.0,
        metavar="FACTOR",
        help="multiply every work budget (what is read, decoded and written); raise it only for files you trust "
        "(0.01–1000, default 1)",
    )
    what = parser.add_argument_group("what is written (everything by default)")
    what.add_argument("--no-animations", action="store_true", help="no animation SMDs (the QC keeps its sequences)")
    what.add_argument("--no-includes", action="store_true", help="not the animations of $includemodel models")
    what.add_argument("--no-lods", action="store_true", help="no reference SMDs for the lower levels of detail")
    what.add_argument("--no-physics", action="store_true", help="no collision SMD")
    what.add_argument("--no-flexes", action="store_true", help="no VTA and no flex rules")
    what.add_argument("--no-textures", action="store_true", help="GoldSrc: no BMP textures")
    what.add_argument("--definebone", action="store_true", help="a $definebone line per bone")
    parser.set_defaults(run=run)


def options_from(args: argparse.Namespace, overwrite: bool) -> dict[str, Any]:
    """``DecompileOptions``' fields, as plain data a worker process can be sent."""
    return {
        "search_roots": tuple(os.path.abspath(p) for p in args.root),
        "mounts": mounted_from(args),
        "overwrite": overwrite,
        "animations": not args.no_animations,
        "include_animations": not args.no_includes,
        "lods": not args.no_lods,
        "physics": not args.no_physics,
        "flexes": not args.no_flexes,
        "textures": not args.no_textures,
        "definebone": args.definebone,
        "work_limit": args.work_limit,
    }


def check(args: argparse.Namespace) -> None:
    if not args.inputs and not args.files_from and not (args.vpk or args.game):
        raise UsageError("give models or folders to decompile (or --files-from LIST, --vpk ARCHIVE, --game DIR)")
    if args.jobs < 1:
        raise UsageError("--jobs must be at least 1")
    if not 0.01 <= args.work_limit <= 1000.0:
        raise UsageError("--work-limit must be between 0.01 and 1000")
    check_shard(args.shard)


def model_folders(found: list[Found], out_dir: Path) -> list[Task]:
    """One folder per model, named after it, mirroring the input tree; unique even where names differ only in case
    (``x.mdl`` beside ``X.mdl``: ``x.mdl``, ``X.mdl-2``)."""
    paths = output_paths([item.relative for item in found], FOLDER_MARK)
    return [
        Task(item.source, out_dir / path.with_name(path.name.removesuffix(FOLDER_MARK)))
        for item, path in zip(found, paths, strict=True)
    ]


def run(args: argparse.Namespace) -> int:
    check(args)
    inputs = list(args.inputs) + (read_list(args.files_from) if args.files_from else [])
    given = args.output_dir or "decompiled"
    check_output_folder(given, inputs)
    out_dir = Path(os.path.abspath(given))
    try:
        found = collect(inputs, mounted_from(args), exclude=out_dir.resolve())
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    named = {os.path.abspath(i) for i in inputs}
    found = [f for f in found if f.source.suffix.lower() == ".mdl" or str(f.source) in named]
    if not found:
        print("no .mdl files found", file=sys.stderr)
        return 1
    tasks = model_folders(found, out_dir)
    settings = {"command": "decompile", **options_from(args, False)}
    settings["search_roots"], settings["mounts"] = list(settings["search_roots"]), list(settings["mounts"])
    meta = {"settings": settings, "shard": args.shard, "inputs": len(tasks)}
    if args.shard:
        tasks = shard(tasks, *parse_shard(args.shard))
    report = Path(os.path.abspath(args.report)) if args.report else out_dir / default_report_name(args.shard)
    earlier_report = load_earlier(report) if args.resume else refuse_foreign(report)
    earlier = records_by_file(earlier_report)
    same_options = earlier_report is not None and earlier_report.get("settings") == settings
    if earlier_report is not None and not same_options:
        print(f"--resume: {report} was made with other options; decompiling every model again", file=sys.stderr)
    stamps = {task.source: stamp(task.source) for task in tasks}
    writer = ReportWriter(report, meta, [str(t.source) for t in tasks], earlier, out_dir)
    to_run: list[tuple[Task, bool]] = []
    for task in tasks:
        before = earlier.get(str(task.source)) if same_options else None
        if before and up_to_date(task, before, stamps[task.source]):
            writer.records[str(task.source)] = {**before, "reused": True}
        else:
            to_run.append((task, args.overwrite or (args.resume and ours(task, before))))
    if args.resume and earlier_report is not None:
        print(f"--resume: {len(tasks) - len(to_run):,} of {len(tasks):,} models up to date", file=sys.stderr)
    jobs = max(1, min(args.jobs, len(to_run)))
    progress = Progress(len(to_run), jobs)
    finished = on_finished(writer, progress, stamps)
    complete = False
    try:
        decompile_all(to_run, args, out_dir, jobs, progress, finished)
        complete = True
    except KeyboardInterrupt:
        print(
            f"\ninterrupted: {len(writer.records):,} of {len(tasks):,} models done; {report} keeps them for --resume",
            file=sys.stderr,
        )
        raise
    finally:
        writer.write(complete)
    results = writer.results()
    print("\n".join(["", *summary(results, verb="decompiled"), "", f"report: {report}"]))
    return 1 if any(r["status"] != "ok" for r in results) else 0


def up_to_date(task: Task, earlier: dict[str, Any], now: dict[str, int]) -> bool:
    """Decompiled before from this very input (same size and time) into this folder, whose QC is still there."""
    qc = earlier.get("qc")
    return bool(
        now
        and earlier.get("status") == "ok"
        and earlier.get("output") == str(task.target)
        and all(earlier.get(key) == value for key, value in now.items())
        and isinstance(qc, str)
        and (task.target / qc).is_file()
    )


def ours(task: Task, earlier: dict[str, Any] | None) -> bool:
    """``--resume`` may replace a model's files only when everything in its folder is what an earlier run of this
    report wrote there (a file someone else put there keeps the model failing rather than being replaced)."""
    if not earlier or earlier.get("output") != str(task.target) or not isinstance(earlier.get("files"), list):
        return False
    written = {str(f).lower() for f in earlier["files"]}
    try:
        present = {p.relative_to(task.target).as_posix().lower() for p in task.target.rglob("*") if p.is_file()}
    except OSError:
        return False
    return present <= written


def decompile_all(
    to_run: list[tuple[Task, bool]], args: argparse.Namespace, out_dir: Path, jobs: int, progress: Progress, finished
) -> None:
    if jobs == 1:
        for task, overwrite in to_run:
            progress.started_file(task)
            finished(decompile_one(str(task.source), str(task.target), str(out_dir), options_from(args, overwrite)))
        return
    # spawn: a fresh interpreter per worker (never a fork of a process that may hold Blender or threads)
    with ProcessPoolExecutor(max_workers=jobs, mp_context=get_context("spawn")) as pool:
        futures = {}
        for task, overwrite in to_run:
            future = pool.submit(
                decompile_one, str(task.source), str(task.target), str(out_dir), options_from(args, overwrite)
            )
            futures[future] = task
        try:
            for future in as_completed(futures):
                task = futures[future]
                progress.started_file(task)
                try:
                    record = future.result()
                except Exception as exc:  # the worker died (killed, out of memory): this model fails, the rest go on
                    record = failure(task.source, f"the worker stopped: {describe(exc)}")
                finished(record)
        except KeyboardInterrupt:
            pool.shutdown(wait=False, cancel_futures=True)
            raise


def decompile_one(source: str, target: str, root: str, options: dict[str, Any]) -> dict[str, Any]:
    """One model into its folder: a report record, ``ok`` or ``failed`` with the one-line reason (never raises)."""
    from ..decompile import DecompileOptions, decompile
    from ..errors import FormatError

    started = time.perf_counter()
    try:
        with output_folder(Path(target), Path(root)):  # every step from OUT down made without following a link
            pass
        result = decompile(source, target, DecompileOptions(**options))
    except FormatError as exc:
        return failure(Path(source), str(exc), time.perf_counter() - started)
    except Exception as exc:  # whatever a stranger's file makes the decompiler raise: one row, the batch goes on
        return failure(Path(source), describe(exc), time.perf_counter() - started)
    row = result.as_row()
    return {
        "file": source,
        "status": "ok",
        "output": target,
        "qc": row["qc"],
        "files": row["files"],
        "engine": row["engine"],
        "version": row["version"],
        "warnings": row["warnings"],
        "seconds": round(time.perf_counter() - started, 3),
    }
