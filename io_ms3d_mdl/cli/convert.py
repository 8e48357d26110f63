"""``io-ms3d-mdl convert``: import models with Blender in this process, print what was built, and save it.

    io-ms3d-mdl convert FILES...                                  import and print the table; nothing is saved
    io-ms3d-mdl convert FILES... -o OUT.blend                     everything into one file (or OUT.glb)
    io-ms3d-mdl convert FILES... --output-dir DIR [--format glb]  one file per model

The counts come from the import itself (the add-on's ImportResult), the same numbers the operators report. For
folders, worker processes, limits and reports, use ``batch``. Exit status 1 when any file failed, 2 for a usage
error.
"""

from __future__ import annotations

import argparse
import sys
import uuid
from pathlib import Path
from typing import Any

from .batch import UsageError, settle_single
from .blender_side import convert_here
from .files import collect, plan
from .import_flags import add_import_flags, choices_from
from .needs_blender import BlenderMissing
from .progress import Progress
from .reports import failure, summary
from .safe_write import OutputExists, discard, partial_path, refuse_existing, scratch_folder
from .settings import Settings

OUTPUTS = (".blend", ".glb", ".ms3d")
SUMMARY = "Import models with Blender, print what was built, and save it in one file or one file each."
EXAMPLES = """examples:
  io-ms3d-mdl convert model.ms3d                              # import and print the table; nothing saved
  io-ms3d-mdl convert model.ms3d other.mdl -o scene.blend
  io-ms3d-mdl convert model.mdl -o model.ms3d                  # MilkShape 3D, straight from the scene (no Blender)
  io-ms3d-mdl convert big.mdl -o big.ms3d --split              # past MilkShape's limits: big.ms3d, big_2.ms3d, ...
  io-ms3d-mdl convert models/player/civilian.mdl -o civilian.glb --animations default
  io-ms3d-mdl convert models/ --output-dir converted/ --units hammer
  io-ms3d-mdl convert --vpk pak01_dir.vpk models/weapons/v_x.mdl -o x.blend   # a model inside an archive
  io-ms3d-mdl convert --game "Team Fortress 2/tf" models/player/scout.mdl -o scout.blend"""


def add_arguments(parser: argparse.ArgumentParser, default_files: list[str] | None = None) -> None:
    parser.add_argument("files", nargs="*", metavar="FILE_OR_FOLDER", help=".ms3d and .mdl files, or folders")
    parser.add_argument("-o", "--output", metavar="OUT.blend", help="save everything into this .blend (or .glb)")
    parser.add_argument("--output-dir", metavar="DIR", help="save one file per model here instead")
    parser.add_argument("--format", choices=("blend", "glb"), default="blend", help="with --output-dir")
    parser.add_argument("--overwrite", action="store_true", help="replace outputs that exist (default: fail them)")
    parser.add_argument(
        "--split",
        action="store_true",
        help="with -o OUT.ms3d: a model past MilkShape's limits (65,534 vertices or triangles, 255 groups, 128 "
        "materials) is written as OUT.ms3d, OUT_2.ms3d, ... each within them (default: refused)",
    )
    parser.add_argument("-v", "--verbose", action="store_true", help="show Blender's own messages on stderr")
    add_import_flags(parser)
    parser.set_defaults(run=run, default_files=default_files or [])


def build_parser(prog: str, default_files: list[str] | None = None) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=prog, description=SUMMARY, epilog=EXAMPLES, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    add_arguments(parser, default_files)
    return parser


def main(argv: list[str], prog: str = "io-ms3d-mdl convert", default_files: list[str] | None = None) -> int:
    args = build_parser(prog, default_files).parse_args(argv)
    try:
        return run(args)
    except (UsageError, BlenderMissing) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2


def run(args: argparse.Namespace) -> int:
    files = args.files or (args.default_files if not (args.vpk or args.game) else [])
    single = Path(args.output).resolve() if args.output else None
    out_dir = Path(args.output_dir).resolve() if args.output_dir else None
    check(args, files, single)
    if single is not None and single.suffix.lower() == ".ms3d":
        from .to_ms3d import convert_to_ms3d

        return convert_to_ms3d(args, files, single)
    try:
        choices = choices_from(args)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    try:
        found = collect(files, choices.source.mounts, work_limit=choices.source.work_limit)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    if not found:
        print("no .ms3d or .mdl files found", file=sys.stderr)
        return 1
    token = uuid.uuid4().hex[:12]
    settings = Settings(args.format, args.overwrite, token, single, choices, args.verbose, output_root=out_dir)
    tasks = plan(found, out_dir, args.format)
    records: list[dict[str, Any]] = []
    progress = Progress(len(tasks))

    def finished(record: dict[str, Any]) -> None:
        progress.finished_file(record)
        records.append(record)

    single_error = None
    try:
        with scratch_folder():
            if single is not None:
                refuse_existing(single, args.overwrite)
            single_error = convert_here(tasks, settings, progress.started_file, finished, command="convert")
    except OutputExists as exc:
        records = [failure(task.source, str(exc)) for task in tasks]
    finally:
        if single is not None:
            discard(partial_path(single, settings.token))
    if single is not None:
        settle_single(records, single, single_error)
    print("\n".join(["", *summary(records, "converted" if single or out_dir else "imported")]))
    if single is not None and not single_error and records and "output" in records[0]:
        print(f"saved {single}")
    return 1 if any(r["status"] != "ok" for r in records) else 0


def check(args: argparse.Namespace, files: list[str], single: Path | None) -> None:
    if not files and not (args.vpk or args.game):
        raise UsageError("give the files (or folders) to import")
    if single is not None and args.output_dir:
        raise UsageError("give -o OUT.blend (everything in one file) or --output-dir DIR (one file each), not both")
    if single is not None and single.suffix.lower() not in OUTPUTS:
        raise UsageError(f"-o saves a .blend, .glb or .ms3d file, not {single.name}")
    if args.split and (single is None or single.suffix.lower() != ".ms3d"):
        raise UsageError("--split applies to -o OUT.ms3d")
    glb = (single is not None and single.suffix.lower() == ".glb") or (args.output_dir and args.format == "glb")
    if args.textures == "png" and glb:
        raise UsageError("--textures png applies to .blend outputs; a .glb holds its textures")
