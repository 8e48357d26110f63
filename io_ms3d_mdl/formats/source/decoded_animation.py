"""What every Source animation decoder produces (node lists of 44–49, frame-major sections, Titanfall 2's bone
headers), and the facts of the format they share: the limits, the rest pose bones without data hold, and how an
animation's frames are split into sections."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .model import MdlAnimation

BONE_FIXED_ALIGNMENT = 0x100000
MAX_FRAMES = 100_000
CHUNK_VALUES = 1 << 16  # frames × nodes decoded per step: bounds the temporaries of long animations
IDENTITY = np.array([1.0, 0.0, 0.0, 0.0])


@dataclass
class DecodedAnimation:
    name: str
    fps: float
    delta: bool
    rotations: np.ndarray  # (F, B, 4) local quaternions (w, x, y, z)
    positions: np.ndarray  # (F, B, 3) local positions (Source units)
    animated: np.ndarray  # (B,) bool: bones that have data in this animation
    notes: list[str] = field(default_factory=list)  # what was decoded but cannot be shown (v53 bone scale)


def fill_rest_pose(bones: np.ndarray, delta: bool, rotations: np.ndarray, positions: np.ndarray) -> None:
    """What bones without data hold, over (F, B, 4) ``rotations`` and (F, B, 3) ``positions``: the bind pose, or
    identity and zero in a delta animation (which adds to another pose)."""
    rotations[:] = IDENTITY if delta else bones["quat"].astype(np.float64)[:, [3, 0, 1, 2]]
    positions[:] = 0.0 if delta else bones["pos"].astype(np.float64)


def section_spans(anim: MdlAnimation, respawn: bool = False) -> list[tuple[int, int, int]]:
    """(section, first frame, frame count) of each part of the data to read: the whole animation, or its sections.
    The last frame of an animation longer than a section lives alone in an extra section (notes §1.9): section
    ``frames // sectionframes + 1`` in Valve's models, ``(frames − 1) // sectionframes + 1`` in Respawn's (v53)."""
    frames, sf = anim.num_frames, anim.section_frames
    if sf <= 0:
        return [(0, 0, frames)]
    spans = [(s, s * sf, min(sf, frames - s * sf)) for s in range((frames + sf - 1) // sf)]
    if frames > sf:
        spans = [(s, start, n if start + n < frames else n - 1) for s, start, n in spans]
        spans.append(((frames - 1 if respawn else frames) // sf + 1, frames - 1, 1))
    return [span for span in spans if span[2] > 0]
