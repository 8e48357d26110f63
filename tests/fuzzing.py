"""Seeded mutation fuzzing shared by the suite and ``scripts/fuzz.py``: one mutation engine, one oracle per format.

A *case* is a dict of named file parts (``{"mdl": ..., "vvd": ..., "vtx": ...}``); one part is mutated and the
format's oracle reads and converts the whole set. The oracle may only ever raise the project's ``FormatError``
(textures may also say ``UnsupportedTexture``); anything else is a bug.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from io_ms3d_mdl.scene.types import SceneData

Parts = dict[str, bytes]


def mutate(data: bytes, rng: random.Random) -> bytes:
    """Truncation, bit flips, count inflation, 32-bit corruption (offsets, lengths, NaN/inf) or a spliced block."""
    out = bytearray(data)
    if not out:
        return bytes(rng.randbytes(rng.randrange(64)))
    kind = rng.randrange(5)
    if kind == 0:
        return bytes(out[: rng.randrange(len(out))])
    if kind == 1:
        for _ in range(rng.randint(1, 8)):
            i = rng.randrange(len(out))
            out[i] ^= 1 << rng.randrange(8)
    elif kind == 2:  # 16-bit counts (MS3D, VTX strip indices)
        i = rng.randrange(max(1, len(out) - 2))
        out[i : i + 2] = rng.choice([b"\xff\xff", b"\x00\x80", b"\xff\x7f", b"\x01\x01"])
    elif kind == 3:  # 32-bit counts, offsets, floats
        i = rng.randrange(max(1, len(out) - 4))
        out[i : i + 4] = rng.choice(
            [b"\xff\xff\xff\x7f", b"\x00\x00\x00\x80", b"\x00\x00\xc0\x7f", b"\x00\x00\x80\x7f", rng.randbytes(4)]
        )
    else:
        a, b = sorted(rng.randrange(len(out)) for _ in range(2))
        c = rng.randrange(len(out))
        out[c : c + (b - a)] = out[a:b]
    return bytes(out)


def mutate_case(parts: Parts, rng: random.Random) -> Parts:
    which = rng.choice(sorted(parts))
    return dict(parts, **{which: mutate(parts[which], rng)})


# --- oracles ------------------------------------------------------------------------------------------------------


def check_ms3d(parts: Parts) -> SceneData:
    from io_ms3d_mdl.formats.ms3d import read_ms3d_bytes
    from io_ms3d_mdl.scene.ms3d.convert import Ms3dOptions, ms3d_to_scene

    return ms3d_to_scene(read_ms3d_bytes(parts["ms3d"], "mutant.ms3d"), Ms3dOptions(find_textures=False))


def check_source(parts: Parts) -> SceneData:
    """A model and its companions; a v53 model's embedded ones are cut from it, as the importer does."""
    from io_ms3d_mdl.formats.source import read_mdl_bytes, read_vtx_bytes, read_vvd_bytes
    from io_ms3d_mdl.formats.source.includes import Included
    from io_ms3d_mdl.formats.source.mdl import embedded_bytes
    from io_ms3d_mdl.formats.source.phy import read_phy_bytes
    from io_ms3d_mdl.scene.source.convert import source_to_scene

    mdl = read_mdl_bytes(parts["mdl"], "mutant.mdl")

    def part(kind: str, reader: Callable):
        data = embedded_bytes(mdl, kind)
        data = parts.get(kind) if data is None else data
        return reader(data, f"mutant.{kind}") if data is not None else None

    vvd, vtx, phy = part("vvd", read_vvd_bytes), part("vtx", read_vtx_bytes), part("phy", read_phy_bytes)
    vvd = mdl.own_vertices or vvd  # Bloodlines (2531): the vertices are the model's own
    ani = (parts["ani"], "mutant.ani") if "ani" in parts else None
    includes = [Included("inc.mdl", read_mdl_bytes(parts["include"], "inc.mdl"), None)] if "include" in parts else []
    return source_to_scene(mdl, vvd, vtx, ani=ani, includes=includes, phy=phy)


def check_goldsrc(parts: Parts) -> SceneData:
    """A GoldSrc model with its texture file (``t``) and sequence-group files (``g1``, ``g2``…) as parts."""
    from io_ms3d_mdl.formats.goldsrc.reader import read_goldsrc_bytes, read_goldsrc_bytes_textures
    from io_ms3d_mdl.scene.goldsrc.convert import goldsrc_to_scene
    from io_ms3d_mdl.scene.source.convert import SourceOptions

    gs = read_goldsrc_bytes(parts["mdl"], "mutant.mdl")
    if "t" in parts and not gs.textures:
        textures = read_goldsrc_bytes_textures(parts["t"], "mutantT.mdl")
        gs.textures, gs.skins = textures.textures, textures.skins
    for key, data in parts.items():
        if key.startswith("g") and data[:4] == b"IDSQ":
            gs.group_data[int(key[1:])] = (data, f"mutant{int(key[1:]):02d}.mdl")
    return goldsrc_to_scene(gs, SourceOptions(animations="ALL"))


def check_pcx(parts: Parts) -> None:
    from io_ms3d_mdl.formats.images.pcx import decode_pcx

    decode_pcx(parts["pcx"], "mutant.pcx", 1 << 22)


def check_vtf(parts: Parts) -> None:
    from io_ms3d_mdl.formats.source.vtf import read_vtf_bytes

    read_vtf_bytes(parts["vtf"], "mutant.vtf")


def check_vmt(parts: Parts) -> None:
    from io_ms3d_mdl.formats.source.vmt import parse_vmt

    parse_vmt(parts["vmt"], "mutant.vmt", lambda name: parts.get("base"))


ARCHIVE_FILES = {"dir": "pak01_dir.vpk", "part": "pak01_000.vpk", "gma": "addon.gma"}


def check_archive(parts: Parts) -> SceneData | None:
    """An archive (a VPK directory and its part, or a GMA) written to a temporary folder and mounted; its first
    entries read (each may be refused on its own) and its first models read and converted through their paths
    inside it, as an import from the archive would."""
    import os
    import tempfile

    from io_ms3d_mdl import access
    from io_ms3d_mdl.errors import FormatError
    from io_ms3d_mdl.filesystem import mounts
    from io_ms3d_mdl.scene.load import load_source

    with tempfile.TemporaryDirectory() as tmp:
        for key, data in parts.items():
            with open(os.path.join(tmp, ARCHIVE_FILES[key]), "wb") as f:
                f.write(data)
        main = os.path.join(tmp, ARCHIVE_FILES["gma" if "gma" in parts else "dir"])
        mounts.forget_archives()
        access.clear_cache()
        archive = mounts.mount_archive(main)
        archive.listing("")
        for index in range(min(len(archive), 64)):
            try:
                archive.read(index)
            except FormatError:
                continue  # one entry refused; the others still read
        scene = None
        for name in archive.entries(".mdl")[:2]:
            scene = load_source(os.path.join(main, *name.split("/")))
        return scene


GAMEINFO_SEED = (
    b'"GameInfo"\n{\n game "Mod"\n FileSystem\n {\n  SearchPaths\n  {\n'
    b"   game+mod |gameinfo_path|.\n   game |gameinfo_path|stolen\n   game |gameinfo_path|custom/*\n"
    b"   game |all_source_engine_paths|mod/stolen/materials\n   game |gameinfo_path|evil.vpk\n"
    b"   game |gameinfo_path|sub\n   game ../outside\n   platform |all_source_engine_paths|platform\n"
    b"  }\n }\n}\n"
)


def check_gameinfo(parts: Parts) -> SceneData | None:
    """A game folder whose ``gameinfo.txt`` (the mutated part) sits among links to a canary folder (``stolen``, a
    ``custom/*`` entry, a VPK, a folder's ``pak01_dir.vpk``): whatever the text, no root of the import lies in the
    canary (links followed) and the MilkShape model's texture, named as the canary's file, is not found there."""
    import os
    import tempfile

    import hostile

    from io_ms3d_mdl import access
    from io_ms3d_mdl.filesystem import mounts
    from io_ms3d_mdl.filesystem.gameinfo import read_gameinfo
    from io_ms3d_mdl.scene.load import load_ms3d

    with tempfile.TemporaryDirectory() as tmp:
        mod, outside = hostile.gameinfo_link(Path(tmp), "custom")
        for link, target in (("stolen", outside), ("evil_dir.vpk", outside / "secret_dir.vpk")):
            hostile.linked(mod / link, target)
        hostile.linked(mod / "sub" / "pak01_dir.vpk", outside / "secret_dir.vpk")
        (mod / "gameinfo.txt").write_bytes(parts["gameinfo"])
        model = hostile.ms3d_textured(mod / "models", "secret.png")
        mounts.forget_archives()
        access.clear_cache()
        real = os.path.realpath(outside) + os.sep
        read_gameinfo(str(mod))  # FormatError for text that is not KeyValues
        roots = access.Confinement.for_model(str(model), mounted=(str(mod),)).roots
        if any((os.path.realpath(r) + os.sep).startswith(real) for r in roots):
            raise AssertionError(f"a root leads into the canary: {roots}")
        scene = load_ms3d(str(model))
        found = [m.base_texture.resolved_path for m in scene.materials if m.base_texture]
        if any(p and os.path.realpath(p).startswith(real) for p in found):
            raise AssertionError(f"a texture was read from the canary: {found}")
        return scene


def expected_errors() -> tuple[type[Exception], ...]:
    from io_ms3d_mdl.errors import FormatError
    from io_ms3d_mdl.formats.source.vtf import UnsupportedTexture

    return (FormatError, UnsupportedTexture)


def non_finite(scene: SceneData) -> list[str]:
    """Where a converted scene still holds NaN or infinity (the builders must never see one)."""
    arrays = [
        (f"{o.name}.{k}", getattr(o.mesh, k)) for o in scene.objects for k in ("positions", "uvs", "uvs2", "normals")
    ]
    arrays += [(f"{o.name}.weights", o.skin.weights) for o in scene.objects if o.skin is not None]
    arrays += [(e.name, e.matrix) for e in scene.empties]
    arrays += [(b.name, b.matrix) for b in (scene.skeleton.bones if scene.skeleton else [])]
    for a in scene.actions:
        arrays += [(a.name, x) for c in a.channels for x in (c.rotations, c.locations, c.rotation_frames)]
    return [name for name, x in arrays if x is not None and not np.isfinite(x).all()]


def run_case(oracle: Callable[[Parts], SceneData | None], parts: Parts) -> str | None:
    """None when the case passed (read cleanly or refused with a format error); else what went wrong."""
    try:
        with np.errstate(all="ignore"):  # corrupt floats overflow on the way; the scene is checked below
            scene = oracle(parts)
    except expected_errors():
        return None
    except Exception as exc:  # catching everything is the point
        return f"{type(exc).__name__}: {str(exc)[:160]}"
    bad = non_finite(scene) if scene is not None else []
    return f"non-finite values reached the scene: {bad[:3]}" if bad else None


# --- seeds --------------------------------------------------------------------------------------------------------


@dataclass
class Seed:
    name: str
    oracle: Callable[[Parts], None]
    parts: Parts


def _read(root: Path, **names: str) -> Parts:
    return {key: (root / name).read_bytes() for key, name in names.items()}


def synthetic_seeds() -> list[Seed]:
    from ms3d_writer import write_ms3d
    from phy_writer import PhySpec, PSolid, box, solid_text, write_phy
    from source_writer import SAnimation, SNode, character_spec, write_mdl, write_vtx, write_vvd
    from test_ms3d_reader import full_spec
    from test_ms3d_rig import arm_spec

    turn = ("rle", [[0] * 40, [0] * 40, list(range(0, 400, 10))])
    spec = character_spec(
        strip_header=33,
        shuffle_with_fixups=True,
        animations=[
            SAnimation("walk", 40, [SNode(1, turn, ("v48", (1.0, 2.0, 3.0)))], section_frames=16),
            SAnimation("raw", 2, [SNode(0, ("q64", (1.0, 0.0, 0.0, 0.0)), None)], delta=True),
        ],
    )
    spec.body_parts[0].models[0].meshes[0].strip_groups = 2
    titanfall = character_spec(
        version=53,
        vertex_colors=True,
        embedded_phy=write_phy(PhySpec([PSolid([box((-1, -1, -1), (1, 1, 1), bone=0)])], text=solid_text(["pelvis"]))),
        animations=[SAnimation("walk", 12, [SNode(1, turn, ("v48", (1.0, 2.0, 3.0)))], section_frames=5)],
    )
    return [
        *archive_seeds(),
        Seed("synthetic gameinfo.txt", check_gameinfo, {"gameinfo": GAMEINFO_SEED}),
        Seed("synthetic arm.ms3d", check_ms3d, {"ms3d": write_ms3d(arm_spec())}),
        Seed("synthetic full.ms3d", check_ms3d, {"ms3d": write_ms3d(full_spec(3))}),
        Seed(
            "synthetic character.mdl",
            check_source,
            {"mdl": write_mdl(spec), "vvd": write_vvd(spec), "vtx": write_vtx(spec)},
        ),
        Seed("synthetic titanfall2.mdl", check_source, {"mdl": write_mdl(titanfall)}),
        Seed("synthetic bloodlines.mdl", check_source, _bloodlines_parts()),
        Seed("synthetic goldsrc.mdl", check_goldsrc, _goldsrc_parts()),
        Seed("synthetic goldsrc blends spans skins.mdl", check_goldsrc, _goldsrc_parts(counts=True)),
    ]


def _bloodlines_parts() -> Parts:
    """A Bloodlines (MDL 2531) character with an animation, a sequence playing it with two events, and its VTX 107."""
    from bloodlines_writer import character_spec2531, write_mdl2531, write_vtx107

    spec = character_spec2531()
    spec.sequences = [("slide", 0, [(0.5, 5004, "npc/step.wav"), (1.0, 1003, "1")])]
    return {"mdl": write_mdl2531(spec), "vtx": write_vtx107(spec)}


def _goldsrc_parts(counts: bool = False) -> Parts:
    """The GoldSrc writer's character (``counts``: with the blends, long spans and skins of ``counts_spec``): the
    model, its texture file and its group file."""
    import tempfile

    from goldsrc_writer import character_spec as goldsrc_character
    from goldsrc_writer import counts_spec, write_model_files

    with tempfile.TemporaryDirectory() as folder:
        write_model_files(counts_spec() if counts else goldsrc_character(), Path(folder), "guy", textures_apart=True)
        return _read(Path(folder), mdl="guy.mdl", t="guyT.mdl", g1="guy01.mdl")


def archive_seeds() -> list[Seed]:
    """The character (with a material and texture) packed in a two-part VPK v2 with preload bytes, and in a GMA;
    a Bloodlines character in a Troika pack."""
    from archive_writer import EMBEDDED, GEntry, WEntry, gma_bytes, troika_bytes, vpk_bytes
    from bloodlines_writer import character_spec2531, write_mdl2531, write_vtx107
    from hostile import vtf
    from source_writer import character_spec, write_mdl, write_vtx, write_vvd

    spec = character_spec(includes=[])
    files = [
        ("models/test/model.mdl", write_mdl(spec)),
        ("models/test/model.vvd", write_vvd(spec)),
        ("models/test/model.dx90.vtx", write_vtx(spec)),
        ("materials/models/test/body.vmt", b'"VertexLitGeneric" { "$basetexture" "models/test/body" }'),
        ("materials/models/test/body.vtf", vtf(8, 8)),
    ]
    entries = [
        WEntry(n, d, part=EMBEDDED if i % 2 else 0, preload=min(len(d), 16 * (i % 3))) for i, (n, d) in enumerate(files)
    ]
    directory, archive_parts = vpk_bytes(entries, version=2)
    # A tree of many folders, some in several extensions, entries at the root, empty ones, one-letter names and
    # long folder names: what the folder index and the name checks walk (issue 31).
    crowd = [
        WEntry(f"materials/m{i % 40}/{'x' * (i % 7 + 1)}{i}.{('vmt', 'vtf', 'txt')[i % 3]}", bytes(i % 5))
        for i in range(120)
    ]
    crowd += [WEntry("readme", b"r"), WEntry("a.b", b""), WEntry("d" * 200 + "/e/f.vtf", b"f" * 40, preload=40)]
    tree, _ = vpk_bytes([*(WEntry(n, d) for n, d in files[:3]), *crowd])
    guy = character_spec2531()
    troika = {"models/test/guy.mdl": write_mdl2531(guy), "models/test/guy.dx80.vtx": write_vtx107(guy)}
    troika.update({f"dlg/{c}/x {i}.dlg": bytes(i) for i, c in enumerate("abcab")})
    return [
        Seed("synthetic archive.vpk", check_archive, {"dir": directory, "part": archive_parts[0]}),
        Seed("synthetic addon.gma", check_archive, {"gma": gma_bytes([GEntry(n, d) for n, d in files])}),
        Seed("synthetic many-folder tree.vpk", check_archive, {"dir": tree}),
        Seed("synthetic bloodlines pack.vpk", check_archive, {"dir": troika_bytes(troika)}),
    ]


def sample_seeds(samples: Path) -> list[Seed]:
    """Small real files, chosen so every reader and both VTX strip-group sizes are exercised."""
    ms3d, src = samples / "ms3d", samples / "source"
    seeds = [
        Seed(name, check_ms3d, _read(ms3d, ms3d=name))
        for name in (
            "akadjoker__H3DView/media/bones2.ms3d",
            "assimp__assimp/twospheres_withmats.ms3d",
            "soulsheng__ms3d-render/Model.ms3d",
        )
    ]
    for stem, vtx in (
        ("FJH03__CSCZS_GameData/models/shells/shell_9mm", "shell_9mm"),  # 33-byte strip groups
        ("Dynamic-src__Highpoly-Src-Props/models/props_junk/pushcart01a", "PushCart01a"),  # 25-byte strip groups
        ("siobhan-saoirse__l4d-nextbots/models/ghostanim", "ghostanim"),  # bones and animations inside the .mdl
    ):
        vtx_path = f"{stem.rsplit('/', 1)[0]}/{vtx}.dx90.vtx"  # the sample keeps the modder's spelling
        seeds.append(Seed(stem + ".mdl", check_source, _read(src, mdl=stem + ".mdl", vvd=stem + ".vvd", vtx=vtx_path)))
    coverage = samples / "coverage"
    cremator = "CombineFodder__hl2betaplayermodels/models/player/"
    seeds.append(  # a ragdoll .phy with its text section
        Seed(
            cremator + "cremator.mdl",
            check_source,
            _read(coverage / "source", mdl=cremator + "cremator.mdl", phy=cremator + "Cremator.phy"),
        )
    )
    galil = "NeXiDE__Counter-Strike-Oldschool-Offensive/models/weapons/v_rif_galilar_scoped"
    seeds.append(  # frame-major animations in the .ani
        Seed(galil + ".mdl", check_source, _read(coverage / "source", mdl=galil + ".mdl", ani=galil + ".ani"))
    )
    generator = "Syampuuh__Titanfall2/models/props/generator_coop/generator_coop_blackbox.mdl"
    seeds.append(Seed(generator, check_source, _read(coverage / "source", mdl=generator)))  # v53, all embedded
    rock = "r1delta__CORE/models/rocks/single_rock_01"
    seeds.append(
        Seed(
            rock + ".mdl",
            check_source,
            _read(coverage / "source", mdl=rock + ".mdl", vvd=rock + ".vvd", vtx=rock + ".dx11.vtx"),
        )
    )
    seeds.append(
        Seed("MORBO.pcx", check_pcx, _read(coverage / "ms3d/akadjoker__IrrlichtGameObject/morbo", pcx="MORBO.pcx"))
    )
    vtmb = "miracleflame__VTMB-Unofficial-Patch-by-Wesp/Basic_Patch/models"
    film = f"{vtmb}/items/garys_film/ground/garys_film"
    seeds.append(  # Bloodlines: 8-bit vertices, VTX 107 with static-prop vertices, a .phy
        Seed(
            "vtmb garys_film.mdl",
            check_source,
            _read(samples / "vtmb", mdl=film + ".mdl", vtx=film + ".dx80.vtx", phy=film + ".phy"),
        )
    )
    face = f"{vtmb}/character/npc/common/citizen/female3/female_citizen_3"
    seeds.append(  # Bloodlines: a face (flex deltas as table offsets and lengths), eyeballs, skinned vertices
        Seed(
            "vtmb female_citizen_3.mdl",
            check_source,
            _read(samples / "vtmb", mdl=face + ".mdl", vtx=face + ".dx80.vtx"),
        )
    )
    postures = "bobthecorn2000__Half-Life-2-Brennan/models/humans/male_postures"
    seeds.append(Seed(postures + ".mdl", check_source, _read(src, mdl=postures + ".mdl", ani=postures + ".ani")))
    gold = samples / "goldsrc"
    seeds += [  # GoldSrc: textures inside, a Xash3D-written file, and textures and groups in companion files
        Seed(name, check_goldsrc, _read(gold, mdl=name))
        for name in ("Pi0h1__halflife/models/sr666mdl/martini.mdl", "Pi0h1__halflife/models/houndeye.mdl")
    ]
    islave = "phoenixprojectsoftware__halflifeclassic/models/islave"
    seeds.append(Seed(islave + ".mdl", check_goldsrc, _read(gold, mdl=islave + ".mdl", g1=islave + "01.mdl")))
    knife = samples / "vpk" / "SirPlease__L4D2-Competitive-Rework" / "addons" / "knife.vpk"
    if knife.is_file():  # a real single-file VPK v1 with two models, their sidecars, a VMT and VTFs
        seeds.append(Seed("knife.vpk", check_archive, {"dir": knife.read_bytes()}))
    textures = sorted(src.rglob("*.vtf"), key=lambda p: p.stat().st_size)[:3]
    seeds += [Seed(str(p.relative_to(src)), check_vtf, {"vtf": p.read_bytes()}) for p in textures]
    seeds += [
        Seed(str(p.relative_to(src)), check_vmt, {"vmt": p.read_bytes(), "base": b'"VertexLitGeneric" { }'})
        for p in sorted(src.rglob("*.vmt"))[:4]
    ]
    return seeds
