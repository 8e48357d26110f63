"""The operators an import runs (edit mode for the bones, one attribute conversion per vertex group) skip the
view-layer updates around every ``bpy.ops`` call: through Blender's internal call up to 5.0, in a private staging
scene from 5.1 on. Both ways must make the same rig and leave nothing behind."""

from __future__ import annotations

import sys

import numpy as np
import pytest
from conftest import ROOT, bpy, datablock_counts, sample_path

sys.path.insert(0, str(ROOT / "scripts"))

pytestmark = pytest.mark.blender

CIVILIAN = "Lambdagon__lambdas-weapon-pack/models/player/civilian.mdl"


def rig_state() -> tuple:
    arm = next(o for o in bpy.data.objects if o.type == "ARMATURE")
    bones = [
        (b.name, b.parent.name if b.parent else "", np.round(np.array(b.matrix_local), 5).tolist())
        for b in arm.data.bones
    ]
    groups = []
    for obj in sorted((o for o in bpy.data.objects if o.type == "MESH"), key=lambda o: o.name):
        for vertex in obj.data.vertices:
            groups.append(tuple((obj.vertex_groups[g.group].name, round(g.weight, 6)) for g in vertex.groups))
    return bones, groups, [o.name for o in bpy.data.objects], [s.name for s in bpy.data.scenes]


def test_the_fast_path_is_chosen_by_what_blender_offers():
    from _bpy import ops

    from io_ms3d_mdl.blender import operator_call

    assert (operator_call._call is None) == (not hasattr(ops, "call"))


def test_the_staging_scene_makes_the_same_rig_as_the_internal_call_and_leaves_nothing(blender, monkeypatch):
    """Where Blender still has its internal call (4.2–5.0), force the staging path too and compare; on 5.1+ the
    staging path is the only one, and it is compared with the plain ``bpy.ops`` calls it replaces."""
    from io_ms3d_mdl.blender import operator_call

    path = str(sample_path("source", CIVILIAN))
    bpy.ops.import_scene.source_mdl(filepath=path)
    default = rig_state()

    if operator_call._call is not None:
        monkeypatch.setattr(operator_call, "_call", None)  # the staging path, as 5.1+ takes it
    else:  # bpy.ops as it is, updates and all (what scripts/bench_mode_switch.py times ours against)
        import bench_mode_switch

        from io_ms3d_mdl.blender import armature, weights

        for module in (operator_call, armature, weights):
            monkeypatch.setattr(module, "operator_scope", bench_mode_switch.plain_scope)
    bpy.ops.wm.read_factory_settings(use_empty=True)
    bpy.ops.import_scene.source_mdl(filepath=path)
    assert rig_state() == default
    assert [s.name for s in bpy.data.scenes] == ["Scene"]


def test_a_failure_inside_the_staging_scene_removes_it(blender, monkeypatch):
    from io_ms3d_mdl.blender import operator_call

    monkeypatch.setattr(operator_call, "_call", None)
    arm = bpy.data.objects.new("rig", bpy.data.armatures.new("rig"))
    bpy.context.scene.collection.objects.link(arm)
    before = datablock_counts()
    with pytest.raises(ValueError, match="injected"), operator_call.operator_scope(arm, active=True):
        assert bpy.context.scene.name == operator_call.STAGING
        assert [o.name for o in bpy.context.scene.objects] == ["rig"]  # nothing else to evaluate
        assert operator_call.run_operator("object.mode_set", mode="EDIT") and arm.mode == "EDIT"
        assert operator_call.run_operator("object.mode_set", mode="OBJECT")
        raise ValueError("injected")
    assert datablock_counts() == before and [s.name for s in bpy.data.scenes] == ["Scene"]
    assert arm.users_scene == (bpy.data.scenes["Scene"],)


def test_one_staging_scene_serves_a_whole_import(blender, monkeypatch):
    """Making and removing a scene costs about 0.3 ms in a full file, and an import opens a scope per rigged object:
    inside ``staging()`` (what an import runs in) every scope shares one scene, removed when the block ends."""
    from io_ms3d_mdl.blender import operator_call

    monkeypatch.setattr(operator_call, "_call", None)
    rig = bpy.data.objects.new("rig", bpy.data.armatures.new("rig"))
    mesh = bpy.data.objects.new("mesh", bpy.data.meshes.new("mesh"))
    for obj in (rig, mesh):
        bpy.context.scene.collection.objects.link(obj)
    seen = []
    with operator_call.staging():
        for obj, active in ((rig, True), (mesh, False), (rig, True)):
            with operator_call.operator_scope(obj, active=active):
                seen.append(bpy.context.scene.as_pointer())
                assert list(bpy.context.scene.objects) == ([obj] if active else [])
        assert len(set(seen)) == 1 and len(bpy.data.scenes) == 2
    assert [s.name for s in bpy.data.scenes] == ["Scene"] and rig.users_scene == (bpy.data.scenes["Scene"],)
