"""Decompiling Bloodlines models (MDL 2531): every shared 2531 sample, and a handful from a local fetch of the
Unofficial Patch's repository (skipped, saying so, when it is absent), back to a QC studiomdl's grammar accepts,
reference SMDs holding exactly the meshes our import builds, animation SMDs whose first frame matches the
independent decoder of ``bloodlines_reference``, and a physics SMD; a model without VTX keeps its skeleton and
animations, with a warning."""

from __future__ import annotations

import re
import shlex
import subprocess
from pathlib import Path

import bloodlines_reference as ref
import numpy as np
import pytest
import qc_grammar
import smd_reader
from conftest import samples_dir
from smd_strict import corner_arrays, qc_commands, read_smd
from test_source_bloodlines import FETCHED, SHARED, fetched, mirror, shared_model  # noqa: F401 (fetched: a fixture)

import io_ms3d_mdl
from io_ms3d_mdl.decompile import DecompileOptions
from io_ms3d_mdl.formats.source import read_mdl
from io_ms3d_mdl.scene.load import load_source
from io_ms3d_mdl.scene.rotations import quaternion_to_matrix
from io_ms3d_mdl.scene.source.convert import SourceOptions

NON_FINITE = re.compile(rb"(?<![A-Za-z_])(nan|inf)(?![A-Za-z_])", re.IGNORECASE)
NO_VTX = "character/npc/common/doppleganger/doppleganger_female.mdl"


def shared_or_skip(relative: str) -> Path:
    path = shared_model(relative)
    if not path.is_file():
        pytest.skip(f"the shared Bloodlines samples are absent ({samples_dir()}/vtmb)")
    return path


def decompiled(path: Path, out: Path, **options) -> io_ms3d_mdl.decompile.DecompileResult:
    return io_ms3d_mdl.decompile(str(path), str(out), DecompileOptions(**options))


def check_output(result, out: Path) -> str:
    """Every file fresh, named by the QC, free of nan/inf and read by both strict SMD readers; returns the QC."""
    assert result.engine == "source" and result.version == 2531 and result.qc
    files = {f: (out / f).read_bytes() for f in result.files}
    assert sorted(files) == sorted(p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_file())
    qc = files[result.qc].decode("utf-8")
    assert qc_commands(qc)[0][0] == "$modelname"
    qc_grammar.check_file(out / result.qc)  # known commands, arity, every named file there
    for relative, data in files.items():
        assert not NON_FINITE.search(data.replace(b"notsolid", b"")), relative
        if relative.endswith(".smd"):
            smd = read_smd(data)
            assert smd.names and smd.frames, relative
            smd_reader.parse(data, relative)
    return qc


@pytest.mark.parametrize("relative", SHARED)
def test_every_shared_bloodlines_model_decompiles(tmp_path, relative):
    path = shared_or_skip(relative)
    result = decompiled(path, tmp_path)
    qc = check_output(result, tmp_path)
    mdl = read_mdl(path)
    sequences = [c for c in qc_commands(qc) if c[0] == "$sequence"]
    assert len(sequences) == len(mdl.sequences)
    assert len([f for f in result.files if f.startswith("anims/")]) == len(mdl.animations)


@pytest.mark.parametrize("relative", FETCHED)
def test_fetched_bloodlines_models_decompile(tmp_path, fetched, relative):  # noqa: F811
    result = decompiled(fetched / relative, tmp_path)
    check_output(result, tmp_path)
    check_references(fetched / relative, tmp_path)


def scene_meshes(path: Path) -> dict[tuple[int, int], object]:
    scene = load_source(str(path), SourceOptions(scale=1.0, armature_for_static_props=True, find_materials=False))
    return {
        (o.props["source_bodypart"], o.props["source_option"]): o
        for o in scene.objects
        if "source_bodypart" in o.props and not o.collision and o.props.get("source_lod", 0) == 0
    }


def rows(positions, normals, uvs) -> np.ndarray:
    """Corners as float32 rows, sorted (order-free): an SMD's numbers read back as the very float32 written."""
    out = np.concatenate(
        [np.asarray(a, dtype=np.float32).reshape(len(positions), -1) for a in (positions, normals, uvs)], axis=1
    )
    out = out + np.float32(0)
    return out[np.lexsort(out.T[::-1])]


def face_normals(corners: np.ndarray) -> np.ndarray:
    n = np.cross(corners[:, 1] - corners[:, 0], corners[:, 2] - corners[:, 0])
    length = np.linalg.norm(n, axis=1, keepdims=True)
    n = np.divide(n, length, out=np.zeros_like(n), where=length > 0)
    return np.repeat(n[:, None], 3, axis=1).reshape(-1, 3)


def check_references(path: Path, out: Path) -> int:
    """Each body-part option's reference SMD (level of detail 0) holds the import's mesh: the same corners
    (positions, normals, UVs; a static prop turned back as studiomdl turned it; a face's own normal where the model
    stores none) and the same bone weights. Returns the triangles compared."""
    mdl = read_mdl(path)
    qc = (out / next(out.glob("*.qc")).name).read_text("utf-8")
    commands = qc_commands(qc)
    pairs = [zip(c[3:-1:2], c[4:-1:2], strict=False) for c in commands if c[0] == "$bodygroup"]
    studio = [f for options in pairs for w, f in options if w == "studio"]
    studio += [c[2] for c in commands if c[0] == "$model"]
    turn = mdl.is_static_prop and len(mdl.bones) == 1
    meshes = scene_meshes(path)
    assert len(studio) == len(meshes)
    triangles = 0
    for (b, m), obj in meshes.items():
        name = Path(mdl.body_parts[b].models[m].name.replace("\\", "/")).stem
        assert f"{name}.smd" in studio
        smd = read_smd((out / f"{name}.smd").read_bytes())
        ours = corner_arrays(smd)
        tris = obj.mesh.triangles
        corners = obj.mesh.positions[tris].astype(np.float64)
        if obj.mesh.vertex_normals is not None:
            normals = obj.mesh.vertex_normals[tris].reshape(-1, 3).astype(np.float64)
        else:
            normals = face_normals(corners)
        positions = corners.reshape(-1, 3)
        if turn:
            positions = positions[:, [1, 0, 2]] * [1, -1, 1]
            normals = normals[:, [1, 0, 2]] * [1, -1, 1]
        expected, got = rows(positions, normals, obj.mesh.uvs), rows(ours["positions"], ours["normals"], ours["uvs"])
        assert expected.shape == got.shape
        assert (expected == got).all()
        links = [sorted((bone, float(np.float32(w))) for bone, w in c[4]) for c in smd.corners]
        ids, weights = (
            obj.skin.bone_indices[tris].reshape(len(links), -1),
            obj.skin.weights[tris].reshape(len(links), -1),
        )
        want = [sorted((int(i), float(w)) for i, w in zip(r, ws, strict=True) if i >= 0 and w > 0)
                for r, ws in zip(ids, weights, strict=True)]  # fmt: skip
        assert sorted(map(tuple, links)) == sorted(map(tuple, want))
        triangles += len(tris)
    return triangles


@pytest.mark.parametrize("relative", [r for r in SHARED if r != NO_VTX])
def test_reference_smds_hold_the_imported_meshes(tmp_path, relative):
    path = shared_or_skip(relative)
    decompiled(path, tmp_path, animations=False)
    assert check_references(path, tmp_path) > 0


def euler_matrix(angles: np.ndarray) -> np.ndarray:
    """An SMD's (x, y, z) radians → rotation matrices (Z · Y · X, as studiomdl composes them)."""
    x, y, z = (angles[:, i] for i in range(3))
    cx, sx, cy, sy, cz, sz = np.cos(x), np.sin(x), np.cos(y), np.sin(y), np.cos(z), np.sin(z)
    return np.stack(
        [
            np.stack([cy * cz, sx * sy * cz - cx * sz, cx * sy * cz + sx * sz], -1),
            np.stack([cy * sz, sx * sy * sz + cx * cz, cx * sy * sz - sx * cz], -1),
            np.stack([-sy, sx * cy, cx * cy], -1),
        ],
        -2,
    )


def test_animation_smds_start_where_the_reference_decoder_does(tmp_path):
    """Frame 0 of each of swat3's animations, every non-root bone, against the test's own decoder (the root is
    turned back by the quarter studiomdl gives every animation, checked in the next test)."""
    path = shared_or_skip("character/npc/common/swat/swat3.mdl")
    data = path.read_bytes()
    mdl = read_mdl(path)
    result = decompiled(path, tmp_path, lods=False)
    parents = mdl.bones["parent"]
    children = parents >= 0
    for index, desc in enumerate(mdl.animations):
        smd = read_smd((tmp_path / f"anims/{desc.name.lstrip('@')}.smd").read_bytes())
        assert len(smd.frames) == desc.num_frames and smd.names == mdl.bone_names
        frame = np.array([smd.frames[0][b] for b in range(len(mdl.bones))])
        positions, rotations = ref.first_frame(data, index)
        np.testing.assert_allclose(frame[children, :3], positions[children], atol=1e-4)
        want = quaternion_to_matrix(rotations[:, [3, 0, 1, 2]] / np.linalg.norm(rotations, axis=1, keepdims=True))
        np.testing.assert_allclose(euler_matrix(frame[:, 3:])[children], want[children], atol=1e-4)
    assert result.qc


def test_the_root_comes_back_in_the_reference_frame(tmp_path):
    """studiomdl turns every animation's root a quarter about Z; the decompiled frame 0 of the character's ragdoll
    pose is turned back, so its root rests about where the reference skeleton puts it (upright, same height)."""
    path = shared_or_skip("character/npc/common/citizen/female3/female_citizen_3.mdl")
    mdl = read_mdl(path)
    decompiled(path, tmp_path, lods=False, physics=False)
    smd = read_smd((tmp_path / "anims/ragdoll.smd").read_bytes())
    root = int(np.flatnonzero(mdl.bones["parent"] < 0)[0])
    got = euler_matrix(np.array([smd.frames[0][root][3:]]))[0]
    rest = quaternion_to_matrix(mdl.bones["quat"][[root]].astype(np.float64)[:, [3, 0, 1, 2]])[0]
    assert float(np.abs(got - rest).max()) < 0.3  # the same orientation up to the ragdoll's own lean


def test_a_model_without_vtx_writes_its_skeleton_and_animations_with_a_warning(tmp_path):
    path = shared_or_skip(NO_VTX)
    mdl = read_mdl(path)
    result = decompiled(path, tmp_path)
    qc = check_output(result, tmp_path)
    assert any(".vtx" in w for w in result.warnings)
    bodies = [c for c in qc_commands(qc) if c[0] in ("$bodygroup", "$model", "$body")]
    assert bodies == [["$bodygroup", "girl", "{", "blank", "}"]]  # the body part kept, without its geometry
    written = sorted(f for f in result.files if f.startswith("anims/"))
    assert len(written) == len(mdl.animations) == 2
    smd = read_smd((tmp_path / written[0]).read_bytes())
    assert smd.names == mdl.bone_names and not smd.corners


def test_the_qc_keeps_what_bloodlines_stores(tmp_path):
    """Surface property, included animations, IK chains, pose parameters, ragdoll joints; no $eyeposition (the
    2531 header's first vector is not one) and no flag command from bits this version does not share."""
    path = shared_or_skip("character/npc/common/citizen/female3/female_citizen_3.mdl")
    result = decompiled(path, tmp_path, animations=False, lods=False)
    commands = qc_commands((tmp_path / result.qc).read_text("utf-8"))
    by = {}
    for c in commands:
        by.setdefault(c[0], []).append(c)
    assert by["$surfaceprop"] == [["$surfaceprop", "flesh"]]
    assert by["$includemodel"] == [["$includemodel", "models/character/shared/female/npc_allsequences.mdl"]]
    assert [c[1] for c in by["$ikchain"]] == ["rhand", "lhand", "rfoot", "lfoot"]
    assert [c[1] for c in by["$poseparameter"]] == ["move_yaw", "hit_yaw"]
    assert "$collisionjoints" in by and "$eyeposition" not in by
    assert not {"$opaque", "$mostlyopaque", "$obsolete", "$noforcedfade"} & set(by)
    assert by["$contents"] == [["$contents", "solid"]] and "$jointcontents" not in by
    prop = tmp_path / "prop"
    result = decompiled(shared_or_skip("items/garys_film/ground/garys_film.mdl"), prop)
    commands = [c[0] for c in qc_commands((prop / result.qc).read_text("utf-8"))]
    assert "$staticprop" in commands and "$collisionmodel" in commands


def test_every_included_model_is_named(tmp_path):
    """A 2531 include record is 116 bytes (not 44–53's 8): all eleven of the female player's included animation
    models come back as $includemodel, in order (read from the fetched repository)."""
    repo = mirror()
    folder = "Basic_Patch/models/character/shared/female/"
    blob = subprocess.run(["git", "-C", str(repo), "show", f"HEAD:{folder}allsequences.mdl"], capture_output=True)
    path = tmp_path / "models" / "character" / "shared" / "female" / "allsequences.mdl"
    path.parent.mkdir(parents=True)
    path.write_bytes(blob.stdout)
    result = decompiled(path, tmp_path / "out")
    commands = qc_commands((tmp_path / "out" / result.qc).read_text("utf-8"))
    shared = "models/character/shared/female/"
    pcs = [f"{shared}pc/{c}.mdl" for c in ("br", "ga", "ma", "no", "tr", "ve", "to", "g2")]
    expected = [f"{shared}alsequences.mdl", f"{shared}frenzy.mdl", f"{shared}pc_idles.mdl", *pcs]
    assert [c[1] for c in commands if c[0] == "$includemodel"] == expected
    lost = [w for w in result.warnings if "were not found" in w]  # only this file was copied: one warning for all
    assert len(lost) == 1 and lost[0].startswith(f"{len(expected)} included models"), result.warnings


def test_a_bloodlines_face_decompiles_to_its_eyes_lids_and_flexes(tmp_path):
    """female_citizen_3's face: its $model block holds both eyeballs, the four eyelid lines with the targets its
    eyeball records keep, its mouth and a flex file of every other flex, then its 44 controllers and its rules;
    the VTA reads strictly, and the jaw flex's frame moves its vertices by the lengths its shape key does in our
    import."""
    path = shared_or_skip("character/npc/common/citizen/female3/female_citizen_3.mdl")
    result = decompiled(path, tmp_path, animations=False, lods=False)
    check_output(result, tmp_path)
    block = [shlex.split(line) for line in (tmp_path / result.qc).read_text("utf-8").splitlines() if line.strip()]
    words = [c for c in block if c[0] in ("eyeball", "eyelid", "mouth", "flex", "flexcontroller")]
    lids = {c[1]: c for c in words if c[0] == "eyelid"}
    assert [c[0] for c in words].count("eyeball") == 2 and sorted(lids) == sorted(
        ["upper_right", "lower_right", "upper_left", "lower_left"]
    )
    upper = lids["upper_right"]
    assert [float(upper[upper.index(role) + 2]) for role in ("lowerer", "neutral", "raiser")] == pytest.approx(
        [-0.287, 0.021, 0.121], abs=1e-6
    )
    assert [c for c in words if c[0] == "mouth"] == [["mouth", "0", "mouth", "Bip01 Head", "0", "-1", "0"]]
    flexes = [c[1] for c in words if c[0] == "flex"]
    assert len(flexes) == 41 and "AU27Z" in flexes and not set(lids) & set(flexes)
    assert len([c for c in words if c[0] == "flexcontroller"]) == 44
    vta_name = upper[2]
    smd_reader.read(tmp_path / vta_name)
    vta = read_smd((tmp_path / vta_name).read_bytes())
    base = {i: np.array(v[:3]) for i, v in vta.vertex_frames[0].items()}
    frame = {c[1]: int(c[3]) for c in block if c[0] == "flex"}["AU27Z"]
    moved = np.array(sorted(np.linalg.norm(np.array(v[:3]) - base[i]) for i, v in vta.vertex_frames[frame].items()))
    scene = load_source(str(path), SourceOptions(scale=1.0, find_materials=False))
    (face,) = [o for o in scene.objects if o.mesh is not None and o.mesh.shape_keys]
    key = dict(face.mesh.shape_keys)["AU27Z"]
    ours = np.linalg.norm(key - face.mesh.positions, axis=1)
    ours = np.sort(ours[ours > 0])
    # a delta's length is a whole number of 1/32 units: the same numbers on both sides
    np.testing.assert_allclose(moved * 32, np.round(moved * 32), atol=2e-3)
    assert set(np.round(moved * 32).astype(int)) == set(np.round(ours * 32).astype(int))
