"""``info`` for GoldSrc (Half-Life 1) models: body parts, textures with their flags, sequences and their groups.
Reached from ``info``'s ``.mdl`` reader when the header says version 10 (or a companion, or a Quake model)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from ..access import read_file
from .report_text import inline, number, plural, table


def is_goldsrc_path(path: str) -> bool:
    from ..scene.goldsrc.load import is_goldsrc_file

    return is_goldsrc_file(read_file(path)[:8])


def is_goldsrc_companion(path: Path) -> bool:
    """A GoldSrc model's texture file (``<name>T.mdl``) or sequence group (``<name>01.mdl``…) beside its model:
    folder searches skip them (the model reads them); named directly they are still reported."""
    stem, suffix = path.stem, path.suffix
    model = stem[:-1] if stem[-1:] in "tT" else stem[:-2] if stem[-2:].isdigit() else ""
    if not model or not path.with_name(model + suffix).is_file():
        return False
    try:
        with path.open("rb") as handle:  # a regular file (the folder search only lists those)
            head = handle.read(8)
    except OSError:
        return False
    return head[:4] == b"IDSQ" or head == b"IDST\n\0\0\0"


def goldsrc_info(path: str) -> dict[str, Any]:
    from ..formats.goldsrc import read_goldsrc
    from ..formats.goldsrc.structs import TEXTURE_FLAGS

    g = read_goldsrc(path)
    frames = {}
    for s in g.sequences:
        frames[s.seqgroup] = frames.get(s.seqgroup, 0) + 1
    return {
        "format": "GoldSrc model",
        "version": 10,
        "name": g.name,
        "bones": len(g.bones),
        "bone_controllers": len(g.controllers),
        "hitboxes": len(g.hitboxes),
        "body_parts": [
            {
                "name": bp.name,
                "base": bp.base,
                "options": [
                    {
                        "name": m.name,
                        "vertices": len(m.vertices),
                        "triangles": sum(len(x.corners) // 3 for x in m.meshes),
                        "degenerate_triangles": sum(_degenerate(x.corners) for x in m.meshes),
                    }
                    for m in bp.models
                ],
            }
            for bp in g.body_parts
        ],
        "textures": [
            {
                "name": t.name,
                "width": t.width,
                "height": t.height,
                "flags": t.flags,
                "flag_names": [n for bit, n in TEXTURE_FLAGS.items() if t.flags & bit],
            }
            for t in g.textures
        ],
        "texture_file": os.path.basename(g.texture_file) if g.texture_file else None,
        "skins": {"families": int(g.skins.shape[0]), "columns": int(g.skins.shape[1]) if g.skins.ndim == 2 else 0},
        "sequences": [
            {
                "name": s.label,
                "frames": s.numframes,
                "fps": s.fps,
                "looping": s.looping,
                "activity": s.activity,
                "blends": s.numblends,
                "events": len(s.events),
                "motion_type": s.motiontype,
                "group": s.seqgroup,
            }
            for s in g.sequences
        ],
        "sequence_groups": [
            {
                "label": grp.label,
                "file": grp.name,
                "sequences": frames.get(i, 0),
                "found": i == 0 or i in g.group_data,
            }
            for i, grp in enumerate(g.groups)
        ],
        "attachments": [a.name for a in g.attachments],
        "warnings": list(g.warnings),
    }


def _degenerate(corners) -> int:
    """Triangles that repeat a vertex (the import skips them)."""
    tris = corners[:, 0].reshape(-1, 3)
    return int(((tris[:, 0] == tris[:, 1]) | (tris[:, 1] == tris[:, 2]) | (tris[:, 0] == tris[:, 2])).sum())


def goldsrc_text(info: dict[str, Any]) -> list[str]:

    lines = ["  game: GoldSrc (Half-Life 1)"]
    lines += [
        f"  bones: {info['bones']:,} ({plural(info['bone_controllers'], 'controller')}, "
        f"{plural(info['hitboxes'], 'hitbox', 'hitboxes')})",
        f"  body parts: {len(info['body_parts'])}",
    ]
    lines += table(
        [
            (
                bp["name"],
                plural(len(bp["options"]), "option") + ":",
                ", ".join(f"{o['name'] or '(blank)'} ({plural(o['triangles'], 'triangle')})" for o in bp["options"]),
            )
            for bp in info["body_parts"]
        ]
    )
    degenerate = sum(o["degenerate_triangles"] for bp in info["body_parts"] for o in bp["options"])
    if degenerate:
        lines.append(f"  degenerate triangles (a repeated vertex, skipped on import): {degenerate:,}")
    where = f" (from {info['texture_file']})" if info["texture_file"] else ""
    lines.append(f"  textures: {len(info['textures'])}{where}")
    lines += table(
        [(t["name"], f"{t['width']}×{t['height']}", ", ".join(t["flag_names"]) or "-") for t in info["textures"]]
    )
    skins = info["skins"]
    lines.append(f"  skins: {plural(skins['families'], 'family', 'families')} × {plural(skins['columns'], 'texture')}")
    lines.append(f"  sequences: {len(info['sequences'])}")
    lines += table(
        [
            (
                s["name"],
                f"{plural(s['frames'], 'frame')} at {number(s['fps'])} fps",
                ("looping" if s["looping"] else "once")
                + (f", {s['blends']} blends" if s["blends"] > 1 else "")
                + (f", {plural(s['events'], 'event')}" if s["events"] else ""),
                f"group {s['group']}",
            )
            for s in info["sequences"]
        ]
    )
    lines.append(f"  sequence groups: {len(info['sequence_groups'])}")
    lines += table(
        [
            (
                f"{i}",
                g["file"] or g["label"],
                plural(g["sequences"], "sequence"),
                "" if g["found"] else "(file not found)",
            )
            for i, g in enumerate(info["sequence_groups"])
        ]
    )
    lines.append(f"  attachments: {len(info['attachments'])}: {inline(info['attachments'])}")
    return lines
