"""Crafted files for every class of attack in the hostile-files corpus (tests/test_hostile.py and
``scripts/fuzz.py --blender``): traversal to a canary outside the roots, FIFO and device sidecars, shared-table,
fixup, event, frame and texture bombs, extreme floats and long names. Built on the synthetic writers, so each case
is a few hundred bytes to a few hundred KB and made on demand.
"""

from __future__ import annotations

import os
import struct
from pathlib import Path

import numpy as np
from archive_writer import EMBEDDED, GEntry, WEntry, gma_bytes, vpk_bytes, write_gma, write_vpk
from ms3d_writer import Group, Joint, Material, quad_spec, write_ms3d
from source_writer import SAnimation, SBone, SNode, character_spec, write_mdl, write_source, write_vtx, write_vvd

from io_ms3d_mdl.formats.source import structs as S
from io_ms3d_mdl.formats.source.vtf import HEADER as VTF_HEADER

SECRET = "CANARY_d41d8cd9"  # never to appear in anything an import produces


def canaries(tmp: Path) -> Path:
    """A folder outside every root holding files an attacker would like read: a VMT, a VTF, a PNG, an MDL."""
    outside = tmp / "outside"
    outside.mkdir(parents=True, exist_ok=True)
    (outside / "secret.vmt").write_text(f'"VertexLitGeneric"\n{{\n"$basetexture" "{SECRET}"\n"$color2" "[0 1 0]"\n}}\n')
    (outside / "secret.vtf").write_bytes(vtf(8, 8, fmt=0, fill=b"\x00\xff\x00\xff"))
    (outside / "secret.png").write_bytes(png_1x1())
    (outside / "secret.mdl").write_bytes(SECRET.encode() * 20)
    return outside


def png_1x1() -> bytes:
    import zlib

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    raw = zlib.compress(b"\x00\x00\xff\x00\xff")
    ihdr = struct.pack(">IIBBBBB", 1, 1, 8, 6, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", raw) + chunk(b"IEND", b"")


def vtf(width: int, height: int, fmt: int = 0, fill: bytes = b"\x80\x80\x80\xff", mips: int = 1) -> bytes:
    """A VTF 7.2 with the largest level filled (``fill`` repeated) and smaller mips zeroed."""
    header = np.zeros(1, VTF_HEADER)
    header["signature"], header["version"], header["header_size"] = b"VTF\0", (7, 2), 80
    header["width"], header["height"], header["format"], header["frames"] = width, height, fmt, 1
    header["mip_count"], header["low_format"], header["depth"] = mips, -1, 1
    bpp = {0: 4, 13: 0}[fmt]
    levels = []
    for m in range(mips - 1, -1, -1):
        w, h = max(width >> m, 1), max(height >> m, 1)
        size = max(1, (w + 3) // 4) * max(1, (h + 3) // 4) * 8 if bpp == 0 else w * h * bpp
        levels.append(fill * (size // len(fill)) if m == 0 else bytes(size))
    return header.tobytes() + b"".join(levels)


# --- MilkShape ---------------------------------------------------------------------------------------------------


def ms3d(folder: Path, spec, name: str = "model.ms3d") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_bytes(write_ms3d(spec))
    return path


def ms3d_textured(folder: Path, texture: str, alphamap: str = "") -> Path:
    spec = quad_spec(materials=[Material("m", texture=texture, alphamap=alphamap)])
    return ms3d(folder, spec)


def ms3d_frame_bomb(folder: Path, joints: int = 64) -> Path:
    """Every joint turns between two keys 99,999 frames apart (times are seconds, at 24 fps): resampling would
    add 6.4 M keys."""
    spec = quad_spec(
        fps=24.0,
        joints=[
            Joint(f"j{i}", f"j{i - 1}" if i else "", rotation_keys=[(0.0, (0, 0, 0)), (99_999 / 24, (0, 0, 3.0))])
            for i in range(joints)
        ],
    )
    return ms3d(folder, spec)


def ms3d_clip_bomb(folder: Path, clips: int = 20_000) -> Path:
    """A model comment listing 20,000 overlapping clips."""
    comment = "".join(f"Name=c{i}, Start={i % 7}, End={1000 + i}\n" for i in range(clips))
    spec = quad_spec(joints=[Joint("root", rotation_keys=[(1.0, (0, 0, 0)), (30.0, (0, 0, 1))])], model_comment=comment)
    return ms3d(folder, spec)


def ms3d_extreme_timing(folder: Path, fps: float, clip: tuple[float, float]) -> Path:
    comment = f"Name=clip, Start={clip[0]!r}, End={clip[1]!r}\n"
    spec = quad_spec(
        fps=fps,
        joints=[Joint("root", rotation_keys=[(1.0, (0, 0, 0)), (30.0, (0, 0, 1))])],
        model_comment=comment,
    )
    return ms3d(folder, spec)


def ms3d_long_names(folder: Path) -> Path:
    """Joint and group names of 32 Latin-1 ``é`` bytes: 64 bytes once in UTF-8, one over Blender's limit."""
    name = b"\xe9" * 32
    spec = quad_spec(
        groups=[Group(name, [0, 1], material_index=0)],
        joints=[Joint(name), Joint(b"\xe9" * 31 + b"x", name, rotation_keys=[(1.0, (0, 0, 0)), (5.0, (0, 0, 1))])],
    )
    return ms3d(folder, spec)


# --- Source ------------------------------------------------------------------------------------------------------


def game(tmp: Path) -> Path:
    """``tmp/game`` with ``models/test/`` and ``materials/models/test/``: the roots of a Source import."""
    root = tmp / "game"
    (root / "models" / "test").mkdir(parents=True, exist_ok=True)
    (root / "materials" / "models" / "test").mkdir(parents=True, exist_ok=True)
    return root


def source(tmp: Path, spec=None, stem: str = "model") -> Path:
    return write_source(spec or character_spec(includes=[]), game(tmp) / "models" / "test", stem)


def vmt(tmp: Path, name: str, text: str) -> None:
    (game(tmp) / "materials" / "models" / "test" / f"{name}.vmt").write_text(text)


def source_vmt_traversal(tmp: Path) -> Path:
    """A patch material whose include climbs to the canary, and a base texture that climbs to another."""
    canaries(tmp)
    vmt(tmp, "body", 'patch\n{\ninclude "../outside/secret.vmt"\ninsert { "$alpha" "0.5" }\n}\n')
    vmt(tmp, "body_red", 'patch\n{\ninclude "materials/../../outside/secret.vmt"\n}\n')
    vmt(tmp, "hat", '"VertexLitGeneric"\n{\n"$basetexture" "../../outside/secret"\n}\n')
    return source(tmp, character_spec(includes=[]))


def source_cdmaterials_traversal(tmp: Path) -> Path:
    canaries(tmp)
    spec = character_spec(includes=[], cd_materials=["..\\..\\outside\\", "..\\outside\\"], textures=["secret"] * 3)
    return source(tmp, spec)


def source_include_traversal(tmp: Path) -> Path:
    canaries(tmp)
    spec = character_spec(includes=["../outside/secret.mdl", "..\\..\\outside\\secret.mdl", "/etc/passwd"])
    return source(tmp, spec)


def source_special_sidecar(tmp: Path, kind: str) -> Path:
    """The model's ``.vvd`` replaced by a FIFO, a link to ``/dev/zero``, or a link to a real VVD outside the roots."""
    path = source(tmp)
    vvd = path.with_suffix(".vvd")
    data = vvd.read_bytes()
    vvd.unlink()
    if kind == "fifo":
        os.mkfifo(vvd)
    elif kind == "zero":
        vvd.symlink_to("/dev/zero")
    elif kind == "outside":
        target = canaries(tmp) / "real.vvd"
        target.write_bytes(data)
        vvd.symlink_to(target)
    return path


def _header(data: bytearray) -> np.ndarray:
    return np.frombuffer(data, S.STUDIOHDR, 1).copy()


def _put_header(data: bytearray, header: np.ndarray) -> None:
    data[: S.STUDIOHDR.itemsize] = header.tobytes()


def source_frame_bomb(tmp: Path, bones: int = 128, frames: int = 100_000) -> Path:
    """A 100,000-frame animation over 128 bones stored as one raw rotation per bone: a few KB asking for 12.8 M
    bone-frames."""
    bone_list = [SBone(f"b{i}", i - 1) for i in range(bones)]
    nodes = [SNode(i, rot=("q48", (1.0, 0.0, 0.0, 0.0))) for i in range(bones)]
    spec = character_spec(includes=[], bones=bone_list, animations=[SAnimation("bomb", frames, nodes)])
    return source(tmp, spec)


def source_event_bomb(tmp: Path, sequences: int = 2000, events: int = 4096, spec=None) -> Path:
    """``sequences`` sequences whose event lists all point at one table of ``events`` events."""
    path = source(tmp, spec)
    data = bytearray(path.read_bytes())
    header = _header(data)
    table = np.zeros(events, S.EVENT)
    table["cycle"], table["event"] = 0.5, 1001
    seq_base = len(data) + (-len(data)) % 4
    event_base = seq_base + sequences * S.SEQDESC_SIZE
    seqs = bytearray(sequences * S.SEQDESC_SIZE)
    for i in range(sequences):
        head = np.zeros(1, S.SEQDESC_HEAD)
        head["numevents"], head["eventindex"] = events, event_base - (seq_base + i * S.SEQDESC_SIZE)
        seqs[i * S.SEQDESC_SIZE : i * S.SEQDESC_SIZE + S.SEQDESC_HEAD.itemsize] = head.tobytes()
    data += bytes(seq_base - len(data)) + seqs + table.tobytes()
    header["numlocalseq"], header["localseqindex"], header["length"] = sequences, seq_base, len(data)
    _put_header(data, header)
    path.write_bytes(bytes(data))
    return path


def source_shared_strip_groups(tmp: Path, groups: int = 20_000) -> Path:
    """A VTX whose first mesh claims ``groups`` strip groups, each pointing at the same large index table."""
    spec = character_spec(includes=[])
    path = source(tmp, spec)
    vtx_path = path.with_name(path.stem + ".dx90.vtx")
    data = bytearray(vtx_path.read_bytes())
    index_count = 30_000
    sg = S.VTX_STRIPGROUP[25]
    index_base = len(data)
    data += bytes(index_count * 2)  # all zeros: valid indices into vertex 0
    vert_base = len(data)
    data += bytes(S.VTX_VERTEX.itemsize)
    group_base = len(data)
    records = np.zeros(groups, sg)
    offsets = group_base + np.arange(groups) * sg.itemsize
    records["numverts"], records["vertoffset"] = 1, vert_base - offsets
    records["numindices"], records["indexoffset"] = index_count, index_base - offsets
    data += records.tobytes()
    # point the first mesh of the first LOD of the first model of the first body part at them
    header = np.frombuffer(data, S.VTX_HEADER, 1)[0]
    bp = int(header["bodypartoffset"])
    model = bp + int(np.frombuffer(data, S.VTX_BODYPART, 1, bp)[0]["modeloffset"])
    lod = model + int(np.frombuffer(data, S.VTX_MODEL, 1, model)[0]["lodoffset"])
    mesh = lod + int(np.frombuffer(data, S.VTX_LOD, 1, lod)[0]["meshoffset"])
    record = np.frombuffer(data, S.VTX_MESH, 1, mesh).copy()
    record["numstripgroups"], record["stripgroupheaderoffset"] = groups, group_base - mesh
    data[mesh : mesh + S.VTX_MESH.itemsize] = record.tobytes()
    vtx_path.write_bytes(bytes(data))
    return path


def source_fixup_bomb(tmp: Path, fixups: int = 50_000) -> Path:
    """A VVD whose fixup table replays every vertex ``fixups`` times."""
    path = source(tmp)
    vvd_path = path.with_suffix(".vvd")
    data = bytearray(vvd_path.read_bytes())
    header = np.frombuffer(data, S.VVD_HEADER, 1).copy()
    total = int(header["numlodvertexes"][0][0])
    table = np.zeros(fixups, S.VVD_FIXUP)
    table["numvertexes"] = total
    header["numfixups"], header["fixuptablestart"] = fixups, len(data)
    data += table.tobytes()
    data[: S.VVD_HEADER.itemsize] = header.tobytes()
    vvd_path.write_bytes(bytes(data))
    return path


def source_huge_texture(tmp: Path, size: int = 8192) -> Path:
    """A legal ``size``² DXT1 texture with a single mip level (32 MB at 8192²)."""
    vmt(tmp, "body", '"VertexLitGeneric"\n{\n"$basetexture" "models/test/huge"\n}\n')
    (game(tmp) / "materials" / "models" / "test" / "huge.vtf").write_bytes(vtf(size, size, fmt=13, fill=b"\x00" * 8))
    return source(tmp)


def source_extreme_floats(tmp: Path) -> Path:
    """VMT values that parse as NaN or infinity, and the same in every float field a builder reads."""
    vmt(
        tmp,
        "body",
        '"VertexLitGeneric"\n{\n"$color2" "[nan inf -inf]"\n"$alpha" "nan"\n"$phong" "1"\n"$phongexponent" "inf"\n'
        '"$alphatest" "1"\n"$alphatestreference" "nan"\n"$selfillum" "1"\n"$selfillumtint" "[1e999 0 0]"\n}\n',
    )
    spec = character_spec(includes=[])
    spec.animations = [SAnimation("idle", 3, [SNode(0, rot=("q48", (1.0, 0.0, 0.0, 0.0)))], fps=float("inf"))]
    return source(tmp, spec)


# --- GoldSrc (Half-Life 1) -----------------------------------------------------------------------------------------


def goldsrc(tmp: Path, spec=None, stem: str = "guy") -> Path:
    """A GoldSrc model (and its group file) in ``tmp/game/models``."""
    from goldsrc_writer import character_spec as goldsrc_character
    from goldsrc_writer import write_model_files

    return write_model_files(spec or goldsrc_character(), game(tmp) / "models", stem)


def _goldsrc_patch(path: Path, edit) -> Path:
    """Rewrite the model's bytes through ``edit(data, header)`` (the header as a numpy record)."""
    from io_ms3d_mdl.formats.goldsrc import structs as G

    data = bytearray(path.read_bytes())
    edit(data, np.frombuffer(bytes(data[: G.HEADER.itemsize]), G.HEADER)[0])
    path.write_bytes(bytes(data))
    return path


def _first_mesh(data: bytearray, header) -> tuple[int, int]:
    """(offset of the first mesh record, offset of its command list)."""
    from io_ms3d_mdl.formats.goldsrc import structs as G

    part = np.frombuffer(bytes(data), G.BODY_PART, 1, int(header["bodypartindex"]))[0]
    model = np.frombuffer(bytes(data), G.MODEL, 1, int(part["modelindex"]))[0]
    mesh_at = int(model["meshindex"])
    return mesh_at, int(np.frombuffer(bytes(data), G.MESH, 1, mesh_at)[0]["triindex"])


def goldsrc_commands_overrun(tmp: Path) -> Path:
    """A strip claiming 30,000 vertices: its command list runs past the end of the file."""

    def edit(data, header):
        _, commands = _first_mesh(data, header)
        data[commands : commands + 2] = struct.pack("<h", 30_000)

    return _goldsrc_patch(goldsrc(tmp), edit)


def goldsrc_missing_vertices(tmp: Path) -> Path:
    """A strip naming vertex 999 of a model with eight."""

    def edit(data, header):
        _, commands = _first_mesh(data, header)
        data[commands + 2 : commands + 4] = struct.pack("<h", 999)

    return _goldsrc_patch(goldsrc(tmp), edit)


def goldsrc_texture_beyond_data(tmp: Path) -> Path:
    """A texture declaring 4096 × 4096 pixels where 16 × 16 are stored."""
    from io_ms3d_mdl.formats.goldsrc import structs as G

    def edit(data, header):
        at = int(header["textureindex"]) + G.TEXTURE.fields["width"][1]
        data[at : at + 8] = struct.pack("<2i", 4096, 4096)

    return _goldsrc_patch(goldsrc(tmp), edit)


def goldsrc_group_traversal(tmp: Path) -> Path:
    """Sequence group 1 names ``../../outside/secret.mdl`` (the canary): refused, its sequences not imported."""
    from goldsrc_writer import character_spec as goldsrc_character

    spec = goldsrc_character()
    spec.groups = ["", "../../outside/secret.mdl"]
    return goldsrc(tmp, spec)


def goldsrc_cyclic_parents(tmp: Path) -> Path:
    """The root bone's parent is its own child."""
    from goldsrc_writer import character_spec as goldsrc_character

    spec = goldsrc_character()
    spec.bones[0].parent = 1
    return goldsrc(tmp, spec)


# Each GoldSrc model above that is refused as a whole, with what the message says (a regex): the import and the
# decompiler refuse it alike.
GOLDSRC_REFUSED = [
    (goldsrc_commands_overrun, "past the end of the file"),
    (goldsrc_missing_vertices, "uses vertex 999"),
    (goldsrc_texture_beyond_data, "work budget|run past the end"),
    (goldsrc_cyclic_parents, "parents must come before"),
]


def goldsrc_frame_bomb(tmp: Path, frames: int = 10_000_000) -> Path:
    """A sequence of 10 million frames whose few bytes of values repeat for ever."""
    from io_ms3d_mdl.formats.goldsrc import structs as G

    def edit(data, header):
        at = int(header["seqindex"]) + G.SEQUENCE.fields["numframes"][1]
        data[at : at + 4] = struct.pack("<i", frames)

    return _goldsrc_patch(goldsrc(tmp), edit)


def goldsrc_empty_spans(tmp: Path, spans: int = 100_000) -> Path:
    """A channel whose value stream is a long chain of spans covering no frames (``total`` 0)."""
    from goldsrc_writer import GSequence
    from goldsrc_writer import character_spec as goldsrc_character

    spec = goldsrc_character()
    stall = [[[b"\x00\x00" * spans, None, None, None, None, None], [None] * 6]]
    spec.sequences = [GSequence("stall", 4, stall)]
    return goldsrc(tmp, spec)


# --- archives and games ------------------------------------------------------------------------------------------


def packed(folder: Path, archive: Path) -> Path:
    """Every file below ``folder`` in a VPK (``x_dir.vpk``: small files in it, the rest in two parts) or a GMA."""
    files = [(p.relative_to(folder).as_posix(), p.read_bytes()) for p in sorted(folder.rglob("*")) if p.is_file()]
    if archive.suffix.lower() == ".gma":
        return write_gma(archive, [GEntry(n, d) for n, d in files])
    entries = [WEntry(n, d, part=EMBEDDED if len(d) < 512 else i % 2) for i, (n, d) in enumerate(files)]
    return write_vpk(archive.parent, archive.name.removesuffix("_dir.vpk"), entries)


def archived_traversal(tmp: Path, kind: str = "pak01_dir.vpk") -> str:
    """The character of ``source_vmt_traversal`` (VMTs, cdmaterials and includes climbing to the canary) inside an
    archive beside the canary folder: the path of the model inside it."""
    build = tmp / "build"
    source_vmt_traversal(build)
    canaries(tmp)
    spec = character_spec(includes=["../../outside/secret.mdl"], cd_materials=["models\\test\\", "..\\..\\outside\\"])
    write_source(spec, game(build) / "models" / "test", "model")
    archive = packed(game(build), tmp / kind)
    return str(archive / "models" / "test" / "model.mdl")


def gameinfo_widening(tmp: Path) -> Path:
    """A mod folder whose ``gameinfo.txt`` tries to mount the canary folder (absolute, through ``..``, through a
    path token), with a model naming the canary's material."""
    outside = canaries(tmp)
    mod = tmp / "mods" / "mod"
    mod.mkdir(parents=True)
    lines = [f"game {outside}", "game |all_source_engine_paths|../outside", "game |gameinfo_path|../../outside"]
    lines += ["game ../../outside", "game |all_source_engine_paths|..", "game |gameinfo_path|."]
    (mod / "gameinfo.txt").write_text('"GameInfo" { FileSystem { SearchPaths {\n' + "\n".join(lines) + "\n} } }")
    spec = character_spec(includes=[], cd_materials=[""], textures=["secret"] * 3)
    return write_source(spec, mod / "models", "model")


# --- links in a stranger's game folder (issue 31) ------------------------------------------------------------------


def outside_tree(tmp: Path) -> Path:
    """The canary folder, laid out as a game folder would be (materials, models, textures, a VPK)."""
    outside = canaries(tmp)
    (outside / "materials").mkdir(exist_ok=True)
    (outside / "materials" / "secret.vmt").write_text(f'"VertexLitGeneric" {{ "$basetexture" "{SECRET}" }}')
    (outside / "materials" / "secret.vtf").write_bytes(vtf(8, 8, fill=b"\x00\xff\x00\xff"))
    (outside / "models").mkdir(exist_ok=True)
    (outside / "models" / "secret.mdl").write_bytes(SECRET.encode() * 20)
    write_vpk(outside, "secret", [WEntry("materials/secret.vmt", b'"VertexLitGeneric" { "$basetexture" "x" }')])
    return outside


def game_with(tmp: Path, lines: list[str]) -> Path:
    """``tmp/steamapps/common/Game/mod`` holding a gameinfo.txt with these SearchPaths lines (the first mounts the
    folder itself)."""
    mod = tmp / "steamapps" / "common" / "Game" / "mod"
    mod.mkdir(parents=True, exist_ok=True)
    text = "\n".join(["game |gameinfo_path|.", *lines])
    (mod / "gameinfo.txt").write_text('"GameInfo" { game "Mod" FileSystem { SearchPaths {\n' + text + "\n} } }")
    return mod


def linked(link: Path, target: Path) -> Path:
    link.parent.mkdir(parents=True, exist_ok=True)
    os.symlink(os.path.relpath(target, link.parent), link)
    return link


def gameinfo_link(tmp: Path, kind: str) -> tuple[Path, Path]:
    """(the game folder, the canary folder) of each way a link could lead a root outside."""
    outside = outside_tree(tmp)
    if kind == "folder":
        mod = game_with(tmp, ["game |gameinfo_path|stolen"])
        linked(mod / "stolen", outside)
    elif kind == "custom":
        mod = game_with(tmp, ["game |gameinfo_path|custom/*"])
        (mod / "custom" / "honest").mkdir(parents=True)
        linked(mod / "custom" / "evil", outside)
    elif kind == "custom_folder":  # the folder ``custom/*`` lists is itself the link
        mod = game_with(tmp, ["game |gameinfo_path|custom/*"])
        linked(mod / "custom", outside / "..")
    elif kind == "vpk":
        mod = game_with(tmp, ["game |gameinfo_path|evil.vpk"])
        linked(mod / "evil_dir.vpk", outside / "secret_dir.vpk")
    elif kind == "pak01":
        mod = game_with(tmp, ["game |gameinfo_path|sub"])
        linked(mod / "sub" / "pak01_dir.vpk", outside / "secret_dir.vpk")
    elif kind == "all_source_engine_paths":
        mod = game_with(tmp, ["game |all_source_engine_paths|mod/stolen"])
        linked(mod / "stolen", outside)
    else:
        raise AssertionError(kind)
    return mod, outside


def gameinfo_link_seed(tmp: Path, kind: str, fmt: str) -> Path:
    """A model of each format in a game whose search paths link to the canary (``gameinfo_link``), naming the
    canary's files as it would its own: MilkShape ``secret.png``, Source ``materials/secret.vmt`` (and a
    ``cdmaterials`` climb), GoldSrc a texture file linked out of the model's folder."""
    mod, outside = gameinfo_link(tmp, kind)
    if fmt == "ms3d":
        return ms3d_textured(mod / "models", "secret.png")
    if fmt == "mdl":
        spec = character_spec(includes=["models/secret.mdl"], cd_materials=["", "..\\..\\outside\\"])
        spec.textures = ["secret"] * 3
        return write_source(spec, mod / "models", "model")
    from goldsrc_writer import character_spec as goldsrc_character
    from goldsrc_writer import write_model_files

    model = write_model_files(goldsrc_character(), mod / "models", "guy", textures_apart=True)
    texture_file = model.with_name("guyT.mdl")
    os.replace(texture_file, outside / "guyT.mdl")
    linked(texture_file, outside / "guyT.mdl")
    return model


def archive_bombs() -> list[tuple[str, bytes, str]]:
    """(file name, bytes, what the refusal says) of crafted archives: each is refused at mount or at the read."""
    good, _ = vpk_bytes([WEntry("models/x.mdl", b"IDST" * 8)])
    short_tree = bytearray(good)
    struct.pack_into("<I", short_tree, 8, 1 << 30)
    thousand, _ = vpk_bytes([WEntry(f"models/x{i}.mdl", b"a", part=i) for i in range(1000)])
    big_part, _ = vpk_bytes([WEntry("models/x.mdl", b"a", part=0x7FFE)])
    climbing, _ = vpk_bytes([WEntry("../../outside/secret.mdl", b"a")])
    absolute, _ = vpk_bytes([WEntry("/etc/passwd", b"a")])
    drive, _ = vpk_bytes([WEntry("C:/Windows/x.mdl", b"a")])
    preload, _ = vpk_bytes([WEntry("models/x.mdl", b"abcd", preload=4, preload_size=65535)])
    beyond, _ = vpk_bytes([WEntry("models/x.mdl", b"abcd", offset=0xFFFFFFF0, length=0xFFFF)])
    crc, _ = vpk_bytes([WEntry("models/x.mdl", b"IDST" * 8, crc=0xDEADBEEF)])
    table = bytearray(gma_bytes([]))[:-8]
    table += b"".join(struct.pack("<I", 1) + b"a\0" + struct.pack("<qI", 0, 0) for _ in range(250_000))
    return [
        ("tree_beyond_dir.vpk", bytes(short_tree), "runs past the end of the file"),
        ("thousand_parts_dir.vpk", thousand, "1,000 archive parts"),
        ("huge_part_dir.vpk", big_part, "archive part 32766"),
        ("climbing_dir.vpk", climbing, "climbs out"),
        ("absolute_dir.vpk", absolute, "climbs out"),
        ("drive_dir.vpk", drive, "climbs out"),
        ("preload_dir.vpk", preload, "directory tree"),
        ("beyond_dir.vpk", beyond, "runs past the end of the file"),
        ("crc_dir.vpk", crc, "CRC32"),
        ("cut.gma", gma_bytes([GEntry("models/x.mdl", b"IDST" * 8)])[:60], "ends inside"),
        ("huge.gma", gma_bytes([GEntry("models/x.mdl", b"IDST", size=1 << 62)]), "runs past the end"),
        ("negative.gma", gma_bytes([GEntry("models/x.mdl", b"IDST", size=-1)]), "size -1"),
        ("many.gma", bytes(table) + bytes(8), "more than 200,000 files"),
        ("climbing.gma", gma_bytes([GEntry("models/../../outside/secret.mdl", b"a")]), "climbs out"),
    ]


__all__ = [
    "SECRET",
    "archive_bombs",
    "archived_traversal",
    "canaries",
    "character_spec",
    "game",
    "gameinfo_widening",
    "goldsrc",
    "goldsrc_commands_overrun",
    "goldsrc_cyclic_parents",
    "goldsrc_empty_spans",
    "goldsrc_frame_bomb",
    "goldsrc_group_traversal",
    "goldsrc_missing_vertices",
    "goldsrc_texture_beyond_data",
    "ms3d_clip_bomb",
    "ms3d_extreme_timing",
    "ms3d_frame_bomb",
    "ms3d_long_names",
    "ms3d_textured",
    "packed",
    "png_1x1",
    "source",
    "source_cdmaterials_traversal",
    "source_event_bomb",
    "source_extreme_floats",
    "source_fixup_bomb",
    "source_frame_bomb",
    "source_huge_texture",
    "source_include_traversal",
    "source_shared_strip_groups",
    "source_special_sidecar",
    "source_vmt_traversal",
    "vmt",
    "vtf",
    "write_mdl",
    "write_vtx",
    "write_vvd",
]


def shared_flex_rules(mdl: bytes, rules: int) -> bytes:
    """The MDL with its one flex rule replaced by ``rules`` rules that all point at that rule's table of operations
    (a shared-table bomb: each rule costs its whole table again, the file grows by a few bytes a rule)."""
    data = bytearray(mdl)
    h = np.frombuffer(bytes(data), S.STUDIOHDR, 1)[0]
    (rule,) = np.frombuffer(bytes(data), S.FLEXRULE, 1, int(h["flexruleindex"]))
    table = int(h["flexruleindex"]) + int(rule["opindex"])
    shared = np.zeros(rules, S.FLEXRULE)
    at = len(data)
    shared["numops"] = int(rule["numops"])
    shared["opindex"] = table - (at + np.arange(rules) * S.FLEXRULE.itemsize)
    data += shared.tobytes()
    header = np.frombuffer(bytes(data), S.STUDIOHDR, 1).copy()
    header["numflexrules"], header["flexruleindex"], header["length"] = rules, at, len(data)
    data[: S.STUDIOHDR.itemsize] = header.tobytes()
    return bytes(data)
