"""``io-ms3d-mdl`` (or ``python -m io_ms3d_mdl``): look inside models, and convert them with Blender.

    io-ms3d-mdl info FILE... [--json]                      what a model holds (numpy only, no Blender)
    io-ms3d-mdl convert FILE... [-o OUT.blend|OUT.glb]     import with Blender, print what was built, save it
    io-ms3d-mdl batch FOLDER... -o DIR [--jobs N] ...      whole libraries: workers, limits, resume, shards
    io-ms3d-mdl decompile MODEL|FOLDER... -o DIR           back to QC/SMD/VTA for studiomdl (numpy only, no Blender)

``convert`` and ``batch`` need Blender as a Python module (``pip install bpy``) or run inside Blender.
"""

from __future__ import annotations

import argparse
import sys

from .. import __version__
from . import batch, convert, decompile, info
from .needs_blender import BlenderMissing, run_and_leave


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="io-ms3d-mdl",
        description="Look inside MilkShape 3D (.ms3d) and Source (.mdl) models, and convert them with Blender.",
        epilog="convert and batch need Blender as a Python module (pip install bpy) or run inside Blender.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name, module, text in (
        ("info", info, "what each model holds, from the readers alone (no Blender)"),
        ("convert", convert, "import files with Blender and save one .blend/.glb, or one each"),
        ("batch", batch, "convert whole folders: workers, time and memory limits, resume, shards, a JSON report"),
        ("decompile", decompile, "models back to QC, SMD and VTA for studiomdl, one folder each (no Blender)"),
    ):
        sub = commands.add_parser(
            name,
            help=text,
            description=module.SUMMARY,
            epilog=getattr(module, "EXAMPLES", None),
            formatter_class=argparse.RawDescriptionHelpFormatter,
        )
        module.add_arguments(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.run(args)
    except (batch.UsageError, BlenderMissing) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except batch.ReportInvalid as exc:  # a damaged report (--resume, --merge-reports): input refused, not usage
        print(f"error: {exc}", file=sys.stderr)
        return 1


def entry() -> None:
    """The console script (and ``python -m io_ms3d_mdl``)."""
    run_and_leave(main)
