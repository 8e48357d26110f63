"""Bones an export renames (renamed in Blender, ``SourceEdits.renamed_bones``), without Blender: which renames
stand, which are refused, and how the file's other text finds a renamed bone."""

from __future__ import annotations

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
