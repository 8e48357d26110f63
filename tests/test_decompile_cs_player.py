"""A Counter-Strike: Source player's animations, decompiled whole (FJH03/CSCZS_GameData, a public mod's game data:
``zs_player_shared.mdl`` holds 1,382 animations, 858 of them deltas, in 2.0 MB; ``ct_gsg9.mdl`` plays 1,446 of
its includes' animations).

Two things real files of this size taught: animation text runs to about 35 bytes per byte read (68 MB here), past
the 64 MB ceiling of a decompile's output (animations now have their own allowance,
``budget.animation_text_bytes``); and studiomdl stores a ``blendlayer``'s four frames as cycles,
frame / (frames − 1) of the sequence's first animation, so a one-frame sequence's layer holds 0/0, NaN (32 of this
file's 387 layers). Layer flags are the SDK's ``STUDIO_AL_*`` (0x40 spline, 0x80 xfade, 0x200 noblend, 0x1000
local, 0x4000 pose parameter).
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
import qc_grammar
from conftest import mirror_tree
from smd_strict import qc_commands

from io_ms3d_mdl.decompile import DecompileOptions, decompile
from io_ms3d_mdl.decompile.source.details import model_details
from io_ms3d_mdl.formats.source.mdl import read_mdl

REPO = "FJH03+CSCZS_GameData"
SHARED = "models/player/zs_player_shared.mdl"


@pytest.fixture(scope="module")
def game(tmp_path_factory) -> Path:
    return mirror_tree(REPO, ["models/player"], tmp_path_factory.mktemp("csczs"))


def _layers(qc: Path) -> dict[str, list[list[str]]]:
    """Each ``$sequence``'s ``addlayer``/``blendlayer`` options, as the SDK's tokenizer reads them."""
    out: dict[str, list[list[str]]] = {}
    for command in qc_commands(qc.read_text(encoding="utf-8")):
        if command[0].lower() != "$sequence":
            continue
        tokens, found = command[2:], []
        for i, token in enumerate(tokens):
            if token == "addlayer":
                found.append(tokens[i : i + 2])
            elif token == "blendlayer":
                j = i + 6
                while j < len(tokens) and tokens[j] in ("xfade", "spline", "noblend", "local", "poseparameter"):
                    j += 2 if tokens[j] == "poseparameter" else 1
                found.append(tokens[i:j])
        out[command[1]] = found
    return out


def test_the_shared_animations_decompile_whole_with_their_layers(game, tmp_path):
    model = game / SHARED
    out = tmp_path / "out"
    result = decompile(str(model), str(out), DecompileOptions())
    assert result.qc and len(result.files) > 1380
    written = sum((out / f).stat().st_size for f in result.files)
    assert written > 64 << 20, "the real file that needs more than the 64 MB of output_bytes"
    qc_grammar.check_file(out / result.qc)
    text = (out / result.qc).read_text(encoding="utf-8")
    assert not any(w in text.lower().split() for w in ("nan", "-nan", "inf", "-inf"))

    mdl = read_mdl(model)
    details = model_details(model.read_bytes(), str(model), len(mdl.sequences))
    layers = _layers(out / result.qc)
    counts = {"addlayer": 0, "blendlayer": 0, "one frame": 0}
    for seq, d in zip(mdl.sequences, details.sequences, strict=True):
        if not d.layers or not seq.animations:
            continue
        written_layers = layers[seq.name]
        assert len(written_layers) == len(d.layers), seq.name
        last = max(mdl.animations[seq.animations[0]].num_frames - 1, 0)
        for (index, _pose, flags, *stored), words in zip(d.layers, written_layers, strict=True):
            assert words[1] == mdl.sequences[index].name
            counts[words[0]] += 1
            if words[0] == "addlayer":
                assert flags == 0 and stored == [0.0, 0.0, 0.0, 0.0]
                continue
            frames = [int(w) for w in words[2:6]]  # (a layer may run past the sequence's last frame: 110 of 100)
            if last == 0:  # studiomdl's 0/0
                counts["one frame"] += 1
                assert frames == [0, 0, 0, 0] and all(math.isnan(v) for v in stored)
            else:  # recompiled, each frame gives back the stored cycle
                again = np.float32(np.array(frames, np.float32) / np.float32(last))
                assert np.allclose(again, stored, atol=1e-6), (seq.name, frames, stored)
    assert counts == {"addlayer": 253, "blendlayer": 134, "one frame": 32}


def test_a_player_with_fourteen_hundred_included_animations_decompiles(game, tmp_path):
    out = tmp_path / "out"
    result = decompile(str(game / "models/player/ct_gsg9.mdl"), str(out), DecompileOptions())
    animations = [f for f in result.files if f.startswith("anims/")]
    assert len(animations) >= 1440
    qc_grammar.check_file(out / result.qc)


@pytest.mark.parametrize(
    ("layer", "line"),
    [
        ((1, 0, 0, 0.0, 0.0, 0.0, 0.0), 'addlayer "layer"'),
        ((1, 0, 0x40 | 0x80, 0.0, 0.1, 0.9, 1.0), 'blendlayer "layer" 0 2 18 20 xfade spline'),
        ((1, 0, 0x1000 | 0x200, math.nan, math.nan, math.nan, math.nan), 'blendlayer "layer" 0 0 0 0 noblend local'),
        ((1, 1, 0x4000, -45.0, 0.0, 0.0, 45.0), 'blendlayer "layer" -45 0 0 45 poseparameter "move_yaw"'),
    ],
)
def test_a_layer_is_written_as_studiomdl_reads_it(layer, line):
    """Frames from cycles (× 20 here), a pose-parameter layer's values as stored, the SDK's flag words."""
    from types import SimpleNamespace

    from io_ms3d_mdl.decompile.source.qc import _layer
    from io_ms3d_mdl.formats.qc import QcWriter

    names = [SimpleNamespace(name=n) for n in ("base", "layer")]
    parts = SimpleNamespace(
        mdl=SimpleNamespace(sequences=names),
        details=SimpleNamespace(pose_parameters=[SimpleNamespace(name=n) for n in ("body_yaw", "move_yaw")]),
    )
    qc = QcWriter()
    _layer(qc, parts, layer, 20)
    assert qc.text().strip() == line
