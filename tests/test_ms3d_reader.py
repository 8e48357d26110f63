"""The MS3D reader on synthetic files (every block, sub-version and truncation) and on every shared sample."""

from __future__ import annotations

import struct

import numpy as np
import pytest
from conftest import ms3d_sample, sample_names
from ms3d_writer import Group, Joint, Material, Ms3dSpec, Triangle, Vertex, VertexExtra, box_spec, quad_spec, write_ms3d

from io_ms3d_mdl.errors import FormatError
from io_ms3d_mdl.formats.ms3d import read_ms3d, read_ms3d_bytes


def full_spec(vertex_sub_version: int = 2) -> Ms3dSpec:
    spec = quad_spec()
    spec.joints = [
        Joint(
            "root",
            "",
            rotation=(0.1, 0.2, 0.3),
            position=(1, 2, 3),
            rotation_keys=[(1 / 24, (0.0, 0.5, 0.0)), (2 / 24, (0.0, 1.0, 0.0))],
            position_keys=[(1 / 24, (0.0, 0.0, 1.0))],
        ),
        Joint("child", "root", position=(0, 1, 0)),
    ]
    spec.vertices[0].bone_id = 0
    spec.vertices[1].bone_id = 1
    spec.comments = {"group": [(0, "group note")], "material": [(0, "material note")], "joint": [(1, "joint note")]}
    spec.model_comment = "Name=Walk, Start=2, End=14, Loop=True"
    spec.vertex_extra_sub_version = vertex_sub_version
    spec.vertex_extra = [
        VertexExtra((1, -1, -1), (60, 40, 0), extra=11, extra2=7),
        VertexExtra((-1, -1, -1), (0, 0, 0), extra=319),
        VertexExtra((0, 1, -1), (50, 25, 25), extra=1280, extra2=0xDEADBEEF),
        VertexExtra(),
    ]
    spec.joint_colors = [(1.0, 0.0, 0.0), (0.0, 0.5, 1.0)]
    spec.model_extra = (0.75, 1, 0.25)
    return spec


def test_base_data_round_trip():
    spec = box_spec()
    model = read_ms3d_bytes(write_ms3d(spec))
    assert model.version == 4
    assert len(model.vertices) == 8 and len(model.triangles) == 12
    np.testing.assert_allclose(model.vertices["position"], [v.position for v in spec.vertices])
    assert [tuple(t) for t in model.triangles["indices"]] == [t.indices for t in spec.triangles]
    np.testing.assert_allclose(model.triangles["normals"][3], spec.triangles[3].normals)
    assert list(model.triangles["smoothing_group"]) == [t.smoothing_group for t in spec.triangles]
    assert [g.name for g in model.groups] == ["low", "high"]
    assert [list(g.triangle_indices) for g in model.groups] == [list(range(6)), list(range(6, 12))]
    assert [g.material_index for g in model.groups] == [0, 1]
    assert model.materials[1].name == "glass" and model.materials[1].transparency == pytest.approx(0.5)
    np.testing.assert_allclose(model.materials[0].diffuse, (0, 0, 1, 1))
    assert (model.fps, model.total_frames) == (24.0, 30)
    assert model.extended_blocks == [] and not model.warnings


@pytest.mark.parametrize("sub_version, record_size", [(1, 6), (2, 10), (3, 14)])
def test_every_extended_block(sub_version, record_size):
    spec = full_spec(sub_version)
    data = write_ms3d(spec)
    model = read_ms3d_bytes(data)
    assert model.extended_blocks == ["comments", "vertex extra", "joint extra", "model extra"]
    assert not model.warnings, model.warnings
    assert model.groups[0].comment == "group note"
    assert model.materials[0].comment == "material note"
    assert model.joints[1].comment == "joint note" and model.joints[0].comment is None
    assert model.model_comment == "Name=Walk, Start=2, End=14, Loop=True"
    extra = model.vertex_extra
    assert extra.sub_version == sub_version
    assert extra.bone_ids.tolist() == [[1, -1, -1], [-1, -1, -1], [0, 1, -1], [-1, -1, -1]]
    assert extra.weights.tolist() == [[60, 40, 0], [0, 0, 0], [50, 25, 25], [0, 0, 0]]
    assert (extra.extra is None) == (sub_version < 2)
    assert (extra.extra2 is None) == (sub_version < 3)
    if sub_version >= 2:
        assert extra.extra.tolist() == [11, 319, 1280, 0]
    if sub_version == 3:
        assert extra.extra2.tolist() == [7, 0, 0xDEADBEEF, 0]
    np.testing.assert_allclose(model.joints[1].color, (0.0, 0.5, 1.0))
    assert model.model_extra.joint_size == pytest.approx(0.75)
    assert model.model_extra.transparency_mode == 1 and model.model_extra.alpha_ref == pytest.approx(0.25)
    # The vertex-extra block is exactly one record per vertex at the documented size.
    without = write_ms3d(Ms3dSpec(**{**spec.__dict__, "vertex_extra": None, "joint_colors": None, "model_extra": None}))
    assert len(data) - len(without) == 4 + 4 * record_size + (4 + 2 * 12) + (4 + 12)


def test_joints_and_keys():
    model = read_ms3d_bytes(write_ms3d(full_spec()))
    root, child = model.joints
    assert (root.name, root.parent_name, child.parent_name) == ("root", "", "root")
    np.testing.assert_allclose(root.rotation, (0.1, 0.2, 0.3), rtol=1e-6)
    np.testing.assert_allclose(root.position, (1, 2, 3))
    np.testing.assert_allclose(root.rotation_keys["time"], (1 / 24, 2 / 24), rtol=1e-6)
    np.testing.assert_allclose(root.rotation_keys["value"][1], (0, 1, 0))
    np.testing.assert_allclose(root.position_keys["value"], [(0, 0, 1)])
    assert len(child.rotation_keys) == 0 and len(child.position_keys) == 0
    assert model.vertices["bone_id"][:2].tolist() == [0, 1]


def test_version_3_is_read():
    model = read_ms3d_bytes(write_ms3d(quad_spec(version=3)))
    assert model.version == 3 and len(model.triangles) == 2


def test_model_comment_has_no_index_field():
    """The model comment is `int has; int length; text` (notes §1.2); the following blocks must still align."""
    spec = full_spec()
    spec.comments = {}
    model = read_ms3d_bytes(write_ms3d(spec))
    assert model.model_comment.startswith("Name=Walk")
    assert model.model_extra is not None and not model.warnings


def test_names_fill_the_field_without_terminator_and_decode_leniently():
    spec = quad_spec()
    spec.groups[0].name = b"E:\\6dxtools\\6dxv1.1.5SDK\\Demos\\T"  # exactly 32 bytes, no NUL (gun.ms3d)
    spec.materials[0].name = "caf\u00e9".encode("cp1252")  # not UTF-8
    spec.materials[0].texture = "\u9f9f.bmp".encode("gbk")  # GBK (tortoise.ms3d): decodes without raising
    spec.joints = [Joint(b"bone\0garbage after the terminator")]
    model = read_ms3d_bytes(write_ms3d(spec))
    assert model.groups[0].name == "E:\\6dxtools\\6dxv1.1.5SDK\\Demos\\T"
    assert model.materials[0].name == "caf\u00e9"
    assert model.materials[0].texture.endswith(".bmp")
    assert model.joints[0].name == "bone"


def test_bone_ids_are_read_unsigned_beyond_128_joints():
    spec = quad_spec()
    spec.vertices[0].bone_id = -56  # byte 200
    spec.vertex_extra = [VertexExtra((-56, -1, -1), (100, 0, 0))] + [VertexExtra() for _ in range(3)]
    model = read_ms3d_bytes(write_ms3d(spec))
    assert int(model.vertices["bone_id"][0]) == 200
    assert model.vertex_extra.bone_ids[0].tolist() == [200, -1, -1]


# --- errors in the base data: one clear FormatError naming file, expectation and offset ---------------------


def test_not_an_ms3d_file(tmp_path):
    path = tmp_path / "picture.ms3d"
    path.write_bytes(b"\x89PNG\r\n\x1a\n" + bytes(100))
    with pytest.raises(FormatError) as info:
        read_ms3d(path)
    message = str(info.value)
    assert "picture.ms3d" in message and "MS3D000000" in message and "byte offset 0" in message


@pytest.mark.parametrize("version", [0, 2, 5, 1234])
def test_unsupported_version(version):
    with pytest.raises(FormatError, match=f"unsupported MilkShape 3D version {version}.*offset 10"):
        read_ms3d_bytes(write_ms3d(quad_spec(version=version)), "v.ms3d")


def test_empty_and_tiny_files():
    for data in (b"", b"MS3D"):
        with pytest.raises(FormatError, match="shorter than the 14-byte header"):
            read_ms3d_bytes(data, "tiny.ms3d")


def base_data_end(spec: Ms3dSpec) -> int:
    return len(
        write_ms3d(
            Ms3dSpec(
                **{
                    **spec.__dict__,
                    "comments": None,
                    "model_comment": None,
                    "vertex_extra": None,
                    "joint_colors": None,
                    "model_extra": None,
                }
            )
        )
    )


def test_truncation_anywhere_in_the_base_data_is_an_error_with_block_and_offset():
    spec = full_spec()
    data = write_ms3d(spec)
    end = base_data_end(spec)
    blocks = set()
    for cut in range(14, end):
        with pytest.raises(FormatError) as info:
            read_ms3d_bytes(data[:cut], "cut.ms3d")
        err = info.value
        assert err.offset is not None and 0 <= err.offset <= cut
        assert "cut.ms3d" in str(err) and "file ends inside the" in err.reason
        blocks.add(err.reason.split("file ends inside the ")[1].split(":")[0])
    assert blocks == {
        "vertices block",
        "triangles block",
        "groups block",
        "materials block",
        "keyframer data",
        "joints block",
    }


def test_truncation_inside_extended_blocks_keeps_what_was_read():
    spec = full_spec(3)
    data = write_ms3d(spec)
    end = base_data_end(spec)
    assert read_ms3d_bytes(data[:end]).extended_blocks == []
    clean_ends = []
    for cut in range(end + 1, len(data)):
        model = read_ms3d_bytes(data[:cut])
        assert len(model.triangles) == 2 and len(model.joints) == 2
        assert len(model.extended_blocks) < 4
        if model.warnings:
            assert len(model.warnings) == 1 and "kept what was read" in model.warnings[0]
        else:  # a file may legitimately end between two blocks (MilkShape 1.7 writes only the first two)
            clean_ends.append(len(model.extended_blocks))
    assert clean_ends == [1, 2, 3]


def test_unknown_sub_version_stops_extended_reading_with_a_warning():
    spec = full_spec()
    spec.vertex_extra_sub_version = 9
    model = read_ms3d_bytes(write_ms3d(spec))
    assert model.extended_blocks == ["comments"]
    assert model.vertex_extra is None and "unknown vertex extra subVersion 9" in model.warnings[0]


def test_hostile_comment_counts_do_not_allocate_or_crash():
    spec = full_spec()
    data = bytearray(write_ms3d(spec))
    end = base_data_end(spec)
    struct.pack_into("<i", data, end + 4, 0x7FFFFFFF)  # group comment count
    model = read_ms3d_bytes(bytes(data))
    assert model.extended_blocks == [] and "does not fit" in model.warnings[0]


def test_triangle_with_out_of_range_vertex_is_refused():
    spec = quad_spec()
    spec.triangles[1] = Triangle((0, 2, 9))
    with pytest.raises(FormatError, match=r"triangle 1 uses vertex 9 but the file has 4 vertices"):
        read_ms3d_bytes(write_ms3d(spec), "bad.ms3d")


def test_group_with_out_of_range_triangle_is_refused():
    spec = quad_spec()
    spec.groups = [Group("g", [0, 5])]
    with pytest.raises(FormatError, match="group 0 uses triangle 5 but the file has 2 triangles"):
        read_ms3d_bytes(write_ms3d(spec), "bad.ms3d")


def test_unreadable_path_is_a_format_error(tmp_path):
    with pytest.raises(FormatError, match="cannot open file"):
        read_ms3d(tmp_path / "missing.ms3d")


def test_large_counts_read_in_bulk():
    n = 65534
    spec = Ms3dSpec(
        vertices=[Vertex((float(i), 0.0, 0.0)) for i in range(n)],
        triangles=[Triangle((i, i + 1, i + 2)) for i in range(0, 3000)],
        groups=[Group("g", list(range(3000)))],
        materials=[Material("m")],
    )
    model = read_ms3d_bytes(write_ms3d(spec))
    assert len(model.vertices) == n and model.vertices["position"][-1, 0] == n - 1


# --- every shared sample ---------------------------------------------------------------------------------------

# file: (vertices, triangles, groups, materials, joints, rotation keys, fps, total frames, extended blocks, vertex sv)
SAMPLE_FACTS = {
    "assimp__assimp/Wuson.ms3d": (2117, 3732, 1, 0, 0, 0, 24.0, 30, 4, 3),
    "assimp__assimp/jeep1.ms3d": (1190, 2032, 7, 1, 0, 0, 1.0, 1, 0, None),
    "assimp__assimp/twospheres_withmats.ms3d": (124, 240, 2, 2, 0, 0, 24.0, 30, 4, 3),
    "assimp__assimp/InvalidMaterialIndex.ms3d": (1, 1, 1, 1, 0, 0, 24.0, 0, 0, None),
    "soulsheng__ms3d-render/Model.ms3d": (40, 76, 1, 2, 9, 21, 24.0, 24, 0, None),
    "akadjoker__H3DView/media/dwarf.ms3d": (1249, 1664, 3, 1, 44, 6899, 30.0, 300, 4, 2),
    "akadjoker__H3DView/media/Bird.ms3d": (142, 250, 1, 1, 12, 42, 1.0, 32, 4, 2),
    "akadjoker__H3DView/media/bones2.ms3d": (98, 168, 2, 1, 4, 11, 1.0, 30, 4, 2),
    "akadjoker__H3DView/media/cube.ms3d": (56, 84, 1, 1, 7, 21, 1.0, 30, 4, 3),
    "nemox-tut10/rock.ms3d": (62, 120, 1, 1, 0, 0, 24.0, 30, 0, None),
    "akadjoker__IrrlichtGameObject/gun.ms3d": (273, 486, 1, 1, 0, 0, 10.0, 30, 0, None),
    "JuhaLukkari__Simple3DWorld/Model_empty.ms3d": (0, 0, 0, 1, 0, 0, 24.0, 24, 2, 1),
    "akadjoker__IrrlichtGameObject/morbo/morbo.ms3d": (243, 449, 1, 1, 0, 0, 10.0, 30, 0, None),  # coverage/: PCX
}


def test_every_shared_sample_is_covered():
    assert sample_names("ms3d", "*.ms3d") == set(SAMPLE_FACTS)


@pytest.mark.parametrize("relative", sorted(SAMPLE_FACTS))
def test_shared_sample_counts(relative):
    model = read_ms3d(ms3d_sample(relative))
    v, t, g, m, j, rk, fps, frames, blocks, sv = SAMPLE_FACTS[relative]
    assert (len(model.vertices), len(model.triangles), len(model.groups), len(model.materials), len(model.joints)) == (
        v,
        t,
        g,
        m,
        j,
    )
    assert sum(len(x.rotation_keys) for x in model.joints) == rk
    assert (model.fps, model.total_frames) == (fps, frames)
    assert len(model.extended_blocks) == blocks
    assert (model.vertex_extra.sub_version if model.vertex_extra else None) == sv
    assert not model.warnings


def test_dwarf_details():
    model = read_ms3d(ms3d_sample("akadjoker__H3DView/media/dwarf.ms3d"))
    assert model.model_comment.startswith("Name=Walk, Start=2, End=14, Loop=True")
    assert len(model.model_comment) == 689
    assert model.materials[0].texture == "Textures\\dwarf.jpg"
    last_key = max(float(j.rotation_keys["time"].max()) for j in model.joints if len(j.rotation_keys))
    assert last_key * model.fps > model.total_frames  # keys beyond iTotalFrames (notes §5)


def test_sample_quirks():
    gun = read_ms3d(ms3d_sample("akadjoker__IrrlichtGameObject/gun.ms3d"))
    assert gun.groups[0].name == "E:\\6dxtools\\6dxv1.1.5SDK\\Demos\\T"
    mats = read_ms3d(ms3d_sample("assimp__assimp/twospheres_withmats.ms3d")).materials
    assert mats[1].transparency == pytest.approx(0.84) and mats[1].diffuse[3] == pytest.approx(0.84)
    rock = read_ms3d(ms3d_sample("nemox-tut10/rock.ms3d"))
    assert not rock.triangles["normals"].any()
    nehe = read_ms3d(ms3d_sample("soulsheng__ms3d-render/Model.ms3d"))
    assert nehe.materials[1].name == "" and nehe.materials[1].texture == ""
    bird = read_ms3d(ms3d_sample("akadjoker__H3DView/media/Bird.ms3d"))
    multi = (bird.vertex_extra.weights.sum(axis=1) > 0) & (bird.vertex_extra.bone_ids[:, 0] >= 0)
    assert int(multi.sum()) == 105
