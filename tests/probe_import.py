"""One whole import in a fresh process, for the hostile-file tests and ``scripts/fuzz.py --blender``: what a user
gets (result, message, warnings, counts) as one JSON line on stdout, so the caller can bound the process's time
and memory from outside. Usage: ``python probe_import.py MODEL [JSON_OPTIONS]`` with the ``bpy`` wheel."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def main() -> None:
    path = sys.argv[1]
    options = json.loads(sys.argv[2]) if len(sys.argv) > 2 else {}
    import bpy
    from peak_memory import peak_bytes

    from io_ms3d_mdl import blender as addon

    addon.register()
    try:
        bpy.ops.wm.read_factory_settings(use_empty=True)
        operator = bpy.ops.import_scene.ms3d if path.lower().endswith(".ms3d") else bpy.ops.import_scene.source_mdl
        start = time.perf_counter()
        try:
            status, error = sorted(operator(filepath=path, **options)), None
        except RuntimeError as exc:  # an ERROR report (nothing imported) raises through bpy.ops
            status, error = ["CANCELLED"], str(exc)
        seconds = time.perf_counter() - start
        images = [
            {"name": i.name, "filepath": i.filepath, "packed": i.packed_file is not None, "size": list(i.size)}
            for i in bpy.data.images
        ]
        texts = [repr(dict(block.items())) for coll in (bpy.data.materials, bpy.data.objects) for block in coll]
        print(
            "RESULT "
            + json.dumps(
                {
                    "status": status,
                    "error": error,
                    "seconds": seconds,
                    "objects": len(bpy.data.objects),
                    "actions": len(bpy.data.actions),
                    "images": images,
                    "props": texts,
                    "peak_bytes": peak_bytes(),
                }
            ),
            flush=True,
        )
    finally:
        addon.unregister()


if __name__ == "__main__":
    main()
