"""Hostile input: seeded mutations of synthetic and real MS3D files. Reading and converting may only ever
raise the project's FormatError; anything else is a bug. (A few thousand cases; deterministic.)"""

from __future__ import annotations

import random

import pytest
from conftest import samples_dir
from ms3d_writer import write_ms3d
from test_ms3d_reader import full_spec
from test_ms3d_rig import arm_spec

from io_ms3d_mdl.errors import FormatError
from io_ms3d_mdl.formats.ms3d import read_ms3d_bytes
from io_ms3d_mdl.scene.from_ms3d import Ms3dOptions, ms3d_to_scene

CASES_PER_SEED = 400


def mutate(data: bytes, rng: random.Random) -> bytes:
    out = bytearray(data)
    kind = rng.randrange(5)
    if kind == 0:  # truncation
        return bytes(out[: rng.randrange(len(out))])
    if kind == 1:  # bit flips
        for _ in range(rng.randint(1, 8)):
            i = rng.randrange(len(out))
            out[i] ^= 1 << rng.randrange(8)
    elif kind == 2:  # count inflation (16-bit counts are everywhere in MS3D)
        i = rng.randrange(max(1, len(out) - 2))
        out[i : i + 2] = rng.choice([b"\xff\xff", b"\x00\x80", b"\xff\x7f", b"\x01\x01"])
    elif kind == 3:  # 32-bit corruption: lengths, sub-versions, floats (NaN/inf patterns included)
        i = rng.randrange(max(1, len(out) - 4))
        out[i : i + 4] = rng.choice([b"\xff\xff\xff\x7f", b"\x00\x00\xc0\x7f", b"\x00\x00\x80\x7f", rng.randbytes(4)])
    else:  # splice a block of the file over another place
        a, b = sorted(rng.randrange(len(out)) for _ in range(2))
        c = rng.randrange(len(out))
        out[c : c + (b - a)] = out[a:b]
    return bytes(out)


SEEDS = [
    "arm",
    "full",
    "akadjoker__H3DView/media/bones2.ms3d",
    "assimp__assimp/twospheres_withmats.ms3d",
    "soulsheng__ms3d-render/Model.ms3d",
]


def seed_bytes(name: str) -> bytes:
    if name == "arm":
        return write_ms3d(arm_spec())
    if name == "full":
        return write_ms3d(full_spec(3))
    return (samples_dir() / "ms3d" / name).read_bytes()


@pytest.mark.parametrize("name", SEEDS)
def test_mutations_only_raise_format_errors(name):
    data = seed_bytes(name)
    rng = random.Random(f"io_ms3d_mdl:{name}")
    failures = []
    for case in range(CASES_PER_SEED):
        mutated = mutate(data, rng)
        try:
            ms3d_to_scene(read_ms3d_bytes(mutated, "mutant.ms3d"), Ms3dOptions(find_textures=False))
        except FormatError as exc:
            assert exc.message.startswith("mutant.ms3d: ")
        except Exception as exc:
            failures.append((case, type(exc).__name__, str(exc)[:120]))
    assert failures == []
