"""A fingerprint of the keys an import gave an action, kept on the action, so that an export can tell an animation
the user changed (its keys are written from Blender) from one left as imported (the file's exact data is written).

Blender keeps no "modified" mark per action, and comparing poses would miss edits smaller than the import's key
reduction; the keys themselves are float32 in Blender as in the import's buffer, so an untouched action gives back
the same bytes. The import hashes its one key buffer (each curve's (frame, value) pairs, rotation curves then
location curves, component by component, curves in the order they were made) and the curves' names: one call per
action, nothing per curve. The reader puts the curves it reads back into that order.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable

import numpy as np

KEYS_PROPERTY = "io_ms3d_mdl_keys"  # the action's custom property: {"keys": fingerprint, "frame_step": ...}
_KINDS = {"rotation_quaternion": 0, "location": 1}


def fingerprint(digest: str, frame_step: float | None) -> dict:
    """What the action keeps: the keys' digest and, for a file's animation, the Blender frames one file frame spans
    (the import spaces keys by the scene's rate; an export samples an edited action back at that spacing). One
    property, not one per fact: an action's properties count against the import's budget."""
    return {"keys": digest, **({"frame_step": float(frame_step)} if frame_step else {})}


def stored_keys(action) -> str | None:
    value = action.get(KEYS_PROPERTY)
    return str(value.get("keys")) if hasattr(value, "get") else None


def stored_step(action) -> float | None:
    value = action.get(KEYS_PROPERTY)
    step = value.get("frame_step") if hasattr(value, "get") else None
    return float(step) if step else None


def curves_key(curves: Iterable[tuple[str, int]]) -> bytes:
    """The curves' names (data path, index) in the order they were made, hashed once (actions share them)."""
    text = "\n".join(f"{path}[{index}]" for path, index in curves)
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).digest()


def keys_digest(pairs: np.ndarray, curves: bytes) -> str:
    """The fingerprint of ``pairs`` (float32 (frame, value) pairs in buffer order) on the curves ``curves_key``
    named."""
    h = hashlib.sha256(curves)  # SHA-NI: about 1.8 GB/s here, twice blake2b
    h.update(np.ascontiguousarray(pairs, dtype=np.float32))
    return h.hexdigest()[:32]


def read_back_digest(curves: list[tuple[str, int, np.ndarray]]) -> str:
    """The fingerprint of an action's curves as Blender holds them now: (data path, index, (N, 2) float32 keys) in
    the action's order, their keys put in the import's buffer order (by kind, then component; stable)."""
    order = sorted(range(len(curves)), key=lambda k: (_kind(curves[k][0]), curves[k][1]))
    keys = [curves[k][2].reshape(-1) for k in order]
    pairs = np.concatenate(keys) if keys else np.zeros(0, np.float32)
    return keys_digest(pairs, curves_key((path, index) for path, index, _ in curves))


def _kind(path: str) -> int:
    return _KINDS.get(path.rsplit(".", 1)[-1], len(_KINDS))
