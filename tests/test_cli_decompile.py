"""``io-ms3d-mdl decompile``: one folder per model mirroring the input tree, the batch machinery (--vpk, --jobs,
--shard, --resume, the JSON report), clean failed rows, fresh outputs never through a link, and no Blender.

Most tests drive the command with a stand-in engine (registered as the decompiler's registry would hold it) so they
test the command, not the decompiler's files; the real engines go through it in ``test_cli_real_models``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ROOT, SAMPLES, sample_path
from no_bpy import without_bpy
from source_writer import character_spec, write_source

import io_ms3d_mdl.decompile as decompile_package
from io_ms3d_mdl.cli import main
from io_ms3d_mdl.decompile.registry import Decompiler
from io_ms3d_mdl.errors import FormatError

STAND_IN = b"FAKEMDL\n"


def stand_in_run(job) -> None:
    """Writes a QC and a reference SMD named after the model; fails where the model says FAIL (after a file)."""
    stem = Path(job.path).stem
    smd = job.output.name(stem + "_ref", ".smd")
    job.output.write(smd, b'version 1\nnodes\n0 "root" -1\nend\nskeleton\ntime 0\n0 0 0 0 0 0 0\nend\n')
    if b"FAIL" in job.data:
        raise FormatError(job.path, 8, "broken on purpose")
    qc = job.output.name(stem, ".qc")
    job.output.write(qc, f'$modelname "{stem}.mdl"\n$body body "{smd}"\n'.encode())
    job.result.qc = qc


@pytest.fixture
def stand_in(monkeypatch):
    engine = Decompiler("stand-in", lambda head: head.startswith(b"FAKEMDL"), stand_in_run)
    monkeypatch.setattr(decompile_package, "decompilers", lambda: (engine,))


def tree(tmp_path: Path) -> Path:
    root = tmp_path / "in"
    (root / "models" / "props").mkdir(parents=True)
    (root / "models" / "props" / "box.mdl").write_bytes(STAND_IN)
    (root / "models" / "guy.mdl").write_bytes(STAND_IN)
    (root / "models" / "broken.mdl").write_bytes(STAND_IN + b"FAIL")
    (root / "models" / "garbage.mdl").write_bytes(b"not a model at all")
    (root / "models" / "readme.txt").write_text("not a model")
    return root


def report_of(out: Path, name: str = "report.json") -> dict[str, dict]:
    data = json.loads((out / name).read_text())
    return {Path(r["file"]).name: r for r in data["files"]}


def files(folder: Path) -> list[str]:
    return sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file())


def test_one_folder_per_model_mirroring_the_tree_and_one_clean_row_per_failure(tmp_path, stand_in, capsys):
    out = tmp_path / "out"
    assert main(["decompile", str(tree(tmp_path)), "-o", str(out)]) == 1  # two models failed
    rows = report_of(out)
    assert set(rows) == {"box.mdl", "guy.mdl", "broken.mdl", "garbage.mdl"}
    assert rows["box.mdl"]["status"] == "ok"
    assert rows["box.mdl"]["output"] == str(out / "models" / "props" / "box")
    assert rows["box.mdl"]["qc"] == "box.qc" and rows["box.mdl"]["files"] == ["box_ref.smd", "box.qc"]
    assert rows["broken.mdl"]["status"] == "failed" and "broken on purpose" in rows["broken.mdl"]["error"]
    assert "expected a Source or GoldSrc .mdl" in rows["garbage.mdl"]["error"]
    assert "\n" not in rows["garbage.mdl"]["error"]
    assert "models/props/box/box.qc" in files(out) and "models/guy/guy_ref.smd" in files(out)
    printed = capsys.readouterr().out
    assert "2 of 4 files decompiled" in printed and "garbage.mdl: " in printed


def test_existing_files_are_never_replaced_unless_asked(tmp_path, stand_in):
    source = tmp_path / "box.mdl"
    source.write_bytes(STAND_IN)
    out = tmp_path / "out"
    (out / "box").mkdir(parents=True)
    (out / "box" / "box.qc").write_text("mine")
    assert main(["decompile", str(source), "-o", str(out)]) == 1
    assert "exists in the output folder" in report_of(out)["box.mdl"]["error"]
    assert (out / "box" / "box.qc").read_text() == "mine"
    assert main(["decompile", str(source), "-o", str(out), "--overwrite"]) == 0
    assert (out / "box" / "box.qc").read_text().startswith("$modelname")


@pytest.mark.skipif(sys.platform == "win32", reason="symbolic links need privileges on Windows")
def test_outputs_never_go_through_a_link(tmp_path, stand_in):
    source = tree(tmp_path)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    out = tmp_path / "out"
    (out / "models").mkdir(parents=True)
    os.symlink(elsewhere, out / "models" / "props")  # a link where a model's folder goes
    assert main(["decompile", str(source), "-o", str(out)]) == 1
    rows = report_of(out)
    assert rows["box.mdl"]["status"] == "failed" and "link" in rows["box.mdl"]["error"]
    assert rows["guy.mdl"]["status"] == "ok"
    assert list(elsewhere.iterdir()) == []


def test_shards_and_resume(tmp_path, stand_in, capsys):
    source = tree(tmp_path)
    out = tmp_path / "out"
    main(["decompile", str(source), "-o", str(out), "--shard", "1/2"])
    main(["decompile", str(source), "-o", str(out), "--shard", "2/2"])
    first, second = report_of(out, "report-1-of-2.json"), report_of(out, "report-2-of-2.json")
    assert set(first) | set(second) == {"box.mdl", "guy.mdl", "broken.mdl", "garbage.mdl"}
    assert not set(first) & set(second)

    capsys.readouterr()
    assert main(["decompile", str(source), "-o", str(out / "all")]) == 1
    box = source / "models" / "props" / "box.mdl"
    os.utime(box, ns=(box.stat().st_atime_ns, box.stat().st_mtime_ns + 10**9))  # this input changed
    assert main(["decompile", str(source), "-o", str(out / "all"), "--resume"]) == 1
    rows = report_of(out / "all")
    assert rows["guy.mdl"].get("reused") is True
    assert rows["box.mdl"]["status"] == "ok" and not rows["box.mdl"].get("reused")  # redone over its own files
    assert "1 of 4 models up to date" in capsys.readouterr().err  # guy; the failed ones are tried again
    (out / "all" / "models" / "props" / "box" / "notes.txt").write_text("someone else's")
    os.utime(box, ns=(box.stat().st_atime_ns, box.stat().st_mtime_ns + 10**9))
    main(["decompile", str(source), "-o", str(out / "all"), "--resume"])
    assert "exists" in report_of(out / "all")["box.mdl"]["error"]  # a foreign file there: not replaced


def test_models_inside_a_vpk(tmp_path, stand_in):
    vpk = SAMPLES / "vpk" / "SirPlease__L4D2-Competitive-Rework" / "addons" / "knife.vpk"
    if not vpk.is_file():
        pytest.skip(f"the shared VPK sample is missing ({vpk})")
    out = tmp_path / "out"
    main(["decompile", "--vpk", str(vpk), "-o", str(out)])
    rows = report_of(out)
    assert set(rows) == {"v_knife_t.mdl", "w_knife_t.mdl"}
    # real models the stand-in does not know: each one clean failed row, named by its path inside the archive
    assert all(r["status"] == "failed" and "knife.vpk/models/" in r["file"] for r in rows.values())


def test_usage_errors(tmp_path, capsys):
    assert main(["decompile"]) == 2
    assert "give models or folders" in capsys.readouterr().err
    assert main(["decompile", str(tmp_path), "--jobs", "0"]) == 2
    assert main(["decompile", str(tmp_path), "--shard", "3/2"]) == 2
    assert main(["decompile", str(tmp_path / "empty"), "-o", str(tmp_path / "o")]) == 1
    assert main(["decompile", str(tmp_path), "--work-limit", "0"]) == 2
    assert "--work-limit must be between" in capsys.readouterr().err


def test_the_work_limit_reaches_the_decompiler(tmp_path):
    """``--work-limit`` scales the decompile's budgets as it does the import's: a real character within the default
    budgets is refused under a tiny limit (one clean row naming the budget), and decompiles at the default."""
    model = sample_path("source", "Lambdagon__lambdas-weapon-pack/models/player/civilian.mdl")
    common = [str(model), "--no-includes", "--no-animations"]
    assert main(["decompile", *common, "-o", str(tmp_path / "tiny"), "--work-limit", "0.01"]) == 1
    row = report_of(tmp_path / "tiny")["civilian.mdl"]
    assert row["status"] == "failed" and "Work Limit" in row["error"], row
    assert main(["decompile", *common, "-o", str(tmp_path / "default")]) == 0
    assert report_of(tmp_path / "default")["civilian.mdl"]["status"] == "ok"


CLI_WITHOUT_BPY = without_bpy("""
sys.path.insert(0, sys.argv[1])
from io_ms3d_mdl.cli import main
code = main(sys.argv[2:])
assert "bpy" not in sys.modules
print("exit", code)
""")


def real_models(tmp_path: Path) -> Path:
    folder = tmp_path / "real"
    write_source(character_spec(), folder / "models", "guy")
    (folder / "models" / "junk.mdl").write_bytes(b"IDST\x30\0\0\0" + b"\0" * 40)  # a Source header, truncated
    return folder


@pytest.mark.parametrize("jobs", [1, 2])
def test_cli_real_models_without_blender(tmp_path, jobs):
    """The real engines, in worker processes too, in a Python where importing bpy fails."""
    out = tmp_path / "out"
    result = subprocess.run(
        [
            sys.executable,
            "-c",
            CLI_WITHOUT_BPY,
            str(ROOT),
            "decompile",
            str(real_models(tmp_path)),
            "-o",
            str(out),
            "--jobs",
            str(jobs),
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert "exit 1" in result.stdout, result.stdout + result.stderr
    rows = report_of(out)
    assert rows["junk.mdl"]["status"] == "failed" and "\n" not in rows["junk.mdl"]["error"]
    guy = rows["guy.mdl"]
    if guy["status"] != "ok" and "decompile.source.model" in guy.get("error", ""):
        pytest.skip("the Source decompiler core is not merged into this branch yet")
    assert guy["status"] == "ok", guy
    assert (out / "models" / "guy" / guy["qc"]).is_file()
