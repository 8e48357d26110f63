"""scripts/batch_import.py (``io-ms3d-mdl batch``) with files from strangers: unique outputs that mirror the input
tree, nothing existing overwritten without --overwrite, outputs moved into place whole, temporary files removed, and
no file (or crashed worker) stopping the batch. The naming and the worker bookkeeping run without Blender; the rest
needs the bpy wheel."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from batch_fakes import fake_workers
from batch_run import report_of, run_batch
from conftest import EXAMPLE, bpy
from ms3d_writer import box_spec, quad_spec, write_ms3d
from source_writer import character_spec, write_source

from io_ms3d_mdl.cli import batch, blender_side, files
from io_ms3d_mdl.cli.files import Task
from io_ms3d_mdl.cli.output_log import NotOurLog, close_log, identity, log_output, open_log, read_log, still_ours
from io_ms3d_mdl.cli.safe_write import OutputExists, publish
from io_ms3d_mdl.cli.settings import Settings

needs_blender = pytest.mark.skipif(bpy is None, reason="Blender (the bpy wheel) is not installed")
HOUSE = {"door", "roof", "walls", "window"}  # the example's meshes


@pytest.fixture
def tmp_path(tmp_path):
    """Resolved, as the script reports its inputs (on macOS the temporary folder is behind a link)."""
    return tmp_path.resolve()


def meshes_in(blend: Path) -> set[str]:
    """Mesh names stored in a .blend, read without loading it: which model ended up in which file."""
    with bpy.data.libraries.load(str(blend)) as (source, _):
        return set(source.meshes)


def hidden_leftovers(folder: Path) -> list[Path]:
    """Temporary outputs (``.name.token.partial.ext``, Blender's ``@`` files) or .blend1 backups left behind."""
    return [p for p in folder.rglob("*") if p.name.startswith(".") or p.name.endswith(("@", ".blend1"))]


def case_sensitive(folder: Path) -> bool:
    probe = folder / "Case-Probe"
    probe.write_bytes(b"")
    try:
        return not (folder / "case-probe").exists()
    finally:
        probe.unlink()


def fresh_tmpdir(tmp_path: Path) -> dict[str, str]:
    """An environment whose temporary folder starts empty, to see what a run leaves in it."""
    tmp = tmp_path / "system-tmp"
    tmp.mkdir()
    return {**os.environ, "TMPDIR": str(tmp), "TEMP": str(tmp), "TMP": str(tmp)}


# --- naming, without Blender --------------------------------------------------------------------------------


def test_output_paths_keep_the_source_extension_where_stems_clash():
    relatives = [Path("a/x.ms3d"), Path("a/x.mdl"), Path("b/x.ms3d"), Path("b/y.mdl")]
    assert files.output_paths(relatives, ".blend") == [
        Path("a/x.ms3d.blend"),
        Path("a/x.mdl.blend"),
        Path("b/x.blend"),  # same stem, other folder: no clash
        Path("b/y.blend"),
    ]


def test_output_paths_are_unique_when_case_is_folded():
    """Windows and macOS fold case: ``A/x`` and ``a/x``, or ``Model`` and ``model``, are one file there."""
    relatives = [Path("A/x.ms3d"), Path("a/x.ms3d"), Path("m/Model.MS3D"), Path("m/model.ms3d"), Path("m/MODEL.mdl")]
    outputs = files.output_paths(relatives, ".glb")
    assert outputs == [
        Path("A/x.ms3d.glb"),
        Path("a/x.ms3d-2.glb"),  # even the source extension does not tell these apart
        Path("m/Model.MS3D.glb"),
        Path("m/model.ms3d-2.glb"),
        Path("m/MODEL.mdl.glb"),
    ]
    assert len({p.as_posix().casefold() for p in outputs}) == len(relatives)


def test_output_paths_stay_unique_against_names_that_look_numbered_or_extended():
    relatives = [Path(n) for n in ("x.ms3d", "x.mdl", "x.ms3d.mdl", "x.ms3d-2.ms3d", "X.MS3D.mdl", "x")]
    outputs = files.output_paths(relatives, ".blend")
    assert len({p.as_posix().casefold() for p in outputs}) == len(relatives)
    assert all(p.suffix == ".blend" for p in outputs)
    assert outputs == files.output_paths(relatives, ".blend")  # deterministic


def test_collect_mirrors_folders_and_the_common_folder_of_given_files(tmp_path):
    for side in ("p", "q"):
        (tmp_path / side / "a").mkdir(parents=True)
        (tmp_path / side / "a" / "x.ms3d").write_bytes(b"")
    p, q = tmp_path / "p", tmp_path / "q"
    assert [f.relative for f in files.collect([str(p), str(q)])] == [Path("a/x.ms3d"), Path("a/x.ms3d")]
    given = [str(p / "a" / "x.ms3d"), str(q / "a" / "x.ms3d")]
    assert [f.relative for f in files.collect(given)] == [Path("p/a/x.ms3d"), Path("q/a/x.ms3d")]
    climbing = str(p / "a" / ".." / ".." / "q" / "a" / "x.ms3d")  # a `..` never reaches the output path
    assert [f.relative for f in files.collect([climbing])] == [Path("x.ms3d")]
    twice = files.collect([str(p), str(p / "a" / "x.ms3d")])  # the same file named twice is converted once
    assert [f.relative for f in twice] == [Path("a/x.ms3d")]


# --- workers, with a stand-in for Blender -------------------------------------------------------------------


def test_a_crashed_worker_fails_only_its_file_and_leaves_nothing_behind(tmp_path, monkeypatch, capsys):
    started = fake_workers(monkeypatch, tmp_path)
    folder = tmp_path / "in"
    folder.mkdir()
    names = ["a.ms3d", "b.ms3d", "crash.ms3d", "d.ms3d", "e.ms3d", "f.ms3d"]
    for name in names:
        (folder / name).write_bytes(name.encode())
    out = tmp_path / "out"
    assert batch.main([str(folder), "-o", str(out), "--jobs", "2"]) == 1
    records = report_of(out / "report.json")
    assert len(records) == len(names)
    crash = records[str(folder / "crash.ms3d")]
    assert crash["status"] == "failed" and crash["error"] == "worker exited with status 3 on this file"
    assert [n for n in names if records[str(folder / n)]["status"] == "ok"] == [
        "a.ms3d",
        "b.ms3d",
        "d.ms3d",
        "e.ms3d",
        "f.ms3d",
    ]
    assert (out / "f.blend").read_bytes() == b"f.ms3d"
    assert len(started) == 3  # two workers, and a fresh one after the crash (files take 0.1 s: some are left)
    assert not (out / "crash.blend").exists() and hidden_leftovers(out) == []  # its half file is gone
    assert list((tmp_path / "system-tmp").iterdir()) == []  # the job files and worker temp folders too


def test_a_worker_that_never_starts_fails_its_files_without_a_restart_for_each(tmp_path, monkeypatch, capsys):
    started = fake_workers(monkeypatch, tmp_path, never_ready=True)
    folder = tmp_path / "in"
    folder.mkdir()
    for name in ("a.ms3d", "b.ms3d", "c.ms3d", "d.ms3d"):
        (folder / name).write_bytes(b"")
    out = tmp_path / "out"
    assert batch.main([str(folder), "-o", str(out), "--jobs", "2"]) == 1
    errors = {r["error"] for r in report_of(out / "report.json").values()}
    assert errors == {"worker exited with status 2 before its first file"}
    assert len(started) == 2
    assert list((tmp_path / "system-tmp").iterdir()) == []


# --- with Blender -------------------------------------------------------------------------------------------


def logged_outputs(log: Path, out: Path, names: list[str]) -> dict[str, Path]:
    """Outputs written as the batch writes them: a finished temporary file, logged, then moved into place."""
    outputs = {}
    for name in names:
        target, partial = out / name, out / f".{name}.t.partial.blend"
        partial.write_bytes(name.encode())
        log_output(log, target, partial)
        os.replace(partial, target)  # the move keeps the file's identity
        outputs[name] = target
    return outputs


def test_the_log_of_outputs_knows_only_the_very_files_it_logged(tmp_path):
    log, out = tmp_path / "report.outputs.jsonl", tmp_path / "out"
    out.mkdir()
    open_log(log)
    outputs = logged_outputs(log, out, ["a.blend", "b.blend", "c.blend"])
    with log.open("a") as f:
        f.write('{"output": "cut short by a ki')  # a kill in the middle of a line ...
    outputs |= logged_outputs(log, out, ["d.blend", "e.blend"])  # ... does not take the next line with it
    attempt = out / ".a.blend.u.partial.blend"
    attempt.write_bytes(b"a later attempt, refused at the move")
    log_output(log, outputs["a.blend"], attempt)  # a second identity for a.blend: the first still counts
    entries = read_log(log)
    assert sorted(entries) == sorted(str(p) for p in outputs.values())
    assert all(still_ours(p, entries[str(p)]) for p in outputs.values())
    outputs["b.blend"].write_bytes(b"changed by someone")  # changed since: not ours any more
    outputs["c.blend"].unlink()
    outputs["c.blend"].symlink_to(outputs["d.blend"])  # a link in its place: not ours
    (tmp_path / "elsewhere").mkdir()
    os.replace(outputs["e.blend"], tmp_path / "elsewhere" / "e.blend")
    linked = out / "linked"
    linked.symlink_to(tmp_path / "elsewhere")  # the very file, reached through a linked folder: not ours
    found = identity(tmp_path / "elsewhere" / "e.blend")
    assert still_ours(tmp_path / "elsewhere" / "e.blend", [found]) == found
    assert still_ours(linked / "e.blend", [found]) is None
    assert still_ours(outputs["b.blend"], entries[str(outputs["b.blend"])]) is None
    assert still_ours(outputs["c.blend"], entries[str(outputs["c.blend"])]) is None
    assert still_ours(None, [found]) is None and still_ours(out / "never-logged.blend", []) is None
    records = [{"status": "ok", "output": str(outputs["d.blend"]), "output_identity": identity(outputs["d.blend"])}]
    close_log(log, records)
    assert log.exists()  # a.blend is still ours and no record names it: kept for --resume, as it was
    records.append({"status": "ok", "output": str(outputs["a.blend"]), "output_identity": identity(outputs["a.blend"])})
    close_log(log, records)
    assert not log.exists()  # the report says all it says: removed


def test_what_is_not_our_log_is_neither_written_nor_removed(tmp_path):
    notes = tmp_path / "report.outputs.jsonl"
    notes.write_text("a user's own notes\n")
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me")
    link = tmp_path / "r2.outputs.jsonl"
    link.symlink_to(victim)
    folder = tmp_path / "r3.outputs.jsonl"
    folder.mkdir()
    for log in (notes, link, folder):
        with pytest.raises(NotOurLog, match="not a log of io-ms3d-mdl batch"):
            open_log(log)
        assert read_log(log) == {}
        close_log(log, [])
    partial = tmp_path / "partial.blend"
    partial.write_bytes(b"x")
    with pytest.raises(OSError):
        log_output(link, tmp_path / "x.blend", partial)  # never appended to through a link
    assert notes.read_text() == "a user's own notes\n" and victim.read_text() == "keep me"
    assert link.is_symlink() and folder.is_dir()


def test_an_earlier_output_is_checked_again_just_before_it_is_replaced(tmp_path):
    target = tmp_path / "m.blend"
    target.write_bytes(b"made by an earlier run")
    made = identity(target)
    partial = tmp_path / ".m.blend.t.partial.blend"
    partial.write_bytes(b"new")
    publish(partial, target, overwrite=False, replaces=made)  # still that file: replaced
    assert target.read_bytes() == b"new" and not partial.exists()
    made = identity(target)
    target.unlink()
    target.write_bytes(b"put there by the user meanwhile")
    partial.write_bytes(b"newer")
    with pytest.raises(OutputExists):
        publish(partial, target, overwrite=False, replaces=made)
    assert target.read_bytes() == b"put there by the user meanwhile"


@needs_blender
@pytest.mark.parametrize("as_files", [False, True])
def test_the_same_path_under_two_input_folders_gives_two_outputs(tmp_path, as_files):
    p, q = tmp_path / "p" / "a", tmp_path / "q" / "a"
    p.mkdir(parents=True)
    q.mkdir(parents=True)
    shutil.copy(EXAMPLE, p / "x.ms3d")
    (q / "x.ms3d").write_bytes(write_ms3d(quad_spec()))
    out = tmp_path / "out"
    inputs = [p / "x.ms3d", q / "x.ms3d"] if as_files else [tmp_path / "p", tmp_path / "q"]
    result = run_batch(*inputs, "-o", out, "--jobs", 2)
    assert result.returncode == 0, result.stdout + result.stderr
    records = report_of(out / "report.json")
    first, second = (Path(records[str(folder / "x.ms3d")]["output"]) for folder in (p, q))
    if as_files:  # mirrored below the files' common folder
        assert (first, second) == (out / "p" / "a" / "x.blend", out / "q" / "a" / "x.blend")
    else:  # both are a/x.ms3d below their folder: told apart deterministically
        assert (first, second) == (out / "a" / "x.ms3d.blend", out / "a" / "x.ms3d-2.blend")
    assert first.read_bytes() != second.read_bytes()
    assert meshes_in(first) == HOUSE and meshes_in(second) == {"quad"}


@needs_blender
def test_same_stem_in_one_folder_gives_unique_outputs_case_insensitively(tmp_path):
    folder = tmp_path / "in"
    (folder / "sub").mkdir(parents=True)
    if not case_sensitive(folder):
        pytest.skip("this file system folds case: X.ms3d and x.ms3d cannot both exist")
    shutil.copy(EXAMPLE, folder / "x.ms3d")
    write_source(character_spec(), folder, "x")  # x.mdl with its .vvd and .vtx
    (folder / "X.MS3D").write_bytes(write_ms3d(quad_spec()))
    (folder / "Sub").mkdir()
    shutil.copy(EXAMPLE, folder / "sub" / "y.ms3d")
    (folder / "Sub" / "y.ms3d").write_bytes(write_ms3d(box_spec()))
    out = tmp_path / "out"
    result = run_batch(folder, "-o", out)
    assert result.returncode == 0, result.stdout + result.stderr
    records = report_of(out / "report.json")
    outputs = {Path(name): Path(r["output"]).relative_to(out).as_posix() for name, r in records.items()}
    assert outputs == {
        folder / "X.MS3D": "X.MS3D.blend",
        folder / "x.mdl": "x.mdl.blend",
        folder / "x.ms3d": "x.ms3d-2.blend",  # x.ms3d.blend is X.MS3D.blend where case folds
        folder / "Sub" / "y.ms3d": "Sub/y.ms3d.blend",
        folder / "sub" / "y.ms3d": "sub/y.ms3d-2.blend",
    }
    assert len({o.casefold() for o in outputs.values()}) == len(outputs)
    assert meshes_in(out / "x.ms3d-2.blend") == HOUSE and meshes_in(out / "X.MS3D.blend") == {"quad"}
    assert meshes_in(out / "x.mdl.blend") and meshes_in(out / "x.mdl.blend").isdisjoint(HOUSE | {"quad"})
    assert meshes_in(out / "sub" / "y.ms3d-2.blend") == HOUSE
    assert meshes_in(out / "Sub" / "y.ms3d.blend") != HOUSE


@needs_blender
@pytest.mark.parametrize("jobs", [1, 2])
def test_existing_outputs_are_kept_unless_overwrite(tmp_path, jobs):
    folder = tmp_path / "in"
    folder.mkdir()
    shutil.copy(EXAMPLE, folder / "house.ms3d")
    (folder / "quad.ms3d").write_bytes(write_ms3d(quad_spec()))
    out = tmp_path / "out"
    out.mkdir()
    (out / "house.blend").write_bytes(b"precious")
    kept = run_batch(folder, "-o", out, "--jobs", jobs)
    assert kept.returncode == 1
    records = report_of(out / "report.json")
    house, quad = records[str(folder / "house.ms3d")], records[str(folder / "quad.ms3d")]
    assert house["status"] == "failed"
    assert house["error"] == f"output exists: {out / 'house.blend'} (use --overwrite)"
    assert (out / "house.blend").read_bytes() == b"precious"
    assert quad["status"] == "ok" and meshes_in(out / "quad.blend") == {"quad"}  # the batch went on
    assert "(use --overwrite)" in kept.stdout
    replaced = run_batch(folder, "-o", out, "--jobs", jobs, "--overwrite")
    assert replaced.returncode == 0, replaced.stdout + replaced.stderr
    assert meshes_in(out / "house.blend") == HOUSE
    assert hidden_leftovers(out) == []  # moved into place: no temporary names, no .blend1 backups


@needs_blender
def test_single_keeps_an_existing_file_and_creates_no_unused_folder(tmp_path):
    work = tmp_path / "work"
    work.mkdir()
    shutil.copy(EXAMPLE, work / "house.ms3d")
    (work / "all.blend").write_bytes(b"precious")
    kept = run_batch("house.ms3d", "--single", "all.blend", cwd=work)
    assert kept.returncode == 1
    (record,) = report_of(work / "all.report.json").values()
    assert record["error"] == f"output exists: {work / 'all.blend'} (use --overwrite)"
    assert (work / "all.blend").read_bytes() == b"precious"
    replaced = run_batch("house.ms3d", "--single", "all.blend", "--overwrite", cwd=work)
    assert replaced.returncode == 0, replaced.stdout + replaced.stderr
    assert meshes_in(work / "all.blend") == HOUSE
    assert report_of(work / "all.report.json")[str(work / "house.ms3d")]["output"] == str(work / "all.blend")
    assert sorted(p.name for p in work.iterdir()) == ["all.blend", "all.report.json", "house.ms3d"]  # no converted/


@needs_blender
@pytest.mark.parametrize(("jobs", "fmt", "textures"), [(1, "blend", "pack"), (2, "blend", "png"), (2, "glb", "pack")])
def test_temporary_files_are_removed_also_when_files_fail(tmp_path, jobs, fmt, textures):
    folder = tmp_path / "in"
    folder.mkdir()
    shutil.copy(EXAMPLE, folder / "house.ms3d")
    (folder / "broken.ms3d").write_bytes(b"MS3D000000\x04\0\0\0\xff\xff")
    env = fresh_tmpdir(tmp_path)
    out = tmp_path / "out"
    flags = ("--jobs", jobs, "--format", fmt, "--textures", textures)
    result = run_batch(folder, tmp_path / "missing.mdl", "-o", out, *flags, env=env)
    assert result.returncode == 1
    statuses = {Path(f).name: r["status"] for f, r in report_of(out / "report.json").items()}
    assert statuses == {"house.ms3d": "ok", "broken.ms3d": "failed", "missing.mdl": "failed"}
    assert sorted(p.name for p in out.iterdir() if p.name != "textures") == [f"house.{fmt}", "report.json"]
    assert hidden_leftovers(out) == []  # no .blend1 backup of a temporary .blend saved twice (--textures png)
    assert list(Path(env["TMPDIR"]).iterdir()) == []  # Blender's session folders and the job files included


@needs_blender
def test_anything_a_file_raises_fails_that_file_only_with_one_line():
    settings = Settings("blend", overwrite=False, token="t")
    task = Task(Path("model.ms3d"), None)

    def raising(exc):
        def import_file(path, textures):
            raise exc

        return import_file

    for exc, error in [
        (SystemExit(3), "SystemExit: 3"),
        (RecursionError("maximum depth"), "RecursionError: maximum depth"),
        (ValueError("two\nlines  of text"), "ValueError: two lines of text"),
    ]:
        record = blender_side.convert_one(raising(exc), task, settings)
        assert (record["status"], record["error"], record["file"]) == ("failed", error, "model.ms3d")
    with pytest.raises(KeyboardInterrupt):  # the user stopping the batch still does
        blender_side.convert_one(raising(KeyboardInterrupt()), task, settings)
