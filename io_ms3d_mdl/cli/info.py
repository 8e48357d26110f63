"""``io-ms3d-mdl info FILE... [--json]``: what a model holds, from the readers alone (numpy, no Blender).

Text is written for people (counts, names, lists cut short); ``--json`` gives every field for programs. Exit
status: 0 when every file was read, 1 when any could not be (its error is printed in place of its report).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Iterable
from typing import Any

from ..errors import FormatError

SUMMARY = "Print what each model holds (counts, groups, body parts, skins, animations), read without Blender."
LIST_LIMIT = 20  # items shown per list in the text report; --json has them all


def ms3d_info(path: str) -> dict[str, Any]:
    from ..formats.ms3d import read_ms3d
    from ..scene.ms3d.armature import parse_clips

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
    from ..formats.source import find_sidecars, read_mdl

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
            {"name": a.name, "frames": a.num_frames, "fps": a.fps, "delta": a.is_delta, "layout": _layout(m, a.flags)}
            for a in m.animations
        ],
        "sequences": len(m.sequences),
        "flexes": len(m.flex_names),
        "flex_controllers": len(m.flex_controllers),
        "flex_rules": len(m.flex_rules),
        "attachments": [a.name for a in m.attachments],
        "includes": m.include_models,
        "companions": {k: os.path.basename(v) if v else None for k, v in vars(sidecars).items()},
        "embedded": {k: {"offset": off, "size": size} for k, (off, size) in m.embedded.items()},
        "physics": _physics(m, sidecars),
        "warnings": list(m.warnings),
    }


def _layout(mdl, flags: int) -> str:
    """How an animation's data is stored: each decodes alike, but users comparing tools ask."""
    from ..formats.source.animation import STUDIO_FRAMEANIM

    if mdl.version == 53:
        return "Respawn per-bone streams"
    return "frame-major (STUDIO_FRAMEANIM)" if flags & STUDIO_FRAMEANIM else "per-bone streams"


def _physics(mdl, sidecars) -> dict[str, Any] | None:
    """The collision model's solids and ragdoll joints (what the import builds in the hidden physics collection)."""
    from ..formats.source import read_physics_companion

    try:
        phy = read_physics_companion(mdl, sidecars)
    except FormatError as exc:
        return {"error": exc.message}
    if phy is None:
        return None
    return {
        "solids": phy.solid_count,
        "pieces": sum(len(s.pieces) for s in phy.solids),
        "constraints": sum(name == "ragdollconstraint" for name, _ in phy.blocks),
        "checksum_matches": phy.checksum == mdl.checksum,
    }


GAMES = {52: "Titanfall (Respawn)", 53: "Titanfall 2 (Respawn)"}  # versions whose layout is not Valve's


READERS = {".ms3d": ms3d_info, ".mdl": mdl_info}


# --- text for people ----------------------------------------------------------------------------------------


def plural(n: int, one: str, many: str | None = None) -> str:
    return f"{n:,} {one if n == 1 else (many or one + 's')}"


def number(value: float) -> str:
    """``24`` rather than ``24.0``; fractions kept."""
    return f"{value:g}" if isinstance(value, float) else f"{value:,}"


def table(rows: list[tuple[str, ...]], indent: str = "    ") -> list[str]:
    """Rows with their columns aligned, cut to LIST_LIMIT with a note saying how many were left out."""
    shown = rows[:LIST_LIMIT]
    widths = [max(len(row[i]) for row in shown) for i in range(len(shown[0]))] if shown else []
    lines = [indent + "  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip() for row in shown]
    if len(rows) > LIST_LIMIT:
        lines.append(f"{indent}… and {len(rows) - LIST_LIMIT:,} more (--json lists all)")
    return lines


def inline(items: Iterable[str]) -> str:
    items = list(items)
    if not items:
        return "none"
    text = ", ".join(items[:LIST_LIMIT])
    return text + (f", … and {len(items) - LIST_LIMIT:,} more" if len(items) > LIST_LIMIT else "")


def warning_lines(warnings: list[str]) -> list[str]:
    return ["  warnings: none"] if not warnings else [f"  warnings: {len(warnings)}", *(f"    - {w}" for w in warnings)]


def ms3d_text(info: dict[str, Any]) -> list[str]:
    materials = info["materials"]

    def material(index: int) -> str:
        return f"material {materials[index]['name']}" if 0 <= index < len(materials) else "no material"

    lines = [f"  {plural(info['vertices'], 'vertex', 'vertices')}, {plural(info['triangles'], 'triangle')}"]
    lines.append(f"  groups: {len(info['groups'])}")
    lines += table([(g["name"], plural(g["triangles"], "triangle"), material(g["material"])) for g in info["groups"]])
    lines.append(f"  materials: {len(materials)}")
    lines += table([(m["name"], f"texture {m['texture']}" if m["texture"] else "no texture") for m in materials])
    if info["joints"]:
        lines.append(
            f"  joints: {info['joints']}, {plural(info['keys'], 'key')}, "
            f"{plural(info['frames'], 'frame')} at {number(info['fps'])} fps"
        )
    else:
        lines.append("  joints: none (a static model)")
    lines.append(f"  clips: {len(info['clips'])}")
    lines += table([(c["name"], f"frames {number(c['start'])}–{number(c['end'])}") for c in info["clips"]])
    lines.append(f"  extended blocks: {inline(info['extended_blocks'])}")
    return lines


def mdl_text(info: dict[str, Any]) -> list[str]:
    def option(o: dict[str, Any]) -> str:
        return f"{o['name'] or '(blank)'} ({plural(o['vertices'], 'vertex', 'vertices')})"

    animations = info["animations"]
    deltas = sum(a["delta"] for a in animations)
    skins = info["skins"]
    companions = info["companions"]
    embedded = info.get("embedded", {})
    found = [name for name in companions.values() if name]
    optional = {"vvc", *embedded}  # Titanfall's vertex colours are rare even there; v53 embeds its own
    missing = [f".{kind}" for kind, name in companions.items() if not name and kind not in optional]
    lines = [f"  game: {GAMES[info['version']]}"] if info["version"] in GAMES else []
    if embedded:
        parts = (f".{k} ({plural(e['size'], 'byte')} at offset {e['offset']:,})" for k, e in embedded.items())
        lines.append(f"  embedded in the .mdl: {inline(parts)}")
    lines += [f"  bones: {info['bones']:,}", f"  body parts: {len(info['body_parts'])}"]
    lines += table(
        [
            (bp["name"], plural(len(bp["options"]), "option") + ":", ", ".join(option(o) for o in bp["options"]))
            for bp in info["body_parts"]
        ]
    )
    lines.append(f"  skins: {plural(skins['families'], 'family', 'families')} × {plural(skins['columns'], 'material')}")
    lines.append(f"  textures: {len(info['textures'])}: {inline(info['textures'])}")
    lines.append(f"  material folders: {inline(f or '(materials/ itself)' for f in info['material_folders'])}")
    frame_major = sum(a["layout"].startswith("frame-major") for a in animations)
    notes = [f"{deltas} delta"] * bool(deltas) + [f"{frame_major} frame-major"] * bool(frame_major)
    lines.append(f"  animations: {len(animations)}" + (f" ({', '.join(notes)})" if notes else ""))
    lines += table(
        [
            (a["name"], f"{plural(a['frames'], 'frame')} at {number(a['fps'])} fps" + (", delta" if a["delta"] else ""))
            for a in animations
        ]
    )
    lines.append(
        f"  sequences: {info['sequences']:,}   flexes: {info['flexes']:,}"
        + (
            f" ({plural(info['flex_controllers'], 'controller')}, {plural(info['flex_rules'], 'rule')})"
            if info["flexes"]
            else ""
        )
    )
    lines.append(f"  attachments: {len(info['attachments'])}: {inline(info['attachments'])}")
    lines.append(f"  included models: {inline(info['includes'])}")
    lines.append(f"  companion files: {inline(found)}" + (f" (no {', '.join(missing)})" if missing else ""))
    physics = info.get("physics")
    if physics and "error" in physics:
        lines.append(f"  collision: not readable: {physics['error']}")
    elif physics:
        joints = f", {plural(physics['constraints'], 'ragdoll joint')}" if physics["constraints"] else ""
        stale = "" if physics["checksum_matches"] else " (checksum differs from the model's)"
        lines.append(
            f"  collision: {plural(physics['solids'], 'solid')} of {plural(physics['pieces'], 'convex piece')}"
            f"{joints}{stale}"
        )
    return lines


def text_report(path: str, info: dict[str, Any]) -> str:
    title = f"{os.path.basename(path)}: {info['format']} version {info['version']}"
    if info.get("name"):
        title += f" ({info['name']})"
    body = ms3d_text(info) if info["format"] == "MilkShape 3D" else mdl_text(info)
    return "\n".join([title, *body, *warning_lines(info["warnings"])])


# --- the command --------------------------------------------------------------------------------------------


def read_info(path: str) -> dict[str, Any]:
    """A model's report, or ``{"error": message}`` when it cannot be read."""
    reader = READERS.get(os.path.splitext(path)[1].lower())
    try:
        if reader is None:
            raise FormatError(path, None, "not a .ms3d or .mdl file")
        return reader(path)
    except FormatError as exc:
        return {"error": exc.message}
    except OSError as exc:  # missing, a folder, unreadable
        return {"error": f"{os.path.basename(path)}: {exc.strerror or exc}"}


def mounted_files(args: argparse.Namespace) -> list[str]:
    """The files as given, or (with --vpk/--game) names not on disk found inside those archives and games."""
    from .files import collect
    from .import_flags import mounted_from

    mounted = mounted_from(args)
    if not mounted:
        return list(args.files)
    try:
        return [str(found.source) for found in collect(args.files, mounted)]
    except ValueError as exc:
        raise SystemExit(f"error: {exc}") from None


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("files", nargs="+", metavar="FILE", help=".ms3d or .mdl files")
    parser.add_argument("--json", action="store_true", help="one JSON document for all files, every field")
    parser.add_argument("--vpk", action="append", default=[], metavar="ARCHIVE", help="files are inside this archive")
    parser.add_argument("--game", action="append", default=[], metavar="DIR", help="files are inside this game")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    reports = {path: read_info(path) for path in mounted_files(args)}
    if args.json:
        json.dump(reports, sys.stdout, indent=2, default=str)
        print()
    else:
        print("\n\n".join(r["error"] if "error" in r else text_report(p, r) for p, r in reports.items()))
    return 1 if any("error" in r for r in reports.values()) else 0
