"""Hostile input: seeded mutations (truncation, bit flips, count inflation, offset corruption, spliced blocks) of
synthetic and real files of every format. Reading and converting may only ever raise the project's FormatError.
Deterministic, a few thousand cases per format; ``scripts/fuzz.py`` runs the same engine for as long as asked."""

from __future__ import annotations

import random

import numpy as np
import pytest
from conftest import SAMPLES, bpy, samples_dir
from fuzzing import Seed, mutate_case, non_finite, run_case, sample_seeds, synthetic_seeds

# seed name -> cases; sized so each format gets a few thousand and the slow, animation-heavy seeds stay affordable
CASES = {
    "synthetic arm.ms3d": 600,
    "synthetic full.ms3d": 600,
    "akadjoker__H3DView/media/bones2.ms3d": 600,
    "assimp__assimp/twospheres_withmats.ms3d": 600,
    "soulsheng__ms3d-render/Model.ms3d": 600,
    "synthetic character.mdl": 1200,
    "FJH03__CSCZS_GameData/models/shells/shell_9mm.mdl": 700,
    "Dynamic-src__Highpoly-Src-Props/models/props_junk/pushcart01a.mdl": 700,
    "siobhan-saoirse__l4d-nextbots/models/ghostanim.mdl": 300,
    "bobthecorn2000__Half-Life-2-Brennan/models/humans/male_postures.mdl": 15,
    "synthetic titanfall2.mdl": 600,
    "synthetic bloodlines.mdl": 800,
    "vtmb garys_film.mdl": 600,
    "CombineFodder__hl2betaplayermodels/models/player/cremator.mdl": 300,
    "NeXiDE__Counter-Strike-Oldschool-Offensive/models/weapons/v_rif_galilar_scoped.mdl": 60,
    "Syampuuh__Titanfall2/models/props/generator_coop/generator_coop_blackbox.mdl": 600,
    "r1delta__CORE/models/rocks/single_rock_01.mdl": 500,
    "MORBO.pcx": 500,
    "synthetic goldsrc.mdl": 800,
    "synthetic goldsrc blends spans skins.mdl": 300,
    "Pi0h1__halflife/models/sr666mdl/martini.mdl": 400,
    "Pi0h1__halflife/models/houndeye.mdl": 150,
    "phoenixprojectsoftware__halflifeclassic/models/islave.mdl": 100,
    "synthetic archive.vpk": 400,
    "synthetic addon.gma": 300,
    "synthetic bloodlines pack.vpk": 300,
    "knife.vpk": 300,
    "synthetic gameinfo.txt": 300,  # issue 31: links beside a mutated gameinfo.txt never widen the roots
}
VTF_CASES, VMT_CASES = 400, 250


def seed(name: str) -> Seed:
    seeds = synthetic_seeds() if name.startswith("synthetic") else sample_seeds(samples_dir())
    return next(s for s in seeds if s.name == name)


def fuzz(s: Seed, cases: int) -> list:
    rng = random.Random(f"io_ms3d_mdl:{s.name}")
    assert run_case(s.oracle, s.parts) is None  # the seed itself reads
    failures = []
    for case in range(cases):
        outcome = run_case(s.oracle, mutate_case(s.parts, rng))
        if outcome is not None:
            failures.append((case, outcome))
    return failures


@pytest.mark.parametrize("name", CASES)
def test_model_mutations_only_raise_format_errors(name):
    assert fuzz(seed(name), CASES[name]) == []


def test_texture_and_material_mutations_only_raise_format_errors():
    seeds = [s for s in sample_seeds(samples_dir()) if s.name.endswith((".vtf", ".vmt"))]
    assert {s.name[-3:] for s in seeds} == {"vtf", "vmt"}
    failures = [(s.name, f) for s in seeds for f in fuzz(s, VTF_CASES if s.name.endswith("vtf") else VMT_CASES)]
    assert failures == []


def test_format_errors_name_the_file():
    from io_ms3d_mdl.errors import FormatError
    from io_ms3d_mdl.formats.ms3d import read_ms3d_bytes

    s = seed("synthetic full.ms3d")
    with pytest.raises(FormatError) as info:
        read_ms3d_bytes(s.parts["ms3d"][:200], "mutant.ms3d")
    assert info.value.message.startswith("mutant.ms3d: ") and "offset" in info.value.message


def test_non_finite_numbers_are_replaced_and_reported():
    """MilkShape's readers repair their own fields; for Source the scene-wide pass is what stands guard."""
    from source_writer import character_spec, write_mdl, write_vtx, write_vvd

    from io_ms3d_mdl.formats.source import read_mdl_bytes, read_vtx_bytes, read_vvd_bytes
    from io_ms3d_mdl.scene.source.convert import source_to_scene

    spec = character_spec()
    mesh = spec.body_parts[0].models[0].meshes[0]
    mesh.vertices[0].pos = (float("nan"), 0.0, float("inf"))
    mesh.vertices[1].uv = (float("nan"), 0.5)
    with np.errstate(all="ignore"):
        scene = source_to_scene(
            read_mdl_bytes(write_mdl(spec), "nan.mdl"),
            read_vvd_bytes(write_vvd(spec), "nan.vvd"),
            read_vtx_bytes(write_vtx(spec), "nan.vtx"),
        )
    assert non_finite(scene) == []
    assert any("3 values in the file were not usable numbers (NaN, infinity" in w for w in scene.warnings)


def test_the_fuzz_script_runs_bounded_and_reports(tmp_path):
    import json
    import subprocess
    import sys

    from conftest import ROOT

    report = tmp_path / "fuzz.json"
    options = ["--cases", "300", "--case-seconds", "20", "--samples", str(samples_dir())]
    run = subprocess.run(
        [
            sys.executable,
            str(ROOT / "scripts" / "fuzz.py"),
            *options,
            "--out",
            str(tmp_path / "findings"),
            "--json",
            str(report),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
    counts = json.loads(report.read_text())
    assert counts["cases"] == 300 and counts["findings"] == 0
    assert {name.rsplit(".", 1)[-1] for name, s in counts["seeds"].items() if s["cases"]} >= {"ms3d", "mdl", "vtf"}
    assert not (tmp_path / "findings").exists()


def test_a_skin_family_count_over_zero_references_allocates_nothing():
    """Found by scripts/fuzz.py: 281 million empty skin families passed the size check (0 bytes) and then
    became 281 million Python lists."""
    from source_writer import character_spec, write_mdl

    from io_ms3d_mdl.formats.source import read_mdl_bytes
    from io_ms3d_mdl.formats.source.structs import STUDIOHDR

    spec = character_spec()
    data = bytearray(write_mdl(spec))
    header = np.frombuffer(data, STUDIOHDR, count=1).copy()
    header["numskinfamilies"], header["numskinref"] = 281_477_692, 0
    data[: STUDIOHDR.itemsize] = header.tobytes()
    assert read_mdl_bytes(bytes(data), "m.mdl").skins.shape == (32, 0)


def test_the_fuzz_script_reports_a_case_over_its_time_bound(tmp_path):
    import subprocess
    import sys

    from conftest import ROOT

    options = ["--cases", "3", "--case-seconds", "0.000001", "--format", "mdl", "--samples", str(tmp_path / "none")]
    run = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "fuzz.py"), *options, "--out", str(tmp_path / "findings")],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 1 and "Traceback" not in run.stderr, run.stderr[-2000:]
    assert (tmp_path / "findings" / "findings.txt").read_text().count("took longer than") == 3


@pytest.mark.skipif(bpy is None, reason="Blender (the bpy wheel) is not installed; run ./scripts/test.sh")
def test_the_fuzz_script_runs_the_whole_import_in_blender(tmp_path):
    """``--blender``: mutated file trees (synthetic, a sample with its materials, crafted traversals) through the
    operators and the batch converter in two Blender workers, every property checked, nothing found."""
    import json
    import subprocess
    import sys

    from conftest import ROOT

    report = tmp_path / "fuzz.json"
    seeds = ["--only", "synthetic", "--only", "traversal", "--only", "shell_9mm"]
    options = ["--blender", "--cases", "20", "--jobs", "2", *seeds, "--samples", str(SAMPLES)]
    options += ["--out", str(tmp_path / "found"), "--json", str(report)]
    run = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "fuzz.py"), *options],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    counts = json.loads(report.read_text())
    assert counts["cases"] == 20 and counts["findings"] == 0, counts
    assert counts["via"]["operator"] > counts["via"]["batch"] > 0
    kinds = {name.rsplit(".", 1)[-1] for name, s in counts["seeds"].items() if s["cases"]}
    assert kinds == {"ms3d", "mdl", "vpk", "gma"}
    assert not (tmp_path / "found").exists()
