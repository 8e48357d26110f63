"""The Source decompiler (Blender-free): every sample decompiles; every file parses with a strict reader; the
reference SMDs hold exactly the import's meshes; the real originals in ../shared/samples/decompile match."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest
import qc_grammar
import smd_reader
from conftest import SAMPLES, sample_names, sample_path
from smd_strict import corner_arrays, qc_commands, read_smd

import io_ms3d_mdl
from io_ms3d_mdl.decompile import DecompileOptions
from io_ms3d_mdl.formats.source import read_mdl
from io_ms3d_mdl.scene.load import load_source
from io_ms3d_mdl.scene.source.convert import SourceOptions

HAMMER = SAMPLES / "decompile" / "TeamSpen210__HammerAddons"
NON_FINITE = re.compile(rb"(?<![A-Za-z_])(nan|inf)(?![A-Za-z_])", re.IGNORECASE)
ANIMATIONS_READ_STRICTLY = 6  # per model; the rest are scanned for nan/inf (a strict read in Python is slow)


def source_samples() -> list[str]:
    if not SAMPLES.is_dir():
        return []
    return sorted(sample_names("source", "*.mdl"))


def decompiled(path: Path, out: Path, **options) -> io_ms3d_mdl.decompile.DecompileResult:
    return io_ms3d_mdl.decompile(str(path), str(out), DecompileOptions(**options))


def qc_files(qc: str) -> list[str]:
    """Every SMD/VTA a QC names."""
    return [t for c in qc_commands(qc) for t in c if t.lower().endswith((".smd", ".vta"))]


@pytest.mark.parametrize("name", source_samples())
def test_every_source_sample_decompiles_to_files_studiomdl_reads(tmp_path, name):
    result = decompiled(sample_path("source", name), tmp_path)
    assert result.engine == "source" and result.qc
    files = {f: (tmp_path / f).read_bytes() for f in result.files}
    assert sorted(files) == sorted(p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*") if p.is_file())
    qc = files[result.qc].decode("utf-8")
    commands = qc_commands(qc)
    assert commands[0][0] == "$modelname"
    for named in qc_files(qc):
        assert named in files, named
    qc_grammar.check_file(tmp_path / result.qc)  # the other strict checker: known commands, arity, files there
    animations = 0
    for relative, data in files.items():
        assert not NON_FINITE.search(data.replace(b"notsolid", b"")), relative
        if relative.endswith((".smd", ".vta")):
            if relative.startswith("anims/"):
                animations += 1
                if animations > ANIMATIONS_READ_STRICTLY:
                    continue
            smd = read_smd(data)
            assert smd.names and smd.frames
            smd_reader.parse(data, relative)


def scene_meshes(path: Path) -> dict[tuple[int, int], object]:
    scene = load_source(
        str(path), SourceOptions(scale=1.0, armature_for_static_props=True, find_materials=False, import_physics=False)
    )
    return {
        (o.props["source_bodypart"], o.props["source_option"]): o
        for o in scene.objects
        if "source_bodypart" in o.props and not o.collision
    }


def body_options(qc: str) -> list[list[str | None]]:
    """Per body part in QC order, each option's SMD (None: blank)."""
    out = []
    for command in qc_commands(qc):
        if command[0].lower() == "$bodygroup":
            options, tokens = [], command[3:-1]
            while tokens:
                word = tokens.pop(0)
                options.append(tokens.pop(0) if word == "studio" else None)
            out.append(options)
        elif command[0].lower() == "$model":
            out.append([command[2]])
    return out


def exact_rows(positions, normals, uvs) -> np.ndarray:
    """Corners as float32 rows, sorted: an SMD's numbers read back as the very float32 written."""
    rows = np.concatenate(
        [np.asarray(a, dtype=np.float32).reshape(len(positions), -1) for a in (positions, normals, uvs)], axis=1
    )
    rows = rows + np.float32(0)
    return rows[np.lexsort(rows.T[::-1])]


def corner_rows(positions, normals, uvs, weights=None, digits=4) -> np.ndarray:
    """Corners as sortable rows (order-free comparison), rounded to ``digits``."""
    parts = [
        np.round(np.asarray(a, dtype=np.float64).reshape(len(positions), -1), digits) for a in (positions, normals, uvs)
    ]
    if weights is not None:
        parts.append(np.round(weights, 3))
    rows = np.concatenate(parts, axis=1) + 0.0
    return rows[np.lexsort(rows.T[::-1])]


@pytest.mark.parametrize("name", [n for n in source_samples() if "civilian_animations" not in n][:40])
def test_reference_smds_hold_the_imported_meshes(tmp_path, name):
    path = sample_path("source", name)
    mdl = read_mdl(path)
    result = decompiled(path, tmp_path, animations=False, lods=False)
    qc = (tmp_path / result.qc).read_text("utf-8")
    meshes = scene_meshes(path)
    turn = mdl.is_static_prop and len(mdl.bones) == 1
    options = body_options(qc)
    assert len(options) == len(mdl.body_parts)
    for (b, m), obj in meshes.items():
        smd = read_smd((tmp_path / options[b][m]).read_bytes())
        ours = corner_arrays(smd)
        tris = obj.mesh.triangles
        positions = obj.mesh.positions[tris].reshape(-1, 3).astype(np.float64)
        normals = obj.mesh.vertex_normals[tris].reshape(-1, 3).astype(np.float64)
        if turn:
            positions = positions[:, [1, 0, 2]] * [1, -1, 1]
            normals = normals[:, [1, 0, 2]] * [1, -1, 1]
        expected = exact_rows(positions, normals, obj.mesh.uvs)
        got = exact_rows(ours["positions"], ours["normals"], ours["uvs"])
        assert expected.shape == got.shape
        assert (expected == got).all()
        # weights: each corner's (bone, weight) links, as the scene's skin holds them
        links = [sorted((bone, float(np.float32(w))) for bone, w in c[4]) for c in smd.corners]
        ids, weights = obj.skin.bone_indices[tris].reshape(-1, 4), obj.skin.weights[tris].reshape(-1, 4)
        want = [sorted((int(i), float(w)) for i, w in zip(r, ws, strict=True) if i >= 0 and w > 0)
                for r, ws in zip(ids, weights, strict=True)]  # fmt: skip
        assert sorted(map(tuple, links)) == sorted(map(tuple, want))
    assert "$bodygroup" in qc or "$model" in qc


# --- the real originals ------------------------------------------------------------------------------------------


def original_smd(path: Path):
    """A Crowbar-made original: its ``//`` comment lines dropped, CRLF read as LF."""
    raw = path.read_bytes().replace(b"\r", b"")
    return read_smd(b"\n".join(line for line in raw.split(b"\n") if not line.lstrip().startswith(b"//")))


PAIRS = {
    "item_health_charger_hl2": (
        "hammer/models/editor/item_health_charger_hl2.mdl",
        "modelsrc/editor/item_healthcharger_hl2/health_charger001.qc",
        {
            "health_charger001_reference.smd": "health_charger001_reference.smd",
            "health_charger001_reference_lod1.smd": "health_charger001_reference_lod1.smd",
            "health_charger001_reference_lod2.smd": "health_charger001_reference_lod2.smd",
            "health_charger001_reference_lod3.smd": "health_charger001_reference_lod3.smd",
        },
    ),
    "ballbotstart": (
        "hammer/models/editor/ballbotstart.mdl",
        "modelsrc/editor/info_player_coop_bots/ballbotstart.qc",
        {"ballbotstart.smd": "ballbotstart.smd"},
    ),
}


NORMAL_BLEND = 0.04  # studiomdl averages a vertex's normals that lie within 2° (normal_blend = cos 2°)


def unmatched_corners(want: dict[str, np.ndarray], have: dict[str, np.ndarray]) -> int:
    """How many corners of ``want`` have no corner in ``have`` at the same position and UV (within 1e-3: the
    originals hold 6 decimals) with a normal within NORMAL_BLEND."""
    index: dict[tuple, list[int]] = {}
    for i, key in enumerate(map(tuple, np.round(np.c_[have["positions"], have["uvs"]], 2).tolist())):
        index.setdefault(key, []).append(i)
    missing = 0
    keys = np.round(np.c_[want["positions"], want["uvs"]], 2).tolist()
    for i, key in enumerate(map(tuple, keys)):
        found = False
        for j in index.get(key, []):
            if (
                np.abs(have["positions"][j] - want["positions"][i]).max() < 1e-3
                and np.abs(have["uvs"][j] - want["uvs"][i]).max() < 1e-3
                and np.abs(have["normals"][j] - want["normals"][i]).max() < NORMAL_BLEND
            ):
                found = True
                break
        missing += not found
    return missing


@pytest.mark.parametrize("pair", sorted(PAIRS))
def test_reference_smds_equal_the_real_originals(tmp_path, pair):
    if not HAMMER.is_dir():
        pytest.skip("the decompile samples are not in ../shared")
    model, qc_path, files = PAIRS[pair]
    result = decompiled(HAMMER / model, tmp_path)
    for ours_name, theirs_name in files.items():
        theirs = original_smd(HAMMER / Path(qc_path).parent / theirs_name)
        ours = read_smd((tmp_path / ours_name).read_bytes())
        assert unmatched_corners(corner_arrays(theirs), corner_arrays(ours)) <= 0.01 * len(theirs.corners), ours_name
        assert unmatched_corners(corner_arrays(ours), corner_arrays(theirs)) <= 0.01 * len(ours.corners), ours_name
        assert abs(len(ours.corners) - len(theirs.corners)) <= 0.01 * len(theirs.corners)
        assert sorted(set(ours.materials)) == sorted(set(theirs.materials))
    qc = (tmp_path / result.qc).read_text("utf-8")
    original = (HAMMER / qc_path).read_text("utf-8", "replace")
    ours_cmds = {c[0].lower(): c for c in qc_commands(qc)}
    theirs_cmds = {c[0].lower(): c for c in qc_commands(original)}
    for key in ("$mostlyopaque", "$opaque"):
        assert (key in ours_cmds) == (key in theirs_cmds), key
    for key in ("$modelname", "$surfaceprop", "$cdmaterials", "$staticprop"):
        if key in theirs_cmds:
            assert [t.lower() for t in ours_cmds[key][1:2]] == [t.lower() for t in theirs_cmds[key][1:2]], key
    if "$illumposition" in theirs_cmds:
        assert np.allclose([float(t) for t in ours_cmds["$illumposition"][1:4]],
                           [float(t) for t in theirs_cmds["$illumposition"][1:4]], atol=1e-3)  # fmt: skip
    ours_seqs = [c for c in qc_commands(qc) if c[0].lower() == "$sequence"]
    theirs_seqs = [c for c in qc_commands(original) if c[0].lower() == "$sequence"]
    assert sorted(s[1] for s in ours_seqs) == sorted(s[1] for s in theirs_seqs)
    ours_groups = [c for c in qc_commands(qc) if c[0].lower() == "$bodygroup"]
    theirs_groups = [c for c in qc_commands(original) if c[0].lower() == "$bodygroup"]
    assert [g[1] for g in ours_groups] == [g[1] for g in theirs_groups]
    assert [[t for t in g if t.endswith(".smd")] for g in ours_groups] == [
        [t for t in g if t.endswith(".smd")] for g in theirs_groups
    ]
    # bones: a static prop's are collapsed by studiomdl into one, "static_prop"; otherwise names and parents equal
    ours_smd = read_smd((tmp_path / next(iter(files))).read_bytes())
    theirs_smd = original_smd(HAMMER / Path(qc_path).parent / next(iter(files.values())))
    if "$staticprop" in theirs_cmds:
        assert ours_smd.names == ["static_prop"]
    else:
        assert (ours_smd.names, ours_smd.parents) == (theirs_smd.names, theirs_smd.parents)
    # every original sequence: fps (30 unless given), loop, activity, frame count
    for seq in theirs_seqs:
        mine = next(c for c in ours_seqs if c[1] == seq[1])
        fps = float(seq[seq.index("fps") + 1]) if "fps" in seq else 30.0
        assert float(mine[mine.index("fps") + 1]) == fps
        assert ("loop" in mine) == ("loop" in seq)
        if "activity" in seq:
            assert mine[mine.index("activity") + 1 : mine.index("activity") + 3] == seq[seq.index("activity") + 1 :][:2]
        their_file = next(t for t in seq[2:] if t.lower().endswith(".smd"))
        our_file = next(t for t in mine[2:] if t.lower().endswith(".smd"))
        theirs_anim = original_smd(HAMMER / Path(qc_path).parent / their_file)
        ours_anim = read_smd((tmp_path / our_file).read_bytes())
        assert len(ours_anim.frames) == len(theirs_anim.frames)
        if ours_anim.names == theirs_anim.names:  # every frame's pose, studiomdl's root turn undone
            for t, pose in theirs_anim.frames.items():
                for bone, values in pose.items():
                    assert np.allclose(ours_anim.frames[t][bone], values, atol=1e-4), (our_file, t, bone)
    # the collision model: the hull's points, as the original physics SMD holds them
    for command in ("$collisionmodel", "$collisionjoints"):
        if command in theirs_cmds:
            theirs_points = corner_arrays(original_smd(HAMMER / Path(qc_path).parent / theirs_cmds[command][1]))
            ours_points = corner_arrays(read_smd((tmp_path / ours_cmds[command][1]).read_bytes()))
            a = np.unique(theirs_points["positions"].round(3), axis=0)
            b = np.unique(ours_points["positions"].round(3), axis=0)
            assert a.shape == b.shape and np.abs(a - b).max() <= 2e-3


def test_decompile_reads_within_the_import_budget(tmp_path):
    """The same work budget as an import: a tiny one stops the decompile with one clean error, and nothing is
    left half-written under a final name."""
    from io_ms3d_mdl.errors import BudgetExceeded

    path = sample_path("source", "Lambdagon__lambdas-weapon-pack/models/player/civilian.mdl")
    with pytest.raises(BudgetExceeded):
        decompiled(path, tmp_path, work_limit=1e-4)
    assert not [p for p in tmp_path.rglob("*.partial*")]


def test_a_second_decompile_refuses_to_overwrite_unless_asked(tmp_path):
    from io_ms3d_mdl.decompile.output import OutputExists

    path = sample_path("source", "Fennecai__Aperture-Continued/models/aperture/monster_cube.mdl")
    first = decompiled(path, tmp_path)
    with pytest.raises(OutputExists):
        decompiled(path, tmp_path)
    again = decompiled(path, tmp_path, overwrite=True)
    assert again.files == first.files


@pytest.mark.parametrize(
    "name",
    ["Lambdagon__lambdas-weapon-pack/models/player/civilian.mdl", "GoodFishMan__mercenaries/models/player/scout.mdl"],
)
def test_animation_roots_come_back_in_the_reference_frame(tmp_path, name):
    """studiomdl turns every animation's root bones (Y-up models a quarter about X as well); undone, a character's
    ``ref`` animation poses its root where the reference SMD's skeleton has it."""
    result = decompiled(sample_path("source", name), tmp_path, include_animations=False, lods=False)
    qc = (tmp_path / result.qc).read_text("utf-8")
    reference = read_smd((tmp_path / body_options(qc)[0][0]).read_bytes())
    ref = read_smd((tmp_path / "anims" / "ref.smd").read_bytes())
    root = reference.parents.index(-1)
    assert np.allclose(ref.frames[0][root][:3], reference.frames[0][root][:3], atol=0.05)
    assert np.allclose(ref.frames[0][root][3:], reference.frames[0][root][3:], atol=0.01)


def test_a_model_inside_a_vpk_decompiles(tmp_path):
    archive = SAMPLES / "vpk" / "SirPlease__L4D2-Competitive-Rework" / "addons" / "knife.vpk"
    if not archive.is_file():
        pytest.skip("the VPK sample is not in ../shared")
    result = decompiled(archive / "models" / "v_models" / "v_knife_t.mdl", tmp_path)
    assert result.qc == "v_knife_t.qc" and any(f.startswith("anims/") for f in result.files)
    qc_grammar.check_file(tmp_path / result.qc)


def test_definebone_option_writes_the_whole_skeleton(tmp_path):
    path = sample_path("source", "Fennecai__Aperture-Continued/models/aperture/monster_cube.mdl")
    mdl = read_mdl(path)
    result = decompiled(path, tmp_path, definebone=True, animations=False)
    statements = qc_grammar.check_file(tmp_path / result.qc)
    defined = [s for s in statements if s.command == "$definebone"]
    assert [s.args[0].value for s in defined] == mdl.bone_names
    for s, parent in zip(defined, mdl.bones["parent"].tolist(), strict=True):
        assert s.args[1].value == (mdl.bone_names[parent] if parent >= 0 else "")
        assert np.allclose([float(t.value) for t in s.args[2:5]], mdl.bones["pos"][defined.index(s)], atol=1e-6)


def test_named_events_keep_their_options_and_the_shadow_lod_is_shadowlod(tmp_path):
    cube = decompiled(
        sample_path("source", "Fennecai__Aperture-Continued/models/aperture/monster_cube.mdl"), tmp_path / "a"
    )
    tokens = qc_grammar.check_file(tmp_path / "a" / cube.qc)
    events = [s for s in tokens if s.command == "$sequence"]
    words = [t.value for s in events for t in s.args]
    assert "AE_CL_PLAYSOUND" in words and "MonsterBox.Footstep" in words
    civilian = decompiled(
        sample_path("source", "Lambdagon__lambdas-weapon-pack/models/player/civilian.mdl"),
        tmp_path / "b",
        animations=False,
    )
    commands = [c[0] for c in qc_commands((tmp_path / "b" / civilian.qc).read_text("utf-8"))]
    assert commands.count("$lod") == 4 and commands.count("$shadowlod") == 1


def test_jigglebones_come_back_in_degrees(tmp_path):
    """No sample has a jiggle bone: a record made here goes through the QC writer."""
    from io_ms3d_mdl.decompile.source.details import JIGGLE, model_details
    from io_ms3d_mdl.decompile.source.qc import QcParts, write_qc
    from io_ms3d_mdl.errors import Warnings
    from io_ms3d_mdl.formats.qc import QcWriter

    mdl = read_mdl(sample_path("source", "Fennecai__Aperture-Continued/models/aperture/monster_cube.mdl"))
    details = model_details(mdl.data, mdl.path, len(mdl.sequences), mdl.bones, tuple(mdl.animations))
    record = np.zeros(1, JIGGLE)[0]
    record["flags"] = 0x1 | 0x4 | 0x10 | 0x40  # flexible, yaw and angle constraints, base spring
    record["length"], record["tip_mass"] = 10.0, 2.0
    record["angle_limit"], record["min_yaw"], record["max_yaw"] = np.radians(30), np.radians(-20), np.radians(45)
    record["base_mass"], record["base_min_up"], record["base_max_up"] = 5.0, -3.0, 4.0
    details.jiggles = {1: record}
    qc = QcWriter()
    write_qc(qc, QcParts(mdl=mdl, details=details, stem="cube", turn=None, vtx=None), Warnings())
    (tmp_path / "cube.qc").write_bytes(qc.encode())
    statements = qc_grammar.check_file(tmp_path / "cube.qc")
    jiggle = next(s for s in statements if s.command == "$jigglebone")
    words = [t.value for t in jiggle.args]
    assert words[0] == mdl.bone_names[1]
    assert words[words.index("angle_constraint") + 1] == "30"
    assert words[words.index("yaw_constraint") + 1 : words.index("yaw_constraint") + 3] == ["-20", "45"]
    assert words[words.index("up_constraint") + 1 : words.index("up_constraint") + 3] == ["-3", "4"]
    assert "is_flexible" in words and "has_base_spring" in words and "is_rigid" not in words


def test_decompile_runs_without_blender_and_reports_a_json_row(tmp_path):
    import json
    import subprocess
    import sys

    from conftest import ROOT
    from no_bpy import without_bpy

    model = sample_path("source", "Fennecai__Aperture-Continued/models/aperture/monster_cube.mdl")
    script = without_bpy(f"""
import json
sys.path.insert(0, {str(ROOT)!r})
import io_ms3d_mdl
result = io_ms3d_mdl.decompile({str(model)!r}, {str(tmp_path / "out")!r})
print(json.dumps(result.as_row()))
""")
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    row = json.loads(out.stdout)
    assert row["engine"] == "source" and row["qc"] == "monster_cube.qc" and len(row["files"]) > 3
