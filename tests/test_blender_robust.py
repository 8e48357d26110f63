"""Crafted files through the real operators: absurd frame rates and clip times, thousands of clips, meshes with no
usable bone, flex controllers named like our own properties, and a bug in one file of a multi-file import. Each
ends in a successful import with a warning, or in our own message; never in another exception."""

from __future__ import annotations

import itertools
import math
import re
import time

import pytest
from conftest import datablock_counts
from ms3d_writer import write_ms3d
from source_writer import SAnimation, SNode, SVertex, character_spec, write_source
from test_blender_hostile_names import SFlex, SFlexes, fcurves, write_source_with_flexes
from test_ms3d_rig import arm_spec

pytestmark = pytest.mark.blender

MAX_FRAME = 1_048_574


def import_ms3d(bpy, tmp_path, name: str, spec, **options) -> set[str]:
    path = tmp_path / f"{name}.ms3d"
    path.write_bytes(write_ms3d(spec))
    return bpy.ops.import_scene.ms3d(filepath=str(path), **options)


def warnings_of(capsys) -> str:
    """What the operator reported (printed in background mode)."""
    return capsys.readouterr().out


# --- frame rates ---------------------------------------------------------------------------------------------


def test_ms3d_frame_rate_beyond_blender_is_clamped(blender, tmp_path, capsys):
    bpy = blender
    spec = arm_spec(fps=3e38, total_frames=30)
    spec.joints[1].rotation_keys = [(0.0, (0, 0, 0)), (1e-37, (0, 0, 1))]  # frames 0 and 30 at 3e38 fps
    spec.joints[1].position_keys = []
    assert import_ms3d(bpy, tmp_path, "fast", spec) == {"FINISHED"}
    scene = bpy.context.scene
    assert (scene.render.fps, scene.render.fps_base) == (32767, 1.0)
    assert (scene.frame_start, scene.frame_end) == (0, 30)
    assert "frame rate 3e+38 fps is now 32767 fps" in warnings_of(capsys)


def test_ms3d_infinite_frame_rate_plays_at_one_fps(blender, tmp_path):
    bpy = blender
    spec = arm_spec(fps=math.inf)
    spec.joints[1].rotation_keys = [(1.0, (0, 0, 0)), (3.0, (0, 0, 1))]
    assert import_ms3d(bpy, tmp_path, "inf", spec) == {"FINISHED"}
    assert bpy.context.scene.render.fps == 1


def source_with_two_rates(tmp_path, first: float, second: float = 30.0):
    """Two animations: the first sets the scene's rate; the second's frames are scaled by first / second."""
    turn = ("rle", [[0] * 3, [0] * 3, [0, 256, 512]])
    spec = character_spec(
        animations=[
            SAnimation("fast", 3, [SNode(1, turn)], fps=first),
            SAnimation("slow", 3, [SNode(1, turn)], fps=second),
        ]
    )
    return write_source(spec, tmp_path, "guy")


def key_frames_of(action) -> list[float]:
    return [k.co[0] for fc in fcurves(action) for k in fc.keyframe_points]


@pytest.mark.parametrize("fps", [math.inf, 3e38, 1e-30])
def test_source_absurd_frame_rates_import_with_a_warning(blender, tmp_path, capsys, fps):
    bpy = blender
    assert bpy.ops.import_scene.source_mdl(filepath=str(source_with_two_rates(tmp_path, fps)), animations="ALL") == {
        "FINISHED"
    }
    render = bpy.context.scene.render
    assert 1 <= render.fps <= 32767 and 1e-6 <= render.fps / render.fps_base <= 32767
    assert "guy.mdl: " in (out := warnings_of(capsys)) and "frame rate" in out
    assert all(abs(f) <= MAX_FRAME for a in bpy.data.actions for f in key_frames_of(a))


def test_source_keys_beyond_blenders_frames_are_dropped(blender, tmp_path):
    """A fast first animation stretches a slow second one: at 10,000 fps against 0.001 fps its frames are
    0, 10⁷, 2·10⁷, which no timeline shows."""
    bpy = blender
    assert bpy.ops.import_scene.source_mdl(
        filepath=str(source_with_two_rates(tmp_path, 1e4, 1e-3)), animations="ALL"
    ) == {"FINISHED"}
    assert bpy.context.scene.render.fps == 10_000
    frames = key_frames_of(bpy.data.actions["slow"])
    assert frames and all(abs(f) <= MAX_FRAME for f in frames)


def test_scene_timing_is_clamped_into_blenders_ranges(blender):
    """The builder's own guard, whatever the converters let through."""
    bpy = blender
    from io_ms3d_mdl.blender.animation import Limits, set_scene_timing
    from io_ms3d_mdl.errors import Warnings

    scene = bpy.context.scene
    cases = [
        (3e38, (-1e12, 2.0**31), (32767, 1.0, 0, MAX_FRAME)),
        (math.inf, (math.nan, math.inf), (32767, 1.0, 0, MAX_FRAME)),
        (1e-9, (5.0, 3.0), (1, 1e6, 5, 5)),
        (math.nan, (1.0, 10.0), (1, 1e6, 1, 10)),  # an unusable rate leaves the previous one alone
    ]
    for fps, frame_range, expected in cases:
        limits, warnings = Limits(), Warnings()
        set_scene_timing(scene, fps, frame_range, limits)
        limits.report(warnings)
        got = (scene.render.fps, scene.render.fps_base, scene.frame_start, scene.frame_end)
        assert got == pytest.approx(expected) and len(warnings) == 1, (fps, frame_range, got, warnings)
    limits = Limits()
    set_scene_timing(scene, 29.97, (0.0, 4.5), limits)
    assert not limits.notes and scene.render.fps / scene.render.fps_base == pytest.approx(29.97)


# --- clips and markers ---------------------------------------------------------------------------------------

HOSTILE_CLIPS = (
    "Name=Inf, Start=inf, End=inf\n"
    "Name=Huge, Start=1e30, End=2e30\n"
    "Name=Neg, Start=-1e12, End=5\n"
    "Name=Near, Start=2147483600, End=2147483647\n"
    "Name=Ok, Start=1, End=3\n"
    "Name=Long, Start=5, End=1e30\n"
    "Name=Early, Start=-5, End=-1\n"
)


def test_clip_times_beyond_blender_are_clamped_or_skipped(blender, tmp_path, capsys):
    bpy = blender
    assert import_ms3d(bpy, tmp_path, "clips", arm_spec(model_comment=HOSTILE_CLIPS)) == {"FINISHED"}
    arm = bpy.data.objects["clips"]
    (track,) = arm.animation_data.nla_tracks
    strips = [(s.name, s.frame_start, s.frame_end) for s in track.strips]
    assert strips == [("Early", -5, -1), ("Ok", 1, 3), ("Long", 5, MAX_FRAME)]
    markers = sorted((m.frame, m.name) for m in bpy.context.scene.timeline_markers)
    assert markers == [(-5, "Early"), (1, "Ok"), (5, "Long")]
    # every clip stays listed (the scene layer may already have dropped the one that is not a number)
    listed = [c["name"] for c in arm["ms3d_clips"]]
    assert listed in (
        ["Inf", "Huge", "Neg", "Near", "Ok", "Long", "Early"],
        ["Huge", "Neg", "Near", "Ok", "Long", "Early"],
    )
    out = warnings_of(capsys)
    assert re.search(
        r"\d clips start outside Blender's frame range \(±1,048,574\) and were skipped: .*'Huge', 'Neg'", out
    )
    assert "clip ends moved to frame 1,048,574" in out


def test_a_clip_outside_the_actions_keys_still_spans_its_own_frames(blender, tmp_path):
    bpy = blender
    spec = arm_spec(model_comment="Name=Later, Start=500, End=510\nName=Before, Start=-20, End=-10")
    assert import_ms3d(bpy, tmp_path, "far", spec) == {"FINISHED"}
    (track,) = bpy.data.objects["far"].animation_data.nla_tracks
    got = [(s.name, s.frame_start, s.frame_end, s.action_frame_start, s.action_frame_end) for s in track.strips]
    assert got == [("Before", -20, -10, -20, -10), ("Later", 500, 510, 500, 510)]


def test_clips_starting_between_whole_frames_share_a_track(blender, tmp_path):
    """A strip is created at a whole frame: at or after the clip's start, never back over the previous strip."""
    bpy = blender
    spec = arm_spec(
        model_comment="Name=A, Start=5.5, End=7.25\nName=B, Start=7.5, End=8\nName=Edge, Start=1048574, End=1048574"
    )
    assert import_ms3d(bpy, tmp_path, "frac", spec) == {"FINISHED"}
    (track,) = bpy.data.objects["frac"].animation_data.nla_tracks
    assert [(s.name, s.frame_start, s.frame_end) for s in track.strips] == [
        ("A", 5.5, 7.25),
        ("B", 7.5, 8),
        ("Edge", MAX_FRAME, MAX_FRAME),
    ]


def test_thousands_of_overlapping_clips_are_capped_and_fast(blender, tmp_path, capsys):
    bpy = blender
    comment = "\n".join(f"Name=Clip{i}, Start={i % 100}, End={i % 100 + 5}" for i in range(20_000))
    start = time.perf_counter()
    assert import_ms3d(bpy, tmp_path, "many", arm_spec(model_comment=comment)) == {"FINISHED"}
    seconds = time.perf_counter() - start
    arm = bpy.data.objects["many"]
    tracks = arm.animation_data.nla_tracks
    assert sum(len(t.strips) for t in tracks) == 1000 and len(bpy.context.scene.timeline_markers) == 1000
    assert len(arm["ms3d_clips"]) == 20_000
    for track in tracks:  # no strip overlaps another on its track
        frames = [(s.frame_start, s.frame_end) for s in track.strips]
        assert all(a[1] <= b[0] for a, b in itertools.pairwise(frames))
    assert (
        "the model lists 20,000 clips; only the first 1,000 usable ones became NLA strips and markers"
        in warnings_of(capsys)
    )
    assert seconds < 30, seconds


def test_event_markers_at_absurd_frames_are_clamped_or_dropped(blender, tmp_path):
    """Source events become pose markers; their frames come from the file's cycle and frame rate."""
    bpy = blender
    from io_ms3d_mdl.blender.animation import Limits, stash_actions
    from io_ms3d_mdl.errors import Warnings
    from io_ms3d_mdl.scene.types import ActionData

    import_ms3d(bpy, tmp_path, "arm", arm_spec())
    arm = bpy.data.objects["arm"]
    action = bpy.data.actions.new("events")
    markers = [("inf", math.inf), ("nan", math.nan), ("huge", 1e30), ("low", -3e9), ("é" * 40, 5.4)]
    limits = Limits()
    stash_actions(arm, [action], [ActionData("events", [], (0.0, 1.0), markers=markers)], limits)
    got = [(m.name, m.frame) for m in action.pose_markers]
    assert got == [("inf", MAX_FRAME), ("huge", MAX_FRAME), ("low", -MAX_FRAME), ("é" * 31, 5)]
    warnings = Warnings()
    limits.report(warnings)
    assert "event markers without a valid frame dropped" in warnings[0]


# --- skinning and properties ---------------------------------------------------------------------------------


@pytest.mark.parametrize("bones, weights", [((9,), (1.0,)), ((), ())], ids=["bone-out-of-range", "no-bones"])
def test_source_vertices_without_a_valid_bone_stay_unweighted(blender, tmp_path, bones, weights):
    bpy = blender
    spec = character_spec()
    for part in spec.body_parts:
        for model in part.models:
            for mesh in model.meshes:
                mesh.vertices = [SVertex(v.pos, v.normal, v.uv, bones, weights) for v in mesh.vertices]
    path = write_source(spec, tmp_path, "loose")
    assert bpy.ops.import_scene.source_mdl(filepath=str(path), animations="ALL") == {"FINISHED"}
    body = bpy.data.objects["body_ref"]
    assert len(body.vertex_groups) == 0 and body.modifiers[0].object == bpy.data.objects["loose"]


def test_flex_controllers_named_like_our_properties_cannot_break_skins(blender, tmp_path):
    bpy = blender
    flexes = SFlexes(
        names=["open"],
        controllers=[("source_skin_refs", 0.0, 1.0), ("source_lod", 0.0, 2.0), ("io_ms3d_mdl_missing", 0, 1)],
        rules=[(0, [(2, 0)])],
        flexes=[SFlex(0, [(0, (0, 0, 1))])],
    )
    path = write_source_with_flexes(character_spec(), flexes, tmp_path, "guy")
    assert bpy.ops.import_scene.source_mdl(filepath=str(path), animations="ALL") == {"FINISHED"}
    body = bpy.data.objects["body_ref"]
    assert list(body["source_skin_refs"]) == [0, 1] and body["source_lod"] == 0
    assert {"flex:source_skin_refs", "flex:source_lod", "flex:io_ms3d_mdl_missing"} <= set(body.keys())
    assert body.id_properties_ui("flex:source_lod").as_dict()["max"] == 2.0
    assert bpy.ops.io_ms3d_mdl.source_skin(model="guy", family=1) == {"FINISHED"}
    assert [s.material.name for s in body.material_slots] == ["body_red", "hat"]
    body["flex:source_skin_refs"] = 1.0
    body.update_tag()
    bpy.context.view_layer.update()
    assert body.data.shape_keys.key_blocks["open"].value == pytest.approx(1.0)


def test_skin_switch_ignores_a_hand_broken_refs_property(blender, tmp_path):
    bpy = blender
    path = write_source(character_spec(), tmp_path, "guy")
    bpy.ops.import_scene.source_mdl(filepath=str(path), animations="ALL")
    bpy.data.objects["body_ref"]["source_skin_refs"] = 0.5
    assert bpy.ops.io_ms3d_mdl.source_skin(model="guy", family=1) == {"FINISHED"}


# --- one bad file among several ------------------------------------------------------------------------------


@pytest.fixture
def crash_on_group_bad(monkeypatch):
    """A stand-in for an unknown bug: building the mesh of any group named 'bad' raises a KeyError."""
    from io_ms3d_mdl.blender import scene_builder

    real = scene_builder.build_mesh

    def build_mesh(data):
        if data.name == "bad":
            raise KeyError("no such thing")
        return real(data)

    monkeypatch.setattr(scene_builder, "build_mesh", build_mesh)


def write_three(tmp_path) -> list[str]:
    names = []
    for stem in ("a", "b", "c"):
        spec = arm_spec(model_comment="Name=Walk, Start=1, End=3")
        spec.groups[0].name = "bad" if stem == "b" else stem
        (tmp_path / f"{stem}.ms3d").write_bytes(write_ms3d(spec))
        names.append(f"{stem}.ms3d")
    return names


def test_a_bug_in_one_file_fails_only_that_file(blender, tmp_path, crash_on_group_bad, capsys):
    bpy = blender
    names = write_three(tmp_path)
    assert bpy.ops.import_scene.ms3d(directory=str(tmp_path), files=[{"name": n} for n in names]) == {"FINISHED"}
    assert {c.name for c in bpy.data.collections} == {"a", "c"}
    assert {o.name for o in bpy.data.objects if o.type == "MESH"} == {"a", "c"}
    after = datablock_counts()
    captured = capsys.readouterr()
    message = "Import failed: internal error while importing b.ms3d: KeyError: 'no such thing'; please report it"
    assert message in captured.out and "Imported c.ms3d" in captured.out
    assert "Traceback" in captured.err and "no such thing" in captured.err
    # b.ms3d left nothing behind: the same as importing only the other two
    bpy.ops.wm.read_factory_settings(use_empty=True)
    bpy.ops.import_scene.ms3d(directory=str(tmp_path), files=[{"name": "a.ms3d"}, {"name": "c.ms3d"}])
    assert datablock_counts() == after


def test_a_bug_in_the_only_file_is_our_message_and_leaves_nothing(blender, tmp_path, crash_on_group_bad):
    bpy = blender
    write_three(tmp_path)
    scene = bpy.context.scene
    before = datablock_counts(), (scene.render.fps, scene.frame_start, scene.frame_end, len(scene.timeline_markers))
    with pytest.raises(RuntimeError, match=r"internal error while importing b\.ms3d: KeyError: 'no such thing'"):
        bpy.ops.import_scene.ms3d(filepath=str(tmp_path / "b.ms3d"))
    assert (
        datablock_counts(),
        (scene.render.fps, scene.frame_start, scene.frame_end, len(scene.timeline_markers)),
    ) == before


def test_a_failure_after_the_scene_timing_is_set_puts_it_back(blender, tmp_path, monkeypatch):
    bpy = blender
    from io_ms3d_mdl.blender import scene_builder

    def markers_then_fail(scene, clips):
        scene.timeline_markers.new("half-made", frame=7)
        raise ValueError("injected after the timing")

    monkeypatch.setattr(scene_builder, "add_clip_markers", markers_then_fail)
    scene = bpy.context.scene
    scene.render.fps, scene.frame_start, scene.frame_end = 50, 10, 20
    scene.timeline_markers.new("mine", frame=12)
    before = datablock_counts()
    with pytest.raises(RuntimeError, match="ValueError: injected after the timing"):
        import_ms3d(bpy, tmp_path, "ntsc", arm_spec(fps=29.97, model_comment="Name=Walk, Start=1, End=3"))
    assert datablock_counts() == before
    assert (scene.render.fps, scene.render.fps_base, scene.frame_start, scene.frame_end) == (50, 1.0, 10, 20)
    assert [m.name for m in scene.timeline_markers] == ["mine"]


def test_a_failure_in_edit_mode_leaves_the_active_object_and_nothing_else(blender, tmp_path, monkeypatch):
    """Bones are made in edit mode, switched to without bpy.ops' view-layer updates (Blender's internal call, or a
    private staging scene where Blender has none): should making them fail, and even leaving edit mode fail after
    it, the user's active object is active again and the import leaves nothing behind (the staging scene too)."""
    bpy = blender
    from io_ms3d_mdl.blender import armature, operator_call

    mine = bpy.data.objects.new("mine", bpy.data.meshes.new("mine"))
    bpy.context.scene.collection.objects.link(mine)
    bpy.context.view_layer.objects.active = mine
    real_run = operator_call.run_operator

    def object_mode_reports_cancelled(idname, **props):
        done = real_run(idname, **props)
        return False if props.get("mode") == "OBJECT" else done

    def bones_fail(arm, skeleton):
        raise ValueError("injected while making bones")

    monkeypatch.setattr(armature, "run_operator", object_mode_reports_cancelled)
    monkeypatch.setattr(armature, "_edit_bones", bones_fail)
    before = datablock_counts()
    with pytest.raises(RuntimeError, match="internal error while importing"):
        import_ms3d(bpy, tmp_path, "rig", arm_spec())
    assert datablock_counts() == before
    assert bpy.context.view_layer.objects.active == mine and mine.mode == "OBJECT"


def test_an_import_under_a_context_naming_another_object_builds_the_rig_and_leaves_that_object(blender, tmp_path):
    """A script may call the operators under ``temp_override(object=…, active_object=…)``: the armature's edit
    mode and the weights' attribute conversion are Blender operators acting on the context's object, so each
    names its own. (Before, the override sent edit mode to the script's object and the import failed.)"""
    bpy = blender
    mesh = bpy.data.meshes.new("mine")
    mesh.from_pydata([(0, 0, 0), (1, 0, 0), (0, 1, 0)], [], [(0, 1, 2)])
    mesh.attributes.new("mine", "FLOAT", "POINT")
    mine = bpy.data.objects.new("mine", mesh)
    bpy.context.scene.collection.objects.link(mine)
    bpy.context.view_layer.objects.active = mine
    attributes = sorted(a.name for a in mesh.attributes)
    source = write_source(character_spec(), tmp_path, "guy")
    with bpy.context.temp_override(object=mine, active_object=mine):
        assert import_ms3d(bpy, tmp_path, "rig", arm_spec()) == {"FINISHED"}
        assert bpy.ops.import_scene.source_mdl(filepath=str(source)) == {"FINISHED"}
    assert [len(a.bones) for a in bpy.data.armatures] == [2, 2]
    skinned = sorted(o.name for o in bpy.data.objects if o.type == "MESH" and o.vertex_groups)
    assert skinned == ["body_ref", "hat_ref", "quad"]
    assert mine.mode == "OBJECT" and not mine.vertex_groups and not mine.modifiers
    assert sorted(a.name for a in mesh.attributes) == attributes
