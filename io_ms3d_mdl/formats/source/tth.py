"""Bloodlines textures: a ``.tth`` header and a ``.ttz`` body instead of one ``.vtf``.

The ``.tth`` starts with ``TTH\\0``, keeps a mip count at byte 6 and at byte 8 the size of the VTF bytes it holds;
after a 16-byte head, a table of 8 bytes per mip level and 4 more bytes come those VTF bytes (a VTF 7.0 header and
the smallest mip levels). The ``.ttz`` is the rest of the VTF file (its larger mip levels), zlib-compressed. Put
together they are an ordinary VTF (``vtf.read_vtf_bytes``). The decompressed size is bounded by the one-file
budget before it is allocated (a zip bomb stops there), and no further than the VTF header says the texture
is long (a 1×1 texture followed by 128 MiB of zeros inflates a few bytes).
"""

from __future__ import annotations

import zlib

from ...budget import current_budget
from ..binary import Cursor
from .vtf import declared_bytes

MAGIC = b"TTH\0"
HEAD_SIZE = 16


def tth_to_vtf(header: bytes, body: bytes, path: str | None = None) -> bytes:
    """The VTF file a ``.tth``/``.ttz`` pair holds; errors name the ``.tth`` (``path``) and the offset."""
    cur = Cursor(header, path)
    if cur.size < HEAD_SIZE or bytes(cur.data[:4]) != MAGIC:
        raise cur.error(f"not a Bloodlines texture header: expected 'TTH', found {bytes(cur.data[:4])!r}", 0)
    mips = int(cur.data[6])
    size = int.from_bytes(cur.data[8:12], "little")
    start = HEAD_SIZE + 8 * mips + 4
    vtf_head = cur.bytes_at(start, size, "VTF header and small mip levels")
    limit = current_budget().file_bytes
    declared = declared_bytes(bytes(vtf_head))
    inflate = zlib.decompressobj()
    try:
        if declared is not None and declared <= limit:  # what the texture needs, not what the stream holds
            return vtf_head + inflate.decompress(body, max(declared - len(vtf_head), 1))
        rest = inflate.decompress(body, limit - len(vtf_head) + 1)
    except zlib.error as exc:
        raise Cursor(body, _ttz(path)).error(f"the compressed texture data is damaged ({exc})", 0) from None
    if len(vtf_head) + len(rest) > limit or inflate.unconsumed_tail:
        raise current_budget().exceeded(_ttz(path), "decompressed texture", len(vtf_head) + len(rest), limit, "bytes")
    return vtf_head + rest


def _ttz(path: str | None) -> str | None:
    return path[:-4] + ".ttz" if path and path.lower().endswith(".tth") else path
