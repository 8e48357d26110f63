"""Red-team pass of round 9 on the Bloodlines (v2531) reader: a ``.ttz`` that inflates far past what its VTF header
says the texture needs."""

from __future__ import annotations

import zlib

import hostile
from bloodlines_writer import tth_pair

from io_ms3d_mdl.formats.source.tth import tth_to_vtf
from io_ms3d_mdl.formats.source.vtf import declared_bytes, read_vtf_bytes


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
