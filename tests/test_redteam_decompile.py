"""Red-team pass of round 9 on the decompiler: names from a stranger's model become file names (folder steps,
reserved names, long non-ASCII names, names equal but for case or Unicode form), links planted in the output
folder, and counts that multiply what is written (disk output bounded by ``budget.output_bytes``). The heavy
cases run in a fresh process bounded to 20 s and 2 GB, as the hostile suite does."""

from __future__ import annotations

import json
import os
import resource
import struct
import subprocess
import sys
import unicodedata
from pathlib import Path

import hostile
import numpy as np
import pytest
from source_writer import SAnimation, SNode, character_spec, quad_mesh, write_source
from test_hostile import watch  # noqa: F401 - the fixture

from io_ms3d_mdl.budget import DEFAULT
from io_ms3d_mdl.decompile import decompile
from io_ms3d_mdl.decompile.output import Output, safe_stem
from io_ms3d_mdl.errors import FormatError
from io_ms3d_mdl.formats.goldsrc import structs as G

TESTS = Path(__file__).parent


def _still(name: str, frames: int = 2) -> SAnimation:
    return SAnimation(name, frames, [SNode(0, ("q48", (1, 0, 0, 0)), ("v48", (0, 0, 0)))])


def _stored(text: str) -> str:
    """A name as the writer stores it (latin-1 of its UTF-8 bytes, as a file holds UTF-8)."""
    return text.encode("utf-8").decode("latin-1")


HOSTILE_NAMES = [
    "Run",
    "run",
    "../../evil",
    "..",
    "CON",
    "nul.txt",
    "con .x",
    "C:\\x",
    "a/b",
    _stored("é" * 200),
    _stored("ü" * 130),
    _stored("\U0001f642" * 100),
    "x" * 300,
    "COM1",
    "aux ",
    "a\tb",
    "CONIN$",
    _stored("COM\u00b9"),
]


def test_hostile_sequence_names_become_safe_distinct_short_file_names(tmp_path):
    """Before round 9 a 200-character Latin-1 name (400 UTF-8 bytes) failed with ``OSError: File name too long``
    (an internal error): the stem was cut at 120 characters, not bytes, and the partial name added the name again."""
    spec = character_spec(animations=[_still(n) for n in HOSTILE_NAMES], includes=[])
    model = write_source(spec, tmp_path / "in")
    out = tmp_path / "out"
    result = decompile(str(model), str(out))
    written = [Path(f) for f in result.files]
    assert len([f for f in written if f.parts[0] == "anims"]) == len(HOSTILE_NAMES)
    keys = [unicodedata.normalize("NFC", str(f)).casefold() for f in written]
    assert len(set(keys)) == len(keys)
    for f in written:
        assert ".." not in f.parts and not f.is_absolute()
        assert len(f.name.encode("utf-8")) <= 200
        stem = f.name.split(".")[0].rstrip(" ").lower()
        assert stem not in {"con", "nul", "aux", "com1", "conin$", "com\u00b9"}
        assert (out / f).is_file()
    on_disk = sorted(str(p.relative_to(out)) for p in out.rglob("*") if p.is_file())
    assert on_disk == sorted(result.files)  # nothing else (no partial left, nothing outside)
    assert not (tmp_path / "evil.smd").exists() and not (tmp_path / "in" / "evil.smd").exists()


def test_names_equal_but_for_case_or_unicode_form_get_distinct_files(tmp_path):
    output = Output(tmp_path)
    first = output.name(unicodedata.normalize("NFC", "Caf\u00e9"), ".smd")
    second = output.name(unicodedata.normalize("NFD", "caf\u00e9"), ".smd")
    third = output.name("STRASSE", ".smd")
    fourth = output.name("stra\u00dfe", ".smd")  # casefolds to "strasse"
    assert first != second and third != fourth
    assert unicodedata.normalize("NFC", second).casefold() != unicodedata.normalize("NFC", first).casefold()


def test_safe_stem_stays_within_255_bytes_with_room_to_spare():
    for name in ("\U0001f642" * 300, "\u00e9" * 300, "a" * 1000):
        stem = safe_stem(name)
        assert stem and len(stem.encode("utf-8")) <= 160


def test_a_link_planted_in_the_output_folder_is_never_written_through(tmp_path):
    spec = character_spec(animations=[_still("idle")], includes=[])
    model = write_source(spec, tmp_path / "in")
    out, victim = tmp_path / "out", tmp_path / "victim"
    out.mkdir()
    victim.mkdir()
    (victim / "idle.smd").write_text("mine")
    (out / "anims").symlink_to(victim)  # a folder link where the animations go
    (out / "body_ref.smd").symlink_to(victim / "idle.smd")  # a file link where a reference SMD goes
    with pytest.raises((FormatError, OSError)):
        decompile(str(model), str(out))
    assert (victim / "idle.smd").read_text() == "mine" and os.listdir(victim) == ["idle.smd"]
    (out / "body_ref.smd").unlink()
    with pytest.raises((FormatError, OSError)):
        decompile(str(model), str(out))
    assert os.listdir(victim) == ["idle.smd"]


def test_a_pre_existing_file_is_never_overwritten(tmp_path):
    spec = character_spec(animations=[_still("idle")], includes=[])
    model = write_source(spec, tmp_path / "in")
    out = tmp_path / "out"
    out.mkdir()
    (out / "model.qc").write_text("the user's own")
    with pytest.raises(FormatError, match="exists"):
        decompile(str(model), str(out))
    assert (out / "model.qc").read_text() == "the user's own"
    assert not [p for p in out.rglob("*") if ".partial" in p.name]


def test_a_decompile_refused_half_way_leaves_nothing_behind(tmp_path):
    """All files or none: a name taken by the user's own file that the decompile meets late (its last animation)
    stops it after the references and the first animation were written; none of them is left, nor the folders it made, and the
    user's file is as it was."""
    spec = character_spec(animations=[_still("idle"), _still("walk")], includes=[])
    model = write_source(spec, tmp_path / "in")
    whole = decompile(str(model), str(tmp_path / "whole"))
    last = [f for f in whole.files if "/" in f][-1]  # the last animation (the QC comes after it)
    assert whole.files.index(last) >= 2, whole.files
    out = tmp_path / "out"
    (out / Path(last).parent).mkdir(parents=True)
    (out / last).write_text("mine")
    with pytest.raises(FormatError, match="exists"):
        decompile(str(model), str(out))
    assert [p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_file()] == [last]
    assert (out / last).read_text() == "mine"
    fresh = tmp_path / "fresh" / "deeper"
    from io_ms3d_mdl.decompile.output import Output

    broken = Output.open

    def fail_on_the_second(self, relative):  # a refusal after some files were written
        if relative.endswith(".smd") and "/" in relative:
            fail_on_the_second.calls += 1
            if fail_on_the_second.calls == 2:
                raise FormatError(str(model), 0, "refused half-way")
        return broken(self, relative)

    fail_on_the_second.calls = 0
    Output.open = fail_on_the_second
    try:
        with pytest.raises(FormatError, match="half-way"):
            decompile(str(model), str(fresh))
    finally:
        Output.open = broken
    assert fail_on_the_second.calls == 2
    assert not fresh.exists() and (tmp_path / "fresh").exists()  # (the folder it made is gone, not its parent)


_PROBE = """
import json, sys, time
sys.path[:0] = [{tests!r}, {root!r}]
from io_ms3d_mdl.decompile import decompile
from peak_memory import peak_bytes
start = time.perf_counter()
try:
    r = decompile({model!r}, {out!r})
    outcome = "ok"
except Exception as e:
    outcome = type(e).__name__ + ": " + str(e)
print("RESULT " + json.dumps({{"outcome": outcome, "seconds": time.perf_counter() - start, "peak": peak_bytes()}}))
"""


def _bounded(model: Path, out: Path) -> dict:
    """Decompile in a fresh process limited to 20 s and 2 GB of address space."""

    def limits() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))

    code = _PROBE.format(tests=str(TESTS), root=str(TESTS.parent), model=str(model), out=str(out))
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=20, preexec_fn=limits, check=False
    )
    rows = [line[7:] for line in done.stdout.splitlines() if line.startswith("RESULT ")]
    assert rows, done.stdout[-2000:] + done.stderr[-2000:]
    return json.loads(rows[0])


@pytest.mark.long
def test_sequences_times_frames_times_bones_cannot_fill_the_disk(tmp_path):
    """40 animations of 100,000 frames over two bones (8 M bone-frames, inside the animation budgets), padded to
    1 MB by a long texture name: before the output budget this wrote 214 MB in 16 s from a 137 KB model. Now the
    write that would pass ``budget.output_bytes`` is refused (a clean BudgetExceeded naming the budget and the
    Work Limit) and the disk holds at most the budget."""
    anims = [_still(f"a{i}", 100_000) for i in range(40)]
    spec = character_spec(animations=anims, includes=[], textures=["t" * 1_000_000, "b", "c"])
    model = write_source(spec, tmp_path / "in")
    read = sum(p.stat().st_size for p in (tmp_path / "in").iterdir())
    row = _bounded(model, tmp_path / "out")
    assert row["outcome"].startswith("BudgetExceeded"), row
    assert "output written by the decompile" in row["outcome"] and "Work Limit" in row["outcome"]
    assert row["seconds"] < 10 and row["peak"] < 1 << 30, row
    on_disk = sum(p.stat().st_size for p in (tmp_path / "out").rglob("*") if p.is_file())
    assert on_disk <= DEFAULT.output_bytes(read)
    assert not [p for p in (tmp_path / "out").rglob("*") if ".partial" in p.name]


def test_a_qc_sharing_one_long_name_across_a_large_table_is_stopped_before_its_text_is_built(tmp_path):
    """300 skin families × 300 references, all naming one of two 20 KB texture names (90,000 entries, inside the
    skin budget), in a 257 KB model: the QC was a 371 MB string built in memory (4.5 s, 1.5 GB at peak) before the
    output budget saw it. The QC writer now checks its running size as it goes."""
    spec = character_spec(
        includes=[], textures=["a" * 20_000, "b" * 20_000, "c"], skins=[[i % 2, (i + 1) % 2] * 150 for i in range(300)]
    )
    spec.body_parts[0].models[0].meshes = [quad_mesh(k) for k in range(300)]
    model = write_source(spec, tmp_path / "in")
    row = _bounded(model, tmp_path / "out")
    assert row["outcome"].startswith("BudgetExceeded") and "model.qc" in row["outcome"], row
    assert row["seconds"] < 2 and row["peak"] < 300 << 20, row
    assert not (tmp_path / "out" / "model.qc").exists()


# --- inputs that climb out of the roots -------------------------------------------------------------------------


def _text_of(out: Path) -> str:
    return "".join(p.read_text("utf-8", "replace") for p in out.rglob("*") if p.is_file())


@pytest.mark.parametrize(
    "build",
    [hostile.source_include_traversal, hostile.source_cdmaterials_traversal, hostile.goldsrc_group_traversal],
    ids=["includes", "cdmaterials", "goldsrc-groups"],
)
@pytest.mark.usefixtures("watch")
def test_decompile_never_reads_outside_the_roots(tmp_path, build):
    model = build(tmp_path)
    try:
        result = decompile(str(model), str(tmp_path / "out"))
    except FormatError:
        return
    assert hostile.SECRET not in _text_of(tmp_path / "out") + repr(list(result.warnings))


def test_an_included_model_outside_the_roots_lends_no_animation(tmp_path):
    """A genuine model outside the game, named by ``$includemodel`` with a climb and through a link planted in the
    game folder: neither is read, its animation is not written."""
    outside = tmp_path / "outside"
    write_source(character_spec(includes=[], animations=[_still("stolen_anim")]), outside, "stolen")
    (hostile.game(tmp_path) / "models" / "test" / "linked.mdl").symlink_to(outside / "stolen.mdl")
    spec = character_spec(includes=["../../outside/stolen.mdl", "models/test/linked.mdl"], animations=[_still("own")])
    model = hostile.source(tmp_path, spec)
    result = decompile(str(model), str(tmp_path / "out"))
    assert "stolen_anim" not in _text_of(tmp_path / "out")
    assert any("own" in f for f in result.files)


@pytest.mark.usefixtures("watch")
def test_a_model_inside_an_archive_decompiles_within_its_roots(tmp_path):
    path = hostile.archived_traversal(tmp_path)
    result = decompile(path, str(tmp_path / "out"))
    assert result.qc and hostile.SECRET not in _text_of(tmp_path / "out")


def test_a_goldsrc_sequence_naming_a_group_the_model_lacks_is_one_comment(tmp_path):
    """Found by mutating the GoldSrc character (seed 35 of the round-9 pass): a sequence whose group index is past
    the group table made the QC writer fail with ``IndexError`` (an internal error) instead of writing the QC."""
    from goldsrc_writer import character_spec as goldsrc_character

    model = hostile.goldsrc(tmp_path, goldsrc_character())
    data = bytearray(model.read_bytes())
    header = np.frombuffer(bytes(data[: G.HEADER.itemsize]), G.HEADER)[0]
    at = int(header["seqindex"]) + G.SEQUENCE.itemsize + G.SEQUENCE.fields["seqgroup"][1]
    data[at : at + 4] = struct.pack("<i", 5)  # the second sequence ("aim", group 1) now names group 5
    model.write_bytes(bytes(data))
    result = decompile(str(model), str(tmp_path / "out"))
    text = (tmp_path / "out" / result.qc).read_text("utf-8")
    assert "sequence group 5, which the model does not have" in text


def _goldsrc_mutant(tmp_path: Path, seed: int) -> Path:
    """The GoldSrc character mutated as the round-9 pass did (1 to 8 edits of bytes, shorts or ints)."""
    import random

    from goldsrc_writer import character_spec as goldsrc_character

    model = hostile.goldsrc(tmp_path, goldsrc_character())
    data, rnd = bytearray(model.read_bytes()), random.Random(seed)
    ints = [b"\xff\xff\xff\x7f", b"\x00\x00\x00\x80", b"\xff\xff\xff\xff", b"\x00\x00\x01\x00"]
    for _ in range(rnd.randint(1, 8)):
        i, c = rnd.randrange(len(data)), rnd.random()
        if c < 0.4:
            data[i] = rnd.randrange(256)
        elif c < 0.7:
            data[i : i + 4] = rnd.choice(ints)
        else:
            data[i : i + 2] = rnd.choice([b"\xff\xff", b"\x00\x80", b"\x01\x00"])
    model.write_bytes(bytes(data))
    return model


@pytest.mark.parametrize("seed", [35, 1044, 1289])
def test_goldsrc_mutants_decompile_or_fail_cleanly(tmp_path, seed):
    """Seeds that raised internal errors: 35 ``IndexError`` (a sequence group past the table), 1044 ``ValueError``
    in the SMD writer (a mesh with no triangle left), 1289 ``IndexError`` (a skin table whose first column names no
    texture and no column differs)."""
    model = _goldsrc_mutant(tmp_path, seed)
    try:
        result = decompile(str(model), str(tmp_path / "out"))
    except FormatError:
        return
    assert result.qc and (tmp_path / "out" / result.qc).is_file()


# --- the import's worst cases, decompiled (each in its own process) ----------------------------------------------


def _worst_case(name: str, tmp_path: Path) -> Path:
    import test_budget_worst_cases as worst

    path, _options, _units = worst.CASES[name](tmp_path)
    return path


@pytest.mark.long
@pytest.mark.parametrize(
    ("case", "outcome"),
    [
        # 120,000 flex rule constants formatted one numpy call each: over 20 s (now one pass: 1.7 s)
        ("flex rule work: distinct rules of constants", "ok"),
        # 500 meshes sharing one 1,500-triangle list: 15 s, 915 MB, 104 MB of SMD; now refused before it is built
        ("triangles: GoldSrc meshes sharing one command list", "BudgetExceeded"),
        # 750,000 triangles: 16 s, 573 MB, 97 MB of SMD; now refused before the SMD's triangles are built
        ("triangles", "BudgetExceeded"),
        # 19,982 animation SMDs: 13.5 s; each file now costs budget.OUTPUT_FILE_COST
        ("animations on offer: GoldSrc sequences × blends", "BudgetExceeded"),
    ],
)
def test_the_imports_worst_cases_decompile_within_10_s_and_1_gb(tmp_path, case, outcome):
    model = _worst_case(case, tmp_path)
    row = _bounded(model, tmp_path / "out")
    assert row["outcome"].startswith(outcome), row
    assert row["seconds"] < 10 and row["peak"] < 1 << 30, row


@pytest.mark.parametrize("where", ["decompiled", "models/test/src/deeper"])
def test_an_output_folder_reached_through_a_link_inside_the_model_tree_is_refused(tmp_path, where):
    """Found: the batch refuses an ``-o`` inside its inputs reached through a link, but ``decompile()`` followed a
    pack's ``decompiled -> elsewhere`` link and wrote the sources there."""
    model = hostile.source(tmp_path, character_spec(includes=[], animations=[_still("idle")]))
    victim = tmp_path / "victim"
    victim.mkdir()
    link = hostile.game(tmp_path) / where.split("/deeper")[0]
    link.symlink_to(victim)
    with pytest.raises(OSError, match="symbolic link"):
        decompile(str(model), str(hostile.game(tmp_path) / where))
    assert not list(victim.iterdir())
