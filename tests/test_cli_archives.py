"""``--vpk`` and ``--game`` on the command line: ``info`` without Blender, ``convert`` a model named inside an
archive, ``batch`` every model of an archive with outputs mirroring its tree, ``--shard`` and ``--resume``."""

from __future__ import annotations

import json

import pytest
from archive_writer import WEntry, write_vpk
from conftest import bpy
from source_writer import character_spec, write_source
from test_archives import KNIFE, needs_knife
from test_cli import run
from test_games import base_game

needs_blender = pytest.mark.skipif(bpy is None, reason="Blender (the bpy wheel) is not installed")


@needs_knife
def test_info_reads_a_model_inside_an_archive_without_blender(tmp_path):
    result = run("info", "--vpk", KNIFE, "MODELS\\v_models\\V_KNIFE_T.MDL", "models/none.mdl", block_bpy=True)
    assert result.returncode == 1, result.stderr  # the second one is missing
    assert result.stdout.startswith("v_knife_t.mdl: Source model version 49")
    assert "companion files: v_knife_t.vvd, v_knife_t.dx90.vtx" in result.stdout
    assert "knife.vpk: the archive holds no entry 'models/none.mdl'" in result.stdout
    broken = tmp_path / "broken_dir.vpk"
    broken.write_bytes(b"not a vpk at all")
    bad = run("info", "--vpk", broken, "models/x.mdl", block_bpy=True)
    assert bad.returncode != 0 and "not a VPK" in bad.stderr


def archive_of_models(tmp_path):
    loose = tmp_path / "loose"
    write_source(character_spec(includes=[]), loose / "models" / "a", "guy")
    write_source(character_spec(includes=[]), loose / "models" / "b" / "c", "other")
    files = [(p.relative_to(loose).as_posix(), p.read_bytes()) for p in sorted(loose.rglob("*")) if p.is_file()]
    return write_vpk(tmp_path / "game", "pak01", [WEntry(n, d, part=i % 2) for i, (n, d) in enumerate(files)])


@needs_blender
@needs_knife
def test_convert_a_model_named_inside_an_archive(tmp_path):
    out = tmp_path / "x.blend"
    result = run("convert", "--vpk", KNIFE, "models/v_models/v_knife_t.mdl", "-o", out, cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "1 of 1 files converted" in result.stdout and out.is_file()
    row = result.stdout.split("v_knife_t.mdl  ok")[1].split()
    assert row[:4] == ["7", "1,631", "1,806", "1"]


@needs_blender
def test_batch_converts_every_model_of_an_archive_mirroring_its_tree(tmp_path):
    vpk = archive_of_models(tmp_path)
    out = tmp_path / "out"
    first = run("batch", "--vpk", vpk, "-o", out, "--shard", "1/2", cwd=tmp_path)
    assert first.returncode == 0, first.stdout + first.stderr
    assert sorted(p.relative_to(out).as_posix() for p in out.rglob("*.blend")) == ["models/a/guy.blend"]
    second = run("batch", "--vpk", vpk, "-o", out, "--shard", "2/2", cwd=tmp_path)
    assert second.returncode == 0, second.stdout + second.stderr
    assert sorted(p.relative_to(out).as_posix() for p in out.rglob("*.blend")) == [
        "models/a/guy.blend",
        "models/b/c/other.blend",
    ]
    out = tmp_path / "whole"
    assert run("batch", "--vpk", vpk, "-o", out, cwd=tmp_path).returncode == 0
    again = run("batch", "--vpk", vpk, "-o", out, "--resume", cwd=tmp_path)
    assert "--resume: 2 of 2 files up to date" in again.stderr
    report = json.loads((out / "report.json").read_text())
    assert sorted(r["file"].split("pak01_dir.vpk")[1] for r in report["files"]) == [
        "/models/a/guy.mdl",
        "/models/b/c/other.mdl",
    ]
    folder = run("batch", "--vpk", vpk, "models/B", "-o", tmp_path / "b", cwd=tmp_path)
    assert folder.returncode == 0 and [p.name for p in (tmp_path / "b").rglob("*.blend")] == ["other.blend"]


@needs_blender
def test_game_flag_mounts_a_base_game_for_a_loose_model(tmp_path):
    mod, model = base_game(tmp_path)
    (mod / "gameinfo.txt").unlink()  # the mod no longer says where its materials are: --game does
    base = mod.parent / "base"
    bare = run("convert", model, cwd=tmp_path)
    mounted = run("convert", "--game", base, model, cwd=tmp_path)
    assert bare.returncode == mounted.returncode == 0, bare.stderr + mounted.stderr
    assert int(bare.stdout.split("guy.mdl")[1].split()[7]) > 0  # its materials were not found
    assert mounted.stdout.split("guy.mdl")[1].split()[7] == "0"  # no warnings: every material was found


def test_batch_over_an_archive_of_more_models_than_the_listing_budget_is_a_usage_error(tmp_path):
    """Every model of an archive is charged to the listing budget (scaled by --work-limit) before any is named."""
    from archive_worst_cases import listed

    vpk = listed(1500)(tmp_path)  # 1,500 models; at --work-limit 0.01 the budget lists 1,000
    result = run("batch", "--vpk", vpk, "-o", tmp_path / "out", "--work-limit", "0.01", cwd=tmp_path)
    assert result.returncode != 0 and "Traceback" not in result.stderr, result.stdout + result.stderr
    assert "models listed of 1,500 models exceeds the work budget of 1,000" in result.stderr, result.stderr
    assert not (tmp_path / "out").exists() or not any((tmp_path / "out").rglob("*.blend"))
