"""Eyelids (issue 32): a model's eyelids come back as ``eyelid`` lines in its ``$model`` block, their shapes as VTA
frames. Among the shared samples only Bloodlines' female_citizen_3 (MDL 2531, tests/test_decompile_bloodlines.py)
has eyelids, with no neutral shape: scout's eyeballs point at a ``dummy_eyelid`` (a DMX compile's) and no original
QC in ../shared/samples/decompile has an eyelid line. So the models here are synthetic
(tests/source_writer.py), laid out as studiomdl's ``Option_Eyelid`` stores a line: a lid descriptor named by the
type, three named ``<type>_lowerer/_neutral/_raiser``, the lid's three flexes with targets ``(-11, -10, L, N)``,
``(L, N, N, R)``, ``(N, R, 10, 11)``, and the targets L, N, R in the eyeball record."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import qc_grammar
import smd_reader
from conftest import sample_path
from smd_strict import read_smd
from source_writer import SBodyPart, SEyeball, SFlex, SMesh, SModel, SVertex, character_spec, write_source

from io_ms3d_mdl.decompile import DecompileOptions, decompile
from io_ms3d_mdl.decompile.output import Output
from io_ms3d_mdl.decompile.source.details import model_details
from io_ms3d_mdl.decompile.source.eyelids import find_eyelids
from io_ms3d_mdl.decompile.source.flexes import write_flexes
from io_ms3d_mdl.errors import Warnings
from io_ms3d_mdl.formats.source import read_mdl
from io_ms3d_mdl.scene.load import load_source
from io_ms3d_mdl.scene.source.convert import SourceOptions

# descriptor names, as studiomdl makes them from four eyelid lines (lower_left's roles in another order) and a flex
NAMES = [
    "upper_right", "upper_right_lowerer", "upper_right_neutral", "upper_right_raiser",
    "lower_right", "lower_right_lowerer", "lower_right_neutral", "lower_right_raiser",
    "upper_left", "upper_left_lowerer", "upper_left_neutral", "upper_left_raiser",
    "lower_left", "lower_left_raiser", "lower_left_lowerer", "lower_left_neutral",
    "smile",
]  # fmt: skip
TARGETS = {"upper_right": (-0.3, 0.1, 0.4), "lower_right": (-0.35, -0.2, 0.05)}
TARGETS |= {"upper_left": (-0.25, 0.15, 0.45), "lower_left": (-0.3, -0.15, 0.1)}


def lid_flexes(lid: int, targets: tuple[float, float, float], rows: list[int], step: float, neutral: bool) -> list:
    low, mid, high = targets
    flexes = [
        SFlex(lid, rows, [(0.0, 0.0, -step)] * len(rows), (-11, -10, low, mid)),
        SFlex(lid, rows, [(0.0, 0.0, step)] * len(rows), (mid, high, 10, 11)),
    ]
    if neutral:  # (a lid whose neutral is frame 0 of its VTA has no neutral shape)
        flexes.insert(1, SFlex(lid, rows, [(0.0, 0.01, step / 4)] * len(rows), (low, mid, mid, high)))
    return flexes


def grid_mesh(x0: float, material: int, flexes: list[SFlex]) -> SMesh:
    verts = [
        SVertex((x0 + x * 0.5, 0.0, 10 + z * 0.25), (0, -1, 0), (x / 2, z / 4), (1,), (1.0,))
        for z in range(5)
        for x in range(3)
    ]
    tris = [t for z in range(4) for x in range(2) for t in ((z * 3 + x, z * 3 + x + 1, z * 3 + x + 4),
                                                           (z * 3 + x, z * 3 + x + 4, z * 3 + x + 3))]  # fmt: skip
    return SMesh(material, verts, tris, flexes=flexes)


def eye(name: str, x: float, upper: str, lower: str, shared: bool = False) -> SEyeball:
    def lid(kind: str) -> tuple[int, tuple[int, int, int], tuple[float, float, float]]:
        base = NAMES.index(kind)
        roles = tuple(NAMES.index(f"{kind}_{r}") for r in ("lowerer", "neutral", "raiser"))
        return base, roles, TARGETS[kind]

    (u, ur, ut), (lo, lr, lt) = lid(upper), lid(lower)
    return SEyeball(name, 1, (x, -0.5, 0.2), 0.6, 1, 1.0, u, ur, ut, lo, lr, lt)


def face_model(tmp_path: Path, eyes: list[SEyeball] | None = None, names: list[str] = NAMES) -> Path:
    """A face of two meshes: the right lids on the first, the left ones on the second, the upper lids' shapes
    spread over both (a lid's shapes are the sum over the model's meshes)."""
    index = {n: i for i, n in enumerate(NAMES)}  # (positions: a test may rename one)
    right = lid_flexes(index["upper_right"], TARGETS["upper_right"], [12, 13, 14], 0.2, True)
    right += lid_flexes(index["lower_right"], TARGETS["lower_right"], [0, 1], 0.1, False)
    right += [SFlex(index["smile"], [3, 4], [(0.0, 0.1, 0.0)] * 2)]
    left = lid_flexes(index["upper_left"], TARGETS["upper_left"], [12, 13], 0.25, True)
    left += lid_flexes(index["upper_right"], TARGETS["upper_right"], [14], 0.05, True)  # also the right lid's
    left += lid_flexes(index["lower_left"], TARGETS["lower_left"], [0, 2], 0.15, True)
    if eyes is None:
        eyes = [eye("righteye", -1.0, "upper_right", "lower_right"), eye("lefteye", 1.0, "upper_left", "lower_left")]
    spec = character_spec(
        includes=[],
        body_parts=[SBodyPart("face", [SModel("face_ref", [grid_mesh(-2, 0, right), grid_mesh(1, 0, left)], eyes)])],
        flex_names=names,
        textures=["face", "eye"],
        skins=[[0, 1]],
    )
    return write_source(spec, tmp_path / "models", "guy")


def decompiled(path: Path, out: Path) -> tuple:
    result = decompile(str(path), str(out))
    statements = qc_grammar.check_file(out / result.qc)  # strict grammar; the eyelid lines' VTA is there
    (model,) = [s for s in statements if s.command == "$model"]
    return result, model


def eyelid_words(model: qc_grammar.Statement) -> dict[str, list[str]]:
    return {words[0].value: [t.value for t in words[1:]] for words in qc_grammar.eyelid_lines(model)}


def first_words(model: qc_grammar.Statement, word: bytes) -> list[str]:
    """The word after ``word`` on each line of the block that starts with it (``eyeball``, ``flex``)."""
    args = model.args
    return [
        args[i + 1].value
        for i, t in enumerate(args)
        if not t.quoted and t.text == word and (i == 0 or args[i - 1].line != t.line)
    ]


def options(words: list[str]) -> dict[str, list[str]]:
    out, i = {}, 1
    while i < len(words):
        count = 1 if words[i] in ("split", "eyeball") else 2
        out[words[i]] = words[i + 1 : i + 1 + count]
        i += 1 + count
    return out


def test_eyelid_lines_give_back_the_eyeball_records(tmp_path):
    path = face_model(tmp_path)
    mdl = read_mdl(path)
    result, model = decompiled(path, tmp_path / "out")
    lines = eyelid_words(model)
    assert sorted(lines) == sorted(TARGETS)
    assert first_words(model, b"eyeball") == ["righteye", "lefteye"]
    for kind, words in lines.items():
        assert words[0] == "face_ref.vta" and words[0] in result.files
        opts = options(words)
        assert list(opts) == ["lowerer", "neutral", "raiser", "eyeball"] or kind == "lower_left"
        # every target is the record's float32, exactly
        for role, target in zip(("lowerer", "neutral", "raiser"), TARGETS[kind], strict=True):
            assert np.float32(float(opts[role][1])) == np.float32(target), (kind, role)
        assert opts["eyeball"] == ["righteye" if kind.endswith("right") else "lefteye"]
    # the roles in the order of their descriptors: lower_left's raiser was made first
    assert list(options(lines["lower_left"]))[:3] == ["raiser", "lowerer", "neutral"]
    assert options(lines["lower_right"])["neutral"][0] == "0"  # no neutral shape: the VTA's base frame
    # the lids and their roles are not flexes of the flex file (the eyelid lines make them)
    assert first_words(model, b"flex") == ["smile"]
    assert mdl.flex_names == NAMES


def test_eyelid_frames_are_the_stored_shapes(tmp_path):
    path = face_model(tmp_path)
    mdl = read_mdl(path)
    result, model = decompiled(path, tmp_path / "out")
    smd_reader.read(tmp_path / "out" / "face_ref.vta")  # the strict reader
    vta = read_smd((tmp_path / "out" / "face_ref.vta").read_bytes())
    base = {i: np.array(v[:3]) for i, v in vta.vertex_frames[0].items()}
    # each shape's deltas by the vertex's position in the model (the VTA's frame 0 lists every vertex)
    expected: dict[tuple[int, str], dict[tuple, np.ndarray]] = {}
    for mesh in mdl.body_parts[0].models[0].meshes:
        positions = [(-2 + x * 0.5, 0.0, 10 + z * 0.25) for z in range(5) for x in range(3)]
        if mesh.vertex_offset:
            positions = [(p[0] + 3, p[1], p[2]) for p in positions]
        for flex in mesh.flexes:
            t = flex.targets
            role = "lowerer" if t[0] == -11 else "raiser" if t[3] == 11 else "neutral"
            shape = expected.setdefault((flex.desc, role), {})
            for i, delta in zip(flex.indices.tolist(), flex.deltas, strict=True):
                shape[positions[i]] = shape.get(positions[i], 0) + delta.astype(np.float64)
    frames = 0
    for kind, words in eyelid_words(model).items():
        opts = options(words)
        for role in ("lowerer", "neutral", "raiser"):
            frame = int(opts[role][0])
            want = expected.get((NAMES.index(kind), role))
            if want is None:
                assert frame == 0
                continue
            frames += 1
            moved = vta.vertex_frames[frame]
            got = {tuple(np.round(base[i], 4)): np.array(v[:3]) - base[i] for i, v in moved.items()}
            assert sorted(got) == sorted(tuple(np.round(p, 4)) for p in want), (kind, role)
            for p, delta in want.items():
                np.testing.assert_allclose(got[tuple(np.round(p, 4))], delta, atol=1e-5)
    assert frames == 11  # four lids of three shapes, lower_right without its neutral
    assert len(vta.vertex_frames) == 1 + 1 + frames  # the base, smile, the lids' shapes
    assert not result.warnings


def test_eyelid_lines_follow_the_descriptors(tmp_path):
    """The lines in the order of the lids' descriptors (studiomdl numbers descriptors in the order it reads the
    lines: a Bloodlines model in the samples, female_citizen_3, stores upper_right, lower_right, upper_left,
    lower_left, each followed by its _lowerer, _neutral, _raiser), whatever the order of the eyeballs."""
    eyes = [eye("lefteye", 1.0, "upper_left", "lower_left"), eye("righteye", -1.0, "upper_right", "lower_right")]
    _, model = decompiled(face_model(tmp_path, eyes), tmp_path / "out")
    assert first_words(model, b"eyeball") == ["lefteye", "righteye"]
    assert list(eyelid_words(model)) == ["upper_right", "lower_right", "upper_left", "lower_left"]


def test_a_lid_on_every_eyeball_names_none(tmp_path):
    """A line without ``eyeball`` puts its lid on every eyeball: so is a lid the records share written."""
    both = [eye("righteye", -1.0, "upper_right", "lower_right"), eye("lefteye", 1.0, "upper_right", "lower_right")]
    _, model = decompiled(face_model(tmp_path, both), tmp_path / "out")
    lines = eyelid_words(model)
    assert sorted(lines) == ["lower_right", "upper_right"]
    assert all("eyeball" not in options(words) for words in lines.values())
    # the other lids' shapes stay flexes (no eyeball names them as its lid)
    assert first_words(model, b"flex") == ["upper_left", "lower_left", "smile"]


def test_a_dummy_eyelid_has_no_line(tmp_path):
    """A DMX compile's eyeballs point every lid field at ``dummy_eyelid`` (as scout's do): no eyelid line."""
    names = [*NAMES, "dummy_eyelid"]
    d = len(NAMES)
    dummy = SEyeball("eye", 1, (0.0, -0.5, 0.2), 0.6, 1, 1.0, d, (d, d, d), (-1, 0, 1), d, (d, d, d), (-1, 0, 1))
    _, model = decompiled(face_model(tmp_path, [dummy], names), tmp_path / "out")
    assert eyelid_words(model) == {}
    assert first_words(model, b"eyeball") == ["eye"]


def test_a_lid_named_unlike_its_line_stays_a_flex(tmp_path):
    """studiomdl names the roles after the type, and looks at the type's first letter: a file that says
    otherwise cannot come back as a line, and is written as plain flexes, with a warning."""
    names = list(NAMES)
    names[NAMES.index("upper_left")] = "brow_left"  # an upper lid that does not start with "u"
    result, model = decompiled(face_model(tmp_path, names=names), tmp_path / "out")
    assert sorted(eyelid_words(model)) == ["lower_left", "lower_right", "upper_right"]
    assert any("eyelid 'brow_left'" in w for w in result.warnings)


@pytest.mark.parametrize(
    "line, message",
    [
        ('eyelid upper_r "f.vta" lowerer 1 -0.2 blink 2', "unknown"),
        ('eyelid upper_r "f.vta" lowerer 1.5 -0.2', "frame"),
        ('eyelid upper_r "f.vta" raiser 2 "0.3"', "number"),
        ('eyelid upper_r "f.vta" lowerer 1', "short"),
        ("eyelid upper_r", "type and VTA"),
    ],
)
def test_the_grammar_refuses_what_studiomdl_refuses(line, message):
    qc = f'$modelname "a.mdl"\n$model "face" "face.smd" {{\n\t{line}\n}}\n'.encode()
    with pytest.raises(qc_grammar.QcError, match=message):
        qc_grammar.parse(qc)


def test_the_grammar_reads_eyelid_only_at_a_line_start():
    """A controller named ``eyelid`` inside a rule is no eyelid line (female_citizen_3 has one)."""
    qc = b'$modelname "a.mdl"\n$model "face" "face.smd" {\n\t%lid = eyelid * 2\n}\n'
    assert qc_grammar.eyelid_lines(qc_grammar.parse(qc)[1]) == []


def test_a_mesh_from_blender_keeps_its_lids_as_flexes(tmp_path):
    """An export's mesh does not say which file vertex each of its vertices is: the lids' stored shapes cannot be
    placed on it, so they stay the flexes Blender shows (one key per lid), with a warning, and no eyelid line."""
    path = face_model(tmp_path)
    mdl = read_mdl(path)
    scene = load_source(str(path), SourceOptions(scale=1.0, find_materials=False, import_physics=False))
    (obj,) = [o for o in scene.objects if "source_bodypart" in o.props and not o.collision]
    model = mdl.body_parts[0].models[0]
    details = model_details(path.read_bytes(), str(path), len(mdl.sequences), mdl.bones)
    warnings = Warnings()
    lids = find_eyelids(mdl, details.eyeballs[(0, 0)], warnings)
    assert len(lids) == 4 and not warnings
    obj.mesh.source_vertices = None  # as Blender's mesh has it
    part = write_flexes(mdl, model, obj, "face_ref.smd", None, Output(tmp_path / "out"), warnings, None, lids)
    assert part.eyelids == [] and part.names == ["upper_right", "lower_right", "upper_left", "lower_left", "smile"]
    assert any("4 eyelids are written as plain flexes" in w for w in warnings)


def test_scouts_dummy_eyelids_have_no_line(tmp_path):
    """The real model with eyeballs: both point every lid field at ``dummy_eyelid`` (compiled from DMX), so its QC
    has the eyeballs and no eyelid line, and its flexes are all in the flex file."""
    path = sample_path("source", "GoodFishMan__mercenaries/models/player/scout.mdl")  # (skips without ../shared)
    result = decompile(str(path), str(tmp_path / "out"), DecompileOptions(animations=False))
    statements = qc_grammar.check_file(tmp_path / "out" / result.qc)
    (model,) = [s for s in statements if s.command == "$model"]
    assert len(first_words(model, b"eyeball")) == 2
    assert eyelid_words(model) == {}
    assert not any("eyelid" in w for w in result.warnings)
