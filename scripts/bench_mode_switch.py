"""What the view-layer updates around ``bpy.ops`` calls cost an import, and what skipping them saves.

    python scripts/bench_mode_switch.py [--runs 15]

An import runs Blender operators twice for the armature (edit mode and back) and once per vertex group (an
attribute turned into a group). ``bpy.ops`` updates the view layer before and after each call: everything made so
far is evaluated again. ``blender/operator_call.py`` skips that, through ``_bpy.ops.call`` up to 5.0 and through a
private staging scene from 5.1 on. Timed here, on the running Blender, both ways, alternating, fastest of
``--runs``:

- the armature's edit-mode round trip (civilian.mdl's 59 bones) in a file already holding the model's meshes;
- civilian.mdl's whole import (animations off), where 30 vertex groups are made that way.
"""

from __future__ import annotations

import argparse
import sys
from contextlib import contextmanager

import bench

CIVILIAN = bench.SAMPLES / "source" / "Lambdagon__lambdas-weapon-pack/models/player/civilian.mdl"


@contextmanager
def plain_scope(obj, active: bool = False):
    """``bpy.ops`` as a script would call it: the context's view layer, updates and all."""
    import bpy

    layer = bpy.context.view_layer
    previous = layer.objects.active
    if active:
        layer.objects.active = obj
    try:
        with bpy.context.temp_override(active_object=obj, object=obj):
            yield
    finally:
        layer.objects.active = previous


@contextmanager
def scoped(scope):
    """Every module that opens an operator scope uses ``scope`` for the block."""
    from io_ms3d_mdl.blender import armature, operator_call, weights

    saved = operator_call._call, armature.operator_scope, weights.operator_scope
    if scope is plain_scope:
        operator_call._call = None
    armature.operator_scope = weights.operator_scope = scope
    try:
        yield
    finally:
        operator_call._call, armature.operator_scope, weights.operator_scope = saved


def measure(runs: int) -> dict[str, float]:
    import bpy

    from io_ms3d_mdl.blender.armature import build_armature
    from io_ms3d_mdl.blender.mesh import build_mesh
    from io_ms3d_mdl.blender.operator_call import operator_scope

    scene = bench.load_scene(CIVILIAN)
    state: dict = {}

    def file_with_meshes() -> None:
        bpy.ops.wm.read_factory_settings(use_empty=True)
        collection = bpy.data.collections.new("bench")
        bpy.context.scene.collection.children.link(collection)
        for data in scene.objects:
            collection.objects.link(bpy.data.objects.new(data.name, build_mesh(data.mesh)))
        state["collection"] = collection

    def armature(scope) -> None:
        with scoped(scope):
            build_armature(bpy.context, state["collection"], scene.skeleton)

    def whole(scope) -> None:
        with scoped(scope):
            bpy.ops.import_scene.source_mdl(filepath=str(CIVILIAN), animations="NONE")

    fastest = min
    out = bench.time_each(
        {"armature, ours": lambda: armature(operator_scope), "armature, bpy.ops": lambda: armature(plain_scope)},
        runs,
        file_with_meshes,
        fastest,
    )
    out.update(
        bench.time_each(
            {"import, ours": lambda: whole(operator_scope), "import, bpy.ops": lambda: whole(plain_scope)},
            runs,
            lambda: bpy.ops.wm.read_factory_settings(use_empty=True),
            fastest,
        )
    )
    return out


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=15)
    args = parser.parse_args(argv)
    import bpy

    from io_ms3d_mdl import blender as addon

    addon.register()
    times = measure(args.runs)
    print(f"Blender {bpy.app.version_string}, fastest of {args.runs}")
    for what in ("armature", "import"):
        ours, plain = times[f"{what}, ours"], times[f"{what}, bpy.ops"]
        print(
            f"  {what:9s} ours {ours * 1e3:7.2f} ms   bpy.ops {plain * 1e3:7.2f} ms   ours/bpy.ops {ours / plain:.2f}"
        )
    return 0


if __name__ == "__main__":
    from bench_report import leave

    leave(main(sys.argv[1:]))
