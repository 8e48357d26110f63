"""GoldSrc reader against independent readers: triangles and rest vertices against Assimp's HL1 loader, every
frame of every sample sequence against a decoder written here from the format, texture pixels against a palette
lookup written here; and the refusals that name what a file is."""

from __future__ import annotations

import struct

import numpy as np
import pytest
from conftest import sample_path

from io_ms3d_mdl.errors import FormatError
from io_ms3d_mdl.formats.goldsrc import decode_sequence, read_goldsrc
from io_ms3d_mdl.scene.load import load_source
from io_ms3d_mdl.scene.source.convert import SourceOptions

MODELS = [
    "Pi0h1__halflife/models/hgrunt.mdl",
    "Pi0h1__halflife/models/houndeye.mdl",
    "Pi0h1__halflife/models/v_9mmar.mdl",
    "Pi0h1__halflife/models/v_gauss.mdl",
    "Pi0h1__halflife/models/sr666mdl/martini.mdl",
    "Pi0h1__halflife/models/ka_risingsun/rs_sakura_fallenpetals.mdl",
    "phoenixprojectsoftware__halflifeclassic/models/islave.mdl",
    "phoenixprojectsoftware__halflifeclassic/models/scientist.mdl",
    "phoenixprojectsoftware__halflifeclassic/models/v_9mmhandgun.mdl",
]


def goldsrc(relative: str):
    return sample_path("goldsrc", relative)


@pytest.mark.parametrize("relative", MODELS)
def test_triangles_and_rest_vertices_equal_assimp(relative):
    assimp = pytest.importorskip("assimp_py")
    path = goldsrc(relative)
    ours = load_source(str(path), SourceOptions(scale=1.0, import_animations=False))
    theirs = assimp.import_file(str(path), 0)
    a = np.concatenate(
        [
            np.frombuffer(m.vertices, np.float32).reshape(-1, 3)[np.frombuffer(m.indices, np.uint32).reshape(-1, 3)]
            for m in theirs.meshes
        ]
    ).astype(np.float64)
    flat = (a[:, 0] == a[:, 1]).all(1) | (a[:, 1] == a[:, 2]).all(1) | (a[:, 0] == a[:, 2]).all(1)
    a = a[~flat]  # we drop triangles that repeat a vertex (and count them); Assimp keeps them
    o = np.concatenate([obj.mesh.positions[obj.mesh.triangles] for obj in ours.objects]).astype(np.float64)
    assert len(o) == len(a)
    # every triangle of ours is one of Assimp's, with the same winding (a rotation of its corners)
    near = np.linalg.norm(o.mean(1)[:, None] - a.mean(1)[None], axis=2) < 1e-3
    for i in range(len(o)):
        rotations = np.stack([np.roll(a[near[i]], r, axis=1) for r in range(3)], axis=1)
        assert np.abs(rotations - o[i]).max(axis=(2, 3)).min() < 1e-4, f"triangle {i}"


def reference_channel(data: bytes, start: int, frames: int) -> list[int]:
    """Walks the run-length spans the way the format describes them, one frame after another: a span header of
    (valid, total) bytes and ``valid`` shorts; frame k of the span reads short k while k < valid, else the last."""
    out = []
    header = start
    frame_in_span = 0
    for _ in range(frames):
        valid, total = data[header], data[header + 1]
        while frame_in_span >= total:
            frame_in_span -= total
            header += 2 * (valid + 1)
            valid, total = data[header], data[header + 1]
        k = frame_in_span if frame_in_span < valid else valid - 1
        (value,) = struct.unpack_from("<h", data, header + 2 + 2 * k)
        out.append(value)
        frame_in_span += 1
    return out


def reference_sequence(gs, seq) -> np.ndarray:
    """(blends, frames, bones, 6) decoded without the reader's animation code."""
    data = gs.data if seq.seqgroup == 0 else gs.group_data[seq.seqgroup][0]
    bones = len(gs.bones)
    out = np.zeros((seq.numblends, seq.numframes, bones, 6))
    for blend in range(seq.numblends):
        for bone in range(bones):
            record = seq.animindex + 12 * (blend * bones + bone)
            offsets = struct.unpack_from("<6H", data, record)
            default, scale = gs.bones[bone]["value"], gs.bones[bone]["scale"]
            for channel, offset in enumerate(offsets):
                raw = reference_channel(data, record + offset, seq.numframes) if offset else [0] * seq.numframes
                out[blend, :, bone, channel] = float(default[channel]) + np.array(raw) * float(scale[channel])
    return out


@pytest.mark.parametrize("relative", MODELS)
def test_every_frame_of_every_sequence_matches_a_reference_decoder(relative):
    gs = read_goldsrc(goldsrc(relative))
    assert gs.sequences
    for seq in gs.sequences:
        decoded = decode_sequence(gs, seq)
        ours = np.concatenate([decoded.positions, decoded.angles], axis=-1)
        np.testing.assert_allclose(ours, reference_sequence(gs, seq), rtol=0, atol=1e-4, err_msg=seq.label)


@pytest.mark.parametrize("relative", MODELS)
def test_texture_pixels_match_a_palette_lookup(relative):
    gs = read_goldsrc(goldsrc(relative))
    source = gs.texture_file or gs.path
    with open(source, "rb") as file:
        data = file.read()
    numtextures, textureindex = struct.unpack_from("<2i", data, 180)
    assert numtextures == len(gs.textures) > 0
    for i, texture in enumerate(gs.textures):
        _name, flags, width, height, index = struct.unpack_from("<64s4i", data, textureindex + 80 * i)
        assert (texture.width, texture.height, texture.flags) == (width, height, flags)
        pixels = data[index : index + width * height]
        palette = data[index + width * height : index + width * height + 768]
        rgba = texture.rgba()
        # every pixel: the palette entry its index names, straight from the file's bytes
        table = np.frombuffer(palette, np.uint8).reshape(256, 3)
        whole = table[np.frombuffer(pixels, np.uint8)].reshape(height, width, 3)
        np.testing.assert_array_equal(rgba[..., :3], whole)
        assert (rgba[..., 3] == 0).sum() == (pixels.count(255) if flags & 64 else 0)
        for y, x in [(0, 0), (height - 1, width - 1), (height // 2, width // 3), (height // 3, width - 1)]:
            p = pixels[y * width + x]
            alpha = 0 if flags & 64 and p == 255 else 255
            assert tuple(rgba[y, x]) == (*palette[3 * p : 3 * p + 3], alpha)


def test_flags_of_the_samples():
    gauss = read_goldsrc(goldsrc("Pi0h1__halflife/models/v_gauss.mdl"))
    flags = {t.name: t.flags for t in gauss.textures}
    assert flags["spinnerBRIGHT.bmp"] & 4 and any(f & 64 for f in flags.values()) and any(f & 2 for f in flags.values())
    martini = read_goldsrc(goldsrc("Pi0h1__halflife/models/sr666mdl/martini.mdl"))
    assert martini.textures[0].flags & 32 and martini.name.startswith("D:\\")
    ar = read_goldsrc(goldsrc("Pi0h1__halflife/models/v_9mmar.mdl"))
    masked = next(t for t in ar.textures if t.name == "kuku_gordon.bmp")
    assert masked.flags & 64 and (masked.rgba()[..., 3] == 0).any()


def test_scientist_textures_and_groups_come_from_companions():
    gs = read_goldsrc(goldsrc("phoenixprojectsoftware__halflifeclassic/models/scientist.mdl"))
    assert gs.texture_file.endswith("scientistT.mdl") and len(gs.textures) == 31 and gs.skins.shape == (2, 29)
    assert len(gs.sequences) == 129 and sorted(gs.group_data) == list(range(1, 8))
    assert sum(s.seqgroup == 0 for s in gs.sequences) == 41
    assert [bp.name for bp in gs.body_parts] == ["studio", "heads", "needle"] and len(gs.bones) == 22


def test_sequence_details():
    gs = read_goldsrc(goldsrc("phoenixprojectsoftware__halflifeclassic/models/scientist.mdl"))
    walk = gs.sequences[0]
    assert walk.label == "walk" and walk.looping and walk.fps == 20 and len(walk.events) == 2
    assert any(s.numblends > 1 for s in read_goldsrc(goldsrc("Pi0h1__halflife/models/hgrunt.mdl")).sequences)
    hgrunt = read_goldsrc(goldsrc("Pi0h1__halflife/models/hgrunt.mdl"))
    assert len(hgrunt.attachments) == 3 and len(hgrunt.hitboxes) > 0


@pytest.mark.parametrize(
    ("relative", "says"),
    [
        ("phoenixprojectsoftware__halflifeclassic/models/scientistT.mdl", "open 'scientist.mdl'"),
        ("phoenixprojectsoftware__halflifeclassic/models/scientist03.mdl", "open 'scientist.mdl'"),
        ("phoenixprojectsoftware__halflifeclassic/models/islave01.mdl", "open 'islave.mdl'"),
    ],
)
def test_companions_opened_directly_name_the_model(relative, says):
    with pytest.raises(FormatError, match=says):
        load_source(str(goldsrc(relative)))


@pytest.mark.parametrize(
    ("head", "says"),
    [
        (b"IDPO" + struct.pack("<i", 6), "Quake model"),
        (b"IDP2" + struct.pack("<i", 8), "Quake II model"),
        (b"IDST" + struct.pack("<i", 10) + b"\0" * 100, "file ends|run past|too short|GoldSrc"),
    ],
)
def test_foreign_and_truncated_files_are_refused_by_name(tmp_path, head, says):
    path = tmp_path / "thing.mdl"
    path.write_bytes(head)
    with pytest.raises(FormatError, match=says):
        load_source(str(path))


def test_info_says_goldsrc_and_lists_parts_textures_sequences_and_groups(capsys):
    from io_ms3d_mdl.cli import main

    path = goldsrc("phoenixprojectsoftware__halflifeclassic/models/scientist.mdl")
    assert main(["info", str(path)]) == 0
    text = capsys.readouterr().out
    assert "GoldSrc model version 10" in text and "game: GoldSrc (Half-Life 1)" in text
    assert "textures: 31 (from scientistT.mdl)" in text and "sequence groups: 8" in text
    assert "heads   4 options:" in text
    assert main(["info", "--json", str(goldsrc("Pi0h1__halflife/models/v_gauss.mdl"))]) == 0
    import json

    data = next(iter(json.loads(capsys.readouterr().out).values()))
    flags = {t["name"]: t["flag_names"] for t in data["textures"]}
    assert flags["spinnerBRIGHT.bmp"] == ["flatshade", "fullbright"]
    assert data["sequence_groups"][0]["sequences"] == len(data["sequences"]) == 9


def test_folder_searches_skip_the_companion_files():
    from io_ms3d_mdl.cli.files import collect

    folder = goldsrc("phoenixprojectsoftware__halflifeclassic/models/scientist.mdl").parent
    names = sorted(f.source.name for f in collect([str(folder)]))
    assert names == ["islave.mdl", "scientist.mdl", "v_9mmhandgun.mdl"]


@pytest.mark.parametrize("relative", MODELS)
def test_the_samples_import_without_warnings(relative):
    scene = load_source(str(goldsrc(relative)), SourceOptions(animations="ALL"))
    assert list(scene.warnings) == []


def test_degenerate_triangles_are_counted_not_warned_about():
    """v_gauss repeats a vertex in 5 triangles: skipped, and counted in the model's properties and `info`."""
    from io_ms3d_mdl.cli.goldsrc_info import goldsrc_info, goldsrc_text

    path = goldsrc("Pi0h1__halflife/models/v_gauss.mdl")
    scene = load_source(str(path), SourceOptions(import_animations=False))
    assert scene.degenerate_triangles == 5 and scene.props["source_degenerate_triangles"] == 5
    info = goldsrc_info(str(path))
    assert sum(o["degenerate_triangles"] for bp in info["body_parts"] for o in bp["options"]) == 5
    assert "  degenerate triangles (a repeated vertex, skipped on import): 5" in goldsrc_text(info)


HOSTAGE = "gloeyisk__CS16/models/hostage.mdl"


def reference_or_none(data: bytes, start: int, frames: int) -> list[int] | None:
    """The reference channel, or None where the engine would read past the end of the file."""
    try:
        return reference_channel(data, start, frames)
    except (IndexError, struct.error):
        return None


def test_hostage_channels_past_their_group_file_hold_their_rest_value():
    """CS 1.6's hostage.mdl: every sequence of its group files has channels whose offsets (near 65,535) point past
    the end of its hostageNN.mdl. Those hold the bone's default value, the others decode as the reference does,
    and every one of the 156 sequences imports, each naming its held bones once."""
    gs = read_goldsrc(goldsrc(HOSTAGE))
    held_groups = []
    for seq in gs.sequences:
        data = gs.data if seq.seqgroup == 0 else gs.group_data[seq.seqgroup][0]
        decoded = decode_sequence(gs, seq)
        ours = np.concatenate([decoded.positions, decoded.angles], axis=-1)
        for blend in range(seq.numblends):
            for bone in range(len(gs.bones)):
                record = seq.animindex + 12 * (blend * len(gs.bones) + bone)
                for channel, offset in enumerate(struct.unpack_from("<6H", data, record)):
                    raw = reference_or_none(data, record + offset, seq.numframes) if offset else [0] * seq.numframes
                    assert decoded.held[blend, bone, channel] == (raw is None), (seq.label, bone, channel)
                    default, scale = float(gs.bones[bone]["value"][channel]), float(gs.bones[bone]["scale"][channel])
                    want = default + np.array(raw or [0] * seq.numframes) * scale
                    np.testing.assert_allclose(ours[blend, :, bone, channel], want, rtol=0, atol=1e-4)
        if decoded.held.any():
            held_groups.append(seq.seqgroup)
    assert len(held_groups) == 88 and all(held_groups)  # every sequence of the group files, none of the model's
    scene = load_source(str(goldsrc(HOSTAGE)), SourceOptions(animations="ALL"))
    assert len(scene.actions) == len(gs.sequences) == 156
    held = [w for w in scene.warnings if "points past the end of 'hostage0" in w]
    assert len(held) == 88 and len(scene.warnings) == 88  # once per sequence, nothing else
    assert "sequence 'lying_on_back': the animation data of bones 'Bip01 R Clavicle', 'Bip01 R UpperArm'" in held[0]


def _chain(rng: np.random.Generator, frames: int, single: bool) -> bytes:
    """A channel's spans: one value a frame (``single``), or spans of 0–4 frames with 0–3 values (empty ones too)."""
    out, covered = bytearray(), 0
    while covered < frames:
        valid, total = (1, 1) if single else (int(rng.integers(0, 4)), int(rng.integers(0, 5)))
        out += struct.pack(f"<BB{valid}h", valid, total, *rng.integers(-3000, 3000, valid).tolist())
        covered += total
    return bytes(out)


@pytest.mark.parametrize(
    ("frames", "single", "stored"),
    [(300, False, 300), (20_000, False, 20_000), (60_000, True, 60_000), (9_000, True, 8_000)],
)
def test_long_chains_leap_and_equal_the_reference(frames, single, stored):
    """Channels of thousands of spans (beyond the lockstep walk) decode as the frame-by-frame reference does; one
    whose spans end before its frames do runs past the end of the file in mid-leap and is held."""
    from goldsrc_writer import GBone, GSequence, GSpec, write_goldsrc

    from io_ms3d_mdl.formats.goldsrc import read_goldsrc_bytes

    rng = np.random.default_rng(frames)
    short = [_chain(rng, 200, False), None, _chain(rng, 300, True)]  # a few spans, then whatever follows them
    bones = [[*short, None, None, None], [*short, None, None, _chain(rng, stored, single)]]  # the long one last
    spec = GSpec(bones=[GBone("root", -1), GBone("b", 0)], sequences=[GSequence("s", frames, [bones])])
    data = write_goldsrc(spec)
    gs = read_goldsrc_bytes(data, "long.mdl")
    (seq,) = gs.sequences
    decoded = decode_sequence(gs, seq)
    ours = np.concatenate([decoded.positions, decoded.angles], axis=-1)
    want = np.zeros_like(ours)
    for bone in range(2):
        record = seq.animindex + 12 * bone
        for channel, offset in enumerate(struct.unpack_from("<6H", data, record)):
            raw = reference_or_none(data, record + offset, frames) if offset else [0] * frames
            assert decoded.held[0, bone, channel] == (raw is None)
            default, scale = gs.bones[bone]["value"][channel], gs.bones[bone]["scale"][channel]
            want[0, :, bone, channel] = default + np.array(raw or [0] * frames) * scale
    assert decoded.held[0, 1, 5] == (stored < frames)
    np.testing.assert_allclose(ours, want, rtol=0, atol=1e-4)


def test_a_million_frames_of_one_bone_decode_in_well_under_a_second():
    """The issue's case: a 4 MB file, one bone, 1 M frames of one-frame spans (a Python turn per span took 17 s)."""
    import time

    from goldsrc_writer import GBone, GSequence, GSpec, write_goldsrc

    from io_ms3d_mdl.formats.goldsrc import read_goldsrc_bytes

    frames = 1_000_000
    spans = np.zeros((frames, 4), np.uint8)
    spans[:, :2] = 1
    spans[:, 2:] = (np.arange(frames) % 4000 - 2000).astype("<i2").view(np.uint8).reshape(-1, 2)
    spec = GSpec(bones=[GBone("root", -1)], sequences=[GSequence("s", frames, [[[spans.tobytes()] + [None] * 5]])])
    gs = read_goldsrc_bytes(write_goldsrc(spec), "million.mdl")
    start = time.perf_counter()
    decoded = decode_sequence(gs, gs.sequences[0])
    seconds = time.perf_counter() - start
    np.testing.assert_allclose(decoded.positions[0, :, 0, 0], (np.arange(frames) % 4000 - 2000) * 0.01, atol=1e-9)
    assert seconds < 1.0, f"{seconds:.2f} s"
