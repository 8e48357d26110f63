"""Batch with the longest names a file system accepts (issue 31, item 5): the temporary name an output is written
under never makes a legal name illegal, and a name or path the file system refuses (a name over 255 bytes, a path
over 4,096) is one failed row naming the limit, never an internal error."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from archive_writer import WEntry, write_vpk
from batch_run import report_of, run_batch
from conftest import bpy
from ms3d_writer import quad_spec, write_ms3d

from io_ms3d_mdl.cli.safe_write import NAME_MAX, partial_path

needs_blender = pytest.mark.skipif(bpy is None, reason="Blender (the bpy wheel) is not installed")
QUAD = write_ms3d(quad_spec())


@pytest.fixture
def tmp_path(tmp_path):
    return tmp_path.resolve()


def leftovers(folder: Path) -> list[str]:
    return [p.name for p in folder.rglob("*") if p.name.startswith(".") or p.name.endswith(("@", ".blend1"))]


@pytest.mark.parametrize("length", [230, 245, 249, 250, 251, 254, 255])
def test_the_temporary_name_fits_wherever_the_final_one_does(length):
    for suffix in (".blend", ".glb"):
        target = Path("out") / ("é" * ((length - len(suffix)) // 2) + "a" * ((length - len(suffix)) % 2) + suffix)
        assert len(os.fsencode(target.name)) == length
        partial = partial_path(target, "0123456789ab").name
        # Blender saves a .blend through ``<name>@`` and may leave ``<name>1``: those must fit too
        assert len(os.fsencode(partial)) + 1 <= NAME_MAX, (length, partial)
        assert partial.startswith(".") and partial.endswith(suffix)
        assert partial_path(target, "0123456789ab") == partial_path(target, "0123456789ab")  # found again after a kill
    assert partial_path(Path("a" * 240 + ".blend"), "t") != partial_path(Path("a" * 239 + "b.blend"), "t")


@needs_blender
def test_names_of_230_to_249_bytes_convert_and_longer_ones_fail_cleanly(tmp_path):
    folder = tmp_path / "in"
    folder.mkdir()
    names = {n: "m" * (n - len(".ms3d")) + ".ms3d" for n in (230, 240, 245, 249, 250, 255)}
    for name in names.values():
        (folder / name).write_bytes(QUAD)
    out = tmp_path / "out"
    result = run_batch(folder, "-o", out, "--jobs", 1, timeout=600)
    records = report_of(out / "report.json")
    for length, name in names.items():
        record = records[str(folder / name)]
        if length + 1 <= NAME_MAX:  # ".ms3d" → ".blend": one byte more
            assert record["status"] == "ok", record
            assert Path(record["output"]).name == name[: -len(".ms3d")] + ".blend"
        else:
            assert record["status"] == "failed"
            assert "255 bytes" in record["error"] and "Error" not in record["error"], record["error"]
    assert result.returncode == 1
    assert leftovers(out) == []


@needs_blender
def test_an_archive_entry_in_a_300_character_folder_fails_cleanly(tmp_path):
    deep = "d" * 300
    archive = write_vpk(
        tmp_path / "game", "pak01", [WEntry(f"models/{deep}/x.mdl", b"IDST"), WEntry("models/y.ms3d", QUAD)]
    )
    out = tmp_path / "out"
    result = run_batch("--vpk", archive, "-o", out, timeout=600)
    records = report_of(out / "report.json")
    failed = records[os.path.join(str(archive), "models", deep, "x.mdl")]
    assert failed["status"] == "failed"
    assert "255 bytes" in failed["error"] and "Error" not in failed["error"], failed["error"]
    assert records[os.path.join(str(archive), "models", "y.ms3d")]["status"] == "ok"
    assert result.returncode == 1


@contextmanager
def deep_tree(top: Path, depth: int, step: str) -> Iterator[Path]:
    """``top/step/step/…/model.ms3d``, made one folder at a time (the whole path is past what the OS takes), and
    taken down again when the test ends: pytest's own clean-up of old temporary folders recurses once per level
    (``shutil.rmtree`` on Python 3.11) and a 3,000-deep tree left behind ends a later session in RecursionError."""
    fd = os.open(top, os.O_RDONLY | os.O_DIRECTORY)
    try:
        for _ in range(depth):
            os.mkdir(step, dir_fd=fd)
            inner = os.open(step, os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
            os.close(fd)
            fd = inner
        model = os.open("model.ms3d", os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=fd)
        os.write(model, QUAD)
        os.close(model)
    finally:
        os.close(fd)
    try:
        yield top.joinpath(*[step] * depth, "model.ms3d")
    finally:
        take_down(top / step, step)


def take_down(first: Path, step: str) -> None:
    """Removes a ``step/step/…`` chain level by level through short paths: the child is lifted beside its parent,
    the emptied parent goes, the child takes its name."""
    lifted = first.with_name(first.name + ".lift")
    while first.is_dir():
        child = first / step
        if child.is_dir():
            child.rename(lifted)
        for leftover in first.iterdir():
            leftover.unlink()
        first.rmdir()
        if lifted.is_dir():
            lifted.rename(first)


@needs_blender
@pytest.mark.skipif(not hasattr(os, "O_DIRECTORY"), reason="made through folder descriptors (POSIX)")
def test_a_path_over_4096_characters_fails_cleanly(tmp_path):
    folder = tmp_path / "in"
    folder.mkdir()
    (folder / "short.ms3d").write_bytes(QUAD)
    with deep_tree(folder, 20, "p" * 220) as deep:
        assert len(str(deep)) > 4096
        out = tmp_path / "out"
        result = run_batch(folder, "-o", out, timeout=600)
    records = report_of(out / "report.json")
    assert records[str(folder / "short.ms3d")]["status"] == "ok"
    (row,) = [r for f, r in records.items() if f != str(folder / "short.ms3d")]
    assert str(deep).startswith(row["file"])  # the first folder past the limit: nothing below it can be listed
    assert row["status"] == "failed" and "4,096 bytes" in row["error"] and "Error" not in row["error"], row
    assert result.returncode == 1
    assert "internal error" not in result.stdout + result.stderr


def test_an_input_the_os_would_refuse_is_left_out_saying_why(tmp_path, capsys):
    """``--files-from`` is text: a line may hold a NUL. It is left out with a note, not "embedded null byte"."""
    from io_ms3d_mdl.cli.files import collect

    (tmp_path / "real.ms3d").write_bytes(QUAD)
    found = collect([str(tmp_path / "a\0b.ms3d"), str(tmp_path / "real.ms3d")])
    assert [f.source.name for f in found] == ["real.ms3d"]
    assert "NUL" in capsys.readouterr().err


def test_an_output_name_the_os_would_refuse_is_a_clean_failure(tmp_path):
    from io_ms3d_mdl.cli.safe_write import NameTooLong, check_name_lengths

    with pytest.raises(NameTooLong, match="NUL"):
        check_name_lengths(tmp_path / "out" / "a\0b.blend", tmp_path / "out")
    with pytest.raises(NameTooLong, match="255 bytes"):
        check_name_lengths(tmp_path / "out" / ("x" * 256) / "m.blend", tmp_path / "out")
    check_name_lengths(tmp_path / "out" / ("x" * 255) / ("y" * 249 + ".blend"), tmp_path / "out")


def test_a_link_in_an_input_folder_to_a_model_elsewhere_is_left_out(tmp_path, capsys):
    """A pack converted whole cannot ship a link to a user's own model and have it converted into the outputs; a
    link to a model inside the pack is still converted."""
    from io_ms3d_mdl.cli.files import collect

    pack, private = tmp_path / "pack", tmp_path / "private"
    pack.mkdir()
    private.mkdir()
    (private / "mine.ms3d").write_bytes(QUAD)
    (pack / "theirs.ms3d").write_bytes(QUAD)
    (pack / "stolen.ms3d").symlink_to(private / "mine.ms3d")
    (pack / "alias.ms3d").symlink_to(pack / "theirs.ms3d")
    (pack / "away").symlink_to(private)  # a linked folder is not walked
    found = collect([str(pack)])
    assert [f.source for f in found] == [(pack / "theirs.ms3d").resolve()]  # (alias.ms3d is theirs.ms3d: once)
    assert "1 links below" in capsys.readouterr().err


@pytest.mark.skipif(not hasattr(os, "O_DIRECTORY"), reason="made through folder descriptors (POSIX)")
def test_a_tree_3000_folders_deep_is_listed_without_recursion(tmp_path):
    """``os.walk`` recursed on Python 3.11 (Blender 4.2–5.0): 3,000 one-letter folders raised RecursionError in the
    batch's folder search and the game browser's listing. What lies past PATH_MAX is a row naming the limit."""
    from io_ms3d_mdl.cli.files import models_below
    from io_ms3d_mdl.filesystem import mounts

    game = tmp_path / "game"
    (game / "models").mkdir(parents=True)
    (game / "gameinfo.txt").write_text('"GameInfo" { game "Deep" }')
    (game / "models" / "top.mdl").write_bytes(b"IDST")
    with deep_tree(game / "models", 3000, "a"):
        found = models_below(game)
        assert [f.relative.as_posix() for f in found][-1] == "models/top.mdl"
        assert len(found) == 2 and len(str(found[0].source)) >= 4000  # the first folder past PATH_MAX
        assert [e.name for e in mounts.list_models([str(game)])] == ["models/top.mdl"]
    assert not (game / "models" / "a").exists()
