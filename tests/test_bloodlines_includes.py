"""Bloodlines (MDL 2531) included models (``$includemodel``), where its characters keep most of their animations.

swat3 from a local fetch of the Unofficial Patch's repository (skipped, saying so, when it is absent), with the
shared male animation models its include chain names: the import offers and builds every animation of the chain,
counted here independently by walking the 116-byte include records with ``struct``; each included animation's first
frame matches the test decoder of ``bloodlines_reference``, and the decompile writes it under swat3's skeleton.
Synthetic models: include names leaving the game folder are refused (never opened) with a warning naming them; a
missing or unreadable include costs a warning, never the import."""

from __future__ import annotations

import struct
import subprocess
from pathlib import Path

import bloodlines_reference as ref
import numpy as np
import pytest
from bloodlines_writer import BBone, BSpec, character_spec2531, write_bloodlines
from smd_strict import qc_commands, read_smd
from test_decompile_bloodlines import euler_matrix
from test_hostile import no_secret, watch  # noqa: F401 - watch: a fixture
from test_source_bloodlines import mirror

import io_ms3d_mdl
from io_ms3d_mdl.decompile import DecompileOptions
from io_ms3d_mdl.errors import Warnings
from io_ms3d_mdl.formats.source import read_mdl
from io_ms3d_mdl.formats.source.animation import decode_animation
from io_ms3d_mdl.formats.source.includes import load_includes
from io_ms3d_mdl.scene.load import load_source
from io_ms3d_mdl.scene.rotations import quaternion_to_matrix
from io_ms3d_mdl.scene.source.convert import SourceOptions

SWAT = "Basic_Patch/models/character/npc/common/swat/swat3"
SHARED_MALE = "Basic_Patch/models/character/shared/male/"
ALL = SourceOptions(scale=1.0, find_materials=False, animations="ALL")


# --- the layout facts, read with struct (no code of the reader) ---------------------------------------------------


def _text(data: bytes, at: int) -> str:
    return data[at : data.index(b"\0", at)].decode("latin-1")


def _named(data: bytes, count_at: int, size: int) -> list[str]:
    """The names of a header table of ``size``-byte records whose first int is the name's offset from the record."""
    count, at = struct.unpack_from("<2i", data, count_at)
    return [_text(data, at + size * k + struct.unpack_from("<i", data, at + size * k)[0]) for k in range(count)]


def include_records(data: bytes) -> list[str]:
    return _named(data, 404, 116)  # count at 404, offset at 408


def animation_names(data: bytes) -> list[str]:
    return _named(data, 264, 72)


def bone_names(data: bytes) -> list[str]:
    return _named(data, 240, 160)


def bone_parents(data: bytes) -> list[int]:
    count, at = struct.unpack_from("<2i", data, 240)
    return [struct.unpack_from("<i", data, at + 160 * b + 4)[0] for b in range(count)]


def include_chain(game: Path, model: Path) -> tuple[list[tuple[str, bytes]], list[str]]:
    """Depth first, each file once (the model itself counting as seen): (name, bytes) of every included model found
    under ``game`` (the patch's names and files are all lower case), and the names not found."""
    found: list[tuple[str, bytes]] = []
    missing: list[str] = []
    seen = {model.resolve()}

    def visit(data: bytes) -> None:
        for name in include_records(data):
            path = (game / name).resolve()
            if not path.is_file():
                missing.append(name)
            elif path not in seen:
                seen.add(path)
                found.append((name, path.read_bytes()))
                visit(found[-1][1])

    visit(model.read_bytes())
    return found, missing


def offered(own: list[str], chain: list[tuple[str, bytes]]) -> list[tuple[str, str]]:
    """(animation, include name or "") in the order offered: the model's, then each include's; a name once."""
    out: dict[str, str] = dict.fromkeys(own, "")
    for name, data in chain:
        for animation in animation_names(data):
            out.setdefault(animation, name)
    return list(out.items())


# --- swat3 and its include chain ----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def swat3(tmp_path_factory) -> Path:
    """swat3 with its VTX and every shared male model the snapshot holds, in a game folder of their own; the
    snapshot lists ``move_and_ranged.mdl`` without its contents (one of its largest files): a missing include."""
    repo = mirror()
    out = tmp_path_factory.mktemp("vtmb_includes")
    names = subprocess.run(
        ["git", "-C", str(repo), "ls-tree", "-r", "--name-only", "HEAD"], capture_output=True, text=True, check=True
    ).stdout.splitlines()
    for name in names:
        if not (name.startswith(SWAT + ".") or (name.startswith(SHARED_MALE) and name.endswith(".mdl"))):
            continue
        blob = subprocess.run(["git", "-C", str(repo), "show", f"HEAD:{name}"], capture_output=True)
        if blob.returncode == 0 and blob.stdout:
            (out / name).parent.mkdir(parents=True, exist_ok=True)
            (out / name).write_bytes(blob.stdout)
    return out / f"{SWAT}.mdl"


def game_of(model: Path) -> Path:
    return model.parents[len(SWAT.split("/")) - 2]  # .../Basic_Patch


def test_swat3_offers_and_builds_the_animations_of_its_include_chain(swat3):
    data = swat3.read_bytes()
    chain, missing = include_chain(game_of(swat3), swat3)
    expected = offered(animation_names(data), chain)
    included = [e for e in expected if e[1]]
    assert len(chain) == 11 and len(included) == 22  # measured: 4 shared sequence files, 7 player models
    scene = load_source(str(swat3), ALL)
    assert [(a.name, a.source) for a in scene.animations] == expected
    assert [a.name for a in scene.actions] == [name for name, _ in expected]
    for action, (_, source) in zip(scene.actions, expected, strict=True):
        assert action.props.get("source_include", "") == source and action.channels
    assert missing and len(set(missing)) == 23
    lost = [w for w in scene.warnings if "included models were not found" in w]  # one warning, naming the first 8
    assert len(lost) == 1 and lost[0].startswith("23 included models") and lost[0].endswith(" and 15 more"), lost
    assert sum(f"'{name}'" in lost[0] for name in set(missing)) == 8


def test_included_animations_decode_to_the_reference_first_frame(swat3):
    chain, _ = include_chain(game_of(swat3), swat3)
    includes = load_includes(str(swat3), read_mdl(swat3), Warnings())
    assert [i.name for i in includes] == [name for name, _ in chain]
    checked = 0
    for inc, (_, data) in zip(includes, chain, strict=True):
        assert [a.name for a in inc.mdl.animations] == animation_names(data)
        for index in range(len(inc.mdl.animations)):
            decoded = decode_animation(inc.mdl, index)
            positions, rotations = ref.first_frame(data, index)
            np.testing.assert_allclose(decoded.positions[0], positions, atol=1e-4)
            wxyz = rotations[:, [3, 0, 1, 2]] / np.linalg.norm(rotations, axis=1, keepdims=True)
            np.testing.assert_allclose(np.abs(np.einsum("bi,bi->b", decoded.rotations[0], wxyz)), 1.0, atol=1e-6)
            checked += 1
    assert checked == 29  # the 22 offered and 7 whose names were taken (each player model has its @ragdoll)


def test_the_decompile_writes_included_animations_under_our_skeleton(swat3, tmp_path):
    """$includemodel as stored, and an SMD per included animation: at frame 0 every non-root bone swat3 shares by
    name with the included model is where the test decoder puts it."""
    data = swat3.read_bytes()
    chain, _ = include_chain(game_of(swat3), swat3)
    result = io_ms3d_mdl.decompile(str(swat3), str(tmp_path), DecompileOptions(lods=False, physics=False))
    commands = qc_commands((tmp_path / result.qc).read_text("utf-8"))
    assert [c[1:] for c in commands if c[0] == "$includemodel"] == [include_records(data)]
    ours = bone_names(data)
    parents = bone_parents(data)
    files = {Path(f).stem: f for f in result.files if f.startswith("anims/")}
    compared = 0
    for name, source in offered(animation_names(data), chain):
        if not source:
            continue
        included = dict(chain)[source]
        theirs = {n.lower(): i for i, n in enumerate(bone_names(included))}
        smd = read_smd((tmp_path / files[name.lstrip("@")]).read_bytes())
        assert smd.names == ours
        frame = np.array([smd.frames[0][b] for b in range(len(ours))])
        positions, rotations = ref.first_frame(included, animation_names(included).index(name))
        shared = [(b, theirs[n.lower()]) for b, n in enumerate(ours) if n.lower() in theirs and parents[b] >= 0]
        assert len(shared) > len(ours) // 2
        mine, src = np.array(shared).T
        np.testing.assert_allclose(frame[mine, :3], positions[src], atol=1e-4)
        want = quaternion_to_matrix(rotations[src][:, [3, 0, 1, 2]] / np.linalg.norm(rotations[src], axis=1)[:, None])
        np.testing.assert_allclose(euler_matrix(frame[mine, 3:]), want, atol=1e-4)
        compared += 1
    assert compared == 22


# --- synthetic: confinement, missing and broken includes ----------------------------------------------------------


def borrowed_spec(name: str) -> BSpec:
    """An animation model: two of the character's bones (another case), one animation of its own name."""
    bones = [BBone("ROOT", -1, (0.0, 0.0, 0.0)), BBone("Spine", 0, (0.0, 0.0, 10.0))]
    return BSpec(bones, np.zeros((0, 3)), np.zeros((0, 3), int), np.zeros((0, 2)), 0, np.zeros(0, int),
                 animations=[(name, 7)])  # fmt: skip


def test_include_names_leaving_the_game_folder_are_refused(tmp_path, watch):  # noqa: F811
    """'..' above the game folder, absolute paths and a missing or broken include: each a warning naming it, nothing
    outside opened, by the import or the decompile; the include inside the game folder still lends its animation."""
    outside = watch / "secret.mdl"
    hostile_names = [
        "../../outside/secret.mdl",
        "models\\..\\..\\outside\\secret.mdl",
        str(outside),
        "C:\\outside\\secret.mdl",
    ]
    models = tmp_path / "game" / "models"
    write_bloodlines(borrowed_spec("borrowed"), models / "shared", "anims", vtx=False)
    (models / "shared" / "broken.mdl").write_bytes(b"IDST" + struct.pack("<i", 2531) + bytes(8))
    spec = character_spec2531()
    spec.includes = [*hostile_names, "models/shared/anims.mdl", "models/shared/nowhere.mdl", "models/shared/broken.mdl"]
    path = write_bloodlines(spec, models / "test", "guy")
    assert read_mdl(path).include_models == spec.includes
    scene = load_source(str(path), ALL)
    no_secret(scene)
    assert [(a.name, a.source) for a in scene.animations] == [
        ("slide", ""),
        ("borrowed", "models/shared/anims.mdl"),
    ]
    assert [a.name for a in scene.actions] == ["slide", "borrowed"]
    lost = [w for w in scene.warnings if "were not found under the game folder" in w]
    assert len(lost) == 1
    for name in [*hostile_names, "models/shared/nowhere.mdl"]:
        assert f"'{name}'" in lost[0], name
    assert any("included model 'models/shared/broken.mdl' could not be read" in w for w in scene.warnings)
    result = io_ms3d_mdl.decompile(str(path), str(tmp_path / "out"), DecompileOptions())
    assert sorted(f for f in result.files if f.startswith("anims/")) == ["anims/anims/borrowed.smd", "anims/slide.smd"]
    lost = [w for w in result.warnings if "included models were not found" in w]  # the broken one: read, refused
    assert len(lost) == 1 and lost[0].startswith(f"{len(spec.includes) - 2} included models"), result.warnings
    assert any("included model 'models/shared/broken.mdl' could not be read" in w for w in result.warnings)


def test_a_zero_name_offset_names_nothing_and_a_broken_table_costs_only_the_includes(tmp_path):
    spec = character_spec2531()
    spec.includes = ["models/a.mdl", "models/b.mdl"]
    data = bytearray((path := write_bloodlines(spec, tmp_path / "models", "guy", vtx=False)).read_bytes())
    at = struct.unpack_from("<i", data, 408)[0]
    struct.pack_into("<i", data, at, 0)  # the first record names nothing
    path.write_bytes(data)
    assert read_mdl(path).include_models == ["models/b.mdl"]
    for where, value in ((404, 1 << 24), (at + 116, len(data) + 5)):  # past the file: the records, a name
        broken = bytearray(data)
        struct.pack_into("<i", broken, where, value)
        path.write_bytes(broken)
        mdl = read_mdl(path)
        assert mdl.include_models == [] and [a.name for a in mdl.animations] == ["slide"]
        assert any("guy.mdl" in w and "the included models were not read" in w for w in mdl.warnings), where
