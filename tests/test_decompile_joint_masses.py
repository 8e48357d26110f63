"""``$jointmassbias``: a recompile gives each solid of a ragdoll the mass its ``.phy`` stores.

studiomdl's sharing of ``$mass`` is modelled here on its own, from the SDK's rule (Source SDK 2013,
``collisionmodel.cpp``: ``share_i = V_i·b_i / Σ_j V_j·b_j × $mass``, raised to 1 kg when below; ``V_i`` the volume of
the hulls it builds from the solid's triangles, ``b_i`` the bias, 1 by default): the volumes come from the written
physics SMD (its triangles per bone), the total and the biases from the written QC (read by the strict grammar),
the masses to match from the ``.phy``'s text. The samples are every shared ragdoll (a ``.phy`` of several solids).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import qc_grammar
import smd_reader
from conftest import sample_path

from io_ms3d_mdl.decompile import DecompileOptions, decompile
from io_ms3d_mdl.decompile.source.masses import mass_biases
from io_ms3d_mdl.formats.source.phy import read_phy_bytes

RAGDOLLS = [  # (kind, model): 17, 17, 15, 15 and 15 solids; scout and civilian have solids stored at the 1 kg floor
    ("source", "Lambdagon__lambdas-weapon-pack/models/player/civilian.mdl"),
    ("source", "GoodFishMan__mercenaries/models/player/scout.mdl"),
    ("source", "CombineFodder__hl2betaplayermodels/models/player/cremator.mdl"),
    ("vtmb", "miracleflame__VTMB-Unofficial-Patch-by-Wesp/Basic_Patch/models/character/npc/common/swat/swat3.mdl"),
    (
        "vtmb",
        "miracleflame__VTMB-Unofficial-Patch-by-Wesp/Basic_Patch/models/character/npc/common/citizen/female3/"
        "female_citizen_3.mdl",
    ),
]
FLOOR = 1.0  # kg


def studiomdl_masses(volumes: np.ndarray, biases: np.ndarray, total: float) -> np.ndarray:
    weighted = volumes * biases
    return np.maximum(weighted / weighted.sum() * total, FLOOR)


def collision_block(statements: list[qc_grammar.Statement]) -> tuple[str, float, dict[str, float]]:
    """The physics SMD, ``$mass`` and the ``$jointmassbias`` of each bone named (lower case) in ``$collisionjoints``."""
    (block,) = [s for s in statements if s.command == "$collisionjoints"]
    tokens = block.values()
    total = float(tokens[tokens.index("$mass") + 1])
    biases = {}
    for i, token in enumerate(tokens):
        if token.lower() == "$jointmassbias":
            biases[tokens[i + 1].lower()] = float(tokens[i + 2])
    return tokens[0], total, biases


def bone_volumes(smd: smd_reader.Smd) -> dict[str, float]:
    """Per bone (lower case), the volume its triangles enclose: signed tetrahedra from its first corner."""
    corners = smd.vertices[:, :3].reshape(-1, 3, 3).astype(np.float64)
    bones = np.array([links[0][0] for links in smd.weights[::3]])
    volumes = {}
    for bone in np.unique(bones).tolist():
        a, b, c = np.moveaxis(corners[bones == bone] - corners[bones == bone][0, 0], 1, 0)
        volumes[smd.names[bone].lower()] = abs(float(np.einsum("ij,ij->i", a, np.cross(b, c)).sum())) / 6.0
    return volumes


def stored_solids(model: Path) -> list[dict]:
    (phy,) = [p for p in model.parent.iterdir() if p.name.lower() == model.stem.lower() + ".phy"]
    data = read_phy_bytes(phy.read_bytes(), str(phy))
    return [data.solid_keys(solid.index) for solid in data.solids]


@pytest.mark.parametrize("kind, relative", RAGDOLLS, ids=[Path(r).stem for _, r in RAGDOLLS])
def test_joint_mass_biases_give_every_solid_its_stored_mass(kind, relative, tmp_path):
    model = sample_path(kind, relative)
    out = tmp_path / "out"
    result = decompile(str(model), str(out), DecompileOptions(animations=False))
    physics, total, biases = collision_block(qc_grammar.check_file(out / result.qc))
    volumes = bone_volumes(smd_reader.read(out / physics))
    solids = stored_solids(model)
    names = [str(keys["name"]).lower() for keys in solids]
    stored = np.array([float(keys["mass"]) for keys in solids])
    assert len(solids) > 1 and biases and set(biases) <= set(names)
    ours = np.array([volumes[name] for name in names])
    # the hulls a recompile builds from the SMD hold the volumes studiomdl stored for the original solids
    np.testing.assert_allclose(ours, [float(keys["volume"]) for keys in solids], rtol=1e-3)
    masses = studiomdl_masses(ours, np.array([biases.get(name, 1.0) for name in names]), total)
    np.testing.assert_allclose(masses, stored, rtol=0.01)
    without = studiomdl_masses(ours, np.ones(len(names)), total)  # (what the QC gave before: its biases matter)
    assert np.abs(without / stored - 1).max() > 0.05


def test_floored_solids_share_what_the_others_leave():
    """Solids stored at the floor had shares below it: they split what the other solids leave of the total, so a
    recompile raises each to the floor again; a file whose masses leave nothing keeps its masses as targets."""
    volumes = np.array([40.0, 10.0, 5.0, 0.5])
    stored = np.array([60.0, 9.0, 1.0, 1.0])
    biases = mass_biases(stored, volumes, 70.0)
    assert biases[0] == 1.0  # the heaviest solid's
    np.testing.assert_allclose(studiomdl_masses(volumes, biases, 70.0), stored, rtol=1e-5)
    edited = mass_biases(np.array([60.0, 20.0, 1.0, 1.0]), volumes, 70.0)
    np.testing.assert_allclose(edited * volumes / (edited * volumes).sum(), np.array([60, 20, 1, 1]) / 82, rtol=1e-5)
    assert mass_biases(stored, np.zeros(4), 70.0) is None
    assert np.isnan(mass_biases(stored, np.array([40.0, 10.0, 5.0, 0.0]), 70.0)[3])
