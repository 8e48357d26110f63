"""``python -m io_ms3d_mdl info FILE... [--json]``: what a model contains, from the readers alone (no Blender).

Exit status: 0 when every file was read, 1 when any could not be (its error is printed in place of its report).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any

from .errors import FormatError


def ms3d_info(path: str) -> dict[str, Any]:
    from .formats.ms3d import read_ms3d
    from .scene.ms3d_armature import parse_clips

    m = read_ms3d(path)
    return {
        "format": "MilkShape 3D",
        "version": m.version,
        "vertices": len(m.vertices),
        "triangles": len(m.triangles),
        "groups": [
            {"name": g.name, "triangles": len(g.triangle_indices), "material": g.material_index} for g in m.groups
        ],
        "materials": [{"name": x.name, "texture": x.texture} for x in m.materials],
        "joints": len(m.joints),
        "keys": sum(len(j.rotation_keys) + len(j.position_keys) for j in m.joints),
        "fps": m.fps,
        "frames": m.total_frames,
        "clips": [{"name": c.name, "start": c.start, "end": c.end} for c in parse_clips(m.model_comment)],
        "extended_blocks": m.extended_blocks,
        "warnings": list(m.warnings),
    }


def mdl_info(path: str) -> dict[str, Any]:
    from .formats.source import find_sidecars, read_mdl

    m = read_mdl(path)
    sidecars = find_sidecars(path)
    return {
        "format": "Source model",
        "version": m.version,
        "name": m.name,
        "bones": len(m.bones),
        "body_parts": [
            {
                "name": bp.name,
                "base": bp.base,
                "options": [{"name": mo.name, "vertices": mo.num_vertices} for mo in bp.models],
            }
            for bp in m.body_parts
        ],
        "skins": {"families": int(m.skins.shape[0]), "columns": int(m.skins.shape[1])},
        "textures": m.textures,
        "material_folders": m.cd_materials,
        "animations": [
            {"name": a.name, "frames": a.num_frames, "fps": a.fps, "delta": a.is_delta} for a in m.animations
        ],
        "sequences": len(m.sequences),
        "flexes": len(m.flex_names),
        "attachments": [a.name for a in m.attachments],
        "includes": m.include_models,
        "companions": {k: os.path.basename(v) if v else None for k, v in vars(sidecars).items()},
        "warnings": list(m.warnings),
    }


READERS = {".ms3d": ms3d_info, ".mdl": mdl_info}


def text_report(path: str, info: dict[str, Any]) -> str:
    lines = [f"{os.path.basename(path)}: {info['format']} version {info['version']}"]
    for key, value in info.items():
        if key in ("format", "version"):
            continue
        if isinstance(value, list) and value and isinstance(value[0], dict):
            lines.append(f"  {key}: {len(value)}")
            for item in value:
                lines.append("    - " + ", ".join(f"{k} {v}" for k, v in item.items() if not isinstance(v, list)))
                for sub in (v for v in item.values() if isinstance(v, list)):
                    lines += ["        " + ", ".join(f"{k} {v}" for k, v in s.items()) for s in sub]
        elif isinstance(value, list):
            lines.append(f"  {key}: {', '.join(map(str, value)) if value else '-'}")
        else:
            lines.append(f"  {key}: {value}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m io_ms3d_mdl", description="Inspect models without Blender.")
    sub = parser.add_subparsers(dest="command", required=True)
    info = sub.add_parser("info", help="print what each model contains")
    info.add_argument("files", nargs="+")
    info.add_argument("--json", action="store_true", help="one JSON document for all files")
    args = parser.parse_args(argv)
    failed = 0
    reports = {}
    for path in args.files:
        reader = READERS.get(os.path.splitext(path)[1].lower())
        try:
            if reader is None:
                raise FormatError(path, None, "not a .ms3d or .mdl file")
            reports[path] = reader(path)
        except FormatError as exc:
            failed += 1
            reports[path] = {"error": exc.message}
    if args.json:
        json.dump(reports, sys.stdout, indent=2, default=str)
        print()
    else:
        for path, report in reports.items():
            print(report["error"] if "error" in report else text_report(path, report))
    return 1 if failed else 0
