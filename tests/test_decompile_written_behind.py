"""A whole decompile's files are made and written by a second thread (``filesystem.written_behind``): its errors
still stop the decompile, nothing is left behind, only files it made are removed, and what a writer hands over
is written as it was then."""

from __future__ import annotations

import errno
import os
import time

import numpy as np
import pytest
from source_writer import SAnimation, SNode, character_spec, write_source

from io_ms3d_mdl.decompile import decompile
from io_ms3d_mdl.decompile.output import Output
from io_ms3d_mdl.filesystem import no_links, written_behind


def _model(tmp_path, animations: int = 4):
    still = [SNode(0, ("q48", (1, 0, 0, 0)), ("v48", (0, 0, 0)))]
    spec = character_spec(animations=[SAnimation(f"a{n}", 2, still) for n in range(animations)], includes=[])
    return write_source(spec, tmp_path / "in")


def _everything(folder):
    return sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*")) if folder.exists() else []


def test_a_write_failing_in_the_thread_stops_the_decompile_and_leaves_nothing(tmp_path, monkeypatch):
    model = _model(tmp_path)
    real, calls = os.write, []

    def full_disk(descriptor, data):
        calls.append(descriptor)
        if len(calls) == 3:
            raise OSError(errno.ENOSPC, "No space left on device")
        return real(descriptor, data)

    monkeypatch.setattr(written_behind.os, "write", full_disk)
    out = tmp_path / "out"
    with pytest.raises(OSError, match="No space left"):
        decompile(str(model), str(out))
    assert len(calls) == 3  # (nothing more was written after the error)
    assert _everything(out) == []  # no file, no partial, no folder it made
    assert not out.exists()


def test_files_made_ahead_and_not_yet_taken_stay_few(tmp_path, monkeypatch):
    """Each holds a descriptor: a folder expecting thousands of files gets ``MADE_AHEAD`` at a time."""
    monkeypatch.setattr(written_behind, "MADE_AHEAD", 5)
    output = Output(tmp_path / "out", staged=True)
    try:
        output.expect("anims", 1000)
        time.sleep(0.5)
        assert len(os.listdir(tmp_path / "out" / "anims")) == 5
    finally:
        output.close()
    assert _everything(tmp_path / "out") == []


def test_a_file_the_thread_could_not_make_stops_it_and_only_files_it_made_are_removed(tmp_path, monkeypatch):
    model = _model(tmp_path)
    real_create, real_unlink = no_links.Folder.create, no_links.Folder.unlink
    made, removed = [], []

    def refused(self, name, exclusive=True):
        if len(made) == 4:
            raise PermissionError(errno.EACCES, "Permission denied", name)
        descriptor = real_create(self, name, exclusive)
        made.append(name)
        return descriptor

    def unlink(self, name):
        removed.append(name)
        return real_unlink(self, name)

    monkeypatch.setattr(no_links.Folder, "create", refused)
    monkeypatch.setattr(no_links.Folder, "unlink", unlink)
    out = tmp_path / "out"
    out.mkdir()
    (out / "mine.txt").write_text("the user's")
    with pytest.raises(PermissionError):
        decompile(str(model), str(out))
    assert _everything(out) == ["mine.txt"]
    assert set(removed) == set(made)  # a temporary name never made (someone else's, perhaps) is left alone


def test_an_array_changed_after_it_was_written_is_written_as_it_was(tmp_path):
    output = Output(tmp_path / "out", staged=True)
    values = np.arange(4, dtype=np.uint8)
    try:
        with output.open("a.bin") as stream:
            stream.write(values)
            values[:] = 9  # the thread may not have written it yet
        output.publish()
    finally:
        output.close()
    assert (tmp_path / "out" / "a.bin").read_bytes() == bytes([0, 1, 2, 3])


def test_what_is_handed_over_but_not_written_stays_within_its_bound(tmp_path, monkeypatch):
    """The writer waits while the thread is behind by more than ``pending_bytes`` (memory stays bounded)."""
    monkeypatch.setattr(written_behind, "PIECE_BYTES", 10)
    behind = written_behind.WrittenBehind(pending_bytes=100)
    seen = []
    real_put = behind._put

    def put(what, file, chunks, size, check=True):
        real_put(what, file, chunks, size, check)
        seen.append(behind._pending)

    behind._put = put
    folder = no_links.open_root(tmp_path)
    try:
        stream = written_behind.BehindStream(behind, written_behind.BehindFile(folder, "x"))
        for _ in range(200):
            stream.write(b"0123456789")
        stream.flush(last=True)
        behind.finish()
    finally:
        behind.close()
        folder.close()
    assert (tmp_path / "x").read_bytes() == b"0123456789" * 200
    assert max(seen) <= 100 + 10


def test_files_made_ahead_are_used_in_turn_and_the_ones_left_over_removed(tmp_path):
    """``expect`` has the thread make a folder's files before they are asked for; the ones never asked for (an
    animation skipped) are removed, and so is a folder that got none."""
    out = tmp_path / "out"
    output = Output(out, staged=True)
    try:
        output.expect("anims", 5)
        output.expect("none", 3)
        behind = output._behind
        deadline = time.monotonic() + 10
        while sum(map(len, behind._spares.values())) < 8 and time.monotonic() < deadline:
            time.sleep(0.01)
        made = [file.name for file in behind._spares[output.folder("anims")]]
        assert len(made) == 5
        for n in range(3):
            output.write(output.name(f"a{n}", ".smd", "anims"), b"x%d" % n)
        assert [name for name in output._made_behind] == made[:3]  # (taken in turn)
        output.publish()
    finally:
        output.close()
    assert _everything(out) == ["anims", "anims/a0.smd", "anims/a1.smd", "anims/a2.smd"]
    assert [(out / f"anims/a{n}.smd").read_bytes() for n in range(3)] == [b"x0", b"x1", b"x2"]


def test_a_decompile_with_files_made_ahead_refused_half_way_leaves_nothing(tmp_path, monkeypatch):
    model = _model(tmp_path, animations=6)
    from io_ms3d_mdl.errors import FormatError

    real = Output.open
    calls = []

    def refuse_the_third_animation(self, relative):
        if relative.startswith("anims/"):
            calls.append(relative)
            if len(calls) == 3:
                raise FormatError(str(model), 0, "refused half-way")
        return real(self, relative)

    monkeypatch.setattr(Output, "open", refuse_the_third_animation)
    out = tmp_path / "out"
    with pytest.raises(FormatError, match="half-way"):
        decompile(str(model), str(out))
    assert not out.exists()
