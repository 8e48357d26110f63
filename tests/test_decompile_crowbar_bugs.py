"""The decompile failures Crowbar's users keep reporting, each a test: event names longer than 64 characters kept
whole, flex and other names with spaces quoted so studiomdl reads them as one token, non-ASCII names kept (not
``????``), no NaN or inf anywhere, whatever the model holds."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from conftest import sample_path
from smd_strict import qc_commands, qc_tokens, read_smd

from io_ms3d_mdl.decompile.output import Output
from io_ms3d_mdl.decompile.registry import DecompileJob, DecompileOptions, DecompileResult
from io_ms3d_mdl.decompile.source.model import decompile_source
from io_ms3d_mdl.formats.source import read_mdl
from io_ms3d_mdl.formats.source.model import MdlEvent

LONG_EVENT = "AE_CL_PLAYSOUND weapons/a_very_long/path/to/a_sound_event_name_that_runs_past_64_chars.wav"
ODD = "ünïcödé näme ✓"


def run(mdl, path, out) -> DecompileResult:
    """The Source decompiler on a model changed in memory (names, events, numbers)."""
    from io_ms3d_mdl.access import Confinement, confined

    result = DecompileResult(str(path), str(out), "source")
    data = path.read_bytes()
    import io_ms3d_mdl.decompile.source.model as model_module

    original = model_module.read_mdl_bytes
    model_module.read_mdl_bytes = lambda data, p: mdl
    output = Output(out)
    try:
        with confined(Confinement.for_model(str(path))):
            decompile_source(DecompileJob(str(path), data, output, DecompileOptions(), result))
    finally:
        model_module.read_mdl_bytes = original
    result.files = list(output.files)
    return result


@pytest.fixture
def cube():
    path = sample_path("source", "Fennecai__Aperture-Continued/models/aperture/monster_cube.mdl")
    return path, read_mdl(path)


def test_long_event_names_and_odd_names_survive(tmp_path, cube):
    path, mdl = cube
    assert mdl.sequences
    seq = mdl.sequences[0]
    seq.events.append(MdlEvent(0.5, 0, LONG_EVENT))
    seq.events.append(MdlEvent(0.25, 5004, ODD + " options"))
    mdl.sequences[0] = dataclasses.replace(seq, name=ODD, activity="ACT_IDLE")
    mdl.bone_names[0] = ODD + " bone"
    result = run(mdl, path, tmp_path)
    text = (tmp_path / result.qc).read_text("utf-8")
    commands = qc_commands(text)
    sequence = next(c for c in commands if c[0] == "$sequence" and c[1] == ODD)
    assert LONG_EVENT in sequence and len(LONG_EVENT) > 64
    assert ODD + " options" in sequence
    smd = read_smd((tmp_path / next(f for f in result.files if f.endswith(".smd"))).read_bytes())
    assert smd.names[0] == ODD + " bone"
    assert "?" not in text.replace("//", "")


def test_flex_names_with_spaces_are_one_token(tmp_path):
    path = sample_path("source", "GoodFishMan__mercenaries/models/player/scout.mdl")
    mdl = read_mdl(path)
    assert mdl.flex_names
    mdl.flex_names[1] = "close lid lower right"  # (0 is "default", which no mesh uses)
    mdl.flex_controllers[0] = ("right lid", *mdl.flex_controllers[0][1:])
    result = run(mdl, path, tmp_path)
    text = (tmp_path / result.qc).read_text("utf-8")
    tokens = qc_tokens(text)
    assert "close lid lower right" in tokens
    assert "right lid" in tokens
    vta = next(f for f in result.files if f.endswith(".vta"))
    read_smd((tmp_path / vta).read_bytes())


def test_nan_and_inf_never_reach_a_file(tmp_path, cube):
    path, mdl = cube
    bones = mdl.bones.copy()
    bones["pos"][0] = [np.nan, np.inf, -np.inf]
    mdl.bones = bones
    mdl.attachments[0].matrix[0, 3] = np.nan if mdl.attachments else 0
    result = run(mdl, path, tmp_path)
    for relative in result.files:
        data = (tmp_path / relative).read_bytes().lower()
        assert b"nan" not in data and b"inf" not in data, relative
    assert any("nan/inf" in w for w in result.warnings)


@pytest.mark.parametrize(("stored", "other"), [(b"c\xe9ntral", b"c\xc3\xa9ntral"), (b"c\xc3\xa9ntra", b"c\xe9ntra")])
def test_non_ascii_names_come_back_with_the_bytes_stored(tmp_path, stored, other):
    """A bone name stored in cp1252 is written in cp1252, one stored in UTF-8 in UTF-8 (Crowbar writes '????')."""
    import io_ms3d_mdl

    folder = sample_path("source", "Fennecai__Aperture-Continued/models/aperture/monster_cube.mdl").parent
    data = (folder / "monster_cube.mdl").read_bytes()
    assert data.count(b"\0central_bits\0") == 1
    data = data.replace(b"\0central_bits\0", b"\0" + stored + b"_bits"[: 12 - len(stored)] + b"\0")
    model = tmp_path / "models" / "monster_cube.mdl"
    model.parent.mkdir()
    model.write_bytes(data)
    for suffix in (".vvd", ".dx90.vtx"):
        (tmp_path / "models" / f"monster_cube{suffix}").write_bytes((folder / f"monster_cube{suffix}").read_bytes())
    result = io_ms3d_mdl.decompile(str(model), str(tmp_path / "out"))
    written = [(tmp_path / "out" / f).read_bytes() for f in result.files if f.endswith(".smd")]
    assert written and all(b'"' + stored in smd and b'"' + other not in smd for smd in written)
