"""Keys as Blender holds them after a bulk write: every F-curve LINEAR, sorted, with handles Blender set (a lone
key's on the key), and playing every original frame of the per-frame reference within the tolerance; laid out right
for channels of any length (none, unsorted, duplicated, beyond Blender's frame range), on 4.2 (legacy curves), 4.5
and 5.0 (slots); actions sharing their curves filled into copies of a template exactly as if each were made anew."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import bpy, samples_dir
from source_writer import character_spec, write_source
from test_blender_hostile_names import fcurves
from test_keys_reduce import dense_and_reduced

from io_ms3d_mdl.scene.load import load_source
from io_ms3d_mdl.scene.source.animation import LOCATION_TOLERANCE, ROTATION_TOLERANCE
from io_ms3d_mdl.scene.source.convert import INCH, SourceOptions
from io_ms3d_mdl.scene.types import ActionData, BoneChannels

pytestmark = pytest.mark.blender

FLOAT32 = 2.5e-7  # relative: keys are stored and interpolated as float32 (a half step is 6e-8 of the value)
LINEAR = 1


def curve_keys(fcurve: bpy.types.FCurve) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(keys, 2) co, interpolation codes, left and right handles of one curve."""
    points = fcurve.keyframe_points
    arrays = {name: np.zeros(len(points) * 2) for name in ("co", "handle_left", "handle_right")}
    for name, array in arrays.items():
        points.foreach_get(name, array)
    interpolation = np.zeros(len(points), dtype=np.int32)
    points.foreach_get("interpolation", interpolation)
    co, left, right = (arrays[n].reshape(-1, 2) for n in ("co", "handle_left", "handle_right"))
    return co, interpolation, left, right


@pytest.mark.parametrize(
    "relative",
    [
        "Fennecai__Aperture-Continued/models/aperture/monster_cube.mdl",
        "siobhan-saoirse__l4d-nextbots/models/ghostanim.mdl",  # rates differ: keys on fractional frames
    ],
)
def test_curves_play_every_original_frame(blender, monkeypatch, relative):
    path = samples_dir() / "source" / relative
    assert blender.ops.import_scene.source_mdl(filepath=str(path), animations="ALL") == {"FINISHED"}
    dense, _ = dense_and_reduced(path, monkeypatch)
    names = [b.name for b in load_source(str(path)).skeleton.bones]
    checked = 0
    for reference in dense:
        action = next(a for a in blender.data.actions if a["source_animation"] == reference.name)
        curves = {(c.data_path, c.array_index): c for c in fcurves(action)}
        frames = max((f for c in reference.channels for f in (c.rotation_frames, c.location_frames)), key=len)
        for channel in reference.channels:
            base = f'pose.bones["{names[channel.bone]}"]'
            for prop, keys, values, tolerance in (
                ("rotation_quaternion", channel.rotation_frames, channel.rotations, ROTATION_TOLERANCE),
                ("location", channel.location_frames, channel.locations, LOCATION_TOLERANCE * INCH),
            ):
                for i in range(values.shape[1]):
                    curve = curves.pop((f"{base}.{prop}", i))
                    co, interpolation, left, right = curve_keys(curve)
                    assert (interpolation == LINEAR).all() and (np.diff(co[:, 0]) > 0).all()
                    assert (left[:, 0] <= co[:, 0]).all() and (co[:, 0] <= right[:, 0]).all()  # update() ran
                    expected = np.interp(frames, keys, values[:, i])
                    played = np.array([curve.evaluate(f) for f in frames.tolist()])
                    slack = tolerance + FLOAT32 * max(1.0, float(np.abs(expected).max()))
                    assert np.abs(played - expected).max() <= slack, (reference.name, curve.data_path)
                    checked += 1
        assert not curves  # no curve beyond the reference's
    assert checked > 200


def test_channels_of_any_length_land_on_their_own_curves(blender, tmp_path):
    """No keys, one key, unsorted and duplicated frames, frames Blender cannot show: each curve gets its own keys
    (sorted and deduplicated by Blender), unshowable ones are dropped and counted."""
    from io_ms3d_mdl.blender.animation import Limits, build_action

    path = write_source(character_spec(), tmp_path, "guy")
    assert blender.ops.import_scene.source_mdl(filepath=str(path), animations="NONE") == {"FINISHED"}
    armature = blender.data.objects["guy"]
    skeleton = load_source(str(path), SourceOptions()).skeleton
    turn = np.array([[1.0, 0.0, 0.0, 0.0], [0.0, 1.0, 0.0, 0.0], [0.0, 0.0, 1.0, 0.0]])
    channels = [
        BoneChannels(0, np.array([0.0, 2.0, 1.0]), turn, np.zeros(0), np.zeros((0, 3))),  # unsorted, no location
        BoneChannels(
            1, np.array([5.0]), turn[:1], np.array([0.0, np.nan, 3.0, 3.0, 2e6]), np.arange(15.0).reshape(5, 3)
        ),
    ]
    limits = Limits()
    action = build_action(armature, ActionData("mixed", channels, (0.0, 5.0)), skeleton, limits)
    got = {
        (c.data_path.split(".")[-1], c.data_path.split('"')[1], c.array_index): curve_keys(c)[0]
        for c in fcurves(action)
    }
    pelvis, spine = skeleton.bones[0].name, skeleton.bones[1].name
    assert sorted(got) == sorted(
        [("rotation_quaternion", pelvis, i) for i in range(4)]
        + [("rotation_quaternion", spine, i) for i in range(4)]
        + [("location", spine, i) for i in range(3)]
    )
    np.testing.assert_array_equal(got[("rotation_quaternion", pelvis, 1)], [[0, 0], [1, 0], [2, 1]])  # sorted
    np.testing.assert_array_equal(got[("rotation_quaternion", spine, 0)], [[5, 1]])
    lone = next(c for c in fcurves(action) if c.data_path.endswith(".rotation_quaternion") and spine in c.data_path)
    co, interpolation, left, right = curve_keys(lone)
    assert interpolation.tolist() == [LINEAR] and left.tolist() == right.tolist() == co.tolist()  # handles on the key
    location = got[("location", spine, 2)]
    assert location[0].tolist() == [0, 2] and location[-1, 0] == 3 and len(location) == 2  # one key per frame
    assert limits.notes == {"keys beyond frame ±1,048,574 dropped": 2}  # NaN and 2,000,000


MONSTER_CUBE = "Fennecai__Aperture-Continued/models/aperture/monster_cube.mdl"
BLOODLINES = "../vtmb/miracleflame__VTMB-Unofficial-Patch-by-Wesp/Basic_Patch/models/character/npc/common/"
KEY_FIELDS = (
    "handle_left_type",
    "handle_right_type",
    "type",
    "easing",
    "select_control_point",
    "select_left_handle",
    "select_right_handle",
    "back",
    "amplitude",
    "period",
)


def key_bits(fcurve: bpy.types.FCurve) -> tuple[np.ndarray, ...]:
    """Everything a key holds that an import sets or leaves: co and handles as float32 bits (so -0.0 and a one-ulp
    difference count), interpolation, handle types, key type, easing, selection."""
    co, interpolation, left, right = curve_keys(fcurve)
    floats = tuple(a.astype(np.float32).view(np.uint32) for a in (co, left, right))
    enums = []
    for name in KEY_FIELDS:
        values = [getattr(point, name) for point in fcurve.keyframe_points]
        enums.append(np.array(values))
    return (*floats, interpolation, *enums)


def plain_properties(struct: bpy.types.bpy_struct) -> dict[str, object]:
    """A struct's own values (flags, enums, numbers, strings; not the structs and collections it points to)."""
    out = {}
    for prop in struct.bl_rna.properties:
        if prop.type not in {"POINTER", "COLLECTION"} and prop.identifier != "rna_type":
            value = getattr(struct, prop.identifier)
            out[prop.identifier] = tuple(value) if getattr(prop, "is_array", False) else value
    return out


def assert_built_alike(built: bpy.types.Action, fresh: bpy.types.Action) -> int:
    """The same curves in the same order and groups, key for key bit for bit; returns the curves compared."""
    pairs = list(zip(fcurves(built), fcurves(fresh), strict=True))
    for a, b in pairs:
        assert (a.data_path, a.array_index, a.group.name) == (b.data_path, b.array_index, b.group.name)
        assert plain_properties(a) == plain_properties(b) and plain_properties(a.group) == plain_properties(b.group)
        for x, y in zip(key_bits(a), key_bits(b), strict=True):
            np.testing.assert_array_equal(x, y, err_msg=f"{built.name}: {a.data_path}[{a.array_index}]")
    return len(pairs)


def test_actions_sharing_their_curves_are_template_copies_equal_to_fresh_builds(blender, monkeypatch):
    """Actions keying the same curves are copies of a template (one key per curve) filled in: each must equal the
    same action built on its own, curve by curve (paths, groups, keys, interpolation, handles), and no template
    may be left behind."""
    from io_ms3d_mdl.blender import animation

    made = []
    template = animation._template
    monkeypatch.setattr(animation, "_template", lambda *args: made.append(template(*args)) or made[-1])
    path = samples_dir() / "source" / MONSTER_CUBE
    assert blender.ops.import_scene.source_mdl(filepath=str(path), animations="ALL") == {"FINISHED"}
    assert made and all(t is not None for t in made)
    assert not [a.name for a in blender.data.actions if a.name.startswith("io_ms3d_mdl key template")]
    scene = load_source(str(path), SourceOptions(animations="ALL"))
    armature = blender.data.objects[scene.skeleton.name]
    imported = {a["source_animation"]: a for a in blender.data.actions}
    compared = 0
    for data in scene.actions:
        fresh = animation.build_action(armature, data, scene.skeleton)
        copied = imported[data.props["source_animation"]]
        pairs = list(zip(fcurves(copied), fcurves(fresh), strict=True))
        for a, b in pairs:
            assert (a.data_path, a.array_index, a.group.name) == (b.data_path, b.array_index, b.group.name)
            for x, y in zip(curve_keys(a), curve_keys(b), strict=True):
                np.testing.assert_array_equal(x, y)
        compared += len(pairs)
    assert compared == sum(len(fcurves(a)) for a in imported.values()) > 1000


@pytest.mark.parametrize(
    "relative", [BLOODLINES + "swat/swat3.mdl", BLOODLINES + "doppleganger/doppleganger_female.mdl", MONSTER_CUBE]
)
def test_template_copies_equal_the_builder_of_one_action(blender, relative):
    """Each template curve holds the lone key its actions share most, so a copy skips those curves: every action
    must still equal, bit for bit, the same action made alone (``_filled_new``: one new curve per channel, what
    the import wrote before templates held lone keys) - values, handles, interpolation, handle and key types."""
    from io_ms3d_mdl.blender import animation

    path = samples_dir() / "source" / relative
    if not path.is_file():
        pytest.skip(f"{path.name} is not among the shared samples")
    scene = load_source(str(path), SourceOptions(animations="ALL"))
    assert blender.ops.import_scene.source_mdl(filepath=str(path), animations="NONE") == {"FINISHED"}
    armature = blender.data.objects[scene.skeleton.name]
    layouts = [animation._ActionLayout(a) for a in scene.actions]
    assert len({layout.signature for layout in layouts}) < len(layouts)  # some actions share a template
    lone = animation._LoneKeys([x for x in layouts if x.signature == layouts[-1].signature])
    kinds = np.bincount(np.concatenate([lone.work(x) for x in layouts if x.signature == layouts[-1].signature]))
    assert kinds[animation._KEPT] > 0 and kinds[animation._FILLED] > 0  # the shortcut is taken, and not only it
    built = animation.build_actions(armature, scene.actions, scene.skeleton)
    compared = sum(
        assert_built_alike(action, animation.build_action(armature, data, scene.skeleton))
        for action, data in zip(built, scene.actions, strict=True)
    )
    assert compared == sum(len(x.counts) for x in layouts)


def test_lone_keys_moved_from_a_far_template_key_go_through_the_origin(blender, tmp_path):
    """A lone key moved with ``co_ui`` from the template's key carries its handles along by the difference, which
    float32 can round (1e8 to 1e-8 lands on 0); such keys go through (0, 0) first and end as if made anew. The
    template holds the key three of four actions share; the fourth action's keys are far from it."""
    from io_ms3d_mdl.blender import animation

    path = write_source(character_spec(), tmp_path, "guy")
    assert blender.ops.import_scene.source_mdl(filepath=str(path), animations="NONE") == {"FINISHED"}
    armature = blender.data.objects["guy"]
    skeleton = load_source(str(path), SourceOptions()).skeleton
    shared = np.array([[1e8, -3.0, 0.5, 0.25]])
    far = np.array([[1e-8, 3e-9, 1.0, -1e-30]])
    actions = [
        ActionData(name, [BoneChannels(0, np.array([frame]), keys, np.array([0.0, 2.0]), np.eye(3)[:2])], (0, 2))
        for name, frame, keys in (("a", 5.0, shared), ("b", 5.0, shared), ("c", 5.0, shared), ("d", 1e-7, far))
    ]
    layouts = [animation._ActionLayout(a) for a in actions]
    lone = animation._LoneKeys(layouts)
    assert animation._MOVED_TWICE in lone.work(layouts[3]).tolist()
    assert lone.work(layouts[0]).tolist().count(animation._KEPT) == 4
    built = animation.build_actions(armature, actions, skeleton)
    for action, data in zip(built, actions, strict=True):
        assert assert_built_alike(action, animation.build_action(armature, data, skeleton)) == 7


def test_a_template_whose_curves_blender_reordered_is_not_used(blender, monkeypatch):
    """Copies are filled in the order the template's curves were made: if Blender listed them otherwise, the
    template is dropped and every action is made anew, with the same result."""
    from io_ms3d_mdl.blender import animation

    listed = animation._fcurves

    def reordered(action):
        curves = list(listed(action))
        return curves[::-1] if action.name.startswith("io_ms3d_mdl key template") else curves

    monkeypatch.setattr(animation, "_fcurves", reordered)
    copies = []
    monkeypatch.setattr(animation, "_filled_copy", lambda *args: copies.append(args))
    path = samples_dir() / "source" / MONSTER_CUBE
    assert blender.ops.import_scene.source_mdl(filepath=str(path), animations="ALL") == {"FINISHED"}
    assert not copies
    assert len(blender.data.actions) == len(load_source(str(path), SourceOptions(animations="ALL")).actions)
    assert not [a.name for a in blender.data.actions if a.name.startswith("io_ms3d_mdl key template")]


def test_a_failure_while_filling_a_copy_leaves_nothing(blender, monkeypatch):
    """The templates go with the rest of a failed import."""
    from conftest import datablock_counts

    from io_ms3d_mdl.blender import animation

    calls = []
    fill = animation._filled_copy

    def fail_third(*args):
        calls.append(1)
        if len(calls) == 3:
            raise RuntimeError("injected failure in a copy")
        return fill(*args)

    monkeypatch.setattr(animation, "_filled_copy", fail_third)
    before = datablock_counts()
    with pytest.raises(RuntimeError, match="injected failure in a copy"):
        blender.ops.import_scene.source_mdl(filepath=str(samples_dir() / "source" / MONSTER_CUBE), animations="ALL")
    assert datablock_counts() == before


def _two_alike(skeleton, names):
    """Actions keying the same curves (so built from one template), named ``names``."""
    turn = np.array([[1.0, 0.0, 0.0, 0.0], [0.0, 1.0, 0.0, 0.0]])
    return [
        ActionData(
            name, [BoneChannels(0, np.array([0.0, 1.0]), turn * (i + 1), np.zeros(0), np.zeros((0, 3)))], (0.0, 1.0)
        )
        for i, name in enumerate(names)
    ]


def test_an_animation_named_like_the_template_keeps_its_name(blender, tmp_path):
    """The template takes a name that neither the file's actions nor the import's have."""
    from io_ms3d_mdl.blender.animation import build_actions

    path = write_source(character_spec(), tmp_path, "guy")
    assert blender.ops.import_scene.source_mdl(filepath=str(path), animations="NONE") == {"FINISHED"}
    blender.data.actions.new("io_ms3d_mdl key template 1")  # the user's own
    skeleton = load_source(str(path), SourceOptions()).skeleton
    names = ["io_ms3d_mdl key template", "walk", "io_ms3d_mdl key template 2"]
    built = build_actions(blender.data.objects["guy"], _two_alike(skeleton, names), skeleton)
    assert [a.name for a in built] == names
    assert sorted(a.name for a in blender.data.actions) == sorted([*names, "io_ms3d_mdl key template 1"])


def test_a_failure_while_making_a_template_removes_it(blender, tmp_path, monkeypatch):
    from io_ms3d_mdl.blender import animation

    path = write_source(character_spec(), tmp_path, "guy")
    assert blender.ops.import_scene.source_mdl(filepath=str(path), animations="NONE") == {"FINISHED"}
    before = sorted(a.name for a in blender.data.actions)
    skeleton = load_source(str(path), SourceOptions()).skeleton

    def broken(action):
        raise RuntimeError("injected failure in a template")

    monkeypatch.setattr(animation, "_fcurves", broken)
    with pytest.raises(RuntimeError, match="injected failure in a template"):
        animation.build_actions(blender.data.objects["guy"], _two_alike(skeleton, ["a", "b"]), skeleton)
    assert sorted(a.name for a in blender.data.actions) == before


def test_packed_keys_lay_out_as_the_channels_do_after_the_finite_guard(blender):
    """``ActionData.packed``: each channel's keys are views of the packed arrays at their place (the builder lays
    them out from there, the finite guard checks them there), so a repair made through either shows in both; the
    layout is the one the channels give, keys beyond Blender's frames dropped alike. No bones, deltas keying some,
    one frame, animations of different lengths, non-finite values and frames past ``MAX_FRAME``."""
    import dataclasses

    from io_ms3d_mdl.blender import animation
    from io_ms3d_mdl.formats.source.animation import DecodedAnimation
    from io_ms3d_mdl.scene.finite import replace_non_finite
    from io_ms3d_mdl.scene.source.animation import build_channels
    from io_ms3d_mdl.scene.types import SceneData

    rng = np.random.default_rng(40)
    for bones, delta in ((0, False), (1, False), (5, False), (5, True)):
        anims = []
        for k, frames in enumerate((1, 2, 7, 40, 3)):
            rotations = rng.standard_normal((frames, bones, 4)) * (k % 2) + (1.0, 0.0, 0.0, 0.0)
            positions = np.cumsum(rng.standard_normal((frames, bones, 3)), axis=0)
            if bones and frames > 2:
                rotations[1, -1, 2], positions[-1, 0, 1] = np.nan, np.inf
            animated = np.arange(bones) % 2 == 0 if delta else np.ones(bones, bool)
            anims.append(DecodedAnimation(f"a{k}", 30.0, delta, rotations, positions, animated))
        scales = [1.0, 2.0, 0.5, 1e5, 1e9]  # (the last two animations' later keys are past MAX_FRAME)
        eye = np.repeat(np.eye(3)[None], bones, axis=0)
        with np.errstate(invalid="ignore"):  # (inf · 0 in the conversion: NaN, which the guard repairs)
            actions = build_channels(anims, scales, eye, rng.standard_normal((bones, 3)), eye, 1.0)
        replace_non_finite(SceneData("s", actions=actions))
        for data in actions:
            packed = data.packed
            for kind, value in (("rotation", "rotations"), ("location", "locations")):
                whole_frames, whole = getattr(packed, f"{kind}_frames"), getattr(packed, value)
                counts = [len(getattr(c, f"{kind}_frames")) for c in data.channels]
                assert np.asarray(getattr(packed, f"{kind}_counts")).tolist() == counts
                assert np.isfinite(whole_frames).all() and np.isfinite(whole).all()
                for c, first in zip(data.channels, np.cumsum(counts) - counts, strict=True):
                    part = slice(int(first), int(first) + len(getattr(c, f"{kind}_frames")))
                    for mine, theirs in ((getattr(c, f"{kind}_frames"), whole_frames), (getattr(c, value), whole)):
                        assert np.shares_memory(mine, theirs) or not len(mine)
                        assert np.array_equal(mine, theirs[part])
            laid = animation._ActionLayout(data)
            alone = animation._ActionLayout(dataclasses.replace(data, packed=None))
            assert laid.pairs.tobytes() == alone.pairs.tobytes() and laid.dropped == alone.dropped
            assert (laid.starts, laid.counts, laid.signature) == (alone.starts, alone.counts, alone.signature)
        assert sum(animation._ActionLayout(a).dropped for a in actions) > 0 or not bones
