"""Crafted seeds for the whole-import fuzzer (``tests/fuzz_blender.py``) for the classes of issue 28: flex rules that
become drivers, ``.phy`` keyvalues text whose names become property names, a PCX skin with padded bit planes, and
a signed BC6H texture whose blocks decode to -inf. Each builds a file tree in ``tmp`` and returns the model."""

from __future__ import annotations

from pathlib import Path

import hostile
import numpy as np
from bloodlines_writer import character_spec2531, prop_spec, tth_pair, write_bloodlines
from pcx_writer import write_pcx
from phy_writer import PhySpec, PSolid, box, solid_text, write_phy
from source_writer import character_spec, write_mdl, write_source

# A signed mode-15 BC6H block whose endpoints are all 0x8000: -inf in every channel once decoded.
MINUS_INFINITY = (15 | 1 << 39 | 1 << 49 | 1 << 59).to_bytes(16, "little")
BC6H_SIGNED = 71  # VTF format number (Strata)


def models(tmp: Path) -> Path:
    return hostile.game(tmp) / "models" / "test"


def source_flex_rules(tmp: Path) -> Path:
    """A face whose flexes are driven by rules of every operation (the rules of ``tests/test_flex_rules.py``)."""
    from test_flex_rules import with_key_flexes

    spec = character_spec(includes=[])
    path = write_source(spec, models(tmp), "face")
    path.write_bytes(with_key_flexes(write_mdl(spec)))
    return path


def source_phy_text(tmp: Path) -> Path:
    """Collision solids whose keyvalues text has names and keys longer than Blender's 63 bytes, in UTF-8."""
    path = write_source(character_spec(includes=[]), models(tmp), "guy")
    long_key = "x" * 80
    text = solid_text(
        ["pelvis", "é" * 30],
        [(0, 1, {"xmin": -10.0, "xmax": 20.0, long_key: 1.0, "ü" * 25: 2.0})],
        extra='editparams {\n"rootname" "' + "ö" * 40 + '"\n"totalmass" "inf"\n}\n',
    )
    phy = PhySpec(
        [PSolid([box((-1, -1, -1), (1, 1, 1), 0)]), PSolid([box((0, -0.5, -0.5), (2, 0.5, 0.5), 1)])], text=text
    )
    (path.parent / "guy.phy").write_bytes(write_phy(phy))
    return path


def padded_pcx(side: int = 64, stride: int = 512) -> bytes:
    """A 1-bit, 4-plane PCX whose lines are padded far beyond their pixels (the memory class, at a small size)."""
    y, x = np.mgrid[:side, :side]
    indices = ((x // 8 + y // 8) % 16).astype(np.uint8)
    bits = (indices[:, None, :] >> np.arange(4, dtype=np.uint8)[None, :, None]) & 1
    packed = np.packbits(bits, axis=2)
    lines = np.zeros((side, 4, stride), np.uint8)
    lines[..., : packed.shape[2]] = packed
    palette = np.arange(48, dtype=np.uint8).reshape(16, 3) * 5
    return write_pcx(lines, side, 1, palette16=palette)


def ms3d_pcx_skin(tmp: Path) -> Path:
    folder = tmp / "model"
    path = hostile.ms3d_textured(folder, "skin.pcx")
    (folder / "skin.pcx").write_bytes(padded_pcx())
    return path


def bc6h_vtf(blocks: bytes, width: int, height: int) -> bytes:
    header = np.zeros(1, hostile.VTF_HEADER)
    header["signature"], header["version"], header["header_size"] = b"VTF\0", (7, 2), 80
    header["width"], header["height"], header["frames"], header["format"] = width, height, 1, BC6H_SIGNED
    header["mip_count"], header["low_format"], header["depth"] = 1, -1, 1
    return header.tobytes() + blocks


def source_bc6h_infinity(tmp: Path) -> Path:
    """The body's texture is a signed BC6H VTF, half of it blocks that decode to -inf."""
    hostile.vmt(tmp, "body", '"VertexLitGeneric"\n{\n"$basetexture" "models/test/hdr"\n}\n')
    ordinary = (3 | 280 << 5 | 561 << 35).to_bytes(16, "little")  # mode 3, two plain endpoints
    texture = bc6h_vtf((ordinary + MINUS_INFINITY) * 8, 16, 16)
    (hostile.game(tmp) / "materials" / "models" / "test" / "hdr.vtf").write_bytes(texture)
    return hostile.source(tmp)


def bloodlines_character(tmp: Path) -> Path:
    """A Bloodlines (MDL 2531) character: skinned float vertices, VTX 107, an attachment, a hit box, an animation."""
    return write_bloodlines(character_spec2531(), models(tmp), "vampire")


def bloodlines_textured_prop(tmp: Path) -> Path:
    """A Bloodlines prop of 8-bit vertices whose texture is a .tth header with a zlib .ttz body."""
    path = write_bloodlines(prop_spec(2), models(tmp), "crate")
    folder = hostile.game(tmp) / "materials" / "models" / "test"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "skin.vmt").write_text('VertexLitGeneric\n{\n"$basetexture" "models\\test\\skin"\n}\n')
    tth, ttz = tth_pair(hostile.vtf(16, 16, mips=3), 100)
    (folder / "skin.tth").write_bytes(tth)
    (folder / "skin.ttz").write_bytes(ttz)
    return path


def source_custom_archives(tmp: Path) -> Path:
    """A game whose ``custom/*`` holds 24 tiny VPKs (one of them with the body's material) and a folder, searched
    before the game folder through one index (issue 31)."""
    from archive_writer import WEntry, write_vpk

    game = hostile.game(tmp)
    (game / "gameinfo.txt").write_text(
        '"GameInfo" { game "custom" FileSystem { SearchPaths { game+mod |gameinfo_path|custom/* '
        "game |gameinfo_path|. } } }"
    )
    (game / "custom" / "folder" / "materials").mkdir(parents=True)
    for i in range(24):
        entries = [WEntry(f"materials/other{i}/x.vmt", b"x")]
        if i == 17:
            entries.append(WEntry("materials/models/test/body.vmt", b'"VertexLitGeneric" { "$color" "[1 0 0]" }'))
        write_vpk(game / "custom", f"pack{i:02d}", entries, single=True)
    return hostile.source(tmp)


BUILDERS = {
    "hostile flex rules.mdl": source_flex_rules,
    "hostile phy text.mdl": source_phy_text,
    "hostile padded pcx.ms3d": ms3d_pcx_skin,
    "hostile bc6h infinity.mdl": source_bc6h_infinity,
    # issue 31: search paths and ``custom/*`` entries linked to the canary, for each format
    "hostile gameinfo folder link.ms3d": lambda t: hostile.gameinfo_link_seed(t, "folder", "ms3d"),
    "hostile gameinfo folder link.mdl": lambda t: hostile.gameinfo_link_seed(t, "folder", "mdl"),
    "hostile gameinfo custom link.mdl": lambda t: hostile.gameinfo_link_seed(t, "custom", "mdl"),
    "hostile gameinfo custom link goldsrc.mdl": lambda t: hostile.gameinfo_link_seed(t, "custom", "goldsrc"),
    "hostile gameinfo vpk link.mdl": lambda t: hostile.gameinfo_link_seed(t, "vpk", "mdl"),
    "bloodlines character.mdl": bloodlines_character,
    "bloodlines textured prop.mdl": bloodlines_textured_prop,
    "hostile custom archives.mdl": source_custom_archives,
}


# Issue 31: GoldSrc blends, long span chains (which leap) and skin tables, for the mutator to push past their budgets.


def goldsrc_blends_spans_skins(tmp: Path) -> Path:
    from goldsrc_writer import counts_spec

    return hostile.goldsrc(tmp, counts_spec())


BUILDERS.update({"hostile goldsrc blends spans skins.mdl": goldsrc_blends_spans_skins})


# Round 9 red-team: a Bloodlines texture whose .ttz runs on far past what its VTF header says (inflated only so far).


def bloodlines_ttz_tail(tmp: Path) -> Path:
    import zlib

    path = bloodlines_textured_prop(tmp)
    ttz = hostile.game(tmp) / "materials" / "models" / "test" / "skin.ttz"
    ttz.write_bytes(zlib.compress(zlib.decompress(ttz.read_bytes()) + bytes(16 << 20), 9))
    return path


BUILDERS.update({"hostile bloodlines ttz tail.mdl": bloodlines_ttz_tail})
