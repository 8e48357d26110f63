"""Source's compressed value types (``compressed_vector.h``), shared by the model reader and every animation
decoder: Float16 (and so Vector48), Quaternion48, Quaternion64, and the Euler angles RLE streams hold."""

from __future__ import annotations

import numpy as np


def half_to_float(bits: np.ndarray) -> np.ndarray:
    """Source's float16: IEEE half, except infinity reads as ±65504 and NaN as 0 (compressed_vector.h)."""
    values = np.asarray(bits, dtype="<u2").view(np.float16).astype(np.float64)
    values[np.isinf(values)] = np.sign(values[np.isinf(values)]) * 65504.0
    values[np.isnan(values)] = 0.0
    return values


def quaternion48(raw: bytes) -> np.ndarray:
    return quaternion48_words(np.frombuffer(raw, "<u2", 3)[None])[0]


def quaternion64(raw: bytes) -> np.ndarray:
    return quaternion64_words(np.frombuffer(raw, "<u8", 1))[0]


def quaternion48_words(words: np.ndarray) -> np.ndarray:
    """(N, 3) little-endian words of ``Quaternion48`` → (N, 4) wxyz: 16-bit x and y, 15-bit z, w's sign on top."""
    x, y, zw = (words[:, i].astype(np.int64) for i in range(3))
    xyz = np.stack([(x - 32768) / 32768.0, (y - 32768) / 32768.0, ((zw & 0x7FFF) - 16384) / 16384.0], axis=-1)
    return _with_w(xyz, (zw >> 15) != 0)


def quaternion64_words(bits: np.ndarray) -> np.ndarray:
    """(N,) 64-bit ``Quaternion64`` words → (N, 4) wxyz: three 21-bit components, w's sign in the top bit."""
    bits = np.asarray(bits, dtype=np.uint64)
    xyz = np.stack([((bits >> np.uint64(s)) & np.uint64(0x1FFFFF)).astype(np.int64) for s in (0, 21, 42)], axis=-1)
    return _with_w((xyz - 1048576) / 1048576.5, (bits >> np.uint64(63)) != 0)


def _with_w(xyz: np.ndarray, negative: np.ndarray) -> np.ndarray:
    """The unit quaternion whose vector part is stored: w from the norm, its sign from the stored flag."""
    w = np.sqrt(np.maximum(0.0, 1.0 - np.einsum("ni,ni->n", xyz, xyz)))
    return np.concatenate([np.where(negative, -w, w)[:, None], xyz], axis=1)


def euler_to_quaternion(angles: np.ndarray) -> np.ndarray:
    """Source ``AngleQuaternion`` (= Blender ``Euler((x, y, z), 'XYZ').to_quaternion()``), vectorised, (..., 4) wxyz."""
    half = np.asarray(angles, dtype=np.float64) * 0.5
    sx, sy, sz = np.sin(half[..., 0]), np.sin(half[..., 1]), np.sin(half[..., 2])
    cx, cy, cz = np.cos(half[..., 0]), np.cos(half[..., 1]), np.cos(half[..., 2])
    return np.stack(
        [
            cx * cy * cz + sx * sy * sz,
            sx * cy * cz - cx * sy * sz,
            cx * sy * cz + sx * cy * sz,
            cx * cy * sz - sx * sy * cz,
        ],
        axis=-1,
    )
