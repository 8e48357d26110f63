"""Sequence events of Bloodlines models (MDL 2531): real models of the Unofficial Patch's snapshot (skipped, saying
so, when it is absent) read as an independent ``struct`` decoding of their event tables reads them, the layout's
evidence over every model of the snapshot, markers on the imported actions, ``{ event ... }`` lines in a decompiled
QC the strict grammar accepts, and crafted files whose event table is broken failing cleanly."""

from __future__ import annotations

import itertools
import re
import struct
import subprocess
from pathlib import Path
from typing import NamedTuple

import pytest
import qc_grammar
from bloodlines_writer import character_spec2531, write_bloodlines, write_mdl2531
from conftest import MIRROR, mirror_tree
from smd_strict import qc_commands
from test_decompile_bloodlines import check_output, decompiled

from io_ms3d_mdl.budget import Budget
from io_ms3d_mdl.errors import BudgetExceeded, FormatError
from io_ms3d_mdl.formats.source import read_mdl, read_mdl_bytes
from io_ms3d_mdl.scene.load import load_source
from io_ms3d_mdl.scene.source.convert import SourceOptions

REPO = "miracleflame+VTMB-Unofficial-Patch-by-Wesp"
BASE = "Basic_Patch/models/"
# Two characters and two view models whose sequences have events (the dragon's breath several per sequence), and two
# characters with many sequences and no events (chang2's empty tables point at odd places: never read).
EVENTS = {  # model: (sequence, [(frame, event, options)]) for every sequence with events
    "character/npc/common/cop_variant/rookied_cop/rookied_cop.mdl": [
        ("Crooked_Cop_Walkie_Talkie_Into", [(9, 4100, "models/items/walkie_talkie/walkie_talkie")]),
        ("Crooked_Cop_Walkie_Talkie_Loop", [(9, 4100, "models/items/walkie_talkie/walkie_talkie")]),
        ("Crooked_Cop_Walkie_Talkie_Outof", [(0, 4101, "models/items/walkie_talkie/walkie_talkie")]),
        ("Crooked_Cop_Line76_col_E", [(9, 4100, "models/items/walkie_talkie/walkie_talkie")]),
    ],
    "character/npc/unique/hollywood/andrei/andrei.mdl": [
        ("Andrei_Tele-OUT", [(0, 1003, "1")]),
        ("Andrei_Tele-OUT-HIT", [(0, 1003, "1")]),
        ("Andrei_Tele-IN", [(0, 1003, "1")]),
        ("Andrei_SUMMON", [(0, 1003, "2")]),
    ],
    "weapons/breath/view/v_dragonbreath.mdl": [
        ("fire01", [(0, 5001, "1"), (27, 6001, "2")]),
        ("fireempty01", [(0, 5001, "1"), (27, 6001, "2")]),
        ("attack1", [(0, 5001, "0"), (0, 3002, ""), (27, 6001, "2")]),
    ],
    "weapons/thaumaturgy/view_male/v_thaumaturgy.mdl": [
        ("charge", [(10, 5105, "ACT_VM_PRIMARYATTACK_THAUMATURGY_CHARGE")]),
        ("cast", [(8, 5105, "ACT_VM_PRIMARYATTACK_THAUMATURGY_HOLD")]),
    ],
    "character/npc/unique/downtown/nines/nines_damagedw.mdl": [],
    "character/npc/unique/giovanni_mansion/chang_brothers/chang2.mdl": [],
}
SEQDESC, EVENT = 764, 76


class Decoded(NamedTuple):
    name: str
    events: list[tuple[float, int, int, str]]  # cycle, event, type, options
    table: int  # the event table's file offset
    frames: int  # of the animation in the sequence's first grid cell


def decode_events(data: bytes) -> list[Decoded]:
    """Every sequence's events with ``struct`` alone: sequences counted at header byte 272, 764 bytes each, event
    count and offset at 20 and 24, the first grid cell's animation at 56; animations (72 bytes) at 264, frames at 12."""
    count, base = struct.unpack_from("<2i", data, 272)
    animations = struct.unpack_from("<i", data, 268)[0]
    out = []
    for i in range(count):
        seq = base + SEQDESC * i
        label, numevents, eventindex = (
            struct.unpack_from("<i", data, seq)[0],
            *struct.unpack_from("<2i", data, seq + 20),
        )
        name = data[seq + label : data.index(b"\0", seq + label)].decode("latin-1")
        events = [struct.unpack_from("<fii64s", data, seq + eventindex + EVENT * k) for k in range(numevents)]
        animation = struct.unpack_from("<h", data, seq + 56)[0]
        frames = struct.unpack_from("<i", data, animations + 72 * animation + 12)[0]
        events = [(c, e, t, o.split(b"\0", 1)[0].decode("latin-1")) for c, e, t, o in events]
        out.append(Decoded(name, events, seq + eventindex, frames))
    return out


@pytest.fixture(scope="module")
def snapshot(tmp_path_factory) -> Path:
    return mirror_tree(REPO, [BASE + m for m in EVENTS], tmp_path_factory.mktemp("vtmb_events")) / BASE


@pytest.mark.parametrize("relative", sorted(EVENTS))
def test_events_read_as_an_independent_decoding_reads_them(snapshot, relative):
    path = snapshot / relative
    mdl = read_mdl(path)
    theirs = decode_events(path.read_bytes())
    assert [s.name for s in mdl.sequences] == [d.name for d in theirs]
    for seq, decoded in zip(mdl.sequences, theirs, strict=True):
        assert [(e.cycle, e.event, e.name) for e in seq.events] == [(c, e, o) for c, e, _, o in decoded.events]
        assert mdl.animations[seq.animations[0]].num_frames == decoded.frames
    found = []
    for seq in mdl.sequences:
        if seq.events:
            last = mdl.animations[seq.animations[0]].num_frames - 1
            found.append((seq.name, [(round(e.cycle * last), e.event, e.name) for e in seq.events]))
            # studiomdl's cycle is frame / (frames - 1): every one lands on a whole frame
            assert all(abs(e.cycle * last - round(e.cycle * last)) < 1e-3 for e in seq.events)
    assert found == EVENTS[relative]


def snapshot_models() -> list[tuple[str, bytes]]:
    """Every 2531 model of the snapshot whose file it holds (a few are absent from it), read with ``git``."""
    git_dir = MIRROR / REPO / "repo"
    if not git_dir.is_dir():
        pytest.skip(f"the snapshot of {REPO.replace('+', '/')} is not at {git_dir} (fetch it to run this test)")
    names = subprocess.run(
        ["git", f"--git-dir={git_dir}", "ls-tree", "-r", "--name-only", "HEAD"], capture_output=True, text=True
    ).stdout.splitlines()
    names = [n for n in names if n.lower().endswith(".mdl")]
    batch = subprocess.run(
        ["git", f"--git-dir={git_dir}", "cat-file", "--batch"],
        input="".join(f"HEAD:{n}\n" for n in names).encode(),
        capture_output=True,
        check=True,
    ).stdout
    out, at = [], 0
    for name in names:
        line_end = batch.index(b"\n", at)
        head = batch[at:line_end].split()
        at = line_end + 1
        if head[-1] == b"missing":
            continue
        size = int(head[2])
        data = batch[at : at + size]
        at += size + 1
        if data[:4] == b"IDST" and struct.unpack_from("<i", data, 4)[0] == 2531:
            out.append((name, data))
    return out


def test_the_layout_over_every_model_of_the_snapshot():
    """The evidence for 76-byte events: where a sequence has events, the next sequence's table starts 76 bytes per
    event further on (every one of them); types are 0, options read as text, cycles lie in [0, 1] and land on whole
    frames of the animation (but one: crooked_cop's Line76 keeps the cycle of rookied_cop's longer animation), event
    numbers are Source's (1003 a scripted sequence's script event, 3002 a weapon event, 5001 a muzzle flash, 6001
    brass) or Bloodlines' own (4100/4101 with a model to hold and put away, 5105 with an activity). Few have any."""
    models = snapshot_models()
    sequences = events = with_events = strides = 0
    numbers, off_frame = set(), []
    for name, data in models:
        decoded = decode_events(data)
        sequences += len(decoded)
        with_events += any(d.events for d in decoded)
        for this, following in itertools.pairwise(decoded):
            if this.events:
                assert following.table - this.table == EVENT * len(this.events), name
                strides += 1
        for d in decoded:
            events += len(d.events)
            for cycle, number, kind, options in d.events:
                assert 0.0 <= cycle <= 1.0 and kind == 0, name
                assert options.isprintable() and options == options.strip(), name
                numbers.add(number)
                frame = cycle * (d.frames - 1)
                if abs(frame - round(frame)) > 1e-3:
                    off_frame.append((Path(name).name, d.name, round(cycle * 460, 3), d.frames))
    assert len(models) == 276 and sequences == 2111
    assert (with_events, events, strides) == (12, 37, 30)
    assert numbers == {1003, 3002, 4100, 4101, 5001, 5105, 6001}
    assert off_frame == [("crooked_cop.mdl", "Crooked_Cop_Line76_col_E", 9.0, 320)]


def test_events_become_markers_on_the_imported_actions(snapshot):
    path = snapshot / "character/npc/common/cop_variant/rookied_cop/rookied_cop.mdl"
    scene = load_source(str(path), SourceOptions(scale=1.0, find_materials=False, animations="ALL"))
    markers = {a.props["source_animation"]: [(n, round(f)) for n, f in a.markers] for a in scene.actions if a.markers}
    walkie = "models/items/walkie_talkie/walkie_talkie"
    assert markers == {  # each sequence's first animation (the walkie-talkie ones blend two)
        "@Crooked_Cop_Walkie_Talkie_Into": [(walkie, 9)],
        "@Crooked_Cop_Walkie_Talkie_Loop": [(walkie, 9)],
        "@Crooked_Cop_Walkie_Talkie_Outof": [(walkie, 0)],
        "@Crooked_Cop_Line76_col_E": [(walkie, 9)],
    }


@pytest.mark.parametrize(
    "relative",
    ["weapons/breath/view/v_dragonbreath.mdl", "character/npc/common/cop_variant/rookied_cop/rookied_cop.mdl"],
)
def test_the_decompiled_qc_has_the_events(snapshot, tmp_path, relative):
    qc = check_output(decompiled(snapshot / relative, tmp_path), tmp_path)  # the strict grammar among its checks
    written = [c[1:] for c in qc_commands(qc) if c[0] == "$sequence"]
    blocks = {name: _events(rest) for name, *rest in written}
    for sequence, events in EVENTS[relative]:
        assert blocks[sequence] == [[str(e), str(f), o] for f, e, o in events]
    assert sum(len(b) for b in blocks.values()) == sum(len(e) for _, e in EVENTS[relative])


def _events(words: list[str]) -> list[list[str]]:
    """The ``{ event number frame "options" }`` blocks among a ``$sequence``'s words."""
    return [words[i + 2 : i + 5] for i, w in enumerate(words) if w == "{" and words[i + 1] == "event"]


def character(events: list[tuple[float, int, str]]):
    spec = character_spec2531()
    spec.sequences = [("slide", 0, events)]
    return spec


def test_a_crafted_character_round_trips_its_events(tmp_path):
    """The writer's events (12 frames: frame = cycle × 11) read back, become markers and QC lines."""
    events = [(0.0, 5004, "npc/sound.wav"), (5 / 11, 1003, "1"), (1.0, 0, "")]
    path = write_bloodlines(character(events), tmp_path / "models", "guy")
    (seq,) = read_mdl(path).sequences
    assert [(e.cycle, e.event, e.name) for e in seq.events] == [(pytest.approx(c), e, o) for c, e, o in events]
    scene = load_source(str(path), SourceOptions(animations="ALL"))
    (action,) = scene.actions
    assert [(n, round(f, 3)) for n, f in action.markers] == [("npc/sound.wav", 0), ("1", 5), ("event 0", 11)]
    out = tmp_path / "qc"
    result = decompiled(path, out)
    qc_grammar.check_file(out / result.qc)
    words = next(c for c in qc_commands((out / result.qc).read_text("utf-8")) if c[0] == "$sequence")
    assert _events(words) == [["5004", "0", "npc/sound.wav"], ["1003", "5", "1"], ["0", "11", ""]]


def _event_fields(data: bytes) -> int:
    """The file offset of the one sequence's event count (its offset follows)."""
    return struct.unpack_from("<i", data, 276)[0] + 20


@pytest.mark.parametrize(
    ("count", "index", "cut", "expected"),
    [
        (10**6, None, 0, "events of sequence 'slide': 1000000 × 76 bytes"),  # more than the file holds
        (-1, None, 0, "sequence 'slide' declares -1 events"),
        (None, 10**8, 0, "events of sequence 'slide'"),  # past the end
        (None, -(10**6), 0, "events of sequence 'slide'"),  # before the start
        (None, None, 40, "events of sequence 'slide'"),  # the file ends inside the table
    ],
)
def test_a_broken_event_table_fails_with_a_clear_error(count, index, cut, expected):
    data = bytearray(write_mdl2531(character([(0.5, 5004, "a"), (1.0, 5004, "b")])))
    at = _event_fields(data)
    if count is not None:
        struct.pack_into("<i", data, at, count)
    if index is not None:
        struct.pack_into("<i", data, at + 4, index)
    if cut:  # the table moved to the end of the file, then cut into
        table = at - 20 + struct.unpack_from("<i", data, at + 4)[0]
        struct.pack_into("<i", data, at + 4, len(data) - (at - 20))
        data += data[table : table + 2 * EVENT]
        del data[-cut:]
    with pytest.raises(FormatError, match=re.escape(expected)) as info:
        read_mdl_bytes(bytes(data), "hostile.mdl")
    assert "hostile.mdl" in str(info.value) and info.value.offset is not None


def test_event_tables_shared_by_many_sequences_stop_at_the_copy_budget():
    """4,000 sequences all listing one table of 4,000 events (a 3.4 MB file asking for 1.2 GB of copies)."""
    spec = character([(0.5, 5004, "x")] * 4000)
    spec.sequences += [("more", 0, [])] * 3999
    data = bytearray(write_mdl2531(spec))
    base = struct.unpack_from("<i", data, 276)[0]
    first = base + struct.unpack_from("<i", data, base + 24)[0]
    for i in range(4000):  # every sequence lists the first one's table
        struct.pack_into("<2i", data, base + SEQDESC * i + 20, 4000, first - (base + SEQDESC * i))
    with pytest.raises(BudgetExceeded, match="events of sequence"):
        read_mdl_bytes(bytes(data), "bomb.mdl")


def test_markers_count_against_the_event_budget(tmp_path, monkeypatch):
    monkeypatch.setattr(Budget, "events", property(lambda self: 1))
    path = write_bloodlines(character([(0.0, 5004, "a"), (1.0, 5004, "b")]), tmp_path / "models", "guy")
    with pytest.raises(BudgetExceeded, match="animation events"):
        load_source(str(path), SourceOptions(animations="ALL"))


def test_a_nan_cycle_imports_and_decompiles_at_frame_0(tmp_path):
    """A damaged cycle: the import drops the marker it cannot place (saying so), the QC puts the event first."""
    path = write_bloodlines(character([(float("nan"), 5004, "a"), (1.0, 5004, "b")]), tmp_path / "models", "guy")
    scene = load_source(str(path), SourceOptions(animations="ALL"))
    assert [n for n, _ in scene.actions[0].markers] == ["b"]
    assert any("not usable numbers" in w for w in scene.warnings), scene.warnings
    out = tmp_path / "qc"
    result = decompiled(path, out)
    words = next(c for c in qc_commands((out / result.qc).read_text("utf-8")) if c[0] == "$sequence")
    assert _events(words) == [["5004", "0", "a"], ["5004", "11", "b"]]
