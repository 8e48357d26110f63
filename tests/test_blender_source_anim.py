"""Source animations in real Blender: every animation becomes an action; the posed mesh at frame k equals skinning
the decoded pose in numpy (Blender-free reference)."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import samples_dir
from source_writer import SAnimation, SNode, character_spec, write_source

from io_ms3d_mdl.formats.source import find_sidecars, read_mdl, read_vtx, read_vvd
from io_ms3d_mdl.formats.source.animation import decode_animation
from io_ms3d_mdl.scene.rotations import compose, quaternion_to_matrix
from io_ms3d_mdl.scene.source.convert import INCH, SourceOptions, _bone_world, source_to_scene

pytestmark = pytest.mark.blender


def reference_pose(mdl, vvd, anim, frame: int, scale: float) -> np.ndarray:
    """Skin the VVD pool with a decoded pose (an animation index of ``mdl`` or a DecodedAnimation):
    v' = Σ w · W(t) · W(rest)⁻¹ · v."""
    anim = decode_animation(mdl, anim) if isinstance(anim, int) else anim
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


def check_posed(bpy, path, picks, animations=None):
    mdl = read_mdl(path)
    vvd = read_vvd(find_sidecars(str(path)).vvd)
    scene = source_to_scene(mdl, vvd, read_vtx(find_sidecars(str(path)).vtx), SourceOptions(animations="ALL"))
    armature = bpy.data.objects[path.stem]
    size = float(np.ptp(vvd.vertices["pos"], axis=0).max()) * INCH
    for anim_index, frame in picks:
        anim = animations[anim_index] if animations else anim_index
        name = anim.name if animations else mdl.animations[anim_index].name
        play(bpy, armature, name, frame)
        assert_meshes_posed(bpy, scene, reference_pose(mdl, vvd, anim, frame, INCH), 1e-4 * size, (name, frame))


def assert_meshes_posed(bpy, scene, expected: np.ndarray, tolerance: float, label: tuple) -> None:
    """Every mesh of ``scene`` as Blender evaluates it equals ``expected`` (posed VVD positions) at its vertices."""
    depsgraph = bpy.context.evaluated_depsgraph_get()
    for obj in scene.objects:
        if obj.mesh.source_vertices is None:  # collision solids: they follow their bone, no skin
            continue
        mesh = bpy.data.objects[obj.name].evaluated_get(depsgraph).data
        got = np.empty(len(mesh.vertices) * 3)
        mesh.vertices.foreach_get("co", got)
        error = np.abs(got.reshape(-1, 3) - expected[obj.mesh.source_vertices]).max()
        assert error <= tolerance, (*label, obj.name, error)


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
    bpy.ops.import_scene.source_mdl(filepath=str(path), animations="ALL")
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
    bpy.ops.import_scene.source_mdl(filepath=str(path), animations="ALL")
    check_posed(bpy, path, [(0, 0), (0, 1), (0, 3), (1, 1)])
    arm = bpy.data.objects["guy"]
    tracks = arm.animation_data.nla_tracks
    assert [t.name for t in tracks] == ["bend", "other"]
    assert {a.name for a in bpy.data.actions} == {"bend", "other"} and all(a.use_fake_user for a in bpy.data.actions)
    assert bpy.data.actions["bend"]["source_frames"] == 4


def test_animation_only_model(blender):
    bpy = blender
    path = samples_dir() / "source/bobthecorn2000__Half-Life-2-Brennan/models/humans/male_postures.mdl"
    assert bpy.ops.import_scene.source_mdl(filepath=str(path), animations="ALL") == {"FINISHED"}
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
    bpy.ops.import_scene.source_mdl(filepath=str(path), animations="ALL")
    markers = sum(len(a.pose_markers) for a in bpy.data.actions)
    assert markers == sum(len(s.events) for s in read_mdl(path).sequences) == 176


def test_animations_can_be_skipped(blender):
    bpy = blender
    path = samples_dir() / "source/siobhan-saoirse__l4d-nextbots/models/ghostanim.mdl"
    bpy.ops.import_scene.source_mdl(filepath=str(path), import_animations=False)
    assert len(bpy.data.actions) == 0


def include_tree(tmp_path, main_includes=("models/test\\Test_Animations.MDL",), include_includes=()):
    """A game-like tree: models/guy.mdl including models/test/test_animations.mdl (bones in another case,
    one extra bone, an animation turning the spine)."""
    from source_writer import SBone, SourceSpec, write_mdl

    main = write_source(character_spec(includes=list(main_includes)), tmp_path / "models", "guy")
    bones = [
        SBone("PELVIS", -1, (0, 0, 1)),
        SBone("tail", 0, (0, -1, 0)),
        SBone("Spine", 0, (0, 0, 1), (0.0, 0.0, 0.7071068, 0.7071068)),
    ]
    turn = ("rle", [[0] * 3, [0] * 3, [0, 512, 1024]])
    spec = SourceSpec(
        body_parts=[],
        bones=bones,
        includes=list(include_includes),
        animations=[SAnimation("borrowed", 3, [SNode(2, turn, None), SNode(1, turn, None)])],
    )
    (tmp_path / "models" / "test").mkdir(parents=True, exist_ok=True)
    (tmp_path / "models" / "test" / "test_animations.mdl").write_bytes(write_mdl(spec))
    return main


def test_included_animations_map_onto_our_bones(blender, tmp_path):
    bpy = blender
    from io_ms3d_mdl.formats.source.includes import load_includes
    from io_ms3d_mdl.scene.source.animation import _remap

    main = include_tree(tmp_path)
    assert bpy.ops.import_scene.source_mdl(filepath=str(main), animations="ALL") == {"FINISHED"}
    action = bpy.data.actions["borrowed"]
    assert action["source_include"] == "models/test\\Test_Animations.MDL"
    mdl = read_mdl(main)
    (included,) = load_includes(str(main), mdl, [])
    (remapped,) = _remap([decode_animation(included.mdl, 0)], np.array([0, -1, 1]), mdl)
    assert remapped.animated.tolist() == [False, True]  # 'tail' is unknown to us and dropped
    check_posed(bpy, main, [(0, 0), (0, 1), (0, 2)], animations=[remapped])


def test_missing_and_cyclic_includes_are_warnings(blender, tmp_path):
    bpy = blender
    from io_ms3d_mdl.errors import Warnings
    from io_ms3d_mdl.formats.source.includes import load_includes

    main = include_tree(
        tmp_path,
        main_includes=("models/test/test_animations.mdl", "models/nowhere.mdl"),
        include_includes=("models/GUY.mdl",),
    )
    warnings = Warnings()
    found = load_includes(str(main), read_mdl(main), warnings)
    assert [i.name for i in found] == ["models/test/test_animations.mdl"]
    assert any("'models/nowhere.mdl' was not found" in w for w in warnings)
    assert any("'models/GUY.mdl' is included again" in w for w in warnings)
    assert bpy.ops.import_scene.source_mdl(filepath=str(main), animations="ALL") == {"FINISHED"}
    assert "borrowed" in bpy.data.actions


def test_civilian_borrows_its_animations(blender):
    bpy = blender
    path = samples_dir() / "source/Lambdagon__lambdas-weapon-pack/models/player/civilian.mdl"
    bpy.ops.import_scene.source_mdl(filepath=str(path), animations="ALL")
    borrowed = [a for a in bpy.data.actions if "source_include" in a]
    assert len(bpy.data.actions) == 130 and len(borrowed) == 128
    assert {a["source_include"] for a in borrowed} == {"models/player/civilian_animations.mdl"}
