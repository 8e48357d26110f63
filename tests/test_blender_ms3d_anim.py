"""MilkShape skeleton, skinning and animation in real Blender, checked against the Blender-free reference
evaluator (``scene.ms3d.rig.skinned_positions``) frame by frame."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import ms3d_sample
from ms3d_writer import write_ms3d
from test_ms3d_rig import arm_spec

from io_ms3d_mdl.errors import Warnings
from io_ms3d_mdl.formats.ms3d import read_ms3d
from io_ms3d_mdl.scene.axes import axis_conversion_matrix
from io_ms3d_mdl.scene.ms3d.convert import Ms3dOptions, ms3d_to_scene
from io_ms3d_mdl.scene.ms3d.rig import effective_fps, hierarchy, key_frames, skinned_positions

pytestmark = pytest.mark.blender

ANIMATED = [
    "akadjoker__H3DView/media/dwarf.ms3d",
    "akadjoker__H3DView/media/Bird.ms3d",
    "akadjoker__H3DView/media/bones2.ms3d",
    "akadjoker__H3DView/media/cube.ms3d",
    "soulsheng__ms3d-render/Model.ms3d",
]
OPTION_SETS = [
    {},
    {"scale": 0.5, "axis_forward": "-Z", "axis_up": "Y", "bone_tails": "AXIS", "split_groups": "SINGLE"},
]


def evaluated_positions(bpy, name: str) -> np.ndarray:
    mesh = bpy.data.objects[name].evaluated_get(bpy.context.evaluated_depsgraph_get()).data
    out = np.empty(len(mesh.vertices) * 3, np.float32)
    mesh.vertices.foreach_get("co", out)
    return out.reshape(-1, 3)


def key_frames_of(model, count: int = 6) -> list[float]:
    frames = np.unique(
        np.concatenate([key_frames(j.rotation_keys["time"], effective_fps(model)) for j in model.joints])
    )
    picks = np.linspace(0, len(frames) - 1, count).round().astype(int)
    return sorted({float(frames[i]) for i in picks})


def check_against_reference(bpy, path, options: dict, frames=None, tolerance: float = 1e-5) -> None:
    model = read_ms3d(path)
    scene = ms3d_to_scene(
        model, Ms3dOptions(**{**options, "split_groups": options.get("split_groups", "GROUPS") == "GROUPS"})
    )
    rig = hierarchy(model, Warnings())
    axes = axis_conversion_matrix(options.get("axis_forward", "Z"), options.get("axis_up", "Y"))
    scale = options.get("scale", 1.0)
    size = scale * float(np.ptp(model.vertices["position"], axis=0).max())
    for frame in frames or key_frames_of(model):
        bpy.context.scene.frame_set(int(frame), subframe=frame - int(frame))
        expected = scale * skinned_positions(model, rig, frame) @ axes.T
        for obj in scene.objects:
            got = evaluated_positions(bpy, obj.name)
            error = np.abs(got - expected[obj.mesh.source_vertices]).max()
            assert error <= tolerance * size, (path.name, obj.name, frame, error / size)


@pytest.mark.parametrize("options", OPTION_SETS, ids=["defaults", "scaled-axes-axis-tails-single"])
@pytest.mark.parametrize("relative", ANIMATED)
def test_posed_mesh_matches_milkshape_at_key_frames(blender, relative, options):
    bpy = blender
    path = ms3d_sample(relative)
    assert bpy.ops.import_scene.ms3d(filepath=str(path), **options) == {"FINISHED"}
    check_against_reference(bpy, path, options)


def test_posed_mesh_matches_between_keys_too(blender):
    """Whole frames between sparse keys show MilkShape's slerp, not Blender's component-wise interpolation."""
    bpy = blender
    path = ms3d_sample("akadjoker__H3DView/media/Bird.ms3d")
    bpy.ops.import_scene.ms3d(filepath=str(path))
    check_against_reference(bpy, path, {}, frames=list(range(1, 33)))


def test_synthetic_arm(blender, tmp_path):
    bpy = blender
    path = tmp_path / "arm.ms3d"
    path.write_bytes(write_ms3d(arm_spec()))
    bpy.ops.import_scene.ms3d(filepath=str(path))
    check_against_reference(bpy, path, {}, frames=[1.0, 2.0, 3.0])
    # Between whole frames Blender interpolates quaternion curves component-wise, not by slerp: with this rig's
    # 45° per frame that is off by under 0.1 % of the model's size at a quarter frame.
    check_against_reference(bpy, path, {}, frames=[1.25, 2.75], tolerance=1e-3)
    arm = bpy.data.objects["arm"]
    assert [b.name for b in arm.data.bones] == ["root", "tip"] and arm.data.bones["tip"].parent.name == "root"
    assert arm.pose.bones["tip"].rotation_mode == "QUATERNION"
    quad = bpy.data.objects["quad"]
    assert quad.parent == arm and quad.modifiers[0].type == "ARMATURE" and quad.modifiers[0].object == arm
    assert {g.name for g in quad.vertex_groups} == {"root", "tip"}


def pose_head_distances(bpy, arm) -> np.ndarray:
    bpy.context.view_layer.update()
    return np.array([(pb.head - pb.parent.head).length for pb in arm.pose.bones if pb.parent])


@pytest.mark.parametrize("relative", ["akadjoker__H3DView/media/Bird.ms3d", "akadjoker__H3DView/media/cube.ms3d"])
def test_bone_lengths_stay_constant_on_rotation_only_rigs(blender, relative):
    bpy = blender
    path = ms3d_sample(relative)
    bpy.ops.import_scene.ms3d(filepath=str(path))
    arm = bpy.data.objects[path.stem]
    rest = np.array([(b.head_local - b.parent.head_local).length for b in arm.data.bones if b.parent])
    scene = bpy.context.scene
    for frame in range(scene.frame_start, scene.frame_end + 1):
        scene.frame_set(frame)
        np.testing.assert_allclose(pose_head_distances(bpy, arm), rest, rtol=1e-5, atol=1e-6)


def test_dwarf_rig_timeline_and_clips(blender):
    bpy = blender
    path = ms3d_sample("akadjoker__H3DView/media/dwarf.ms3d")
    bpy.ops.import_scene.ms3d(filepath=str(path))
    arm = bpy.data.objects["dwarf"]
    assert arm.type == "ARMATURE" and len(arm.data.bones) == 44
    assert arm.animation_data.action.name == "dwarf"
    scene = bpy.context.scene
    assert (scene.render.fps, scene.render.fps_base) == (30, 1.0)
    assert (scene.frame_start, scene.frame_end) == (1, 362)  # keys run past iTotalFrames (300)
    markers = sorted((m.frame, m.name) for m in scene.timeline_markers)
    assert len(markers) == 19 and markers[0] == (2, "Walk") and markers[-1] == (327, "Idle2")
    (track,) = arm.animation_data.nla_tracks
    assert track.mute and len(track.strips) == 19
    walk = track.strips["Walk"]
    assert (walk.frame_start, walk.frame_end, walk.action_frame_start, walk.action_frame_end) == (2, 14, 2, 14)
    assert walk.action == arm.animation_data.action
    clips = arm["ms3d_clips"]
    assert clips[0]["name"] == "Walk" and clips[0]["loop"] and not clips[2]["loop"]
    colors = {tuple(round(c, 3) for c in b.color.custom.normal) for b in arm.data.bones}
    assert all(b.color.palette == "CUSTOM" for b in arm.data.bones) and len(colors) >= 1


def test_skipping_animation_leaves_the_scene_timing_alone(blender):
    bpy = blender
    scene = bpy.context.scene
    before = (scene.render.fps, scene.frame_start, scene.frame_end)
    bpy.ops.import_scene.ms3d(filepath=str(ms3d_sample("akadjoker__H3DView/media/dwarf.ms3d")), import_animation=False)
    arm = bpy.data.objects["dwarf"]
    assert arm.animation_data is None and len(bpy.data.actions) == 0
    assert (scene.render.fps, scene.frame_start, scene.frame_end) == before and len(scene.timeline_markers) == 0


def test_fractional_fps_and_keys_at_time_zero(blender, tmp_path):
    bpy = blender
    spec = arm_spec(fps=29.97, total_frames=3)
    spec.joints[1].rotation_keys = [(0.0, (0, 0, 0)), (4 / 29.97, (0, 0, 1))]
    path = tmp_path / "ntsc.ms3d"
    path.write_bytes(write_ms3d(spec))
    bpy.ops.import_scene.ms3d(filepath=str(path))
    scene = bpy.context.scene
    assert scene.render.fps / scene.render.fps_base == pytest.approx(29.97, rel=1e-6)
    assert (scene.frame_start, scene.frame_end) == (0, 4)
    check_against_reference(bpy, path, {}, frames=[0.0, 2.0, 4.0])


def test_unweighted_vertices_get_no_groups(blender):
    bpy = blender
    path = ms3d_sample("akadjoker__H3DView/media/dwarf.ms3d")
    bpy.ops.import_scene.ms3d(filepath=str(path))
    for obj in (o for o in bpy.data.objects if o.type == "MESH"):
        counts = np.array([len(v.groups) for v in obj.data.vertices])
        assert counts.max() <= 4 and counts.min() >= 1  # every dwarf vertex has a joint


def test_a_failure_while_building_the_rig_removes_everything(blender, tmp_path, monkeypatch):
    bpy = blender
    from conftest import datablock_counts

    from io_ms3d_mdl.blender import scene_builder

    def boom(*args, **kwargs):
        raise RuntimeError("injected failure in the action")

    monkeypatch.setattr(scene_builder, "build_actions", boom)
    before = datablock_counts()
    scene = bpy.context.scene
    timing = (scene.render.fps, scene.frame_start, scene.frame_end, len(scene.timeline_markers))
    with pytest.raises(RuntimeError, match="injected failure"):
        bpy.ops.import_scene.ms3d(filepath=str(ms3d_sample("akadjoker__H3DView/media/dwarf.ms3d")))
    assert datablock_counts() == before
    assert (scene.render.fps, scene.frame_start, scene.frame_end, len(scene.timeline_markers)) == timing


def test_overlapping_clips_go_to_another_track_and_touching_ones_share(blender, tmp_path):
    bpy = blender
    spec = arm_spec(model_comment="Name=A, Start=1, End=10\r\nName=B, Start=5, End=8\r\nName=C, Start=10, End=12")
    path = tmp_path / "clips.ms3d"
    path.write_bytes(write_ms3d(spec))
    bpy.ops.import_scene.ms3d(filepath=str(path))
    tracks = bpy.data.objects["clips"].animation_data.nla_tracks
    assert [[s.name for s in t.strips] for t in tracks] == [["A", "C"], ["B"]]
    assert all(t.mute for t in tracks)
    assert [(m.name, m.frame) for m in bpy.context.scene.timeline_markers] == [("A", 1), ("B", 5), ("C", 10)]
