"""Import models headless (MilkShape .ms3d, Source .mdl) with Blender as a Python module and print what was created.

    python scripts/import_models.py [FILES...] [-o OUT.blend]

With no file, imports the bundled example ``examples/house.ms3d``. The add-on is loaded through its real entry
point (the repository's ``__init__.py``) and files go through the same operators an artist uses. Exits 1 when
any file failed.
"""

from __future__ import annotations

import argparse
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EXAMPLE = os.path.join(ROOT, "examples", "house.ms3d")
sys.path.insert(0, os.path.join(ROOT, "scripts"))

from addon_entry import load_addon  # noqa: E402 - after the path set-up


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Import .ms3d and .mdl models headless and print a summary.")
    parser.add_argument("files", nargs="*", help="model files (default: the bundled example)")
    parser.add_argument("-o", "--output", help="save the result as this .blend file")
    args = parser.parse_args(argv)
    files = args.files or [EXAMPLE]
    addon = load_addon()
    addon.register()
    try:
        return _import_all(files, args.output)
    finally:
        addon.unregister()  # exiting with classes registered hangs (4.5) or crashes (4.2) the bpy module


def _import_all(files: list[str], output: str | None) -> int:
    import bpy

    bpy.ops.wm.read_factory_settings(use_empty=True)
    operators = {".ms3d": bpy.ops.import_scene.ms3d, ".mdl": bpy.ops.import_scene.source_mdl}

    rows, failed = [], 0
    for path in files:
        path = os.path.abspath(path)
        op = operators.get(os.path.splitext(path)[1].lower())
        before = set(bpy.data.collections)
        status = "ok"
        if op is None:
            status, failed = "unsupported file type", failed + 1
        else:
            try:
                op(filepath=path)
            except RuntimeError as exc:  # the operator's ERROR report
                status, failed = (
                    "FAILED: " + str(exc).strip().removeprefix("Error: ").removeprefix("Import failed: "),
                    failed + 1,
                )
        new = [c for c in bpy.data.collections if c not in before]
        objects = list({o for c in new for o in c.all_objects})
        meshes = {o.data for o in objects if o.type == "MESH"}
        materials = {m for me in meshes for m in me.materials if m}
        images = {n.image for m in materials if m.node_tree for n in m.node_tree.nodes if getattr(n, "image", None)}
        armatures = [o for o in objects if o.type == "ARMATURE"]
        actions = {o.animation_data.action for o in armatures if o.animation_data and o.animation_data.action}
        rows.append(
            (
                os.path.basename(path),
                str(len(objects)),
                str(sum(len(me.vertices) for me in meshes)),
                str(sum(len(me.polygons) for me in meshes)),
                str(len(materials)),
                str(len(images)),
                str(sum(len(o.data.bones) for o in armatures)),
                str(len(actions)),
                status,
            )
        )

    header = ("file", "objects", "vertices", "faces", "materials", "images", "bones", "actions", "status")
    widths = [max(len(r[i]) for r in (header, *rows)) for i in range(len(header))]
    print()
    for row in (header, *rows):
        print("  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=False)).rstrip())
    if output:
        out = os.path.abspath(output)
        bpy.ops.wm.save_as_mainfile(filepath=out)
        print(f"\nSaved {out}")
    print(f"\n{len(files) - failed} of {len(files)} files imported")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
