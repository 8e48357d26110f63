"""What of an MS3D file is data: the file with every fixed-size name field cleared after its terminating zero.

MilkShape copies its name and path fields from uninitialised buffers, so bytes after the zero are leftovers of
other strings (``Model.ms3d``'s second material name holds part of a texture path). No reader looks at them; the
writer writes zeros there. Walked here independently of the project's reader.
"""

from __future__ import annotations

import struct

import numpy as np

NAME, PATH = 32, 128


def _clear(buf: bytearray, start: int, size: int) -> None:
    field = bytes(buf[start : start + size])
    end = field.find(b"\0")
    if end >= 0:
        buf[start + end : start + size] = bytes(size - end)


def canonical(data: bytes) -> bytes:
    buf = bytearray(data)
    pos = 14
    (nv,) = struct.unpack_from("<H", buf, pos)
    pos += 2 + 15 * nv
    (nt,) = struct.unpack_from("<H", buf, pos)
    pos += 2 + 70 * nt
    (ng,) = struct.unpack_from("<H", buf, pos)
    pos += 2
    for _ in range(ng):
        _clear(buf, pos + 1, NAME)
        (count,) = struct.unpack_from("<H", buf, pos + 1 + NAME)
        pos += 1 + NAME + 2 + 2 * count + 1
    (nm,) = struct.unpack_from("<H", buf, pos)
    pos += 2
    for _ in range(nm):
        _clear(buf, pos, NAME)
        _clear(buf, pos + 105, PATH)
        _clear(buf, pos + 105 + PATH, PATH)
        pos += 361
    pos += 12
    (nj,) = struct.unpack_from("<H", buf, pos)
    pos += 2
    for _ in range(nj):
        _clear(buf, pos + 1, NAME)
        _clear(buf, pos + 1 + NAME, NAME)
        nr, np_ = struct.unpack_from("<HH", buf, pos + 89)
        pos += 93 + 16 * (nr + np_)
    return bytes(buf)


def differing_bytes(a: bytes, b: bytes) -> int:
    n = min(len(a), len(b))
    return int((np.frombuffer(a[:n], np.uint8) != np.frombuffer(b[:n], np.uint8)).sum()) + abs(len(a) - len(b))
