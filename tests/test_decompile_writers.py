"""The SMD/VTA and QC writers (Blender-free): exact float32 round trips, no nan/inf, names as stored."""

from __future__ import annotations

import io

import numpy as np
from smd_strict import qc_commands, qc_tokens, read_smd

from io_ms3d_mdl.formats.float_text import float_tokens
from io_ms3d_mdl.formats.qc import QcWriter, Quoted, qc_token
from io_ms3d_mdl.formats.smd import SmdSkeleton, SmdTriangles, write_smd, write_vta


def test_float_text_round_trips_float32_shortest():
    rng = np.random.default_rng(1)
    values = np.concatenate(
        [
            rng.random(5000).astype(np.float32) * 100,
            rng.integers(-(2**31), 2**31, 5000, dtype=np.int64).astype(np.int32).view(np.float32),
            np.array([0.1, 1.0, -0.0, 0.5, 1e-30, 3.4028235e38, 1.4e-45], np.float32),
        ]
    )
    tokens, bad = float_tokens(values)
    finite = np.where(np.isfinite(values), values, 0)
    assert bad == int((~np.isfinite(values)).sum())
    back = np.array(tokens.tolist(), dtype=np.float64).astype(np.float32)
    assert (back == finite).all()
    assert all(t not in ("nan", "inf", "-inf", "-0") for t in tokens.tolist())
    assert tokens[-7:-3].tolist() == ["0.1", "1", "0", "0.5"]
    # shortest: one digit fewer would not read back
    for token, value in zip(tokens[:200].tolist(), finite[:200].tolist(), strict=True):
        digits = len(token.replace("-", "").replace(".", "").split("e")[0].lstrip("0"))
        if digits > 6:
            assert np.float32(float(f"%.{digits - 1}g" % value)) != np.float32(value)


def triangles(count: int = 2) -> SmdTriangles:
    t = count
    positions = np.arange(t * 9, dtype=np.float32).reshape(t, 3, 3) / 7
    bones = np.full((t, 3, 3), -1)
    weights = np.zeros((t, 3, 3), np.float32)
    bones[..., 0], weights[..., 0] = 0, 0.25
    bones[..., 1], weights[..., 1] = 1, 0.75
    bones[0, 0] = [1, -1, -1]
    weights[0, 0] = [1, 0, 0]
    positions[0, 0, 0] = np.nan
    return SmdTriangles(
        ["metal", "glass pane ü"],
        np.arange(t) % 2,
        positions,
        np.tile(np.float32([0, 0, 1]), (t, 3, 1)),
        np.full((t, 3, 2), 0.5, np.float32),
        bones,
        weights,
    )


def test_smd_reads_back_strictly():
    skeleton = SmdSkeleton(["root", 'bone "with" quotes ünïcode ' + "x" * 80], np.array([-1, 0]))
    frames = np.zeros((3, 2, 6), np.float32)
    frames[:, 1, 0] = [1, 2, 3]
    frames[1, 1, 5] = np.inf
    out = io.BytesIO()
    stats = write_smd(out, skeleton, frames, triangles())
    assert stats.non_finite == 2
    smd = read_smd(out.getvalue())
    assert smd.names == ["root", "bone 'with' quotes ünïcode " + "x" * 80]
    assert smd.parents == [-1, 0]
    assert sorted(smd.frames) == [0, 1, 2]
    assert smd.frames[2][1][0] == 3 and smd.frames[1][1][5] == 0
    assert smd.materials == ["metal", "glass pane ü"]
    assert smd.corners[0][4] == [(1, 1.0)] and smd.corners[0][0] == 1
    assert smd.corners[1][4] == [(0, 0.25), (1, 0.75)]
    assert np.float32(smd.corners[1][1]).tolist() == np.float32([3 / 7, 4 / 7, 5 / 7]).tolist()


def test_vta_reads_back_strictly():
    skeleton = SmdSkeleton(["root"], np.array([-1]))
    base = np.arange(12, dtype=np.float32).reshape(4, 3)
    normals = np.tile(np.float32([0, 0, 1]), (4, 1))
    out = io.BytesIO()
    write_vta(out, skeleton, base, normals, [("smile", np.array([1, 3]), base[[1, 3]] + 1, normals[[1, 3]])])
    smd = read_smd(out.getvalue())
    assert sorted(smd.vertex_frames) == [0, 1]
    assert len(smd.vertex_frames[0]) == 4
    assert smd.vertex_frames[1][3][:3] == [10, 11, 12]


def test_qc_tokens_quote_what_the_tokenizer_would_split():
    assert qc_token("idle") == "idle"
    for name in ["flex name", "", "a//b", "x{y", "née", "a;b", "#x", "$x", 'say "hi"']:
        token = qc_token(name)
        assert token.startswith('"'), name
        assert qc_tokens(token) == [name.replace('"', "'")]
    assert qc_token(Quoted("models/x.mdl")) == '"models/x.mdl"'
    assert qc_token(0.1) == "0.1" and qc_token(float("nan")) == "0"


def test_qc_writer_blocks_parse():
    qc = QcWriter()
    qc.command("$modelname", Quoted("props/x.mdl"))
    with qc.block("$sequence", "idle", Quoted("idle.smd")):
        qc.line("fps", 30.0)
        qc.line("event", 5004, 0, "A long event name with spaces " * 4)
    qc.comment("done // here")
    commands = qc_commands(qc.text())
    assert commands[0] == ["$modelname", "props/x.mdl"]
    assert commands[1][:4] == ["$sequence", "idle", "idle.smd", "{"]
    assert "A long event name with spaces " * 4 in commands[1]


def test_decompile_refuses_what_it_does_not_know(tmp_path):
    import pytest

    import io_ms3d_mdl
    from io_ms3d_mdl.errors import FormatError

    model = tmp_path / "x.mdl"
    model.write_bytes(b"NOPE" + bytes(100))
    with pytest.raises(FormatError, match="not a model"):
        io_ms3d_mdl.decompile(str(model), str(tmp_path / "out"))
    assert [d.name for d in io_ms3d_mdl.decompile.decompilers()][:1] != []


def test_output_never_writes_through_a_link_nor_over_a_file(tmp_path):
    import os

    import pytest

    from io_ms3d_mdl.decompile.output import Output, OutputExists

    out = Output(tmp_path / "out")
    name = out.name(r"..\..\evil/name:x", ".smd")
    assert name == "name_x.smd"
    assert out.name("NAME_X", ".smd") == "NAME_X_2.smd"
    out.write(name, b"one")
    assert (tmp_path / "out" / name).read_bytes() == b"one"
    with pytest.raises(OutputExists):
        out.write(name, b"two")
    (tmp_path / "elsewhere").mkdir()
    os.symlink(tmp_path / "elsewhere", tmp_path / "out" / "anims")
    with pytest.raises(OSError):
        out.write("anims/a.smd", b"x")
    assert list((tmp_path / "elsewhere").iterdir()) == []
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["anims", name]
