"""GoldSrc files from strangers: each hostile class of ``tests/hostile.py`` ends in one clear FormatError (or a
warning, where the model can still be shown), within its budget, and never opens a file outside the roots."""

from __future__ import annotations

import os
import time

import hostile
import numpy as np
import pytest
from goldsrc_writer import GBone, character_spec, write_model_files
from test_hostile import watch  # noqa: F401 - the fixture

from io_ms3d_mdl.errors import BudgetExceeded, FormatError
from io_ms3d_mdl.formats.goldsrc import read_goldsrc
from io_ms3d_mdl.scene.load import load_source
from io_ms3d_mdl.scene.source.convert import SourceOptions


def test_the_synthetic_character_reads_every_corner(tmp_path):
    path = write_model_files(character_spec(), tmp_path / "models", "guy")
    scene = load_source(str(path), SourceOptions(scale=1.0, animations="ALL"))
    assert not scene.warnings
    assert [o.name for o in scene.objects] == ["body", "hat"] and scene.triangle_count == 6
    assert [a.name for a in scene.actions] == ["walk", "aim", "aim_blend1"]
    walk = scene.actions[0]
    assert walk.markers == [("1004 step", 3.0)] and walk.props["source_looping"]
    # strips and fans alike: each quad of the body mesh is two triangles over its four vertices
    body = scene.objects[0].mesh
    assert sorted(map(tuple, np.sort(body.triangles, axis=1))) == [(0, 1, 2), (1, 2, 3), (4, 5, 7), (4, 6, 7)]
    # vertices are placed by their bone's rest pose: the arm is 10 up and turned 90° about Z
    np.testing.assert_allclose(body.positions[5], (0.0, 1.0, 10.0), atol=1e-6)
    np.testing.assert_allclose(scene.objects[0].mesh.uvs[:3], [[0, 1], [15 / 16, 1], [0, 1 - 15 / 16]][::-1], atol=0)
    assert [c.name for c in scene.collections] == ["body", "hats"]
    assert [c.hidden for c in scene.collections[1].children] == [False, True]
    assert scene.skin_families == [[0, 1, 2], [2, 1, 0]]
    assert scene.materials[1].alpha_clip == 0.5 and scene.materials[2].reflection_mapped
    assert [e.name for e in scene.empties] == ["muzzle"]


def test_textures_in_a_t_file(tmp_path):
    path = write_model_files(character_spec(), tmp_path / "models", "guy", textures_apart=True)
    gs = read_goldsrc(path)
    assert gs.texture_file.endswith("guyT.mdl") and len(gs.textures) == 3 and gs.skins.shape == (2, 3)
    with pytest.raises(FormatError, match=r"open 'guy\.mdl'"):
        load_source(str(tmp_path / "models" / "guyT.mdl"))


def test_a_broken_texture_file_costs_the_textures_only(tmp_path):
    path = write_model_files(character_spec(), tmp_path / "models", "guy", textures_apart=True)
    texture_file = tmp_path / "models" / "guyT.mdl"
    texture_file.write_bytes(texture_file.read_bytes()[:300])
    scene = load_source(str(path))
    assert any("textures were not imported: guyT.mdl" in w for w in scene.warnings)
    assert scene.triangle_count == 6 and not scene.materials


def test_missing_companions_cost_warnings(tmp_path):
    path = write_model_files(character_spec(), tmp_path / "models", "guy", textures_apart=True)
    (tmp_path / "models" / "guyT.mdl").unlink()
    (tmp_path / "models" / "guy01.mdl").unlink()
    scene = load_source(str(path), SourceOptions(animations="ALL"))
    assert any("guyT.mdl" in w for w in scene.warnings) and any("group 1" in w for w in scene.warnings)
    assert [a.name for a in scene.actions] == ["walk"] and scene.triangle_count == 6


@pytest.mark.parametrize(("build", "says"), hostile.GOLDSRC_REFUSED)
def test_hostile_models_are_refused_with_one_message(tmp_path, watch, build, says):  # noqa: F811
    path = build(tmp_path)
    with pytest.raises(FormatError, match=says) as info:
        load_source(str(path))
    assert info.value.message.startswith(path.name)


def test_a_group_outside_the_folder_is_refused(tmp_path, watch):  # noqa: F811
    scene = load_source(str(hostile.goldsrc_group_traversal(tmp_path)), SourceOptions(animations="ALL"))
    assert any("outside the model's folder; refused" in w for w in scene.warnings)
    assert [a.name for a in scene.actions] == ["walk"]  # the other group's sequences are not imported


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs on this system")
def test_a_group_file_that_is_a_fifo_costs_its_sequences(tmp_path):
    path = write_model_files(character_spec(), tmp_path / "models", "guy")
    group = tmp_path / "models" / "guy01.mdl"
    group.unlink()
    os.mkfifo(group)
    start = time.perf_counter()
    scene = load_source(str(path), SourceOptions(animations="ALL"))
    assert [a.name for a in scene.actions] == ["walk"] and any("group 1" in w for w in scene.warnings)
    assert time.perf_counter() - start < 2.0


def test_frame_bomb_stops_at_the_budget(tmp_path):
    path = hostile.goldsrc_frame_bomb(tmp_path)
    start = time.perf_counter()
    with pytest.raises(BudgetExceeded, match="frames"):
        load_source(str(path))
    assert time.perf_counter() - start < 2.0


def test_empty_spans_are_bounded(tmp_path):
    path = hostile.goldsrc_empty_spans(tmp_path)
    start = time.perf_counter()
    scene = load_source(str(path))
    assert any("more spans than" in w or "past the end" in w for w in scene.warnings)
    assert time.perf_counter() - start < 2.0


def test_non_finite_values_are_replaced(tmp_path):
    spec = character_spec()
    spec.bones[1] = GBone("arm", 0, (0, 0, float("nan"), 0, 0, float("inf")), (float("nan"),) * 6)
    scene = load_source(str(write_model_files(spec, tmp_path / "models", "guy")), SourceOptions(animations="ALL"))
    for obj in scene.objects:
        assert np.isfinite(obj.mesh.positions).all() and np.isfinite(obj.mesh.normals).all()
    for action in scene.actions:
        for channel in action.channels:
            assert np.isfinite(channel.rotations).all() and np.isfinite(channel.locations).all()
    assert scene.warnings


# --- issue 31: counts charged before anything is built -----------------------------------------------------------


def _one_bone(sequences, **extra):
    from goldsrc_writer import GBone, GSpec

    return GSpec("counts.mdl", [GBone("root", -1)], sequences=sequences, **extra)


def test_a_blend_count_no_file_holds_is_offered_once(tmp_path):
    """Blend count 2³¹−1 in a small model (one name per blend took 2 GB in 4 s): its table cannot fit the file, so
    the sequence is offered once and says why it was not decoded."""
    import struct

    from io_ms3d_mdl.formats.goldsrc import structs as G

    path = write_model_files(character_spec(), tmp_path / "models", "guy")
    data = bytearray(path.read_bytes())
    header = np.frombuffer(bytes(data[: G.HEADER.itemsize]), G.HEADER)[0]
    at = int(header["seqindex"]) + G.SEQUENCE.fields["numblends"][1]
    data[at : at + 4] = struct.pack("<i", 2**31 - 1)
    path.write_bytes(bytes(data))
    start = time.perf_counter()
    scene = load_source(str(path), SourceOptions(animations="ALL"))
    assert time.perf_counter() - start < 2.0
    assert [a.name for a in scene.animations] == ["walk", "aim", "aim_blend1"]
    assert any("'walk' could not be decoded: the animation table" in w for w in scene.warnings)


def test_honest_blends_beyond_the_offer_budget_are_refused_before_naming(tmp_path):
    from goldsrc_writer import GSequence

    from io_ms3d_mdl.budget import DEFAULT

    rest = [[[None] * 6] for _ in range(1_000)]
    count = DEFAULT.animation_entries // 1_000 + 1
    path = write_model_files(_one_bone([GSequence(f"s{i}", 2, rest) for i in range(count)]), tmp_path, "counts")
    with pytest.raises(BudgetExceeded, match=r"animations on offer \(sequences × blends\) of 21,000"):
        load_source(str(path))


@pytest.mark.parametrize("kind", ["Source", "GoldSrc"])
def test_a_skin_table_beyond_the_budget_is_refused_before_it_is_read(tmp_path, kind):
    """1,000 families × 1,000 references (2 MB) took 665 MB as material names; the budget is 100,000 entries."""
    families = [[0] * 1_000 for _ in range(1_000)]
    if kind == "Source":
        from source_writer import SBodyPart, SModel, SourceSpec, quad_mesh, write_source

        spec = SourceSpec(body_parts=[SBodyPart("b", [SModel("m", [quad_mesh()])])], skins=families)
        path = write_source(spec, tmp_path, "skins")
    else:
        spec = character_spec()
        spec.skins = families
        path = write_model_files(spec, tmp_path, "skins")
    with pytest.raises(BudgetExceeded, match=r"skin table entries .* of 1,000,000 exceeds"):
        load_source(str(path))


def _shared_lists(tmp_path, meshes: int):
    """The character with ``meshes`` meshes in its body model, every one naming the first mesh's command list."""
    from goldsrc_writer import quad

    from io_ms3d_mdl.formats.goldsrc import structs as G

    spec = character_spec()
    spec.body_parts[0].models[0].meshes = [quad(0, 0)] * meshes
    path = write_model_files(spec, tmp_path / "models", "guy")
    data = bytearray(path.read_bytes())
    header = np.frombuffer(bytes(data[: G.HEADER.itemsize]), G.HEADER)[0]
    part = np.frombuffer(bytes(data), G.BODY_PART, 1, int(header["bodypartindex"]))[0]
    model = np.frombuffer(bytes(data), G.MODEL, 1, int(part["modelindex"]))[0]
    at = int(model["meshindex"])
    table = np.frombuffer(bytes(data[at : at + meshes * G.MESH.itemsize]), G.MESH).copy()
    table["triindex"] = table["triindex"][0]
    data[at : at + table.nbytes] = table.tobytes()
    path.write_bytes(bytes(data))
    return path


def test_a_command_list_shared_by_meshes_is_walked_once(tmp_path, monkeypatch):
    from io_ms3d_mdl.formats.goldsrc import reader

    walks = []
    real = reader.mesh_corners
    monkeypatch.setattr(reader, "mesh_corners", lambda *a: walks.append(a[1]) or real(*a))
    gs = read_goldsrc(_shared_lists(tmp_path, 500))
    assert [len(m.meshes) for m in gs.body_parts[0].models] == [500]
    assert len(walks) == 2  # the shared list and the hat's strip, each once
    assert all(len(m.corners) == 6 for m in gs.body_parts[0].models[0].meshes)


def test_one_vertex_commands_count_against_the_triangle_budget(tmp_path):
    """A list of a million one-vertex commands draws nothing, yet was walked without a budget."""
    from goldsrc_writer import GBodyPart, GMesh, GModel

    mesh = GMesh(0, [(1, [(0, 0, 0, 0)])] * 1_000_000)
    model = GModel("m", [(0, 0, 0)], [0], [(0, 0, 1)], [0], [mesh])
    path = write_model_files(_one_bone([], body_parts=[GBodyPart("b", [model])]), tmp_path, "short")
    start = time.perf_counter()
    with pytest.raises(BudgetExceeded, match="triangles and commands of triangle commands of mesh 0"):
        read_goldsrc(path)
    assert time.perf_counter() - start < 3.0


def test_the_leaping_walk_is_charged_to_the_import(tmp_path):
    """Long chains leap through tables as large as the data they may cross: that is charged over the import."""
    from goldsrc_writer import GSequence

    from io_ms3d_mdl.budget import DEFAULT
    from io_ms3d_mdl.formats.goldsrc import decode_sequence
    from io_ms3d_mdl.formats.goldsrc.animation import WalkAllowance

    stream = b"\x01\x01\x05\x00" * 1_000  # a thousand one-frame spans
    path = write_model_files(_one_bone([GSequence("long", 1_000, [[[stream] + [None] * 5]])]), tmp_path, "long")
    gs = read_goldsrc(path)
    decoded = decode_sequence(gs, gs.sequences[0], WalkAllowance())
    assert np.allclose(decoded.positions[0, :, 0, 0], 0.05)
    with pytest.raises(BudgetExceeded, match="animation data walked for the long channels"):
        decode_sequence(gs, gs.sequences[0], WalkAllowance(DEFAULT.animation_walk_bytes - 100))


def test_sequences_decoded_together_end_as_each_alone(tmp_path):
    """``decode_sequences`` walks the channels of many sequences (the model's and a group file's) together; one that
    leaps, holds spans to spare or reads past the end of its file ends as ``decode_sequence`` leaves it alone: the
    same values, held channels, errors and walk allowance spent."""
    from goldsrc_writer import GSequence, GSpec

    from io_ms3d_mdl.formats.goldsrc import decode_sequence
    from io_ms3d_mdl.formats.goldsrc.animation import WalkAllowance, decode_sequences

    ramp, none = list(range(-3, 9)), [None] * 6
    leaping = b"\x01\x01\x05\x00" * 300  # 300 one-frame spans
    stalled = b"\x00\x00" * 500  # spans covering no frame
    past = b"\x09\x09\x01\x00"  # nine values promised, one written, at the end of the group file
    sequences = [
        GSequence("still", 3, [[none, none]]),
        GSequence("ramp", len(ramp), [[[ramp, None, ramp[::-1], None, None, ramp], [None, ramp, *none[2:]]]] * 2),
        GSequence("long", 300, [[[leaping, *none[1:]], none]]),
        GSequence("stall", 4, [[[stalled, *none[1:]], none]], group=1),
        GSequence("grouped", len(ramp), [[[None, None, ramp, *none[3:]], [ramp, *none[1:]]]], group=1),
        GSequence("past", 9, [[none, [*none[1:], past]]], group=1),
    ]
    bones = [GBone("root", -1, scale=(0.1,) * 6), GBone("arm", 0, (1, 2, 3, 0.1, 0.2, 0.3), (0.01,) * 6)]
    spec = GSpec("batch.mdl", bones, sequences=sequences, groups=["", "batch01.mdl"])
    gs = read_goldsrc(write_model_files(spec, tmp_path, "batch"))
    alone, spent = [], WalkAllowance()
    for seq in gs.sequences:
        try:
            alone.append(decode_sequence(gs, seq, spent))
        except FormatError as exc:
            alone.append(exc)
    together = WalkAllowance()
    decoded, values = decode_sequences(gs, gs.sequences, together)
    assert together.spent == spent.spent > 0
    assert isinstance(alone[3], FormatError) and "more spans than" in alone[3].message
    assert alone[5].held[0, 1, 5] and not alone[4].held.any()
    for one, joint in zip(alone, decoded, strict=True):
        if isinstance(one, FormatError):
            assert type(joint) is type(one) and joint.message == one.message
            continue
        for name in ("positions", "angles", "held", "values"):
            assert np.array_equal(getattr(joint, name), getattr(one, name)), name
        assert np.shares_memory(joint.values, values)


def test_listed_records_and_shared_group_files(tmp_path, monkeypatch):
    """Red-team findings: controllers and sequence groups become entries of list properties (a million
    controllers took 2.9 GB), so they count as custom properties before they are read; groups that name one
    file share its bytes (2,000 groups naming one 60 MB file ran out of memory), and the group files together
    are bounded by the file size budget."""
    import struct

    from io_ms3d_mdl.budget import DEFAULT, Budget, using_budget
    from io_ms3d_mdl.formats.goldsrc import reader
    from io_ms3d_mdl.formats.goldsrc import structs as G

    def patched(folder, count_field, index_field, dtype, count, fill=None):
        path = write_model_files(character_spec(), folder, "guy")
        data = bytearray(path.read_bytes())
        records = np.zeros(count, dtype)
        if fill:
            fill(records)
        at = len(data)
        data += records.tobytes()
        header = np.frombuffer(bytes(data[: G.HEADER.itemsize]), G.HEADER).copy()
        header[count_field], header[index_field] = count, at
        data[: G.HEADER.itemsize] = header.tobytes()
        path.write_bytes(bytes(data))
        return path

    many = DEFAULT.custom_properties + 1
    for count, index, dtype, what in [
        ("numbonecontrollers", "bonecontrollerindex", G.BONE_CONTROLLER, "bone controllers"),
        ("numseqgroups", "seqgroupindex", G.SEQUENCE_GROUP, "sequence groups"),
    ]:
        path = patched(tmp_path / what.replace(" ", "_"), count, index, dtype, many)
        with pytest.raises(BudgetExceeded, match=f"{what} \\(each listed in the model's properties\\) of 20,001"):
            read_goldsrc(path)

    # 50 groups, one sequence each, all naming guy01.mdl: read once
    def groups(records):
        records["name"] = b"guy01.mdl"

    path = patched(tmp_path / "shared", "numseqgroups", "seqgroupindex", G.SEQUENCE_GROUP, 51, groups)
    data = bytearray(path.read_bytes())
    header = np.frombuffer(bytes(data[: G.HEADER.itemsize]), G.HEADER)[0]
    aim = int(header["seqindex"]) + G.SEQUENCE.itemsize  # the group's sequence, copied into groups 1…50
    sequences = np.repeat(np.frombuffer(bytes(data[aim : aim + G.SEQUENCE.itemsize]), G.SEQUENCE), 50)
    sequences["seqgroup"] = np.arange(1, 51)
    at = len(data)
    data += sequences.tobytes()
    data[int(G.HEADER.fields["numseq"][1]) : int(G.HEADER.fields["numseq"][1]) + 8] = struct.pack("<2i", 50, at)
    path.write_bytes(bytes(data))
    reads = []
    real = reader.read_file
    monkeypatch.setattr(reader, "read_file", lambda p: reads.append(os.path.basename(p)) or real(p))
    gs = read_goldsrc(path)
    assert sorted(gs.group_data) == list(range(1, 51)) and reads.count("guy01.mdl") == 1
    assert len({id(d) for d, _ in gs.group_data.values()}) == 1
    # two group files of 100 kB each, under a budget of 134 kB per file: refused together
    spec = character_spec()
    spec.groups = ["", "guy01.mdl", "guy02.mdl"]
    spec.sequences[0].group = 2
    path = write_model_files(spec, tmp_path / "two", "guy")
    for name in ("guy01.mdl", "guy02.mdl"):
        with (path.parent / name).open("ab") as file:
            file.truncate(100_000)
    with using_budget(Budget(0.001)), pytest.raises(BudgetExceeded, match="sequence-group files together"):
        read_goldsrc(path)


def test_mesh_records_are_counted_before_they_are_walked(tmp_path):
    """A million mesh records naming one empty command list took 8 s to walk (red team); the budget is 65,536."""
    from test_budget_worst_cases import goldsrc_meshes

    from io_ms3d_mdl.budget import Budget, using_budget

    path, _, count = goldsrc_meshes(tmp_path)
    read_goldsrc(path)  # just under the budget
    start = time.perf_counter()
    with using_budget(Budget(0.5)), pytest.raises(BudgetExceeded, match="meshes over all models of 65,533"):
        read_goldsrc(path)
    assert time.perf_counter() - start < 1.0 and count == 65_533
