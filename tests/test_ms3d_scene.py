"""MS3D → neutral scene conversion, without Blender."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import ms3d_sample
from ms3d_writer import Group, Material, Triangle, Vertex, box_spec, quad_spec, write_ms3d

from io_ms3d_mdl.formats.ms3d import read_ms3d, read_ms3d_bytes
from io_ms3d_mdl.scene.axes import AXES, axis_conversion_matrix
from io_ms3d_mdl.scene.ms3d.convert import Ms3dOptions, ms3d_to_scene
from io_ms3d_mdl.scene.ms3d.texture_search import clear_cache, find_texture
from io_ms3d_mdl.scene.topology import classify_faces, compact, sharp_edges_from_groups

IDENTITY = Ms3dOptions(axis_forward="Y", axis_up="Z")


def scene_of(spec, options=IDENTITY, path=None):
    return ms3d_to_scene(read_ms3d_bytes(write_ms3d(spec), path), options)


def test_quad_uvs_flip_t_and_positions_are_compacted():
    scene = scene_of(quad_spec())
    (obj,) = scene.objects
    mesh = obj.mesh
    assert obj.name == "quad"
    np.testing.assert_allclose(mesh.positions, [(0, 0, 0), (1, 0, 0), (1, 1, 0), (0, 1, 0)])
    assert mesh.triangles.tolist() == [[0, 1, 2], [0, 2, 3]]
    np.testing.assert_allclose(mesh.uvs[:3], [(0, 0), (1, 0), (1, 1)])  # v = 1 - t
    assert mesh.material_indices.tolist() == [0, 0] and mesh.materials == [0]
    assert mesh.positions.dtype == np.float32 and mesh.triangles.dtype == np.int32


def test_default_axes_turn_milkshape_y_up_minus_z_front_toward_blender_front():
    spec = quad_spec()
    spec.vertices = [Vertex((1, 2, -3)), *spec.vertices[1:]]
    mesh = scene_of(spec, Ms3dOptions(scale=2.0)).objects[0].mesh
    # forward Z, up Y: (x, y, z) -> (-x, z, y), so a model facing -Z faces -Y (toward the Front view).
    np.testing.assert_allclose(mesh.positions[0], (-2, -6, 4))
    np.testing.assert_allclose(mesh.normals[0], (0, 1, 0), atol=1e-6)  # +Z normal -> +Y, not scaled


def test_axis_matrices_are_rotations():
    for fwd in AXES:
        for up in AXES:
            if fwd[-1] == up[-1]:
                with pytest.raises(ValueError):
                    axis_conversion_matrix(fwd, up)
                continue
            m = axis_conversion_matrix(fwd, up)
            assert np.allclose(m @ m.T, np.eye(3)) and np.isclose(np.linalg.det(m), 1.0)
    # the OBJ importer's default (-Z forward, Y up) is (x, -z, y) (notes §2.5)
    np.testing.assert_allclose(axis_conversion_matrix("-Z", "Y") @ (1, 2, 3), (1, -3, 2))


def test_box_smoothing_groups_make_the_twelve_box_edges_sharp():
    mesh = scene_of(box_spec(), Ms3dOptions(split_groups=False)).objects[0].mesh
    sharp = {tuple(e) for e in mesh.sharp_edges.tolist()}
    assert len(sharp) == 12
    cube_edges = {(a, b) for a in range(8) for b in range(a + 1, 8) if bin(a ^ b).count("1") == 1}
    assert sharp == cube_edges


def test_smoothing_group_zero_never_makes_edges_sharp():
    tris = np.array([[0, 1, 2], [0, 2, 3], [0, 3, 4]])
    assert sharp_edges_from_groups(tris, [0, 1, 0]).tolist() == []
    assert sharp_edges_from_groups(tris, [2, 1, 1]).tolist() == [[0, 2]]
    assert sharp_edges_from_groups(tris, [1, 1, 1]).tolist() == []


def test_degenerate_and_duplicate_faces():
    tris = np.array([[0, 1, 2], [1, 2, 0], [2, 1, 0], [3, 3, 4], [0, 2, 1], [4, 5, 6]])
    faces = classify_faces(tris)
    assert faces.degenerate == 1 and faces.duplicates == 2  # (1,2,0) repeats (0,1,2); (0,2,1) repeats (2,1,0)
    assert faces.keep.tolist() == [True, False, True, False, False, True]
    assert faces.back_faces.tolist() == [False, False, True, False, False, False]
    new, source = compact(tris[faces.keep], 7, faces.back_faces[faces.keep])
    assert source.tolist() == [0, 1, 2, 4, 5, 6, 2, 1, 0]  # the back face gets its own copies
    assert new.tolist() == [[0, 1, 2], [6, 7, 8], [3, 4, 5]]


def test_back_faces_survive_conversion_with_their_own_vertices():
    spec = quad_spec()
    spec.triangles.append(Triangle((2, 1, 0), normals=((0, 0, -1),) * 3))
    spec.groups[0].triangles = [0, 1, 2]
    scene = scene_of(spec)
    mesh = scene.objects[0].mesh
    assert len(mesh.triangles) == 3 and len(mesh.positions) == 7
    assert not scene.warnings


def test_zero_normals_are_ignored_and_partial_ones_kept():
    spec = quad_spec()
    for t in spec.triangles:
        t.normals = ((0, 0, 0),) * 3
    assert scene_of(spec).objects[0].mesh.normals is None
    spec.triangles[0].normals = ((0, 0, 2), (0, 0, 0), (float("nan"), 0, 0))
    normals = scene_of(spec).objects[0].mesh.normals
    np.testing.assert_allclose(normals[:3], [(0, 0, 1), (0, 0, 0), (0, 0, 0)])


def test_material_values():
    spec = quad_spec()
    spec.materials = [
        Material(
            "m",
            diffuse=(0.5, 0.25, 1.5, 0.4),
            specular=(0.5, 0.5, 0.25, 1),
            emissive=(0, 0.2, 0, 1),
            shininess=128,
            transparency=0.4,
            ambient=(0.1, 0.2, 0.3, 1),
            mode=0x40,
            texture="Textures\\x.png",
        )
    ]
    scene = scene_of(spec, path="/nowhere/m.ms3d")
    (mat,) = scene.materials
    assert mat.base_color == pytest.approx((0.5, 0.25, 1.0))
    assert mat.alpha == pytest.approx(0.4)  # transparency is opacity (notes §0.10)
    assert mat.roughness == pytest.approx((2 / 130) ** 0.25)
    assert mat.specular_level == pytest.approx(0.25) and mat.specular_tint == pytest.approx((1, 1, 0.5))
    assert mat.emission_color == pytest.approx((0, 0.2, 0)) and mat.emission_strength == 1.0
    assert mat.use_texture_alpha
    assert mat.base_texture.raw_path == "Textures\\x.png" and mat.base_texture.resolved_path is None
    assert mat.props["ms3d_ambient"] == pytest.approx([0.1, 0.2, 0.3, 1])
    assert any("'Textures\\x.png' was not found" in w for w in scene.warnings)


def test_group_material_out_of_range_and_minus_one():
    spec = quad_spec()
    spec.groups = [Group("a", [0], material_index=3), Group("b", [1], material_index=-1)]
    scene = scene_of(spec)
    assert [o.mesh.materials for o in scene.objects] == [[], []]
    assert scene.materials == []
    assert any("uses material 3 but the file has only 1 material(s)" in w for w in scene.warnings)


def test_single_object_mode_has_a_slot_per_material():
    spec = box_spec()
    spec.groups.append(Group("nomat", [], material_index=-1))
    scene = scene_of(spec, Ms3dOptions(split_groups=False), path="/x/boxy.ms3d")
    (obj,) = scene.objects
    assert obj.name == "boxy" and obj.mesh.materials == [0, 1, None]
    assert obj.mesh.material_indices.tolist() == [0] * 6 + [1] * 6
    assert len(obj.mesh.positions) == 8  # shared corners stay shared in one mesh


def test_split_mode_duplicates_shared_vertices_per_object_and_skips_empty_groups():
    spec = box_spec()
    spec.groups.append(Group("empty", []))
    scene = scene_of(spec)
    assert [o.name for o in scene.objects] == ["low", "high"]
    assert sum(len(o.mesh.positions) for o in scene.objects) > 8
    assert any("'empty' has no triangles" in w for w in scene.warnings)


def test_triangles_outside_every_group_are_reported():
    spec = quad_spec()
    spec.groups[0].triangles = [0]
    assert any("1 triangles belong to no group" in w for w in scene_of(spec).warnings)


def test_texture_search(tmp_path):
    clear_cache()
    (tmp_path / "Textures").mkdir()
    (tmp_path / "Textures" / "Skin.PNG").write_bytes(b"x")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "Wood.bmp").write_bytes(b"x")
    (tmp_path / "rock.tga").write_bytes(b"x")
    model_dir = str(tmp_path)
    assert find_texture("textures\\skin.png", model_dir) == str(tmp_path / "Textures" / "Skin.PNG")
    assert find_texture(".\\rock.tga", model_dir) == str(tmp_path / "rock.tga")
    assert find_texture("skin.png", model_dir) == str(tmp_path / "Textures" / "Skin.PNG")  # bare name in Textures/
    assert find_texture("C:/work packs/x/ROCK.TGA", model_dir) == str(tmp_path / "rock.tga")  # absolute elsewhere
    assert find_texture("data/wood.bmp", str(tmp_path / "sub")) == str(tmp_path / "sub" / "Wood.bmp")
    # ``..`` may not leave the model's folder when no game folder or user root holds it; absolute paths are refused
    assert find_texture("..\\rock.tga", str(tmp_path / "sub")) is None
    assert find_texture(str(tmp_path / "rock.tga"), str(tmp_path / "sub")) is None
    assert find_texture(str(tmp_path / "rock.tga"), model_dir) == str(tmp_path / "rock.tga")  # its base name, here
    assert find_texture("", model_dir) is None and find_texture("missing.jpg", model_dir) is None


def test_samples_textures_are_found():
    dwarf = ms3d_to_scene(read_ms3d(ms3d_sample("akadjoker__H3DView/media/dwarf.ms3d")))
    assert dwarf.materials[0].base_texture.resolved_path.endswith("Textures/dwarf.jpg")
    bones2 = ms3d_to_scene(read_ms3d(ms3d_sample("akadjoker__H3DView/media/bones2.ms3d")))
    assert bones2.materials[0].base_texture.resolved_path.endswith("Textures/Bird_Skin.png")
    nehe = ms3d_to_scene(read_ms3d(ms3d_sample("soulsheng__ms3d-render/Model.ms3d")))
    assert nehe.materials[0].base_texture.resolved_path.endswith("Wood.bmp")  # data/Wood.bmp -> bare name


def test_samples_convert_with_expected_geometry():
    jeep = ms3d_to_scene(read_ms3d(ms3d_sample("assimp__assimp/jeep1.ms3d")))
    assert len(jeep.objects) == 7 and jeep.triangle_count == 2032
    assert jeep.vertex_count == 1190 + 6  # the two reversed duplicate faces keep their own vertices
    rock = ms3d_to_scene(read_ms3d(ms3d_sample("nemox-tut10/rock.ms3d")))
    assert rock.objects[0].mesh.normals is None and len(rock.objects[0].mesh.sharp_edges) > 0
    invalid = ms3d_to_scene(read_ms3d(ms3d_sample("assimp__assimp/InvalidMaterialIndex.ms3d")))
    assert invalid.objects == [] and any("degenerate" in w for w in invalid.warnings)
