"""MilkShape import in real Blender: what an artist would check after File > Import."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import EXAMPLE, datablock_counts, ms3d_sample, sample_files, sample_names, samples_dir
from ms3d_writer import Group, Material, Triangle, box_spec, quad_spec, write_ms3d

pytestmark = pytest.mark.blender


def corner_normals(me) -> np.ndarray:
    out = np.empty(len(me.loops) * 3, np.float32)
    me.corner_normals.foreach_get("vector", out)
    return out.reshape(-1, 3)


def uvs(me) -> np.ndarray:
    out = np.empty(len(me.loops) * 2, np.float32)
    me.uv_layers.active.data.foreach_get("uv", out)
    return out.reshape(-1, 2)


def positions(me) -> np.ndarray:
    out = np.empty(len(me.vertices) * 3, np.float32)
    me.vertices.foreach_get("co", out)
    return out.reshape(-1, 3)


def principled(mat):
    return next(n for n in mat.node_tree.nodes if n.bl_idname == "ShaderNodeBsdfPrincipled")


def write(tmp_path, spec, name="model.ms3d"):
    path = tmp_path / name
    path.write_bytes(write_ms3d(spec))
    return str(path)


def test_example_house(blender):
    bpy = blender
    assert bpy.ops.import_scene.ms3d(filepath=str(EXAMPLE)) == {"FINISHED"}
    coll = bpy.data.collections["house"]
    assert sorted(o.name for o in coll.objects) == ["door", "house", "roof", "walls", "window"]
    rig = bpy.data.objects["house"]
    assert rig.type == "ARMATURE" and [b.name for b in rig.data.bones] == ["house", "door hinge"]
    assert rig.data.bones["door hinge"]["ms3d_comment"].startswith("Turns about")
    assert tuple(rig.data.bones["door hinge"].color.custom.normal) == pytest.approx((0.2, 0.6, 1.0))
    assert [s.name for s in rig.animation_data.nla_tracks[0].strips] == ["Open", "Close"]
    walls = bpy.data.objects["walls"]
    assert (len(walls.data.vertices), len(walls.data.polygons)) == (16, 8)
    assert walls["ms3d_comment"].startswith("Brick walls")
    assert coll["ms3d_model_comment"].startswith("Example house") and coll["ms3d_version"] == 4
    # Blender is Z-up: the roof apex (MilkShape y = 2.4) is the highest point.
    assert positions(bpy.data.objects["roof"].data)[:, 2].max() == pytest.approx(2.4)
    # The door faces MilkShape -Z, which the default axes turn toward Blender's Front view (-Y).
    door = bpy.data.objects["door"].data
    np.testing.assert_allclose(corner_normals(door), [(0, -1, 0)] * 6, atol=1e-5)
    assert positions(door)[:, 1].max() == pytest.approx(-1.01, abs=1e-5)
    # UVs: v = 1 - t, tiling 2 x 1.5 on the walls
    wall_uv = uvs(walls.data)
    assert wall_uv[:, 0].max() == pytest.approx(2.0) and wall_uv[:, 1].min() == pytest.approx(-0.5)
    bricks = walls.data.materials[0]
    tex = next(n for n in bricks.node_tree.nodes if n.bl_idname == "ShaderNodeTexImage")
    assert tex.image.name == "house_bricks.png" and tuple(tex.image.size) == (64, 64)
    assert tex.outputs["Color"].links[0].to_socket.name == "Base Color"
    glass = bpy.data.materials["glass"]
    assert principled(glass).inputs["Alpha"].default_value == pytest.approx(0.35)
    assert glass.diffuse_color[3] == pytest.approx(0.35)
    roof = bpy.data.materials["roof tiles"]
    assert tuple(principled(roof).inputs["Base Color"].default_value)[:3] == pytest.approx((0.45, 0.08, 0.05))
    assert principled(roof).inputs["Roughness"].default_value == pytest.approx((2 / 42) ** 0.25, rel=1e-5)
    assert principled(roof).inputs["Specular IOR Level"].default_value == pytest.approx(0.3)
    # imported objects are selected, one is active
    assert {o.name for o in bpy.data.objects if o.select_get()} == {"door", "house", "roof", "walls", "window"}
    assert bpy.context.view_layer.objects.active == rig


def test_custom_normals_and_sharp_edges_on_a_shared_vertex_box(blender, tmp_path):
    bpy = blender
    bpy.ops.import_scene.ms3d(
        filepath=write(tmp_path, box_spec(), "box.ms3d"), split_groups="SINGLE", axis_forward="Y", axis_up="Z"
    )
    me = bpy.data.objects["box"].data
    assert (len(me.vertices), len(me.polygons)) == (8, 12)
    face_normals = np.repeat(np.array([t.normals[0] for t in box_spec().triangles], np.float32), 3, axis=0)
    np.testing.assert_allclose(corner_normals(me), face_normals, atol=1e-5)
    sharp = np.zeros(len(me.edges), bool)
    me.attributes["sharp_edge"].data.foreach_get("value", sharp)
    assert int(sharp.sum()) == 12 and len(me.edges) == 18  # box edges sharp, face diagonals smooth
    assert [m.name for m in me.materials] == ["blue", "glass"]
    idx = np.empty(12, np.int32)
    me.polygons.foreach_get("material_index", idx)
    assert idx.tolist() == [0] * 6 + [1] * 6


def test_scale_and_axis_options(blender, tmp_path):
    bpy = blender
    path = write(tmp_path, quad_spec())
    bpy.ops.import_scene.ms3d(filepath=path, scale=0.5, axis_forward="-Z", axis_up="Y")
    np.testing.assert_allclose(positions(bpy.data.objects["quad"].data)[2], (0.5, 0, 0.5))  # (x, -z, y) * 0.5


def test_no_stored_normals_and_smoothing_option(blender, tmp_path):
    bpy = blender
    path = write(tmp_path, box_spec(), "box.ms3d")
    bpy.ops.import_scene.ms3d(filepath=path, split_groups="SINGLE", use_normals=False, use_smoothing_groups=False)
    me = bpy.data.objects["box"].data
    assert "sharp_edge" not in me.attributes
    assert not me.has_custom_normals


def test_multi_file_import_and_one_collection_each(blender, tmp_path):
    bpy = blender
    write(tmp_path, quad_spec(), "a.ms3d")
    write(tmp_path, box_spec(), "b.ms3d")
    result = bpy.ops.import_scene.ms3d(directory=str(tmp_path), files=[{"name": "a.ms3d"}, {"name": "b.ms3d"}])
    assert result == {"FINISHED"}
    assert {c.name for c in bpy.data.collections} == {"a", "b"}
    assert sorted(o.name for o in bpy.data.collections["b"].objects) == ["high", "low"]


def test_a_bad_file_in_a_batch_does_not_stop_the_others(blender, tmp_path):
    bpy = blender
    write(tmp_path, quad_spec(), "good.ms3d")
    (tmp_path / "bad.ms3d").write_bytes(b"MS3D000000\x04\0\0\0\x05\0")
    result = bpy.ops.import_scene.ms3d(directory=str(tmp_path), files=[{"name": "bad.ms3d"}, {"name": "good.ms3d"}])
    assert result == {"FINISHED"}
    assert [c.name for c in bpy.data.collections] == ["good"]


@pytest.mark.parametrize(
    "data, message",
    [
        (
            b"PK\x03\x04" + bytes(60),
            r"bad\.ms3d: not a MilkShape 3D file: expected identifier 'MS3D000000'.*byte offset 0",
        ),
        (write_ms3d(quad_spec())[:100], r"bad\.ms3d: file ends inside the triangles block.*byte offset \d+"),
        (write_ms3d(quad_spec(version=7)), r"unsupported MilkShape 3D version 7"),
    ],
)
def test_bad_input_is_one_clear_error_and_changes_nothing(blender, tmp_path, data, message):
    bpy = blender
    bpy.ops.import_scene.ms3d(filepath=str(EXAMPLE))  # something already in the file
    path = tmp_path / "bad.ms3d"
    path.write_bytes(data)
    before = datablock_counts()
    names_before = sorted(bpy.data.objects.keys())
    with pytest.raises(RuntimeError, match=message):
        bpy.ops.import_scene.ms3d(filepath=str(path))
    assert datablock_counts() == before
    assert sorted(bpy.data.objects.keys()) == names_before


@pytest.mark.parametrize("stage", ["material", "mesh", "image"])
def test_a_failure_while_building_removes_everything_the_import_created(blender, tmp_path, monkeypatch, stage):
    bpy = blender
    from io_ms3d_mdl.blender import material as material_module
    from io_ms3d_mdl.blender import scene_builder

    calls = {"n": 0}

    def failing(original):
        def wrapper(*args, **kwargs):
            calls["n"] += 1
            if calls["n"] == 2:
                raise RuntimeError(f"injected failure in {stage}")
            return original(*args, **kwargs)

        return wrapper

    target = {
        "material": (material_module, "_build"),
        "mesh": (scene_builder, "build_mesh"),
        "image": (material_module.ImageLoader, "_load"),
    }[stage]
    monkeypatch.setattr(target[0], target[1], failing(getattr(target[0], target[1])))
    spec = box_spec()
    spec.materials[1].texture = "second.png"
    spec.materials[0].texture = "first.png"
    path = write(tmp_path, spec)
    before = datablock_counts()
    with pytest.raises(RuntimeError, match="injected failure"):
        bpy.ops.import_scene.ms3d(filepath=path)
    assert calls["n"] == 2
    assert datablock_counts() == before


def test_import_from_edit_mode(blender, tmp_path):
    bpy = blender
    bpy.ops.import_scene.ms3d(filepath=write(tmp_path, quad_spec(), "first.ms3d"))
    bpy.context.view_layer.objects.active = bpy.data.objects["quad"]
    bpy.ops.object.mode_set(mode="EDIT")
    assert bpy.ops.import_scene.ms3d(filepath=str(EXAMPLE)) == {"FINISHED"}
    assert bpy.data.objects["quad"].mode == "OBJECT"


def test_missing_and_unreadable_textures_become_placeholders(blender, tmp_path):
    bpy = blender
    spec = quad_spec()
    spec.materials = [Material("a", texture="missing.png"), Material("b", texture="skin.pcx")]
    spec.groups = [Group("one", [0], 0), Group("two", [1], 1)]
    (tmp_path / "skin.pcx").write_bytes(b"\x0a\x05\x01\x08" + bytes(200))
    path = write(tmp_path, spec)
    assert bpy.ops.import_scene.ms3d(filepath=path) == {"FINISHED"}
    missing = bpy.data.images["missing.png"]
    # generated, never a file path: the wanted name is kept as a property, and Blender never reads it
    assert missing["io_ms3d_mdl_missing"] and missing.source == "GENERATED" and missing.filepath == ""
    assert missing["io_ms3d_mdl_wanted"] == "missing.png"
    assert bpy.data.images["skin.pcx"]["io_ms3d_mdl_missing"]


def test_registration(blender):
    bpy = blender
    op = bpy.ops.import_scene.ms3d.get_rna_type()
    assert {"scale", "axis_forward", "axis_up", "split_groups", "use_normals", "files", "directory"} <= {
        p.identifier for p in op.properties
    }
    from io_ms3d_mdl.blender.operators import IMPORT_SCENE_OT_ms3d, menu_import

    assert "PRESET" in IMPORT_SCENE_OT_ms3d.bl_options and "UNDO" in IMPORT_SCENE_OT_ms3d.bl_options
    handler = bpy.types.FileHandler.bl_rna_get_subclass_py("IO_FH_ms3d")
    assert handler.bl_import_operator == "import_scene.ms3d" and handler.bl_file_extensions == ".ms3d"
    assert menu_import in bpy.types.TOPBAR_MT_file_import._dyn_ui_initialize()


# --- every shared sample -----------------------------------------------------------------------------------

SAMPLE_OBJECTS = {  # file: (mesh objects, vertices, faces, materials, images found, bones)
    "assimp__assimp/Wuson.ms3d": (1, 2117, 3732, 0, 0, 0),
    "assimp__assimp/jeep1.ms3d": (7, 1196, 2032, 1, 1, 0),
    "assimp__assimp/twospheres_withmats.ms3d": (2, 124, 240, 2, 0, 0),
    "assimp__assimp/InvalidMaterialIndex.ms3d": (0, 0, 0, 0, 0, 0),
    "soulsheng__ms3d-render/Model.ms3d": (1, 40, 76, 1, 1, 9),
    "akadjoker__H3DView/media/dwarf.ms3d": (3, 1249, 1664, 1, 1, 44),
    "akadjoker__H3DView/media/Bird.ms3d": (1, 142, 250, 1, 1, 12),
    "akadjoker__H3DView/media/bones2.ms3d": (2, 98, 168, 1, 1, 4),
    "akadjoker__H3DView/media/cube.ms3d": (1, 56, 84, 1, 1, 7),
    "nemox-tut10/rock.ms3d": (1, 62, 120, 1, 1, 0),
    "akadjoker__IrrlichtGameObject/gun.ms3d": (1, 273, 486, 1, 0, 0),
    "JuhaLukkari__Simple3DWorld/Model_empty.ms3d": (0, 0, 0, 0, 0, 0),
    "akadjoker__IrrlichtGameObject/morbo/morbo.ms3d": (1, 243, 449, 1, 1, 0),  # coverage/: its PCX skin decoded
}


def test_every_shared_sample_imports_in_blender():
    assert sample_names("ms3d", "*.ms3d") == set(SAMPLE_OBJECTS)


@pytest.mark.parametrize("relative", sorted(SAMPLE_OBJECTS))
def test_shared_samples_import(blender, relative):
    bpy = blender
    path = ms3d_sample(relative)
    assert bpy.ops.import_scene.ms3d(filepath=str(path)) == {"FINISHED"}
    objects = list(bpy.data.collections[path.stem].objects)
    meshes = [o.data for o in objects if o.type == "MESH"]
    images = [i for i in bpy.data.images if i.size[0] > 0 and "io_ms3d_mdl_missing" not in i]
    bones = sum(len(o.data.bones) for o in objects if o.type == "ARMATURE")
    assert (
        len(meshes),
        sum(len(m.vertices) for m in meshes),
        sum(len(m.polygons) for m in meshes),
        len(bpy.data.materials),
        len(images),
        bones,
    ) == SAMPLE_OBJECTS[relative]


def test_sample_materials_and_normals(blender):
    bpy = blender
    samples_dir()
    bpy.ops.import_scene.ms3d(filepath=str(ms3d_sample("assimp__assimp/twospheres_withmats.ms3d")))
    assert principled(bpy.data.materials["Material02"]).inputs["Alpha"].default_value == pytest.approx(0.84)
    bpy.ops.import_scene.ms3d(filepath=str(ms3d_sample("assimp__assimp/jeep1.ms3d")))
    jeep = principled(bpy.data.collections["jeep1"].objects[0].data.materials[0])  # emissive 0.35 x texture, as GL
    (link,) = jeep.inputs["Emission Color"].links
    assert link.from_node.operation == "MULTIPLY"
    assert tuple(link.from_node.inputs[1].default_value) == pytest.approx((0.35, 0.35, 0.35), abs=0.01)
    assert link.from_node.inputs[0].links[0].from_node.image.name == "jeep1.jpg"
    bpy.ops.import_scene.ms3d(filepath=str(ms3d_sample("nemox-tut10/rock.ms3d")))
    rock = bpy.data.collections["rock"].objects[0].data
    assert not rock.has_custom_normals and "sharp_edge" in rock.attributes  # zero normals ignored
    bpy.ops.import_scene.ms3d(filepath=str(ms3d_sample("akadjoker__H3DView/media/dwarf.ms3d")))
    head = bpy.data.objects["head"].data
    assert head.has_custom_normals
    assert bpy.data.collections["dwarf"]["ms3d_model_comment"].startswith("Name=Walk")
    bpy.ops.import_scene.ms3d(filepath=str(ms3d_sample("akadjoker__H3DView/media/dwarf.ms3d")), split_groups="SINGLE")
    single = bpy.data.collections["dwarf.001"].objects
    meshes = [o for o in single if o.type == "MESH"]
    assert len(meshes) == 1 and len(meshes[0].data.polygons) == 1664
    assert meshes[0].parent.type == "ARMATURE" and len(meshes[0].vertex_groups) == 39


def test_built_meshes_are_already_valid(blender, tmp_path):
    """We skip Mesh.validate() for speed; this proves it would find nothing to fix on any sample or corner case."""
    bpy = blender
    spec = quad_spec()
    spec.triangles += [spec.triangles[0], Triangle((2, 1, 0)), Triangle((3, 3, 1))]  # duplicate, back face, degenerate
    spec.groups[0].triangles = [0, 1, 2, 3, 4]
    paths = [write(tmp_path, spec, "corner.ms3d"), write(tmp_path, box_spec(), "box.ms3d")]
    paths += [str(p) for p in sample_files("ms3d", "*.ms3d")]
    for path in paths:
        for mode in ("GROUPS", "SINGLE"):
            bpy.ops.wm.read_factory_settings(use_empty=True)
            bpy.ops.import_scene.ms3d(filepath=path, split_groups=mode)
            for mesh in bpy.data.meshes:
                normals_before = corner_normals(mesh)
                assert mesh.validate(verbose=False, clean_customdata=False) is False, (path, mesh.name)
                np.testing.assert_allclose(corner_normals(mesh), normals_before, atol=1e-6)


@pytest.mark.parametrize("operator", ["IMPORT_SCENE_OT_ms3d", "IMPORT_SCENE_OT_source_mdl"])
def test_options_panel_draws_every_option(blender, operator):
    """The file browser's sidebar: every drawn name is a real operator property, every option is drawn."""
    bpy = blender
    from io_ms3d_mdl.blender import operators

    cls = getattr(operators, operator)
    drawn: list[str] = []

    class Layout:
        use_property_split = use_property_decorate = False

        def panel(self, idname, default_closed=False):
            return self, self

        def label(self, text):
            pass

        def prop(self, owner, name):
            drawn.append(name)

    fake = type("Op", (), {"layout": Layout(), "bl_idname": cls.bl_idname})()
    cls.draw(fake, bpy.context)
    category, name = cls.bl_idname.split(".")
    rna = getattr(getattr(bpy.ops, category), name).get_rna_type()
    props = {p.identifier for p in rna.properties if not p.is_hidden}
    assert set(drawn) == props - {"rna_type", "filepath"}
