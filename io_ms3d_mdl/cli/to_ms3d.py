"""``convert MODEL -o OUT.ms3d``: any model we import, written as MilkShape 3D straight from the scene description,
without Blender (what Blender would import is already that scene: the Blender round trip would add only rounding).

The model is loaded exactly as the importers load it (same options, confinement and budgets), then exported with
the options the import used: the same scale and axes, so a MilkShape file comes back in its own units and a Source
model in its own (inches, Z up turned to MilkShape's Y up). Names the model made that pass MilkShape's 32 bytes
(Source's material paths, body-part options) are cut and numbered, with one warning. With ``--split`` a model past
MilkShape's limits is written as ``OUT.ms3d``, ``OUT_2.ms3d``… (all or none; an existing one needs
``--overwrite``, as ``OUT.ms3d`` does).
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from ..errors import FormatError
from ..filesystem.replace_file import WriteRefused, replace_file, replace_files
from ..formats.ms3d.writer import write_ms3d_bytes
from ..scene.load import load_ms3d, load_source
from ..scene.ms3d.export import ExportError, Ms3dExportOptions, scene_to_ms3d_parts
from ..scene.ms3d.split import part_path
from .import_flags import choices_from


def convert_to_ms3d(args: argparse.Namespace, files: list[str], target: Path) -> int:
    if len(files) != 1 or not os.path.isfile(files[0]):
        print("error: -o OUT.ms3d takes exactly one model file", file=sys.stderr)
        return 2
    if target.exists() and not args.overwrite:
        print(f"error: output exists: {target} (use --overwrite)", file=sys.stderr)
        return 1
    source = files[0]
    choices = choices_from(args)
    try:
        if source.lower().endswith(".ms3d"):
            scene = load_ms3d(source, choices.ms3d)
            options = Ms3dExportOptions(
                choices.ms3d.scale, choices.ms3d.axis_forward, choices.ms3d.axis_up, fit_names=True, split=args.split
            )
        else:
            scene = load_source(source, choices.source)
            options = Ms3dExportOptions(scale=choices.source.scale, fit_names=True, split=args.split)
        scene.objects = [o for o in scene.objects if not o.collision]  # physics hulls are no MilkShape groups
        models = scene_to_ms3d_parts(scene, options)
        files = [(part_path(target, n), write_ms3d_bytes(m)) for n, m in enumerate(models, 1)]
        taken = [p for p, _ in files[1:] if os.path.lexists(p)]
        if taken and not args.overwrite:
            print(f"error: output exists: {taken[0]} (use --overwrite)", file=sys.stderr)
            return 1
        if len(files) == 1:
            replace_file(target, files[0][1])
        else:
            replace_files(files, replaceable=[p for p, _ in files] if args.overwrite else [target])
    except (FormatError, ExportError, WriteRefused, ValueError) as exc:
        print(f"error: {os.path.basename(source)}: {exc}", file=sys.stderr)
        return 1
    for warning in scene.warnings:
        print(f"warning: {warning}", file=sys.stderr)
    for (path, _), model in zip(files, models, strict=True):
        keys = sum(len(j.rotation_keys) + len(j.position_keys) for j in model.joints)
        print(
            f"saved {path}: {len(model.vertices):,} vertices, {len(model.triangles):,} triangles, "
            f"{len(model.groups)} groups, {len(model.materials)} materials, {len(model.joints)} joints, {keys:,} keys"
        )
    return 0
