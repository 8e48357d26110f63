"""``io-ms3d-mdl batch``: convert whole libraries headless, one .blend or .glb per model, or all into one .blend.

Folders are searched recursively for .ms3d and .mdl files, and the outputs mirror the input tree with names that
never collide (``files.py``). An existing output is never replaced unless ``--overwrite`` is given: without it that
file is reported as failed ("output exists: ... (use --overwrite)"); the same holds for the one file of
``--single``. Outputs are written under a temporary name and moved into place (``safe_write.py``), and the run's
temporary files and folders (Blender's included) are removed at the end.

``--jobs N`` converts in N worker processes (``workers.py``); ``--timeout`` and ``--max-memory`` bound each file,
and a file past either is killed and failed with the reason while the batch goes on. Progress (the file now running,
done/total, time left) goes to stderr, a summary to stdout and a JSON report (``reports.py``) to ``--report``: by
default ``OUTPUT_DIR/report.json`` (``report-I-of-N.json`` with ``--shard I/N``), or ``FILE.report.json`` beside
the ``--single`` file when no ``-o`` is given. The report is rewritten every few seconds, so ``--resume`` can pick
up a run that was killed: it skips inputs whose output an earlier report records as made from the same input (same
size and modification time) with the same options, and still exists. It converts the others again, replacing an
output only when the report or the log of outputs (``output_log.py``) shows an earlier run made that very file.
``--shard I/N`` takes every N-th input, so one command fans out under GNU parallel, a Slurm array or any job queue;
``--merge-reports OUT.json REPORT...`` joins the shards' reports. A file that fails, whatever it raises, does not
stop the others; the exit status is 1 when any file failed, 2 for a usage error.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import uuid
from dataclasses import replace
from pathlib import Path
from typing import Any

from .blender_side import convert_here
from .files import Task, collect, parse_shard, plan, read_list, shard
from .import_flags import add_import_flags, choices_from
from .memory import measurable
from .needs_blender import BlenderMissing, bpy_available, inside_blender
from .no_links import is_link
from .output_log import NotOurLog, close_log, log_path, open_log, read_log, still_ours
from .progress import Progress
from .reports import (
    ReportInvalid,
    ReportWriter,
    failure,
    load_report,
    merge_reports,
    on_finished,
    recorded_identity,
    records_by_file,
    stamp,
    summary,
    up_to_date,
)
from .safe_write import OutputExists, discard, partial_path, refuse_existing, scratch_folder, write_text
from .settings import Settings
from .workers import Limits, Workers

SUMMARY = "Convert whole libraries: one .blend or .glb per model, in worker processes, with limits, resume and shards."
EXAMPLES = """examples:
  io-ms3d-mdl batch models/ -o converted/ --jobs 2
  io-ms3d-mdl batch models/ -o converted/ --format glb --animations default --timeout 300 --max-memory 4000
  io-ms3d-mdl batch models/ -o converted/ --resume                  # after an interruption, or new files
  io-ms3d-mdl batch models/ -o converted/ --shard 2/8               # the 2nd of 8 runs (GNU parallel, Slurm)
  io-ms3d-mdl batch --merge-reports converted/report.json converted/report-*-of-8.json"""


class UsageError(Exception):
    """A flag combination that cannot work; exit status 2."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("inputs", nargs="*", metavar="FILE_OR_FOLDER", help="models, and folders searched recursively")
    parser.add_argument(
        "-o",
        "--output-dir",
        metavar="DIR",
        help="where the .blend/.glb files go, mirroring the input folders (default: converted)",
    )
    parser.add_argument("--format", choices=("blend", "glb"), default="blend", help="each output's format")
    parser.add_argument("--single", metavar="FILE.blend", help="import everything into this one .blend instead")
    parser.add_argument("--overwrite", action="store_true", help="replace outputs that exist (default: fail them)")
    parser.add_argument("--jobs", type=int, default=1, metavar="N", help="worker processes (default 1)")
    parser.add_argument(
        "--timeout", type=float, metavar="SECONDS", help="fail a file that takes longer (it runs in a worker)"
    )
    parser.add_argument(
        "--max-memory",
        type=float,
        metavar="MB",
        help="fail a file whose worker holds more memory (Blender itself takes about 300 MB; it runs in a worker)",
    )
    parser.add_argument(
        "--report",
        metavar="FILE.json",
        help="JSON report path (default: OUTPUT_DIR/report.json; with --single and no -o: FILE.report.json)",
    )
    parser.add_argument(
        "--resume", action="store_true", help="skip inputs whose outputs the report shows up to date, redo the rest"
    )
    parser.add_argument(
        "--shard", metavar="I/N", help="convert only every N-th input, starting at the I-th (1 ≤ I ≤ N)"
    )
    parser.add_argument("--files-from", metavar="LIST", help="also convert the paths in LIST, one a line (- for stdin)")
    parser.add_argument(
        "--merge-reports",
        metavar="OUT.json",
        help="merge the reports given as inputs (the shards of one batch) into OUT.json; converts nothing",
    )
    parser.add_argument("-v", "--verbose", action="store_true", help="show Blender's own messages on stderr")
    add_import_flags(parser)
    parser.set_defaults(run=run)


def build_parser(prog: str) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=prog, description=SUMMARY, epilog=EXAMPLES, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    add_arguments(parser)
    return parser


def main(argv: list[str], prog: str = "io-ms3d-mdl batch") -> int:
    args = build_parser(prog).parse_args(argv)
    try:
        return run(args)
    except (UsageError, BlenderMissing) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except ReportInvalid as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1


def run(args: argparse.Namespace) -> int:
    if args.merge_reports:
        return merge(Path(args.merge_reports), [Path(p) for p in args.inputs])
    check(args)
    try:
        choices = choices_from(args)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    if not (inside_blender() or bpy_available()):
        raise BlenderMissing("batch")
    inputs = list(args.inputs) + (read_list(args.files_from) if args.files_from else [])
    given = args.output_dir or "converted"
    if not args.single:
        check_output_folder(given, inputs)
    out_dir = Path(given).resolve()
    try:
        exclude = None if args.single else out_dir
        found = collect(inputs, choices.source.mounts, exclude, choices.source.work_limit)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    if not found:
        print("no .ms3d or .mdl files found", file=sys.stderr)
        return 1
    single = Path(args.single).resolve() if args.single else None
    report = report_path(args, out_dir, single)
    log = None if single else log_path(report)
    root = None if single else out_dir  # below it, no output path follows a link (no_links.py)
    token = uuid.uuid4().hex[:12]
    settings = Settings(args.format, args.overwrite, token, single, choices, args.verbose, log, root)
    tasks = plan(found, None if single else out_dir, args.format)
    meta = {"settings": settings.fingerprint(), "shard": args.shard, "inputs": len(tasks)}
    if args.shard:
        tasks = shard(tasks, *parse_shard(args.shard))
    earlier_report = load_earlier(report) if args.resume else refuse_foreign(report)
    logged = read_log(log) if args.resume and log else {}  # read before this run adds to it
    earlier = records_by_file(earlier_report)
    same_options = earlier_report is not None and earlier_report.get("settings") == meta["settings"]
    if earlier_report is not None and not same_options:
        print(f"--resume: {report} was made with other options; converting every file again", file=sys.stderr)
    stamps = {task.source: stamp(task.source) for task in tasks}
    writer = ReportWriter(report, meta, [str(task.source) for task in tasks], earlier, root)
    to_run: list[Task] = []
    for task in tasks:
        before = earlier.get(str(task.source))
        if same_options and up_to_date(task, before, stamps[task.source]):
            writer.records[str(task.source)] = {**before, "reused": True}
        else:
            made = recorded_identity(task, before) + logged.get(str(task.target), [])
            to_run.append(replace(task, replaces=still_ours(task.target, made) if args.resume else None))
    if args.resume and earlier_report is not None:
        print(f"--resume: {len(tasks) - len(to_run):,} of {len(tasks):,} files up to date", file=sys.stderr)
    if log is not None:  # one output per task, each logged as it is written
        try:
            open_log(log, root)
        except NotOurLog as exc:
            raise UsageError(str(exc)) from None
        except OSError as exc:
            raise UsageError(f"cannot write the log of outputs {log}: {exc}") from None
    limits = Limits(args.timeout, args.max_memory)
    jobs = max(1, min(args.jobs, len(to_run)))
    progress = Progress(len(to_run), jobs)
    finished = on_finished(writer, progress, stamps)
    complete = False
    try:
        with scratch_folder() as scratch:
            single_error = convert_all(to_run, settings, jobs, limits, progress, finished, scratch)
        if single is not None:
            settle_single(writer.results(), single, single_error)
        complete = True
    except KeyboardInterrupt:
        done = f"{len(writer.records):,} of {len(tasks):,} files done"
        kept = "" if single else f"; {report} keeps them for --resume"
        print(f"\ninterrupted: {done}{kept}", file=sys.stderr)
        raise
    finally:
        for target in [single] if single else [task.target for task in to_run]:
            discard(partial_path(target, settings.token), root)  # what a killed worker or an interrupted save left
        writer.write(complete)  # also when interrupted: what was done is kept for --resume
        if log is not None:
            close_log(log, writer.files(), root)
    results = writer.results()
    print("\n".join(["", *summary(results), "", f"report: {report}"]))
    return 1 if any(r["status"] != "ok" for r in results) else 0


def check(args: argparse.Namespace) -> None:
    """Flag combinations that cannot work, refused before any work."""
    if not args.inputs and not args.files_from and not (args.vpk or args.game):
        raise UsageError("give files or folders to convert (or --files-from LIST, --vpk ARCHIVE, --game DIR)")
    if args.jobs < 1:
        raise UsageError("--jobs must be at least 1")
    if args.single and (args.shard or args.resume or args.timeout or args.max_memory or args.jobs > 1):
        raise UsageError(
            "--single imports into one process and file: no --jobs, --timeout, --max-memory, --shard or --resume"
        )
    if args.single and not args.single.lower().endswith(".blend"):
        raise UsageError("--single writes a .blend file")
    if args.textures == "png" and args.format == "glb" and not args.single:
        raise UsageError("--textures png applies to .blend outputs; a .glb holds its textures")
    for flag, value in (("--timeout", args.timeout), ("--max-memory", args.max_memory)):
        if value is not None and not value > 0:
            raise UsageError(f"{flag} must be positive")
    if args.max_memory is not None and not measurable():
        raise UsageError("--max-memory needs /proc (Linux), the ps command or the psutil package to measure workers")
    check_shard(args.shard)


def check_shard(given: str | None) -> None:
    """``--shard I/N``, when given, must parse (batch and decompile alike)."""
    if given:
        try:
            parse_shard(given)
        except ValueError as exc:
            raise UsageError(str(exc)) from None


def check_output_folder(given: str, inputs: list[str]) -> None:
    """The output folder, when it lies inside a folder of inputs, must be reached there without a link: a pack
    that ships ``converted`` (or a folder on the way to ``-o``) as a link to elsewhere would have the outputs
    written there. (Below the output folder, ``no_links.py`` sees to every step.)"""
    lexical = Path(os.path.abspath(given))
    for item in inputs:
        folder = Path(os.path.abspath(item))
        if not folder.is_dir() or not (lexical == folder or folder in lexical.parents):
            continue
        step = folder
        for part in lexical.relative_to(folder).parts:
            step = step / part
            if is_link(step):
                raise UsageError(
                    f"the output folder {given} lies inside the input folder {item}, and {step} is a symbolic link: "
                    "outputs never follow links there; remove the link, or choose another -o"
                )


def refuse_foreign(report: Path) -> None:
    """A report is replaced at the end of the run: only an earlier report, never a file of someone else's."""
    try:
        load_report(report)
    except ValueError as exc:
        raise UsageError(f"{exc}; move it, or choose another --report") from None


def load_earlier(path: Path) -> dict[str, Any] | None:
    try:
        report = load_report(path)
    except ValueError as exc:
        raise UsageError(f"--resume: {exc}") from None
    if report is None:
        print(f"--resume: no earlier report at {path}; converting every file", file=sys.stderr)
    return report


def report_path(args: argparse.Namespace, out_dir: Path, single: Path | None) -> Path:
    if args.report:
        return Path(args.report).resolve()
    if single is not None and args.output_dir is None:  # --single alone: the output folder would stay empty
        return single.with_name(single.stem + ".report.json")
    return out_dir / default_report_name(args.shard)


def default_report_name(shard_text: str | None) -> str:
    """``report.json``, or ``report-I-of-N.json`` for a shard, so the shards' reports sit side by side."""
    if shard_text:
        index, count = parse_shard(shard_text)
        return f"report-{index}-of-{count}.json"
    return "report.json"


def convert_all(
    tasks: list[Task], settings: Settings, jobs: int, limits: Limits, progress: Progress, finished, scratch: Path
) -> str | None:
    """Convert in this process, or in workers when there are several or files have limits; returns the reason the
    --single file was not written, if it was not."""
    if settings.single is not None:
        try:
            refuse_existing(settings.single, settings.overwrite)
        except OutputExists as exc:  # fail every file up front rather than import them all for nothing
            for task in tasks:
                finished(failure(task.source, str(exc)))
            return None
    if not tasks:
        return None
    if jobs == 1 and not limits:
        return convert_here(tasks, settings, progress.started_file, finished)
    Workers(settings, scratch, limits).run(tasks, jobs, progress.started_file, finished)
    return None


def settle_single(results: list[dict], single: Path, error: str | None) -> None:
    """With --single a file is only converted once the one .blend is written."""
    for record in results:
        if record["status"] == "ok" and error:
            record.update(status="failed", error=error)
        elif record["status"] == "ok":
            record["output"] = str(single)


def merge(out: Path, reports: list[Path]) -> int:
    """Join the shards' reports; 0 when they cover the whole batch and every file converted."""
    if not reports:
        raise UsageError("--merge-reports OUT.json needs the reports to merge")
    refuse_foreign(out)
    try:
        merged, problems = merge_reports(reports)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    write_text(out, json.dumps(merged, indent=2))
    print("\n".join(summary(merged["files"])))
    for problem in problems:
        print(f"warning: {problem}", file=sys.stderr)
    print(f"\nreport: {out} ({len(merged['files']):,} files from {len(reports)} reports)")
    return 1 if problems or any(r.get("status") != "ok" for r in merged["files"]) else 0
