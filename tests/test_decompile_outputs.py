"""What the decompiler writes is what ``studiomdl`` accepts (must-be-true 3): every QC it writes for every Source and
GoldSrc sample (the coverage files included) passes the strict QC grammar (tests/qc_grammar.py, the SDK tokenizer's
rules) with every file it names present, and every SMD/VTA passes the strict reader (tests/smd_reader.py). Then the
failures Crowbar's users report, each as a test: NaN in SMDs, event names cut at 64 characters, names with spaces
that break the recompile, non-ASCII names turned into ``????``, truncated QCs."""

from __future__ import annotations

import math
import re
from pathlib import Path

import pytest
import qc_grammar
import smd_reader
from conftest import sample_files
from source_writer import SAttachment, SBone, character_spec, write_source

from io_ms3d_mdl.cli.goldsrc_info import is_goldsrc_companion
from io_ms3d_mdl.decompile import DecompileOptions, decompile
from io_ms3d_mdl.formats.source.mdl import read_mdl


def models() -> list[Path]:
    try:
        found = sample_files("source", "*.mdl") + sample_files("goldsrc", "*.mdl") + sample_files("vtmb", "*.mdl")
    except BaseException:  # no shared corpus: the parametrisation is empty and the suite says so
        return []
    return [p for p in found if not is_goldsrc_companion(p)]


def sample_id(path: Path) -> str:
    return "/".join(path.parts[-3:])


_DONE: dict[Path, tuple] = {}


def decompiled(path: Path, tmp_path_factory) -> tuple:
    """Decompile a sample once per session: (result, output folder)."""
    if path not in _DONE:
        out = tmp_path_factory.mktemp("decompiled") / path.stem
        _DONE[path] = (decompile(str(path), str(out), DecompileOptions()), out)
    return _DONE[path]


def check_outputs(result, out: Path) -> list[qc_grammar.Statement]:
    assert result.qc, f"{result.source}: no QC written"
    statements = qc_grammar.check_file(out / result.qc)
    for name in result.files:
        if name.lower().endswith((".smd", ".vta")):
            smd_reader.read(out / name)
    return statements


@pytest.mark.parametrize("path", models(), ids=sample_id)
def test_every_file_written_for_a_sample_passes_the_strict_checks(path, tmp_path_factory):
    result, out = decompiled(path, tmp_path_factory)
    statements = check_outputs(result, out)
    assert all(not Path(f).is_absolute() and ".." not in Path(f).parts for f in result.files)
    if result.engine == "source":  # not truncated: every sequence of the model is in the QC
        mdl = read_mdl(path)
        # A sequence with no animation of its own (scout's 304: the game plays them from its $includemodel models,
        # absent from the samples) cannot be a $sequence (it needs a file): left out, and the user is told.
        own = [s for s in mdl.sequences if s.animations]
        if len(own) < len(mdl.sequences):
            assert any(f"{len(mdl.sequences) - len(own)} sequences have no animation" in w for w in result.warnings)
        sequences = [s for s in statements if s.command == "$sequence"]
        assert len(sequences) == len(own), f"{len(sequences)} $sequence for {len(own)} sequences"
        assert {s.args[0].value for s in sequences} == {s.name for s in own}


# --- Crowbar's known failures, each a test -----------------------------------------------------------------------


def write_model(tmp_path: Path, **overrides) -> Path:
    spec = character_spec(includes=[], **overrides)
    write_source(spec, tmp_path / "models", "guy")
    return tmp_path / "models" / "guy.mdl"


def test_no_nan_or_inf_reaches_an_smd_and_the_user_is_told(tmp_path):
    """Crowbar writes NaN into SMDs when a file holds one; studiomdl then builds a broken model."""
    bones = [
        SBone("pelvis", -1, (0, 0, math.nan)),
        SBone("spine", 0, (math.inf, 0, 1), (0.0, 0.0, 0.7071068, 0.7071068)),
    ]
    path = write_model(tmp_path, bones=bones)
    result = decompile(str(path), str(tmp_path / "out"))
    check_outputs(result, tmp_path / "out")  # the strict reader refuses nan/inf in any spelling
    for name in result.files:  # and no number spelt otherwise (1.#QNAN, -nan(ind), inf) anywhere
        text = (tmp_path / "out" / name).read_text(encoding="utf-8")
        assert not re.search(r"(?i)(?<![a-z_])(?:[-+]?(?:nan|inf)|1\.#)", text), name
    assert any("finite" in w.lower() or "nan" in w.lower() for w in result.warnings), list(result.warnings)


def test_names_with_spaces_stay_one_name(tmp_path):
    """Crowbar's names with spaces broke the recompile: here they are quoted, so studiomdl reads one token."""
    bones = [SBone("pelvis bone", -1, (0, 0, 1)), SBone("spine 1", 0, (0, 0, 1))]
    path = write_model(tmp_path, bones=bones, attachments=[SAttachment("left eye", 1)])
    result = decompile(str(path), str(tmp_path / "out"))
    statements = check_outputs(result, tmp_path / "out")
    (attachment,) = [s for s in statements if s.command == "$attachment"]
    assert attachment.values()[:2] == ["left eye", "spine 1"]
    smd = smd_reader.read(tmp_path / "out" / next(f for f in result.files if f.endswith(".smd")))
    assert smd.names == ["pelvis bone", "spine 1"]


def test_non_ascii_names_are_kept_not_turned_into_question_marks(tmp_path):
    """Crowbar writes ``????`` for names beyond ASCII; the bytes are kept here (UTF-8 as stored)."""

    def utf8(text: str) -> str:  # the test writer stores names as Latin-1: these bytes are the name's UTF-8
        return text.encode("utf-8").decode("latin-1")

    bones = [SBone("bassin_é", -1, (0, 0, 1)), SBone(utf8("背骨"), 0, (0, 0, 1))]  # a Latin-1 name, a UTF-8 one
    path = write_model(tmp_path, bones=bones, attachments=[SAttachment(utf8("œil"), 1)])
    result = decompile(str(path), str(tmp_path / "out"))
    statements = check_outputs(result, tmp_path / "out")
    (attachment,) = [s for s in statements if s.command == "$attachment"]
    assert attachment.values()[:2] == ["œil", "背骨"]
    smd = smd_reader.read(tmp_path / "out" / next(f for f in result.files if f.endswith(".smd")))
    assert smd.names == ["bassin_é", "背骨"]
    assert all(b"?" not in (tmp_path / "out" / f).read_bytes() for f in result.files)
    data = b"".join((tmp_path / "out" / f).read_bytes() for f in result.files)
    assert "背骨".encode() in data and "bassin_é".encode("latin-1") in data  # the bytes as the model stores them


def test_long_names_are_written_whole(tmp_path):
    """Crowbar cuts event names at 64 characters; no name is cut here (a bone name of 100 characters)."""
    long = "bone_" + "x" * 95
    path = write_model(tmp_path, bones=[SBone("pelvis", -1, (0, 0, 1)), SBone(long, 0, (0, 0, 1))])
    result = decompile(str(path), str(tmp_path / "out"))
    check_outputs(result, tmp_path / "out")
    smd = smd_reader.read(tmp_path / "out" / next(f for f in result.files if f.endswith(".smd")))
    assert smd.names[1] == long


@pytest.mark.parametrize(
    "path", [p for p in models() if "scout" in p.name or "civilian" in p.name or "v_" in p.name], ids=sample_id
)
def test_event_names_are_not_cut_at_64_characters(path, tmp_path_factory):
    """Every event's name and options reach the QC as the model stores them (Crowbar cut them at 64)."""
    result, out = decompiled(path, tmp_path_factory)
    statements = qc_grammar.check_file(out / result.qc)
    text = (out / result.qc).read_bytes()
    events = [
        s.args[i + 1 :]
        for s in statements
        if s.command == "$sequence"
        for i, t in enumerate(s.args)
        if t.value == "event"
    ]
    if result.engine != "source":
        return
    mdl = read_mdl(path)
    stored = [e for seq in mdl.sequences for e in getattr(seq, "events", [])]
    if not stored:
        pytest.skip(f"{path.name} has no events")
    for event in stored:
        for value in (getattr(event, "options", ""), getattr(event, "name", "")):
            if value:
                assert value.encode("utf-8") in text, f"event text {value!r} is not whole in the QC"
    assert events
