"""Source animations in real Blender: every animation becomes an action; the posed mesh at frame k equals skinning
the decoded pose in numpy (Blender-free reference)."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import samples_dir
from source_writer import SAnimation, SNode, character_spec, write_source

from io_ms3d_mdl.formats.source import find_sidecars, read_mdl, read_vtx, read_vvd
from io_ms3d_mdl.formats.source.animation import decode_animation
from io_ms3d_mdl.scene.from_source import INCH, SourceOptions, _bone_world, source_to_scene
from io_ms3d_mdl.scene.rotations import compose, quaternion_to_matrix

pytestmark = pytest.mark.blender


def reference_pose(mdl, vvd, anim_index: int, frame: int, scale: float) -> np.ndarray:
    """Skin the VVD pool with the decoded pose: v' = Σ w · W(t) · W(rest)⁻¹ · v."""
    anim = decode_animation(mdl, anim_index)
    local = compose(quaternion_to_matrix(anim.rotations[frame]), anim.positions[frame])
    world = local.copy()
    for j, parent in enumerate(mdl.bones["parent"].tolist()):
        if parent >= 0:
            world[j] = world[parent] @ local[j]
    skin = world @ np.linalg.inv(_bone_world(mdl))
    verts = vvd.vertices
    pos = np.c_[verts["pos"].astype(np.float64), np.ones(len(verts))]
    out = np.zeros((len(verts), 3))
    for slot in range(3):
        used = slot < verts["numbones"]
        moved = np.einsum("vij,vj->vi", skin[verts["bones"][used, slot].astype(int)], pos[used])[:, :3]
        out[used] += verts["weights"][used, slot, None] * moved
    return out * scale


def play(bpy, armature, action_name: str, frame: int) -> None:
    for track in armature.animation_data.nla_tracks:
        track.mute = track.name != action_name
    bpy.context.scene.frame_set(frame)


def check_posed(bpy, path, picks):
    mdl = read_mdl(path)
    vvd = read_vvd(find_sidecars(str(path)).vvd)
    scene = source_to_scene(mdl, vvd, read_vtx(find_sidecars(str(path)).vtx), SourceOptions())
    armature = bpy.data.objects[path.stem]
    size = float(np.ptp(vvd.vertices["pos"], axis=0).max()) * INCH
    for anim_index, frame in picks:
        name = mdl.animations[anim_index].name
        play(bpy, armature, name, frame)
        expected = reference_pose(mdl, vvd, anim_index, frame, INCH)
        depsgraph = bpy.context.evaluated_depsgraph_get()
        for obj in scene.objects:
            mesh = bpy.data.objects[obj.name].evaluated_get(depsgraph).data
            got = np.empty(len(mesh.vertices) * 3)
            mesh.vertices.foreach_get("co", got)
            error = np.abs(got.reshape(-1, 3) - expected[obj.mesh.source_vertices]).max()
            assert error <= 1e-4 * size, (name, frame, obj.name, error / size)


@pytest.mark.parametrize(
    "relative, picks",
    [
        ("siobhan-saoirse__l4d-nextbots/models/ghostanim.mdl", [(0, 0), (0, 17), (1, 0), (1, 59), (1, 60), (1, 390)]),
        (
            "Fennecai__Aperture-Continued/models/aperture/monster_cube.mdl",
            [(1, 0), (1, 29), (1, 30), (1, 420), (1, 840)],
        ),
    ],
)
def test_posed_mesh_matches_the_decoded_pose(blender, relative, picks):
    bpy = blender
    path = samples_dir() / "source" / relative
    bpy.ops.import_scene.source_mdl(filepath=str(path))
    check_posed(bpy, path, picks)


def test_synthetic_animation_poses_the_mesh(blender, tmp_path):
    bpy = blender
    turn = ("rle", [[0] * 4, [0] * 4, [0, 256, 512, 1024]])
    lift = ("rle", [[0] * 4, [0] * 4, [0, 32, 64, 64]])
    spec = character_spec(
        animations=[
            SAnimation("bend", 4, [SNode(1, turn, lift)]),
            SAnimation("other", 2, [SNode(0, None, ("v48", (0.5, 0.0, 1.0)))]),
        ]
    )
    path = write_source(spec, tmp_path, "guy")
    bpy.ops.import_scene.source_mdl(filepath=str(path))
    check_posed(bpy, path, [(0, 0), (0, 1), (0, 3), (1, 1)])
    arm = bpy.data.objects["guy"]
    tracks = arm.animation_data.nla_tracks
    assert [t.name for t in tracks] == ["bend", "other"]
    assert {a.name for a in bpy.data.actions} == {"bend", "other"} and all(a.use_fake_user for a in bpy.data.actions)
    assert bpy.data.actions["bend"]["source_frames"] == 4


def test_animation_only_model(blender):
    bpy = blender
    path = samples_dir() / "source/bobthecorn2000__Half-Life-2-Brennan/models/humans/male_postures.mdl"
    assert bpy.ops.import_scene.source_mdl(filepath=str(path)) == {"FINISHED"}
    arm = bpy.data.objects["male_postures"]
    tracks = arm.animation_data.nla_tracks
    assert len(tracks) == 97 and len(bpy.data.actions) == 97
    assert not tracks[0].mute and all(t.mute for t in tracks[1:])
    deltas = [a for a in bpy.data.actions if a["source_delta"]]
    assert deltas and all(tracks[a.name].strips[0].blend_type == "COMBINE" for a in deltas)
    sequences = bpy.data.collections["male_postures"]["source_sequences"]
    assert len(sequences) == 97 and sequences[1]["name"] == "shiftrightloop"


def test_events_become_pose_markers(blender):
    bpy = blender
    path = samples_dir() / "source/Fennecai__Aperture-Continued/models/aperture/monster_cube.mdl"
    bpy.ops.import_scene.source_mdl(filepath=str(path))
    markers = sum(len(a.pose_markers) for a in bpy.data.actions)
    assert markers == sum(len(s.events) for s in read_mdl(path).sequences) == 176


def test_animations_can_be_skipped(blender):
    bpy = blender
    path = samples_dir() / "source/siobhan-saoirse__l4d-nextbots/models/ghostanim.mdl"
    bpy.ops.import_scene.source_mdl(filepath=str(path), import_animations=False)
    assert len(bpy.data.actions) == 0
