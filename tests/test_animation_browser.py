"""Animations on demand: the import builds the default sequence only and lists every animation the model offers;
a pick builds one more (the same keys as building everything at import) and plays it."""

from __future__ import annotations

import time

import numpy as np
import pytest
from conftest import bpy, samples_dir

pytestmark = pytest.mark.skipif(bpy is None, reason="Blender (the bpy wheel) is not installed; run ./scripts/test.sh")

CIVILIAN = "source/Lambdagon__lambdas-weapon-pack/models/player/civilian.mdl"


def model(name: str = "civilian") -> tuple[bpy.types.Collection, bpy.types.Object]:
    collection = bpy.data.collections[name]
    return collection, next(o for o in collection.objects if o.type == "ARMATURE")


def keys(action: bpy.types.Action) -> dict[tuple[str, int], np.ndarray]:
    from io_ms3d_mdl.blender.animation import curve_factory  # noqa: F401 - the curves live in slots on 4.4+

    if hasattr(action, "layers") and action.layers:
        curves = [c for strip in action.layers[0].strips for bag in strip.channelbags for c in bag.fcurves]
    else:
        curves = list(action.fcurves)
    out = {}
    for c in curves:
        co = np.zeros(len(c.keyframe_points) * 2)
        c.keyframe_points.foreach_get("co", co)
        out[(c.data_path, c.array_index)] = co
    return out


def test_the_default_import_builds_one_action_and_lists_them_all(blender):
    path = samples_dir() / CIVILIAN
    assert blender.ops.import_scene.source_mdl(filepath=str(path)) == {"FINISHED"}
    collection, armature = model()
    offered = collection.io_ms3d_mdl_animations
    assert len(offered) == 130  # its own and those of civilian_animations.mdl, each name once
    assert sum(1 for a in bpy.data.actions) == 1
    default = armature.animation_data.action
    assert default is not None and default["source_animation"] == offered[0].name
    included = [item for item in offered if item.source]
    assert included and all(item.frames > 0 and item.fps > 0 for item in offered)


def test_a_pick_builds_and_plays_one_animation_quickly(blender):
    blender.ops.import_scene.source_mdl(filepath=str(samples_dir() / CIVILIAN))
    collection, armature = model()
    name = next(item.name for item in collection.io_ms3d_mdl_animations if item.source and item.frames > 10)
    start = time.perf_counter()
    assert blender.ops.io_ms3d_mdl.source_play_animation(model=collection.name, animation=name) == {"FINISHED"}
    seconds = time.perf_counter() - start
    action = armature.animation_data.action
    assert action["source_animation"] == name and action.use_fake_user
    scene = blender.context.scene
    assert (scene.frame_start, scene.frame_end) == (int(action.frame_range[0]), int(np.ceil(action.frame_range[1])))
    assert seconds < 0.5, f"{seconds * 1000:.0f} ms"  # ≈ 20–60 ms measured; bounded loosely for busy machines
    count = len(bpy.data.actions)
    assert blender.ops.io_ms3d_mdl.source_play_animation(model=collection.name, animation=name) == {"FINISHED"}
    assert len(bpy.data.actions) == count  # picked again: reused, not rebuilt


def test_picking_in_the_list_plays_it(blender):
    blender.ops.import_scene.source_mdl(filepath=str(samples_dir() / CIVILIAN))
    collection, armature = model()
    collection.io_ms3d_mdl_animation_index = 5
    assert armature.animation_data.action["source_animation"] == collection.io_ms3d_mdl_animations[5].name


def test_on_demand_keys_equal_those_built_at_import(blender):
    path = str(samples_dir() / CIVILIAN)
    blender.ops.import_scene.source_mdl(filepath=path, animations="ALL")
    _, armature = model()
    everything = {a["source_animation"]: keys(a) for a in bpy.data.actions}
    blender.ops.wm.read_factory_settings(use_empty=True)
    blender.ops.import_scene.source_mdl(filepath=path)
    collection, armature = model()
    for item in [collection.io_ms3d_mdl_animations[i] for i in (3, 40, 100)]:
        blender.ops.io_ms3d_mdl.source_play_animation(model=collection.name, animation=item.name)
        picked = keys(armature.animation_data.action)
        reference = everything[item.name]
        assert picked.keys() == reference.keys()
        for channel, values in picked.items():
            np.testing.assert_allclose(values, reference[channel], atol=1e-6)


@pytest.mark.parametrize("build, actions", [("NONE", 0), ("DEFAULT", 1), ("OWN", 2), ("ALL", 130)])
def test_build_choices(blender, build, actions):
    blender.ops.import_scene.source_mdl(filepath=str(samples_dir() / CIVILIAN), animations=build)
    collection, _ = model()
    assert len(bpy.data.actions) == actions  # civilian holds two animations; the other 128 are included
    assert len(collection.io_ms3d_mdl_animations) == 130
