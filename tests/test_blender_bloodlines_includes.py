"""Bloodlines (MDL 2531) included models in real Blender: swat3 with its include chain (from a local fetch of the
Unofficial Patch's repository; skipped, saying so, when it is absent) lists every animation of the chain in the
Source panel, builds one on a pick, builds them all on request, and an included animation poses the mesh where
skinning the test decoder's first frame puts it."""

from __future__ import annotations

import bloodlines_reference as ref
import numpy as np
import pytest
from test_blender_source_anim import play
from test_bloodlines_includes import (  # noqa: F401
    ALL,
    animation_names,
    bone_names,
    bone_parents,
    game_of,
    include_chain,
    offered,
    swat3,
)

from io_ms3d_mdl.scene.load import load_source
from io_ms3d_mdl.scene.rotations import quaternion_to_matrix

pytestmark = pytest.mark.blender


def armature_of(bpy, name: str):
    collection = bpy.data.collections[name]
    return collection, next(o for o in collection.all_objects if o.type == "ARMATURE")


def test_the_panel_lists_the_include_chain_and_a_pick_builds_one(blender, swat3):  # noqa: F811
    bpy = blender
    chain, _ = include_chain(game_of(swat3), swat3)
    expected = offered(animation_names(swat3.read_bytes()), chain)
    assert bpy.ops.import_scene.source_mdl(filepath=str(swat3)) == {"FINISHED"}
    collection, armature = armature_of(bpy, "swat3")
    assert [(i.name, i.source) for i in collection.io_ms3d_mdl_animations] == expected
    assert len(bpy.data.actions) == 1  # the default sequence only
    name, source = next(e for e in expected if e[1])
    assert bpy.ops.io_ms3d_mdl.source_play_animation(model=collection.name, animation=name) == {"FINISHED"}
    action = armature.animation_data.action
    assert action["source_animation"] == name and action["source_include"] == source


def test_all_included_animations_build_and_pose_the_mesh(blender, swat3):  # noqa: F811
    """Frame 0 of each player model's first animation: swat3's bones it names take the decoded local pose, the
    others their bind pose (the inverse of poseToBone); the skinned vertices are where Blender puts them."""
    bpy = blender
    data = swat3.read_bytes()
    chain, _ = include_chain(game_of(swat3), swat3)
    expected = offered(animation_names(data), chain)
    assert bpy.ops.import_scene.source_mdl(filepath=str(swat3), animations="ALL", units="SOURCE") == {"FINISHED"}
    assert sorted(a.name for a in bpy.data.actions) == sorted(n for n, _ in expected)
    assert sorted(a["source_include"] for a in bpy.data.actions if "source_include" in a) == sorted(
        s for _, s in expected if s
    )
    _, armature = armature_of(bpy, "swat3")
    bind = ref.rest_pose(data)
    ours = bone_names(data)
    parents = bone_parents(data)
    (model,) = ref.models(data, None)
    scene = load_source(str(swat3), ALL)
    (mesh,) = [o for o in scene.objects if o.mesh is not None and o.mesh.source_vertices is not None]
    size = float(np.ptp(model.positions, axis=0).max())
    posed = 0
    for source, included in chain:
        names = animation_names(included)
        if not names:
            continue
        theirs = {n.lower(): i for i, n in enumerate(bone_names(included))}
        positions, rotations = ref.first_frame(included, 0)
        world = np.zeros((len(ours), 4, 4))
        for b, name in enumerate(ours):
            parent = parents[b]
            if name.lower() in theirs:
                k = theirs[name.lower()]
                local = np.eye(4)
                local[:3, :3] = quaternion_to_matrix(rotations[k, [3, 0, 1, 2]] / np.linalg.norm(rotations[k]))
                local[:3, 3] = positions[k]
            else:
                local = np.linalg.inv(bind[parent]) @ bind[b] if parent >= 0 else bind[b]
            world[b] = world[parent] @ local if parent >= 0 else local
        skin = world @ np.linalg.inv(bind)
        points = np.c_[model.positions, np.ones(len(model.positions))]
        want = np.zeros((len(points), 3))
        for slot in range(3):
            moved = np.einsum("vij,vj->vi", skin[model.bones[:, slot]], points)[:, :3]
            want += model.weights[:, slot, None] * moved
        play(bpy, armature, names[0], 0)
        evaluated = bpy.data.objects[mesh.name].evaluated_get(bpy.context.evaluated_depsgraph_get()).data
        got = np.empty(len(evaluated.vertices) * 3)
        evaluated.vertices.foreach_get("co", got)
        error = np.abs(got.reshape(-1, 3) - want[mesh.mesh.source_vertices]).max()
        assert error <= 1e-4 * size, (source, names[0], error)
        posed += 1
    assert posed == 7
