"""Skeletons of studio models, Source's and GoldSrc's alike: bones listed parent first, each with a rest matrix
relative to its parent, become one :class:`SkeletonData` whose bones point as the import options ask."""

from __future__ import annotations

from typing import Any

import numpy as np

from .bones import bone_frames
from .names import unique_names
from .rotations import compose
from .types import BoneData, SkeletonData


def rest_world(local: np.ndarray, parents: list[int]) -> np.ndarray:
    """Each bone's rest matrix in model space: its parents' local matrices, then its own."""
    world = local.copy()
    for i, parent in enumerate(parents):
        if parent >= 0:
            world[i] = world[parent] @ local[i]
    return world


def studio_skeleton(
    name: str,
    world: np.ndarray,
    parents: np.ndarray,
    file_names: list[str],
    bone_props: list[dict[str, Any]],
    scale: float,
    bone_orientation: str,
) -> tuple[SkeletonData, np.ndarray]:
    """The skeleton, and ``X`` (B, 3, 3): each bone's frame in the file's bone space (pose channels are written in
    it). ``bone_props`` are each bone's custom properties; the file's name is added where Blender's differs."""
    heads = world[:, :3, 3] * scale
    extent = float(np.ptp(heads, axis=0).max()) if len(heads) > 1 else 0.0
    default = max(extent * 0.03, 1.0 * scale)
    frames, lengths, x = bone_frames(
        world[:, :3, :3], heads, parents.astype(np.int64), np.eye(3), bone_orientation, default
    )
    names = unique_names(file_names, "bone")  # within Blender's 63 bytes; the file's name kept when it differs
    matrices = compose(frames, heads)  # every bone at once: per bone, numpy's call overhead was most of the cost
    bones = [
        BoneData(
            names[i],
            p,
            matrices[i],
            length,
            props={
                **bone_props[i],
                **({"source_name": file_names[i]} if file_names[i] not in ("", names[i]) else {}),
            },
        )
        for i, (p, length) in enumerate(zip(parents.tolist(), lengths.tolist(), strict=True))
    ]
    return SkeletonData(name, bones), x
