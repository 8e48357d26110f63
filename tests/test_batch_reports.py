"""Reports are input too: ``--merge-reports`` and ``--resume`` read reports a user may have edited or a disk may
have damaged. A report whose field has the wrong JSON type is refused with one message naming the file and the
field, and exit status 1, never a traceback (nor exit status 0); a file that is not a report at all, or a link
where a report should be, is refused as before (exit status 2), and nothing is written."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from batch_run import run_batch
from conftest import bpy
from ms3d_writer import quad_spec, write_ms3d

from io_ms3d_mdl.cli import batch

needs_blender = pytest.mark.skipif(bpy is None, reason="Blender (the bpy wheel) is not installed")


def good_report() -> dict:
    record = {"file": "a.ms3d", "status": "ok", "warnings": ["w"], "seconds": 0.5, "output": "a.blend"}
    record |= {"objects": 1, "vertices": 4, "triangles": 2, "materials": 0, "bones": 0, "actions": 0}
    record |= {"output_identity": {"ino": 1, "size": 2, "mtime_ns": 3}, "input_size": 10, "input_mtime_ns": 11}
    failed = {"file": "b.ms3d", "status": "failed", "warnings": [], "seconds": 0.1, "error": "broken"}
    return {
        "kind": "io_ms3d_mdl batch report",
        "settings": {"format": "blend"},
        "shard": "1/1",
        "inputs": 2,
        "complete": True,
        "seconds": 1.0,
        "files": [record, failed],
    }


# (where, the wrong value, the field the message names)
WRONG = [
    (("files", 0, "vertices"), "4", "files[0].vertices"),  # a count as a string
    (("files", 0, "objects"), True, "files[0].objects"),
    (("files", 0, "triangles"), -2, "files[0].triangles"),
    (("files", 0, "seconds"), [1, 2], "files[0].seconds"),  # seconds as a list
    (("files", 1, "error"), 7, "files[1].error"),  # error as a number
    (("files", 0, "warnings"), "one warning", "files[0].warnings"),
    (("files", 0, "warnings"), [1], "files[0].warnings"),
    (("files", 0, "status"), "done", "files[0].status"),
    (("files", 0, "file"), 12, "files[0].file"),
    (("files", 0, "output"), ["a.blend"], "files[0].output"),
    (("files", 0, "output_identity"), {"ino": "1", "size": 2, "mtime_ns": 3}, "files[0].output_identity"),
    (("files", 0, "input_size"), 1.5, "files[0].input_size"),
    (("files", 0, "reused"), "yes", "files[0].reused"),
    (("files", 1), "b.ms3d", "files[1]"),
    (("seconds",), "1.0", "seconds"),
    (("seconds",), float("inf"), "seconds"),
    (("inputs",), "2", "inputs"),
    (("complete",), 1, "complete"),
    (("shard",), "2/1", "shard"),
    (("shard",), ["1", "1"], "shard"),
    (("merged_from",), "r.json", "merged_from"),
]


def damaged(path: Path, where: tuple, value) -> Path:
    report = good_report()
    target = report
    for key in where[:-1]:
        target = target[key]
    target[where[-1]] = value
    path.write_text(json.dumps(report))
    return path


def test_a_good_report_merges(tmp_path, capsys):
    good = tmp_path / "good.json"
    good.write_text(json.dumps(good_report()))
    assert batch.main(["--merge-reports", str(tmp_path / "out.json"), str(good)]) == 1  # b.ms3d failed
    assert json.loads((tmp_path / "out.json").read_text())["files"][0]["vertices"] == 4


@pytest.mark.parametrize(("where", "value", "field"), WRONG, ids=[w[2] + ":" + type(w[1]).__name__ for w in WRONG])
def test_merge_refuses_a_report_with_a_wrong_type(tmp_path, capsys, where, value, field):
    good = tmp_path / "good.json"
    good.write_text(json.dumps(good_report()))
    bad = damaged(tmp_path / "bad.json", where, value)
    out = tmp_path / "out.json"
    assert batch.main(["--merge-reports", str(out), str(good), str(bad)]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"the report {bad} is damaged: {field} is " in err, err
    assert not out.exists()


def test_a_record_without_its_file_or_status_is_refused(tmp_path, capsys):
    report = good_report()
    del report["files"][1]["status"]
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(report))
    assert batch.main(["--merge-reports", str(tmp_path / "out.json"), str(bad)]) == 1
    assert f"{bad} is damaged: files[1] has no 'status'" in capsys.readouterr().err


def test_the_command_line_refuses_with_exit_status_1_and_no_traceback(tmp_path):
    """Through the command line, as a pipeline runs it: one line on stderr, status 1."""
    bad = damaged(tmp_path / "bad.json", ("files", 0, "seconds"), [1, 2])
    out = tmp_path / "out.json"
    run = run_batch("--merge-reports", out, bad, timeout=120)
    assert run.returncode == 1, run.stdout + run.stderr
    assert "Traceback" not in run.stderr and "files[0].seconds is a list" in run.stderr
    assert not out.exists()


def test_a_report_that_is_not_ours_or_is_a_link_is_refused_as_before(tmp_path, capsys):
    """Not JSON, another kind of file, or a link where a report (to read, or to write) is: exit status 2, and the
    file the link leads to is neither read as a report nor replaced."""
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    theirs = elsewhere / "theirs.json"
    theirs.write_text(json.dumps(good_report()))
    before = theirs.read_bytes()
    link = tmp_path / "link.json"
    link.symlink_to(theirs)
    good = tmp_path / "good.json"
    good.write_text(json.dumps(good_report()))
    assert batch.main(["--merge-reports", str(tmp_path / "out.json"), str(link)]) == 2
    assert "symbolic link" in capsys.readouterr().err
    assert batch.main(["--merge-reports", str(link), str(good)]) == 2  # the output a link: never written through
    assert "symbolic link" in capsys.readouterr().err
    assert theirs.read_bytes() == before and link.is_symlink()
    other = tmp_path / "other.json"
    other.write_text(json.dumps({**good_report(), "kind": "something else"}))
    assert batch.main(["--merge-reports", str(tmp_path / "out.json"), str(other)]) == 2
    assert "is not a report of io-ms3d-mdl batch" in capsys.readouterr().err


@needs_blender
@pytest.mark.parametrize(("where", "value", "field"), [WRONG[0], WRONG[3], WRONG[4]], ids=["count", "seconds", "error"])
def test_resume_refuses_an_earlier_report_with_a_wrong_type(tmp_path, capsys, where, value, field):
    """Before any file is converted: nothing is written, the damaged report is left as it is."""
    folder, out = tmp_path / "in", tmp_path / "out"
    folder.mkdir()
    (folder / "a.ms3d").write_bytes(write_ms3d(quad_spec()))
    out.mkdir()
    report = damaged(out / "report.json", where, value)
    before = report.read_bytes()
    assert batch.main([str(folder), "-o", str(out), "--resume"]) == 1
    err = capsys.readouterr().err
    assert f"the report {report} is damaged: {field} is " in err, err
    assert report.read_bytes() == before and sorted(p.name for p in out.iterdir()) == ["report.json"]
    assert batch.main([str(folder), "-o", str(out)]) == 1  # a new run would replace it: refused alike
    assert report.read_bytes() == before
