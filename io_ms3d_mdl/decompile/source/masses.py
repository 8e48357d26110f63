"""A ragdoll's per-solid masses as ``$jointmassbias`` values that a recompile turns back into them.

studiomdl (Source SDK 2013, ``collisionmodel.cpp``) never reads a per-solid mass: it shares the ``$mass`` total
among the solids by volume times bias, ``mass_i = V_i·b_i / Σ_j V_j·b_j × $mass``, and raises a share below 1 kg
to 1 kg. ``V_i`` is the volume of the convex hulls it builds from the solid's triangles in the physics SMD, ``b_i``
is 1 unless ``$jointmassbias`` names the solid's bone (no density enters; ``$automass`` only picks the total). The
``.phy`` keeps each solid's mass (and, from studiomdl, the volume and bias it used): a bias proportional to mass
over volume gives each solid its mass back, whatever the original biases were or however the masses were edited.
"""

from __future__ import annotations

import numpy as np

FLOOR = 1.0  # kg: studiomdl raises a smaller share to this
DIGITS = 6  # significant digits of a bias: a mass comes back within a few millionths (the original's 0.8 as 0.8)


def solid_volumes(meshes: list[tuple[np.ndarray, np.ndarray]]) -> np.ndarray:
    """The volume each closed triangle mesh ``(positions (V, 3), triangles (T, 3))`` encloses: the signed
    tetrahedra from its first point to its triangles, summed per mesh, all meshes at once; its absolute value
    (a winding that faces in gives the same volume). A convex solid's mesh is the hull studiomdl rebuilds."""
    points = [np.asarray(p, dtype=np.float64).reshape(-1, 3) for p, _ in meshes]
    triangles = [np.asarray(t, dtype=np.int64).reshape(-1, 3) for _, t in meshes]
    counts = [len(t) for t in triangles]
    if not sum(counts):
        return np.zeros(len(meshes))
    offsets = np.cumsum([0, *[len(p) for p in points[:-1]]])
    corners = np.concatenate([t + o for t, o in zip(triangles, offsets.tolist(), strict=True)])
    owner = np.repeat(np.arange(len(meshes)), counts)
    origins = np.array([p[0] if len(p) else np.zeros(3) for p in points])  # (near the solid: fewer digits lost)
    a, b, c = (np.concatenate(points)[corners[:, k]] - origins[owner] for k in range(3))
    six = np.einsum("ij,ij->i", a, np.cross(b, c))
    return np.abs(np.bincount(owner, weights=six, minlength=len(meshes))) / 6.0


def mass_biases(masses: np.ndarray, volumes: np.ndarray, total: float) -> np.ndarray | None:
    """Per solid, the bias whose share of ``total`` is its mass (the heaviest solid's 1; nan for a solid without
    volume, whose share is 0 and so the floor whatever its bias); None when nothing can be said (no total, no
    volume). Solids stored at the floor were raised to it: their shares together were what the others leave of
    the total, and an equal split of that gives each the floor again (each was below it, so is their mean). A file
    whose masses leave nothing for them (edited) keeps its own masses as targets: the recompile scales them to
    the total."""
    masses = np.asarray(masses, dtype=np.float64)
    volumes = np.asarray(volumes, dtype=np.float64)
    usable = volumes > 0
    if not len(masses) or not np.isfinite(total) or total <= 0 or not usable.any():
        return None
    target = np.maximum(masses, 0.0)
    floored = masses <= FLOOR
    rest = total - masses[~floored].sum()
    if floored.any() and rest > 0:
        target[floored] = rest / floored.sum()
    if target[usable].sum() <= 0:
        return None
    bias = np.full(len(masses), np.nan)
    bias[usable] = target[usable] / volumes[usable]
    bias /= bias[np.argmax(np.where(usable, target, -np.inf))]  # the heaviest solid's is 1 (a QC's usual root)
    return np.array([float(f"{b:.{DIGITS}g}") for b in bias.tolist()])
