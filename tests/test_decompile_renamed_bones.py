"""Bones an export renames (renamed in Blender, ``SourceEdits.renamed_bones``), without Blender: which renames
stand, which are refused, and how the file's other text finds a renamed bone."""

from __future__ import annotations

import re

import numpy as np
import pytest

from io_ms3d_mdl.decompile.source.edits import SourceEdits
from io_ms3d_mdl.decompile.source.new_actions import BlenderRig
from io_ms3d_mdl.decompile.source.renamed_bones import rename_bones
from io_ms3d_mdl.scene.ms3d.export import ExportError

NAMES = ["root", "spine", "Head", "arm"]
PARENTS = np.array([-1, 0, 1, 1])


def rig(names: list[str], parents: list[int]) -> BlenderRig:
    count = len(names)
    eye = np.tile(np.eye(4), (count, 1, 1))
    return BlenderRig(names, np.array(parents), eye, np.eye(3), 1.0, 30.0)


def test_renames_are_applied_together_so_two_bones_can_swap_names():
    edits = SourceEdits(
        renamed_bones={"spine": "arm", "arm": "spine"}, rig=rig(["root", "arm", "Head", "spine"], [-1, 0, 1, 1])
    )
    renamed = rename_bones(NAMES, PARENTS, edits)
    assert renamed.names == ["root", "arm", "Head", "spine"]
    assert renamed.name("SPINE") == "arm"  # (an included model's bone, matched whatever the case)
    assert renamed.name("other") == "other"


@pytest.mark.parametrize(
    ("renamed", "deleted", "made", "other"),
    [
        ({"arm": "HEAD"}, [], [], "'Head'"),  # studiomdl ignores case
        ({"arm": "spine"}, ["spine"], [], "'spine' (deleted in Blender)"),
        ({"arm": "Tail"}, [], ["tail"], "'tail' (made in Blender)"),
        ({"arm": "x", "Head": "X"}, [], [], "'Head' (renamed to 'X')"),
        ({"arm": 'a"b', "Head": "a'b"}, [], [], "'Head' (renamed to 'a'b')"),  # (both written a'b)
    ],
)
def test_a_new_name_another_bone_has_is_refused_naming_both(renamed, deleted, made, other):
    names = [renamed.get(n, n) for n in NAMES if n not in deleted] + made
    parents = list(range(-1, len(names) - 1))
    edits = SourceEdits(renamed_bones=renamed, deleted=deleted, rig=rig(names, parents))
    with pytest.raises(ExportError, match="the model has another bone") as caught:
        rename_bones(NAMES, PARENTS, edits)
    assert f"bone 'arm' renamed in Blender to '{renamed['arm']}'" in str(caught.value) and other in str(caught.value)


def test_a_rename_found_by_rest_stands_only_under_the_files_parent():
    kept = SourceEdits(
        renamed_bones={"arm": "wing"}, guessed_bones=["arm"], rig=rig(["root", "spine", "Head", "wing"], [-1, 0, 1, 1])
    )
    assert rename_bones(NAMES, PARENTS, kept).renames == {"arm": "wing"}
    moved = SourceEdits(
        renamed_bones={"arm": "wing"}, guessed_bones=["arm"], rig=rig(["root", "spine", "Head", "wing"], [-1, 0, 1, 2])
    )
    renamed = rename_bones(NAMES, PARENTS, moved)
    assert renamed.renames == {} and renamed.names == NAMES and renamed.deleted == ["arm"]


def test_definebone_and_the_collision_model_name_a_renamed_bone(tmp_path):
    """civilian, through the decompiler alone: ``$definebone`` (its own line and its children's parent), the
    collision model's ``$rootbone`` and joint limits (names from the .phy's text) all write the new name."""
    from conftest import sample_path

    from io_ms3d_mdl.decompile import DecompileOptions, decompile

    path = sample_path("source", "Lambdagon__lambdas-weapon-pack/models/player/civilian.mdl")
    edits = SourceEdits(renamed_bones={"bip_pelvis": "hips", "bip_foot_L": "left_foot"})
    result = decompile(str(path), str(tmp_path), DecompileOptions(definebone=True, edits=edits))
    qc = (tmp_path / result.qc).read_text("latin-1")
    assert '"bip_pelvis"' not in qc and '"bip_foot_L"' not in qc
    assert re.search(r'^\$definebone "hips" ""', qc, re.M)
    assert re.search(r'^\$definebone "bip_spine_0" "hips"', qc, re.M)
    assert re.search(r'^\$definebone "left_foot" "bip_knee_L"', qc, re.M)
    assert '$rootbone "hips"' in qc and '$jointconstrain "left_foot" x limit' in qc
