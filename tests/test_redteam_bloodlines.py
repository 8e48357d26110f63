"""Red-team pass of round 9 on the Bloodlines (v2531) reader: a ``.ttz`` that inflates far past what its VTF header
says the texture needs."""

from __future__ import annotations

import struct
import zlib

import hostile
import numpy as np
from bloodlines_writer import character_spec2531, tth_pair, write_bloodlines

from io_ms3d_mdl.formats.source import read_mdl
from io_ms3d_mdl.formats.source.tth import tth_to_vtf
from io_ms3d_mdl.formats.source.vtf import declared_bytes, read_vtf_bytes
from io_ms3d_mdl.scene.load import load_source


def test_a_ttz_inflates_only_as_far_as_its_texture_reaches():
    """A 1×1 texture whose ``.ttz`` goes on with 64 MiB of zeros (a 65 KB file): before round 9 the whole 64 MiB was
    inflated and copied for each such texture (127 MiB: about 1 s and 300 MB), now a few bytes."""
    vtf = hostile.vtf(1, 1, fill=b"\x10\x20\x30\xff")
    tth, ttz = tth_pair(vtf, 80)
    bomb = zlib.compress(zlib.decompress(ttz) + bytes(64 << 20), 9)
    assert len(bomb) < 100_000
    whole = tth_to_vtf(tth, bomb, "t.tth")
    assert len(whole) <= declared_bytes(vtf[:80]) <= 1 << 17
    image = read_vtf_bytes(whole, "t.tth")
    assert image.faces[0].ravel()[:3].tolist() == [0x10, 0x20, 0x30]


def test_declared_bytes_covers_every_level_and_refuses_what_it_cannot_read():
    vtf = hostile.vtf(64, 64, mips=7)
    assert declared_bytes(vtf[:80]) >= len(vtf) - 80
    assert declared_bytes(b"VTF\0" + bytes(10)) is None
    assert declared_bytes(b"XXXX" + bytes(100)) is None


def test_a_singular_pose_to_bone_leaves_its_children_as_stored(tmp_path):
    """A fuzz finding: a bone whose poseToBone cannot be inverted (here all zeros) under a child whose poseToBone
    disagrees with its stored pose stopped the import with numpy's LinAlgError. The child can only be placed
    relative to a parent whose poseToBone is rigid: it now keeps its stored pose, and the model imports."""
    path = write_bloodlines(character_spec2531(), tmp_path / "models" / "test", "guy")
    data = bytearray(path.read_bytes())
    bones_at = struct.unpack_from("<i", data, 244)[0]  # the 2531 header's boneindex
    spine, head = bones_at + 160, bones_at + 2 * 160
    struct.pack_into("<12f", data, spine + 88, *[0.0] * 12)  # spine's poseToBone: singular
    at = head + 88 + 3 * 4  # head's poseToBone: its x translation moved by 5 units
    struct.pack_into("<f", data, at, struct.unpack_from("<f", data, at)[0] + 5.0)
    path.write_bytes(bytes(data))
    mdl = read_mdl(str(path))
    stored = read_mdl(str(write_bloodlines(character_spec2531(), tmp_path / "clean" / "models", "guy")))
    np.testing.assert_array_equal(mdl.bones["pos"][2], stored.bones["pos"][2])
    assert load_source(str(path)).skeleton is not None
