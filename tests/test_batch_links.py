"""Outputs never follow a link (``io_ms3d_mdl/cli/no_links.py``): a pack converted where it lies (``cd pack &&
io-ms3d-mdl batch .`` writes into ``pack/converted``) may ship links in the output tree, at a folder, at a file, at
the report or the log of outputs, or swap one in while the batch runs. Whatever it plants, nothing outside the
output folder changes, and the output folder is never read as input."""

from __future__ import annotations

import hashlib
import json
import os
import sys
from pathlib import Path

import pytest
from batch_run import run_batch
from conftest import bpy
from ms3d_writer import quad_spec, write_ms3d

from io_ms3d_mdl.cli import no_links
from io_ms3d_mdl.cli.files import Task
from io_ms3d_mdl.cli.no_links import LinkInTheWay, output_folder
from io_ms3d_mdl.cli.safe_write import discard_in, publish_in, write_text
from io_ms3d_mdl.cli.settings import Settings

needs_blender = pytest.mark.skipif(bpy is None, reason="Blender (the bpy wheel) is not installed")
pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="symbolic links need privileges on Windows")


@pytest.fixture
def tmp_path(tmp_path):
    return tmp_path.resolve()


def state(folder: Path) -> dict[str, str]:
    """Every entry below ``folder`` (links as links) with its content's hash: what must not change."""
    found = {}
    for top, dirs, names in os.walk(folder):
        for name in dirs + names:
            path = Path(top) / name
            rel = path.relative_to(folder).as_posix()
            if path.is_symlink():
                found[rel] = "-> " + os.readlink(path)
            elif path.is_file():
                found[rel] = hashlib.sha256(path.read_bytes()).hexdigest()
            else:
                found[rel] = "folder"
    return found


def pack(tmp_path: Path) -> tuple[Path, Path]:
    """``pack/`` with models in two folders, and ``elsewhere/`` (the user's files) beside it."""
    folder = tmp_path / "pack"
    (folder / "sub").mkdir(parents=True)
    (folder / "top.ms3d").write_bytes(write_ms3d(quad_spec()))
    (folder / "sub" / "m.ms3d").write_bytes(write_ms3d(quad_spec()))
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "m.blend").write_bytes(b"the user's own file")
    (elsewhere / "report.json").write_text("the user's own report")
    return folder, elsewhere


def records(report: Path) -> dict[str, dict]:
    return {Path(r["file"]).name: r for r in json.loads(report.read_text())["files"]}


# --- without Blender: the walk itself -----------------------------------------------------------------------------


@pytest.mark.parametrize("by_descriptor", [True, False], ids=["descriptors", "lstat (Windows)"])
def test_a_link_on_the_way_is_refused_at_every_step(tmp_path, monkeypatch, by_descriptor):
    monkeypatch.setattr(no_links, "BY_DESCRIPTOR", by_descriptor and no_links.BY_DESCRIPTOR)
    root, elsewhere = tmp_path / "out", tmp_path / "elsewhere"
    (root / "a").mkdir(parents=True)
    elsewhere.mkdir()
    (root / "a" / "link").symlink_to(elsewhere)
    (root / "file").write_text("x")
    before = state(elsewhere)
    for folder in (root / "a" / "link", root / "a" / "link" / "deeper", root / "file" / "x"):
        with pytest.raises(LinkInTheWay, match="outputs never follow links"), output_folder(folder, root):
            pass
    with output_folder(root / "a" / "new" / "deeper", root) as made:  # made one step at a time
        assert made.path == root / "a" / "new" / "deeper"
    assert (root / "a" / "new" / "deeper").is_dir() and state(elsewhere) == before
    with pytest.raises(FileNotFoundError), output_folder(root / "missing", root, create=False):
        pass
    assert not (root / "missing").exists()


def test_a_report_is_written_beside_its_place_never_through_a_link(tmp_path):
    root, elsewhere = tmp_path / "out", tmp_path / "elsewhere"
    (root).mkdir()
    elsewhere.mkdir()
    (root / "sub").symlink_to(elsewhere)
    with pytest.raises(LinkInTheWay):
        write_text(root / "sub" / "report.json", "{}", root)
    (root / "report.json").symlink_to(elsewhere / "theirs.json")
    (elsewhere / "theirs.json").write_text("theirs")
    write_text(root / "report.json", "{}", root)  # the link itself is replaced, what it leads to is not touched
    assert not (root / "report.json").is_symlink() and (root / "report.json").read_text() == "{}"
    assert state(elsewhere) == {"theirs.json": state(elsewhere)["theirs.json"]}
    assert (elsewhere / "theirs.json").read_text() == "theirs"


@pytest.mark.skipif(not no_links._proc_names_folders(), reason="needs /proc/self/fd (Linux)")
def test_a_folder_swapped_for_a_link_meanwhile_leads_nowhere(tmp_path):
    """What Blender is given (``/proc/self/fd/N/name``) is the folder opened at the start: swapping the path for
    a link while the file is written and moved into place changes nothing outside."""
    root, elsewhere = tmp_path / "out", tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "m.blend").write_text("the user's")
    before = state(elsewhere)
    with output_folder(root / "sub", root) as folder:
        (root / "sub").rename(root / "moved")
        (root / "sub").symlink_to(elsewhere)  # swapped in during the run
        Path(folder.entry(".m.blend.t.partial.blend")).write_bytes(b"output")  # as Blender writes by path
        publish_in(folder, ".m.blend.t.partial.blend", "m.blend", overwrite=True)
        discard_in(folder, ".m.blend.t.partial.blend")
    assert state(elsewhere) == before
    assert (root / "moved" / "m.blend").read_bytes() == b"output"


# --- the batch, with Blender ---------------------------------------------------------------------------------------


@needs_blender
@pytest.mark.parametrize("overwrite", [False, True], ids=["plain", "--overwrite"])
def test_a_linked_folder_in_the_output_tree_gets_nothing(tmp_path, overwrite):
    """The issue's case: ``converted/sub`` shipped as a link to elsewhere. Its file fails, naming the link; the
    others convert; elsewhere (where a file of the same name waits) is untouched, with --overwrite too."""
    folder, elsewhere = pack(tmp_path)
    (folder / "converted").mkdir()
    (folder / "converted" / "sub").symlink_to(elsewhere)
    before = state(elsewhere)
    result = run_batch(".", *(["--overwrite"] if overwrite else []), cwd=folder)
    assert result.returncode == 1, result.stdout + result.stderr
    report = records(folder / "converted" / "report.json")
    assert report["top.ms3d"]["status"] == "ok" and (folder / "converted" / "top.blend").is_file()
    assert report["m.ms3d"]["status"] == "failed" and "symbolic link" in report["m.ms3d"]["error"]
    assert state(elsewhere) == before
    assert (folder / "converted" / "sub").is_symlink()


@needs_blender
def test_a_link_at_an_output_file_is_never_written_through(tmp_path):
    """``converted/top.blend`` shipped as a link to the user's file: refused as an existing output; with
    --overwrite the link itself is replaced by the output, and the user's file stays as it was."""
    folder, elsewhere = pack(tmp_path)
    (folder / "converted").mkdir()
    (folder / "converted" / "top.blend").symlink_to(elsewhere / "m.blend")
    before = state(elsewhere)
    refused = run_batch(".", cwd=folder)
    assert refused.returncode == 1 and "output exists" in records(folder / "converted" / "report.json")["top.ms3d"].get(
        "error", ""
    ), refused.stdout + refused.stderr
    replaced = run_batch(".", "--overwrite", cwd=folder)
    assert replaced.returncode == 0, replaced.stdout + replaced.stderr
    out = folder / "converted" / "top.blend"
    assert not out.is_symlink() and out.stat().st_size > 1000
    assert state(elsewhere) == before


@needs_blender
def test_the_output_folder_itself_a_link_inside_the_inputs_is_refused(tmp_path):
    folder, elsewhere = pack(tmp_path)
    (folder / "converted").symlink_to(elsewhere)
    before = state(elsewhere)
    result = run_batch(".", "--overwrite", cwd=folder)
    assert result.returncode == 2 and "is a symbolic link" in result.stderr, result.stdout + result.stderr
    assert state(elsewhere) == before


@needs_blender
def test_the_output_folder_inside_the_inputs_is_never_read_as_input(tmp_path):
    folder, _ = pack(tmp_path)
    (folder / "converted" / "planted").mkdir(parents=True)
    (folder / "converted" / "planted" / "bait.ms3d").write_bytes(write_ms3d(quad_spec()))
    result = run_batch(".", cwd=folder)
    assert result.returncode == 0, result.stdout + result.stderr
    assert sorted(records(folder / "converted" / "report.json")) == ["m.ms3d", "top.ms3d"]
    assert "not read as input" in result.stderr
    assert not (folder / "converted" / "converted").exists()


@needs_blender
def test_resume_outputs_never_follow_links(tmp_path):
    """--resume reads the report and the log of outputs and replaces what an earlier run made: a report or a log
    planted as a link is refused (exit 2) and not followed; a folder swapped for a link after the first run
    fails its file, and nothing outside changes."""
    folder, elsewhere = pack(tmp_path)
    first = run_batch(".", cwd=folder)
    assert first.returncode == 0, first.stdout + first.stderr
    converted = folder / "converted"
    before = state(elsewhere)
    report = converted / "report.json"
    saved = report.read_bytes()
    report.unlink()
    report.symlink_to(elsewhere / "report.json")
    refused = run_batch(".", "--resume", cwd=folder)
    assert refused.returncode == 2 and "symbolic link" in refused.stderr, refused.stdout + refused.stderr
    report.unlink()
    report.write_bytes(saved)
    log = converted / "report.outputs.jsonl"
    log.symlink_to(elsewhere / "m.blend")
    refused = run_batch(".", "--resume", cwd=folder)
    assert refused.returncode == 2 and "not a log of io-ms3d-mdl batch" in refused.stderr, refused.stderr
    log.unlink()
    (folder / "sub" / "m.ms3d").write_bytes(write_ms3d(quad_spec()) + b"")  # touched: to be converted again
    os.utime(folder / "sub" / "m.ms3d", ns=(1, 1))
    (converted / "sub").rename(converted / "sub-was")
    (converted / "sub").symlink_to(elsewhere)  # the earlier output's folder, now a link to where m.blend waits
    resumed = run_batch(".", "--resume", "--overwrite", cwd=folder)
    assert resumed.returncode == 1, resumed.stdout + resumed.stderr
    assert "symbolic link" in records(report)["m.ms3d"]["error"]
    assert state(elsewhere) == before


@needs_blender
@pytest.mark.skipif(not no_links._proc_names_folders(), reason="needs /proc/self/fd (Linux)")
def test_a_link_swapped_in_while_blender_imports_gets_nothing(tmp_path, addon):
    """In the worker's own code path: while the model imports, its output folder is swapped for a link to the
    user's folder; Blender still saves into the folder opened before, and the user's folder is untouched."""
    from io_ms3d_mdl.cli.blender_side import convert_one, importer

    folder, elsewhere = pack(tmp_path)
    root = tmp_path / "out"
    (root / "sub").mkdir(parents=True)
    before = state(elsewhere)
    settings = Settings("blend", True, "tok", output_root=root)
    real = importer(settings)

    def swapping(path, textures):
        result = real(path, textures)
        (root / "sub").rename(root / "sub-was")
        (root / "sub").symlink_to(elsewhere)
        return result

    record = convert_one(swapping, Task(folder / "sub" / "m.ms3d", root / "sub" / "m.blend"), settings)
    assert record["status"] == "ok", record
    assert state(elsewhere) == before
    assert (root / "sub-was" / "m.blend").stat().st_size > 1000
    assert sorted(p.name for p in (root / "sub-was").iterdir()) == ["m.blend"]  # no temporary file left
