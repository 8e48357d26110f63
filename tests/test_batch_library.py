"""``io-ms3d-mdl batch`` on a library: progress that names the file now running with a settled estimate, a time and
memory bound per file, --resume, glTF with a choice of animations, and shards merged back into one report (the
README's GNU parallel recipe, run as written). Bookkeeping runs with stand-in workers; the rest with the bpy wheel."""

from __future__ import annotations

import io
import json
import os
import shutil
import signal
import struct
import subprocess
import sys
import time
from pathlib import Path

import pytest
from batch_fakes import fake_workers
from batch_run import SCRIPT, batch_command, report_of, run_batch
from conftest import EXAMPLE, ROOT, bpy, samples_dir
from ms3d_writer import box_spec, quad_spec, write_ms3d
from source_writer import SAnimation, SNode, character_spec, write_source

from io_ms3d_mdl.cli import batch
from io_ms3d_mdl.cli.files import Task, parse_shard, shard
from io_ms3d_mdl.cli.output_log import read_log
from io_ms3d_mdl.cli.progress import Progress
from io_ms3d_mdl.cli.reports import ReportWriter

needs_blender = pytest.mark.skipif(bpy is None, reason="Blender (the bpy wheel) is not installed")

# The README's recipe for GNU parallel, word for word (models/ and converted/ below the current folder).
PARALLEL_RECIPE = """
parallel --tag --line-buffer io-ms3d-mdl batch models/ -o converted/ --shard {}/2 ::: 1 2
io-ms3d-mdl batch --merge-reports converted/report.json converted/report-*-of-2.json
"""


@pytest.fixture
def tmp_path(tmp_path):
    return tmp_path.resolve()


def small_library(folder: Path) -> list[Path]:
    """Four small models, both formats, in two folders."""
    (folder / "props").mkdir(parents=True)
    shutil.copy(EXAMPLE, folder / "house.ms3d")
    (folder / "props" / "quad.ms3d").write_bytes(write_ms3d(quad_spec()))
    (folder / "props" / "box.ms3d").write_bytes(write_ms3d(box_spec()))
    guy = write_source(character_spec(includes=[]), folder / "models", "guy")
    return sorted([folder / "house.ms3d", folder / "props" / "quad.ms3d", folder / "props" / "box.ms3d", guy])


# --- progress -------------------------------------------------------------------------------------------------


def test_progress_names_the_file_starting_and_estimates_only_after_a_few():
    stream = io.StringIO()
    progress = Progress(total=10, workers=2, stream=stream)
    tasks = [Task(Path(f"m{i}.ms3d"), None) for i in range(10)]
    progress.started_file(tasks[0])
    progress.started_file(tasks[1])
    for i in range(2):
        progress.finished_file({"file": f"m{i}.ms3d", "status": "ok", "seconds": 4.0})
        progress.started_file(tasks[i + 2])
    progress.finished_file({"file": "m2.ms3d", "status": "failed", "seconds": 4.0, "error": "m2.ms3d: broken"})
    progress.started_file(tasks[4])
    progress.finished_file({"file": "m3.ms3d", "status": "ok", "seconds": 4.2})
    progress.started_file(tasks[5])
    lines = stream.getvalue().splitlines()
    assert lines[:2] == ["[1/10] m0.ms3d", "[2/10] m1.ms3d"]  # the file now starting, not the one just done
    assert lines[2] == "[3/10] m2.ms3d  (1 done; estimating the time left)"
    assert "  failed: m2.ms3d: broken" in lines
    assert lines[-2] == "[5/10] m4.ms3d  (3 done, 1 failed; about 15 s left)"  # 4 s × 7 files / 2 workers
    assert lines[-1] == "[6/10] m5.ms3d  (4 done, 1 failed; about 10 s left)"  # rounded to 5 s: it does not flicker


# --- limits, with stand-in workers ----------------------------------------------------------------------------


def stand_in_library(folder: Path, names: list[str]) -> None:
    folder.mkdir()
    for name in names:
        (folder / name).write_bytes(name.encode())


def test_a_file_past_the_timeout_is_killed_and_failed_and_the_batch_goes_on(tmp_path, monkeypatch, capsys):
    started = fake_workers(monkeypatch, tmp_path)
    folder, out = tmp_path / "in", tmp_path / "out"
    stand_in_library(folder, ["a.ms3d", "b_slow.ms3d", "c.ms3d"])
    begin = time.monotonic()
    assert batch.main([str(folder), "-o", str(out), "--timeout", "1"]) == 1
    assert time.monotonic() - begin < 30  # the slow file sleeps for a minute
    report = report_of(out / "report.json")
    slow = report[str(folder / "b_slow.ms3d")]
    assert slow["status"] == "failed" and slow["error"] == "timed out after 1 s (--timeout)"
    assert 1 <= slow["seconds"] < 5
    assert [report[str(folder / n)]["status"] for n in ("a.ms3d", "c.ms3d")] == ["ok", "ok"]
    assert (out / "c.blend").read_bytes() == b"c.ms3d" and len(started) == 2  # a fresh worker after the kill
    err = capsys.readouterr().err
    assert err.index("[2/3] b_slow.ms3d") < err.index("failed: b_slow.ms3d: timed out")
    assert list((tmp_path / "system-tmp").iterdir()) == []


def test_a_file_past_the_memory_bound_is_killed_and_failed(tmp_path, monkeypatch, capsys):
    fake_workers(monkeypatch, tmp_path)
    folder, out = tmp_path / "in", tmp_path / "out"
    stand_in_library(folder, ["a.ms3d", "b_hog.ms3d", "c.ms3d", "d.ms3d"])
    assert batch.main([str(folder), "-o", str(out), "--max-memory", "200", "--jobs", "2"]) == 1
    report = report_of(out / "report.json")
    hog = report[str(folder / "b_hog.ms3d")]
    assert hog["status"] == "failed" and "MB of memory, more than --max-memory 200" in hog["error"]
    assert sorted(n for n in ("a.ms3d", "c.ms3d", "d.ms3d") if report[str(folder / n)]["status"] == "ok") == [
        "a.ms3d",
        "c.ms3d",
        "d.ms3d",
    ]


def test_files_from_a_list_and_limits_need_separate_outputs(tmp_path, monkeypatch, capsys):
    fake_workers(monkeypatch, tmp_path)
    folder, out = tmp_path / "in", tmp_path / "out"
    stand_in_library(folder, ["a.ms3d", "b.ms3d", "c.ms3d"])
    listing = tmp_path / "list.txt"
    listing.write_text(f"{folder / 'a.ms3d'}\n\n{folder / 'c.ms3d'}\n")
    assert batch.main(["--files-from", str(listing), "-o", str(out), "--jobs", "2", "--timeout", "30"]) == 0
    assert sorted(Path(f).name for f in report_of(out / "report.json")) == ["a.ms3d", "c.ms3d"]
    assert batch.main([str(folder), "--single", str(tmp_path / "all.blend"), "--timeout", "5"]) == 2
    assert "--single imports into one process" in capsys.readouterr().err


# --- resume, shards and merged reports, without Blender -------------------------------------------------------


def test_the_report_on_disk_keeps_earlier_records_until_their_files_are_redone(tmp_path):
    earlier = {f: {"file": f, "status": "ok", "warnings": [], "seconds": 1.0, "output": f + ".blend"} for f in "ab"}
    writer = ReportWriter(tmp_path / "report.json", {"shard": None}, ["a", "b", "c"], earlier)
    writer.add({"file": "a", "status": "failed", "warnings": [], "seconds": 2.0, "error": "broken"})
    writer.write(complete=False)  # what a killed run leaves: a (new), b (from before); c was never done
    report = json.loads((tmp_path / "report.json").read_text())
    assert report["complete"] is False and [(r["file"], r["status"]) for r in report["files"]] == [
        ("a", "failed"),
        ("b", "ok"),
    ]


def test_shards_partition_the_inputs():
    tasks = [Task(Path(f"{i}.ms3d"), Path(f"{i}.blend")) for i in range(10)]
    parts = [shard(tasks, i, 3) for i in (1, 2, 3)]
    assert sorted(t.source.name for part in parts for t in part) == sorted(t.source.name for t in tasks)
    assert [len(p) for p in parts] == [4, 3, 3]
    for bad in ("0/2", "3/2", "1", "a/b"):
        with pytest.raises(ValueError, match="--shard"):
            parse_shard(bad)


def report_of_shard(path: Path, shard_text: str, files: list[str], inputs: int, status: str = "ok") -> Path:
    records = [{"file": f, "status": status, "warnings": [], "seconds": 0.5} for f in files]
    report = {"shard": shard_text, "inputs": inputs, "settings": {"format": "blend"}, "complete": True}
    path.write_text(json.dumps({**report, "seconds": 1.0, "files": records}))
    return path


def test_merging_says_when_a_shard_is_missing_and_keeps_each_input_once(tmp_path, capsys):
    one = report_of_shard(tmp_path / "r1.json", "1/3", ["a", "d"], 5)
    two = report_of_shard(tmp_path / "r2.json", "2/3", ["b", "e"], 5)
    three = report_of_shard(tmp_path / "r3.json", "3/3", ["c"], 5)
    rerun = report_of_shard(tmp_path / "r3-again.json", "3/3", ["c"], 5, status="failed")
    out = tmp_path / "merged.json"
    assert batch.main(["--merge-reports", str(out), str(one), str(two)]) == 1
    assert "shard 3 of 3 missing" in capsys.readouterr().err
    assert json.loads(out.read_text())["complete"] is False
    assert batch.main(["--merge-reports", str(out), str(rerun), str(one), str(two), str(three)]) == 0
    merged = json.loads(out.read_text())
    assert [r["file"] for r in merged["files"]] == ["a", "b", "c", "d", "e"] and merged["complete"] is True
    assert merged["files"][2]["status"] == "ok"  # the later report given wins


# --- with Blender ---------------------------------------------------------------------------------------------


@needs_blender
def test_resume_skips_what_is_up_to_date_and_redoes_what_changed(tmp_path):
    folder, out = tmp_path / "in", tmp_path / "out"
    folder.mkdir()
    shutil.copy(EXAMPLE, folder / "house.ms3d")
    (folder / "quad.ms3d").write_bytes(write_ms3d(quad_spec()))
    first = run_batch(folder, "-o", out)
    assert first.returncode == 0, first.stdout + first.stderr
    house_written = (out / "house.blend").stat().st_mtime_ns
    (folder / "quad.ms3d").write_bytes(write_ms3d(box_spec()))  # changed since: converted again
    (folder / "new.ms3d").write_bytes(write_ms3d(quad_spec()))  # new: converted
    second = run_batch(folder, "-o", out, "--resume")
    assert second.returncode == 0, second.stdout + second.stderr  # quad.blend is replaced: the report says it is ours
    assert "--resume: 1 of 3 files up to date" in second.stderr
    report = report_of(out / "report.json")
    assert report[str(folder / "house.ms3d")]["reused"] is True
    assert (out / "house.blend").stat().st_mtime_ns == house_written
    assert not report[str(folder / "quad.ms3d")].get("reused") and report[str(folder / "quad.ms3d")]["triangles"] == 12
    assert report[str(folder / "new.ms3d")]["status"] == "ok"
    assert "1 up to date from an earlier run" in second.stdout
    other_options = run_batch(folder, "-o", out, "--resume", "--scale", "2")
    assert other_options.returncode == 0, other_options.stdout + other_options.stderr
    assert "made with other options" in other_options.stderr
    assert not any(r.get("reused") for r in report_of(out / "report.json").values())


@needs_blender
@pytest.mark.parametrize("jobs", [1, 2])
def test_an_interrupted_run_keeps_its_report_and_resume_finishes_it(tmp_path, jobs):
    folder, out = tmp_path / "in", tmp_path / "out"
    folder.mkdir()
    for i in range(8):
        (folder / f"m{i}.ms3d").write_bytes(write_ms3d(box_spec() if i % 2 else quad_spec()))
    process = subprocess.Popen(
        batch_command(folder, "-o", out, "--jobs", jobs),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    for line in process.stderr:  # stop it once a few files are done
        if line.startswith("[4/8]"):
            process.send_signal(signal.SIGINT)
            break
    err = line + process.stderr.read()
    process.wait(timeout=120)
    process.stdout.close()
    process.stderr.close()
    assert process.returncode == 130, err
    assert "interrupted:" in err and "keeps them for --resume" in err
    report = json.loads((out / "report.json").read_text())
    assert report["complete"] is False and 2 <= len(report["files"]) < 8  # [4/8] starts once 2 or 3 are done
    assert not [p for p in out.rglob(".*")]  # no half-written output under any name
    resumed = run_batch(folder, "-o", out, "--resume", "--jobs", jobs)
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    ok_before = sum(r["status"] == "ok" for r in report["files"])
    assert f"--resume: {ok_before} of 8 files up to date" in resumed.stderr
    final = json.loads((out / "report.json").read_text())
    assert final["complete"] is True and len(final["files"]) == 8
    assert sorted(p.name for p in out.glob("*.blend")) == [f"m{i}.blend" for i in range(8)]


@needs_blender
@pytest.mark.parametrize("jobs", [1, 2])
def test_a_run_killed_before_its_report_is_written_resumes_from_its_log_of_outputs(tmp_path, jobs):
    """Killed outright, a run leaves outputs its report never recorded (it is written every 10 s); --resume knows
    them from the log and replaces them, while a file someone else put at an output's path is still refused."""
    folder, out = tmp_path / "in", tmp_path / "out"
    folder.mkdir()
    for i in range(8):
        (folder / f"m{i}.ms3d").write_bytes(write_ms3d(box_spec() if i % 2 else quad_spec()))
    out.mkdir()
    (out / "m7.blend").write_bytes(b"someone else's")
    process = subprocess.Popen(
        batch_command(folder, "-o", out, "--jobs", jobs),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    for line in process.stderr:
        if line.startswith("[4/8]"):
            process.kill()
            break
    process.wait(timeout=120)
    process.stderr.close()
    assert not (out / "report.json").exists()  # killed within the first 10 s: no report at all
    made = sorted(p.name for p in out.glob("m[0-6].blend"))
    assert len(made) >= 2 and len(read_log(out / "report.outputs.jsonl")) >= len(made)
    resumed = run_batch(folder, "-o", out, "--resume", "--jobs", jobs)
    assert resumed.returncode == 1, resumed.stdout + resumed.stderr  # m7 only
    final = report_of(out / "report.json")
    failed = {Path(f).name: r["error"] for f, r in final.items() if r["status"] != "ok"}
    assert failed == {"m7.ms3d": f"output exists: {out / 'm7.blend'} (use --overwrite)"}
    assert (out / "m7.blend").read_bytes() == b"someone else's"
    assert sorted(p.name for p in out.glob("*.blend")) == [f"m{i}.blend" for i in range(8)]
    assert not (out / "report.outputs.jsonl").exists()  # the report names every output now


@needs_blender
def test_resume_replaces_only_the_very_files_the_batch_made(tmp_path):
    """An output the user replaced after the run, or a file of theirs where the log of outputs would go, is never
    touched: the first is refused as any existing file is, the second stops the run before it starts."""
    folder, out = tmp_path / "in", tmp_path / "out"
    folder.mkdir()
    for i in range(2):
        (folder / f"m{i}.ms3d").write_bytes(write_ms3d(quad_spec()))
    first = run_batch(folder, "-o", out)
    assert first.returncode == 0, first.stdout + first.stderr
    assert report_of(out / "report.json")[str(folder / "m0.ms3d")]["output_identity"]["size"] > 0
    (out / "m1.blend").unlink()
    (out / "m1.blend").write_bytes(b"the user's own")
    for i in range(2):
        (folder / f"m{i}.ms3d").write_bytes(write_ms3d(box_spec()))  # both changed: both converted again
    again = run_batch(folder, "-o", out, "--resume")
    assert again.returncode == 1, again.stdout + again.stderr
    final = report_of(out / "report.json")
    assert final[str(folder / "m0.ms3d")]["status"] == "ok" and final[str(folder / "m0.ms3d")]["triangles"] == 12
    assert final[str(folder / "m1.ms3d")]["error"] == f"output exists: {out / 'm1.blend'} (use --overwrite)"
    assert (out / "m1.blend").read_bytes() == b"the user's own"
    (out / "notes.json").write_text("the user's own")
    for args in (["--report", out / "notes.json"], ["--merge-reports", out / "notes.json", out / "report.json"]):
        refused = run_batch(*([folder, "-o", out] if args[0] == "--report" else []), *args)
        assert refused.returncode == 2 and "choose another --report" in refused.stderr, refused.stderr
    assert (out / "notes.json").read_text() == "the user's own"
    (out / "mine.outputs.jsonl").write_text("notes\n")
    refused = run_batch(folder, "-o", out, "--report", out / "mine.json")
    assert refused.returncode == 2 and "is not a log of io-ms3d-mdl batch" in refused.stderr, refused.stderr
    assert (out / "mine.outputs.jsonl").read_text() == "notes\n" and not (out / "mine.json").exists()


@needs_blender
def test_real_workers_past_the_memory_bound_or_the_timeout_are_killed_and_the_batch_goes_on(tmp_path):
    # the report names inputs by their resolved paths (the samples may sit behind a link)
    civilian = (samples_dir() / "source/Lambdagon__lambdas-weapon-pack/models/player/civilian.mdl").resolve()
    for limit, error in (
        (["--max-memory", "100"], "MB of memory, more than --max-memory 100"),  # Blender alone holds more
        (["--timeout", "0.3"], "timed out after 0.3 s (--timeout)"),  # civilian takes 0.5–0.7 s now
    ):
        out = tmp_path / limit[0].strip("-")
        result = run_batch(civilian, EXAMPLE, "-o", out, *limit)
        assert result.returncode == 1, result.stdout + result.stderr
        report = report_of(out / "report.json")
        assert report[str(civilian)]["status"] == "failed" and error in report[str(civilian)]["error"]
        if limit[0] == "--timeout":  # a small file finishes within one look at the worker, whatever its memory
            assert report[str(EXAMPLE)]["status"] == "ok" and Path(report[str(EXAMPLE)]["output"]).is_file()
            assert report[str(civilian)]["seconds"] < 0.3 + 0.2  # killed as the time passed, not a poll later
        assert not [p for p in out.iterdir() if p.name.startswith(".")]


def glb_animations(path: Path) -> list[str]:
    """The animation names in a .glb's JSON chunk."""
    data = path.read_bytes()
    (length,) = struct.unpack_from("<I", data, 12)
    return [a.get("name") for a in json.loads(data[20 : 20 + length]).get("animations", [])]


@needs_blender
def test_glb_keeps_all_animations_the_default_one_or_none(tmp_path):
    turn = [SNode(1, ("q64", (0.7071068, 0.0, 0.0, 0.7071068)))]
    animations = [SAnimation(name, 6, turn) for name in ("idle", "walk", "run")]
    folder = tmp_path / "in"
    write_source(character_spec(includes=[], animations=animations), folder, "guy")
    shutil.copy(EXAMPLE, folder / "house.ms3d")
    found = {}
    for choice in ("all", "default", "none"):
        result = run_batch(folder, "-o", tmp_path / choice, "--format", "glb", "--animations", choice)
        assert result.returncode == 0, result.stdout + result.stderr
        found[choice] = (glb_animations(tmp_path / choice / "guy.glb"), glb_animations(tmp_path / choice / "house.glb"))
    assert sorted(found["all"][0]) == ["idle", "run", "walk"] and len(found["all"][1]) == 1
    assert found["default"] == (["idle"], found["all"][1])  # the first sequence's; MilkShape's one action stays
    assert found["none"] == ([], [])


@needs_blender
@pytest.mark.skipif(shutil.which("parallel") is None, reason="GNU parallel is not installed")
def test_the_readme_gnu_parallel_recipe_covers_every_input_once(tmp_path):
    """Two shards under GNU parallel, then one merged report: every input exactly once, every output written."""
    inputs = small_library(tmp_path / "models")
    shim = tmp_path / "bin" / "io-ms3d-mdl"  # what `pip install` puts on the PATH
    shim.parent.mkdir()
    shim.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m io_ms3d_mdl "$@"\n')
    shim.chmod(0o755)
    env = {**os.environ, "PATH": f"{shim.parent}{os.pathsep}{os.environ['PATH']}", "PYTHONPATH": str(ROOT)}
    result = subprocess.run(
        ["bash", "-euo", "pipefail", "-c", PARALLEL_RECIPE],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    converted = tmp_path / "converted"
    shards = [report_of(converted / f"report-{i}-of-2.json") for i in (1, 2)]
    assert [len(s) for s in shards] == [2, 2] and not set(shards[0]) & set(shards[1])
    merged = json.loads((converted / "report.json").read_text())
    assert merged["complete"] is True and merged["inputs"] == len(inputs)
    assert sorted(r["file"] for r in merged["files"]) == sorted(map(str, inputs))  # each exactly once
    assert all(r["status"] == "ok" and Path(r["output"]).is_file() for r in merged["files"])
    assert sorted(p.relative_to(converted).as_posix() for p in converted.rglob("*.blend")) == [
        "house.blend",
        "models/guy.blend",
        "props/box.blend",
        "props/quad.blend",
    ]


BLENDER = os.environ.get("IO_MS3D_MDL_BLENDER_BINARY") or shutil.which("blender")


@pytest.mark.skipif(BLENDER is None, reason="no Blender program (on the PATH or in IO_MS3D_MDL_BLENDER_BINARY)")
@pytest.mark.parametrize("jobs", [1, 2])
def test_inside_blender_itself_in_process_and_with_blender_workers(tmp_path, jobs):
    """``blender --background --python scripts/batch_import.py -- ARGS``: workers are Blender processes then."""
    inputs = small_library(tmp_path / "models")
    out = tmp_path / "out"
    blender = [BLENDER, "--background", "--factory-startup", "--python", str(SCRIPT), "--"]
    result = subprocess.run(
        [*blender, str(tmp_path / "models"), "-o", str(out), "--jobs", str(jobs), "--timeout", "120"],
        capture_output=True,
        text=True,
        timeout=600,
        # Python's copy of the environment, not the process's: bpy 5.1+ sets OCIO to its own colour configuration
        # in this process, which another Blender (Debian's 4.3, an older OpenColorIO) cannot load.
        env=dict(os.environ),
    )
    assert result.returncode == 0, result.stdout + result.stderr
    report = report_of(out / "report.json")
    assert sorted(report) == sorted(map(str, inputs))
    assert all(r["status"] == "ok" and Path(r["output"]).is_file() for r in report.values())
