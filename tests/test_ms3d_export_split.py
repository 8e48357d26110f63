"""A MilkShape export past the format's limits, split where the user asked for it (``split=True``): synthetic
scenes over the vertex, triangle, group and material limits, and one group too big for a file. Every part is a
whole MilkShape file within every limit (written and read back), the parts' triangles together are the scene's
(corners' positions, normals, UVs and weights, material, group; each once, in any order), and every part has
the whole skeleton with every key. Without the option the scene is refused as before. No Blender."""

from __future__ import annotations

import os

import numpy as np
import pytest

from io_ms3d_mdl.filesystem.replace_file import WriteRefused, replace_files
from io_ms3d_mdl.formats.ms3d.reader import read_ms3d_bytes
from io_ms3d_mdl.formats.ms3d.writer import write_ms3d_bytes
from io_ms3d_mdl.scene.ms3d.export import (
    ExportError,
    Ms3dExportOptions,
    scene_to_ms3d,
    scene_to_ms3d_parts,
    wide_model,
)
from io_ms3d_mdl.scene.ms3d.limits import MAX_GROUPS, MAX_MATERIALS, MAX_TRIANGLES, MAX_VERTICES
from io_ms3d_mdl.scene.ms3d.split import WideModel, part_path
from io_ms3d_mdl.scene.types import (
    ActionData,
    BoneChannels,
    BoneData,
    MaterialData,
    MeshData,
    ObjectData,
    SceneData,
    SkeletonData,
    SkinData,
)

SPLIT = Ms3dExportOptions(split=True)
BONES = 3


def _skeleton() -> SkeletonData:
    bones = []
    for i in range(BONES):
        matrix = np.eye(4)
        matrix[:3, 3] = (0.0, 0.0, float(i))
        bones.append(BoneData(f"Bone{i}", i - 1, matrix, 1.0))
    return SkeletonData("Rig", bones)


def _action() -> ActionData:
    frames = np.array([1.0, 5.0, 9.0])
    angles = np.array([0.0, 0.4, -0.3])
    quats = np.stack([np.cos(angles / 2), np.sin(angles / 2), np.zeros(3), np.zeros(3)], axis=1)
    channels = [BoneChannels(b, frames, quats, frames, np.outer(angles, (0.1, 0.0, 0.2))) for b in range(BONES)]
    return ActionData("Wave", channels, (1.0, 9.0))


def _object(name, positions, triangles, rng, slots=None, materials=None) -> ObjectData:
    """A mesh with random normals and UVs per corner, two random influences per vertex, and ``slots`` (T,) into
    ``materials`` (scene material indices)."""
    nt, nv = len(triangles), len(positions)
    normals = rng.normal(size=(nt * 3, 3)).astype(np.float32)
    normals /= np.linalg.norm(normals, axis=1, keepdims=True)
    mesh = MeshData(
        name,
        positions.astype(np.float32),
        triangles.astype(np.int32),
        uvs=rng.random((nt * 3, 2), dtype=np.float32),
        normals=normals,
        material_indices=None if slots is None else slots.astype(np.int32),
        materials=list(materials or []),
    )
    ids = np.full((nv, 4), -1, dtype=np.int32)
    ids[:, 0] = rng.integers(0, BONES, nv)
    ids[:, 1] = (ids[:, 0] + 1) % BONES
    weights = np.zeros((nv, 4), dtype=np.float32)
    weights[:, 0] = rng.random(nv, dtype=np.float32) * 0.5 + 0.5
    weights[:, 1] = 1.0 - weights[:, 0]
    return ObjectData(name, mesh, skin=SkinData(ids, weights))


def _grid(n: int, offset: float = 0.0) -> tuple[np.ndarray, np.ndarray]:
    """n × n vertices sharing their 2 (n - 1)² triangles, two a square, square by square along the rows."""
    y, x = np.mgrid[0:n, 0:n]
    positions = np.stack([x.ravel(), y.ravel(), np.full(n * n, offset)], axis=1).astype(np.float64)
    c = (y[:-1, :-1] * n + x[:-1, :-1]).ravel()
    triangles = np.stack([c, c + 1, c + n + 1, c, c + n + 1, c + n], axis=1).reshape(-1, 3)
    return positions, triangles


def _soup(count: int, rng) -> tuple[np.ndarray, np.ndarray]:
    """``count`` triangles with three vertices of their own each."""
    return rng.random((3 * count, 3)) * 10.0, np.arange(3 * count).reshape(-1, 3)


def _scene(objects, materials=()) -> SceneData:
    return SceneData(
        "big", objects=list(objects), materials=list(materials), skeleton=_skeleton(), actions=[_action()], fps=24.0
    )


def _materials(count: int) -> list[MaterialData]:
    return [MaterialData(f"M{i}", (i / count, 0.5, 0.5)) for i in range(count)]


# --- what a triangle carries, as numbers: compared as a multiset -------------------------------------------------


def _triangle_rows(model, indices, group_of) -> tuple[np.ndarray, np.ndarray]:
    """Per triangle: (T, K) int64 numbers (its corners' positions, normals, s, t as float32 bits, their joints
    and weights, its smoothing group) and (T, 2) names (its group's and its material's)."""
    tris = model.triangles
    corners = np.asarray(indices, dtype=np.int64)
    floats = np.concatenate(
        [
            model.vertices["position"][corners].reshape(len(tris), -1),
            tris["normals"].reshape(len(tris), -1),
            tris["s"],
            tris["t"],
        ],
        axis=1,
    ).astype(np.float32)
    extra = model.vertex_extra
    joints = np.concatenate(
        [
            model.vertices["bone_id"][corners],
            extra.bone_ids[corners].reshape(len(tris), -1),
            extra.weights[corners].reshape(len(tris), -1),
        ],
        axis=1,
    ).astype(np.int64)
    group_names = np.array([g.name for g in model.groups])
    material_names = np.array(
        [model.materials[g.material_index].name if g.material_index >= 0 else "" for g in model.groups]
    )
    group_of = np.asarray(group_of, dtype=np.int64)
    names = np.stack([group_names[group_of], material_names[group_of]], axis=1)
    return np.concatenate(
        [floats.view(np.uint32).astype(np.int64), joints, tris["smoothing_group"][:, None].astype(np.int64)], axis=1
    ), names


def _sorted_rows(numbers: np.ndarray, names: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Both in one order that depends on the rows alone (so two lists of the same triangles come out equal)."""
    _, name_codes = np.unique(names, return_inverse=True)
    keys = np.concatenate([numbers, name_codes.reshape(names.shape)], axis=1)
    order = np.lexsort(keys.T[::-1])
    return keys[order], names[order]


def _wide_rows(wide: WideModel):
    model = wide.model
    group_of = np.empty(len(model.triangles), dtype=np.int64)
    for gi, group in enumerate(model.groups):
        group_of[group.triangle_indices] = gi
    return _triangle_rows(model, wide.indices, group_of)


def _part_rows(part):
    return _triangle_rows(part, part.triangles["indices"], part.triangles["group_index"])


def _written(models):
    """Each part written as a file and read back: what a reader of that file gets."""
    return [read_ms3d_bytes(write_ms3d_bytes(m)) for m in models]


def _check_split(scene: SceneData, options: Ms3dExportOptions = SPLIT) -> list:
    """The parts of ``scene``'s split export after checking everything the split promises; returns them."""
    whole = wide_model(scene, options)
    parts = _written(scene_to_ms3d_parts(scene, options))
    assert len(parts) > 1
    for part in parts:
        assert len(part.vertices) <= MAX_VERTICES and len(part.triangles) <= MAX_TRIANGLES
        assert len(part.groups) <= MAX_GROUPS and len(part.materials) <= MAX_MATERIALS
        # Each triangle in exactly one group, the group its record names; every material used by a group.
        in_group = np.concatenate([g.triangle_indices for g in part.groups]).astype(np.int64)
        assert np.array_equal(np.sort(in_group), np.arange(len(part.triangles)))
        for gi, group in enumerate(part.groups):
            assert (part.triangles["group_index"][group.triangle_indices] == gi).all()
        assert sorted({g.material_index for g in part.groups} - {-1}) == list(range(len(part.materials)))
        # Every vertex used, and its reference count is this part's.
        counts = np.bincount(part.triangles["indices"].ravel().astype(np.int64), minlength=len(part.vertices))
        assert (counts > 0).all()
        assert np.array_equal(part.vertices["ref_count"], np.minimum(counts, 255))
        _assert_same_joints(part.joints, whole.model.joints)
        assert part.model_comment == whole.model.model_comment and part.fps == whole.model.fps
    # The parts' triangles together are the scene's, each once.
    numbers, names = zip(*(_part_rows(p) for p in parts), strict=True)
    got = _sorted_rows(np.concatenate(numbers), np.concatenate(names))
    expected = _sorted_rows(*_wide_rows(whole))
    assert len(got[0]) == len(whole.model.triangles)
    assert np.array_equal(got[0], expected[0]) and np.array_equal(got[1], expected[1])
    return parts


def _assert_same_joints(joints, expected) -> None:
    assert [(j.name, j.parent_name) for j in joints] == [(j.name, j.parent_name) for j in expected]
    for a, b in zip(joints, expected, strict=True):
        assert np.array_equal(a.rotation, b.rotation) and np.array_equal(a.position, b.position)
        assert np.array_equal(a.rotation_keys, b.rotation_keys) and np.array_equal(a.position_keys, b.position_keys)
        assert len(a.rotation_keys) == 3


# --- the split -----------------------------------------------------------------------------------------------------


def test_over_the_vertex_limit_is_refused_without_the_option_and_split_with_it():
    rng = np.random.default_rng(1)
    objects = [_object(f"Soup{i}", *_soup(8_000, rng), rng) for i in range(3)]  # 72,000 vertices, 24,000 triangles
    scene = _scene(objects)
    with pytest.raises(ExportError, match="the scene has 72,000 vertices; MilkShape 3D holds at most 65,534 vertices"):
        scene_to_ms3d_parts(scene)
    parts = _check_split(scene)
    assert [[g.name for g in p.groups] for p in parts] == [["Soup0", "Soup1"], ["Soup2"]]  # whole groups, in order


def test_over_the_triangle_limit():
    rng = np.random.default_rng(2)
    objects = [_object(f"Grid{i}", *_grid(150, i), rng) for i in range(2)]  # 45,000 vertices, 88,804 triangles
    scene = _scene(objects)
    with pytest.raises(ExportError, match="88,804 triangles; MilkShape 3D holds at most 65,534 triangles"):
        scene_to_ms3d(scene, SPLIT)  # (one file: the option does not apply)
    parts = _check_split(scene)
    assert [len(p.triangles) for p in parts] == [2 * 149 * 149] * 2  # one grid a part: both would pass 65,534


def test_over_255_groups():
    rng = np.random.default_rng(3)
    objects = [_object(f"G{i}", *_grid(3, i), rng) for i in range(600)]
    scene = _scene(objects)
    with pytest.raises(ExportError, match="600 groups; MilkShape 3D holds at most 255 groups"):
        scene_to_ms3d_parts(scene)
    parts = _check_split(scene)
    assert [len(p.groups) for p in parts] == [255, 255, 90]
    assert [g.name for p in parts for g in p.groups] == [f"G{i}" for i in range(600)]


def test_over_128_materials_each_part_has_the_materials_it_uses():
    rng = np.random.default_rng(4)
    positions, triangles = _grid(21, 0)  # 800 triangles
    slots = np.arange(len(triangles)) % 300
    scene = _scene([_object("Patchwork", positions, triangles, rng, slots, range(300))], _materials(300))
    with pytest.raises(ExportError, match="300 materials; MilkShape 3D holds at most 128 materials"):
        scene_to_ms3d_parts(scene)
    parts = _check_split(scene)
    assert [len(p.materials) for p in parts] == [128, 128, 44]
    assert [m.name for p in parts for m in p.materials] == [f"M{i}" for i in range(300)]


def test_groups_per_material_over_128_materials():
    rng = np.random.default_rng(5)
    objects = [_object(f"O{i}", *_grid(4, i), rng, np.arange(18) % 2 + i, range(200)) for i in range(199)]
    options = Ms3dExportOptions(groups="MATERIAL", split=True)
    parts = _check_split(_scene(objects, _materials(200)), options)
    assert [len(p.groups) for p in parts] == [128, 72]


def test_one_group_past_the_limits_is_cut_along_triangles_with_its_vertices_copied():
    rng = np.random.default_rng(6)
    positions, triangles = _grid(300, 0)  # 90,000 vertices, 178,802 triangles in one group
    small = _object("Small", *_grid(3, 1.0), rng)
    scene = _scene([_object("Huge", positions, triangles, rng), small])
    parts = _check_split(scene)
    assert [[g.name for g in p.groups] for p in parts] == [["Huge"], ["Huge"], ["Huge", "Small"]]
    assert [len(p.triangles) for p in parts] == [MAX_TRIANGLES, MAX_TRIANGLES, 178_802 - 2 * MAX_TRIANGLES + 8]
    assert sum(len(p.vertices) for p in parts) > 90_000 + 9  # the rows where the cuts fall are in two parts


def test_a_group_cut_on_its_vertices():
    rng = np.random.default_rng(7)
    scene = _scene([_object("Soup", *_soup(50_000, rng), rng)])  # 150,000 vertices
    parts = _check_split(scene)
    assert [len(p.vertices) for p in parts] == [65_532, 65_532, 150_000 - 2 * 65_532]


def test_a_scene_within_the_limits_is_one_file_as_without_the_option():
    rng = np.random.default_rng(8)
    scene = _scene([_object("A", *_grid(20, 0), rng, np.arange(722) % 3, [0, 1, 2])], _materials(3))
    alone = scene_to_ms3d_parts(scene, SPLIT)
    assert len(alone) == 1
    assert write_ms3d_bytes(alone[0]) == write_ms3d_bytes(scene_to_ms3d(scene))


def test_past_128_joints_is_refused_even_with_the_option():
    rng = np.random.default_rng(9)
    scene = _scene([_object("Soup", *_soup(30_000, rng), rng)])
    bones = [BoneData(f"J{i}", i - 1, np.eye(4), 1.0) for i in range(129)]
    scene.skeleton = SkeletonData("Rig", bones)
    with pytest.raises(ExportError, match="129 joints; MilkShape 3D holds at most 128 joints"):
        scene_to_ms3d_parts(scene, SPLIT)


def test_part_names():
    assert [part_path(os.path.join("out", "big.ms3d"), n) for n in (1, 2, 10)] == [
        os.path.join("out", "big.ms3d"),
        os.path.join("out", "big_2.ms3d"),
        os.path.join("out", "big_10.ms3d"),
    ]


# --- writing a set of files: all or none ---------------------------------------------------------------------------


def test_files_are_written_together(tmp_path):
    first, second = tmp_path / "a.ms3d", tmp_path / "a_2.ms3d"
    first.write_bytes(b"old")
    replace_files([(first, b"one"), (second, b"two")], replaceable=[first])
    assert (first.read_bytes(), second.read_bytes()) == (b"one", b"two")
    assert sorted(os.listdir(tmp_path)) == ["a.ms3d", "a_2.ms3d"]


def test_a_file_not_asked_for_is_never_replaced_and_nothing_is_written(tmp_path):
    first, second = tmp_path / "a.ms3d", tmp_path / "a_2.ms3d"
    second.write_bytes(b"mine")
    with pytest.raises(WriteRefused, match=r"a_2\.ms3d exists and the export was not asked to replace it"):
        replace_files([(first, b"one"), (second, b"two")], replaceable=[first])
    assert second.read_bytes() == b"mine"
    assert sorted(os.listdir(tmp_path)) == ["a_2.ms3d"]


@pytest.mark.skipif(not hasattr(os, "symlink"), reason="no symbolic links here")
def test_a_link_among_the_parts_is_refused_before_anything_is_written(tmp_path):
    (tmp_path / "elsewhere").write_bytes(b"keep")
    (tmp_path / "a_2.ms3d").symlink_to(tmp_path / "elsewhere")
    with pytest.raises(WriteRefused, match="is a link"):
        replace_files([(tmp_path / "a.ms3d", b"one"), (tmp_path / "a_2.ms3d", b"two")], replaceable=[])
    assert sorted(os.listdir(tmp_path)) == ["a_2.ms3d", "elsewhere"]


def test_a_failure_while_placing_puts_everything_back(tmp_path, monkeypatch):
    from io_ms3d_mdl.filesystem import replace_file as module

    first, second, third = tmp_path / "a.ms3d", tmp_path / "a_2.ms3d", tmp_path / "a_3.ms3d"
    first.write_bytes(b"old")
    placed = module._place_new

    def fail_on_the_third(partial, target):
        if target.endswith("a_3.ms3d"):
            raise OSError(28, "No space left on device")
        placed(partial, target)

    monkeypatch.setattr(module, "_place_new", fail_on_the_third)
    with pytest.raises(OSError, match="No space left"):
        replace_files([(first, b"one"), (second, b"two"), (third, b"three")], replaceable=[first])
    assert first.read_bytes() == b"old"
    assert sorted(os.listdir(tmp_path)) == ["a.ms3d"]  # no part, no temporary file, no kept copy


# --- convert MODEL -o OUT.ms3d --split -------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def one_vertex_too_many(tmp_path_factory):
    """A MilkShape file with 65,535 vertices (its count field holds them; MilkShape's limit is 65,534): 21,845
    triangles of their own three vertices each, with a skeleton and keys."""
    from io_ms3d_mdl.scene.ms3d.split import narrow

    rng = np.random.default_rng(10)
    scene = _scene([_object("Soup", *_soup(21_845, rng), rng)])
    path = tmp_path_factory.mktemp("big") / "big.ms3d"
    path.write_bytes(write_ms3d_bytes(narrow(wide_model(scene))))
    return path


def _cli(*args) -> int:
    from io_ms3d_mdl.cli import main

    return main(["convert", *map(str, args)])


def test_convert_refuses_past_the_limit_without_split(one_vertex_too_many, tmp_path, capsys):
    assert _cli(one_vertex_too_many, "-o", tmp_path / "out.ms3d") == 1
    assert "65,535 vertices; MilkShape 3D holds at most 65,534 vertices" in capsys.readouterr().err
    assert os.listdir(tmp_path) == []


def test_convert_split_writes_the_parts(one_vertex_too_many, tmp_path, capsys):
    from io_ms3d_mdl.formats.ms3d.reader import read_ms3d

    assert _cli(one_vertex_too_many, "-o", tmp_path / "out.ms3d", "--split") == 0
    out = capsys.readouterr().out
    assert sorted(os.listdir(tmp_path)) == ["out.ms3d", "out_2.ms3d"]
    assert f"saved {tmp_path / 'out.ms3d'}: 65,532 vertices, 21,844 triangles" in out
    assert f"saved {tmp_path / 'out_2.ms3d'}: 3 vertices, 1 triangles" in out
    parts = [read_ms3d(tmp_path / name) for name in ("out.ms3d", "out_2.ms3d")]
    assert [len(p.joints) for p in parts] == [BONES, BONES]
    assert sum(len(p.triangles) for p in parts) == 21_845


def test_convert_split_never_replaces_a_part_unasked(one_vertex_too_many, tmp_path, capsys):
    second = tmp_path / "out_2.ms3d"
    second.write_bytes(b"mine")
    assert _cli(one_vertex_too_many, "-o", tmp_path / "out.ms3d", "--split") == 1
    assert f"output exists: {second} (use --overwrite)" in capsys.readouterr().err
    assert second.read_bytes() == b"mine" and sorted(os.listdir(tmp_path)) == ["out_2.ms3d"]
    assert _cli(one_vertex_too_many, "-o", tmp_path / "out.ms3d", "--split", "--overwrite") == 0
    assert len(read_ms3d_bytes(second.read_bytes()).triangles) == 1


def test_split_is_for_ms3d_outputs(one_vertex_too_many, tmp_path, capsys):
    assert _cli(one_vertex_too_many, "-o", tmp_path / "out.blend", "--split") == 2
    assert "--split applies to -o OUT.ms3d" in capsys.readouterr().err
