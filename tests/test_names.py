"""Property names a file chooses fit Blender's 63 bytes and stay unique, with the file's names kept (names.py)."""

from __future__ import annotations

from io_ms3d_mdl.scene.names import PROPERTY_NAMES, fit_property_names, fit_props
from io_ms3d_mdl.scene.types import CollectionData, MeshData, ObjectData, SceneData


def test_long_names_are_cut_on_a_character_boundary_and_numbered():
    wide = "界" * 25  # 75 bytes
    props = {"source_a": 1, wide: 2, wide + "b": 3, "x\0y": 4, "k" * 64: 5}
    fit_props(props)
    renamed = {e["source_name"]: e["name"] for e in props[PROPERTY_NAMES]}
    assert set(renamed) == {wide, wide + "b", "x\0y", "k" * 64}
    assert all(len(k.encode()) <= 63 and "\0" not in k for k in props)
    assert len(set(renamed.values())) == 4 and props["source_a"] == 1
    assert [props[renamed[n]] for n in (wide, wide + "b", "x\0y", "k" * 64)] == [2, 3, 4, 5]
    assert renamed[wide] == "界" * 21  # 63 bytes exactly, no half character


def test_short_names_are_left_alone_everywhere_in_a_scene():
    mesh = MeshData("m", positions=None, triangles=None)  # type: ignore[arg-type]
    scene = SceneData("s", objects=[ObjectData("o", mesh, props={"a": 1})])
    scene.collections = [CollectionData("c", children=[CollectionData("d", props={"é" * 40: 1})])]
    fit_property_names(scene)
    assert scene.objects[0].props == {"a": 1}
    inner = scene.collections[0].children[0].props
    assert inner[PROPERTY_NAMES] == [{"name": "é" * 31, "source_name": "é" * 40}] and inner["é" * 31] == 1
