"""What a user reads in the outliner: every name a fresh import makes is the one it asked for (no ``.001``)."""

from __future__ import annotations

import re

import numpy as np
import pytest
from conftest import bpy, sample_files

from io_ms3d_mdl.scene.names import NameBook, settle_names
from io_ms3d_mdl.scene.types import BoneData, CollectionData, EmptyData, MeshData, ObjectData, SceneData, SkeletonData

SUFFIX = re.compile(r"\.\d{3}$")
COMPANION = re.compile(r"(T|\d\d)\.mdl$")


def mesh() -> MeshData:
    return MeshData("mesh", np.zeros((3, 3), np.float32), np.array([[0, 1, 2]], np.int32))


def test_repeats_are_told_apart_by_place_or_numbered_once_nothing_else_differs():
    scene = SceneData(
        "metal_box",
        objects=[ObjectData("metal_box", mesh()), ObjectData("flag", mesh())],
        collections=[
            CollectionData("body", children=[CollectionData("body: metal_box")]),
            CollectionData("metal_box"),  # a body part named like its model
        ],
        empties=[
            EmptyData("flag", np.eye(4), collection="attachments"),
            EmptyData("flag", np.eye(4), collection="attachments"),
            EmptyData("eyes", np.eye(4), collection="hitboxes"),
        ],
        skeleton=SkeletonData("metal_box", [BoneData("root", -1, np.eye(4), 1.0)]),
    )
    settle_names(scene)
    assert scene.name == "metal_box"
    assert [c.name for c in scene.collections] == ["body", "metal_box (2)"]
    assert scene.collections[0].children[0].name == "body: metal_box"
    assert [o.name for o in scene.objects] == ["metal_box", "flag"]
    assert [e.name for e in scene.empties] == ["flag (2)", "flag (3)", "eyes"]
    assert [e.collection for e in scene.empties] == ["metal_box attachments"] * 2 + ["metal_box hitboxes"]
    assert scene.skeleton.name == "metal_box armature"  # a mesh asked for the model's name first


def test_names_stay_within_blenders_63_bytes_with_their_number():
    book = NameBook()
    long = "é" * 40  # 80 bytes of UTF-8
    first, second = book.take(long), book.take(long)
    assert len(first.encode()) <= 63 and len(second.encode()) <= 63 and second.endswith(" (2)")
    assert first != second and book.take("") == "object" and book.take("  ") == "object (2)"


def test_many_repeats_of_one_name_stay_linear():
    book = NameBook()
    names = [book.take("x") for _ in range(20_000)]
    assert len(set(names)) == 20_000 and names[-1] == "x (20000)"


@pytest.mark.blender
@pytest.mark.parametrize("kind, pattern", [("source", "*.mdl"), ("ms3d", "*.ms3d"), ("goldsrc", "*.mdl")])
def test_a_fresh_import_of_every_sample_needs_no_suffix(blender, kind, pattern):
    """Every object, collection, mesh, material, armature and action of a fresh import has the name it asked for
    (the outliner of the GUI tour showed ``metal_box › body › metal_box.001`` and ``metal_box_phys_physics``)."""
    files = sample_files(kind, pattern)
    if kind == "goldsrc":  # its companions (T.mdl, 01.mdl…) are read through their model
        files = [f for f in files if not COMPANION.search(f.name)]
    assert files
    operator = bpy.ops.import_scene.ms3d if kind == "ms3d" else bpy.ops.import_scene.source_mdl
    for path in files:
        bpy.ops.wm.read_factory_settings(use_empty=True)
        operator(filepath=str(path))
        kinds = ("objects", "collections", "meshes", "materials", "armatures", "actions")
        suffixed = [(k, d.name) for k in kinds for d in getattr(bpy.data, k) if SUFFIX.search(d.name)]
        assert not suffixed, f"{path.name}: {suffixed}"
        assert not [o.name for o in bpy.data.objects if o.name.endswith("_physics")]


@pytest.mark.blender
def test_the_option_collections_say_their_body_part(blender):
    from conftest import sample_path

    bpy.ops.import_scene.source_mdl(
        filepath=str(sample_path("source", "Igrium__portal_nrtx/models/props/metal_box.mdl"))
    )
    model = bpy.data.collections["metal_box"]
    body = next(c for c in model.children if c.children)
    assert [c.name for c in body.children] == [f"{body.name}: metal_box"]
    physics = bpy.data.collections["metal_box physics"]
    assert [o.name for o in physics.objects] == ["metal_box_phys"]
