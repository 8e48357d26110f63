"""File › Export › Source Model Sources (.qc), in the bpy wheel: an imported Source model as Blender holds it, back
to the decompiler's QC and SMD/VTA files, with everything Blender does not show taken from the original file."""

from __future__ import annotations

import difflib
from pathlib import Path

import numpy as np
import pytest
from conftest import sample_path

from io_ms3d_mdl.decompile import DecompileOptions, decompile

pytestmark = pytest.mark.blender

METAL_BOX = "Igrium__portal_nrtx/models/props/metal_box.mdl"
UNEDITED = [
    METAL_BOX,
    "icewind1991__vmdl/data/barrel01.mdl",
    "Fennecai__Aperture-Continued/models/aperture/monster_cube.mdl",
    "GoodFishMan__mercenaries/models/player/scout.mdl",
    "Lambdagon__lambdas-weapon-pack/models/player/civilian.mdl",
]


def imported(bpy, path: Path, **options):
    options.setdefault("units", "SOURCE")
    assert bpy.ops.import_scene.source_mdl(filepath=str(path), **options) == {"FINISHED"}
    model = next(c for c in bpy.data.collections if "source_version" in c)
    armature = next((o for o in model.all_objects if o.type == "ARMATURE"), None)
    bpy.context.view_layer.objects.active = armature or next(o for o in model.all_objects if o.type == "MESH")
    return model


def export(bpy, out: Path, **options) -> dict:
    out.mkdir(parents=True, exist_ok=True)
    assert bpy.ops.export_scene.source_qc(filepath=str(out / "model.qc"), **options) == {"FINISHED"}
    return files(out)


def files(folder: Path) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def decompiled(path: Path, out: Path) -> dict:
    decompile(str(path), str(out), DecompileOptions())
    return files(out)


def differences(a: dict[str, bytes], b: dict[str, bytes]) -> list[str]:
    out = [f"only in one: {sorted(set(a) ^ set(b))}"] if set(a) != set(b) else []
    for name in sorted(set(a) & set(b)):
        if a[name] != b[name]:
            lines = difflib.unified_diff(
                a[name].decode("latin-1").splitlines(), b[name].decode("latin-1").splitlines(), lineterm="", n=0
            )
            out.append(f"{name}: " + "\n".join(list(lines)[2:12]))
    return out


@pytest.mark.parametrize("relative", UNEDITED, ids=lambda r: Path(r).stem)
def test_an_unedited_model_exports_the_decompilers_bytes(blender, tmp_path, relative):
    path = sample_path("source", relative)
    imported(blender, path)
    ours = export(blender, tmp_path / "export")
    theirs = decompiled(path, tmp_path / "decompiled")
    # The decompiler itself is not stable in an animation's last digit from one run to the next (seen on
    # civilian's included animations, a different file each time): animation files are held to one float32 step.
    for name in {d.split(":")[0] for d in differences(ours, theirs)}:
        assert name.startswith("anims/"), differences(ours, theirs)
        assert same_numbers(ours[name], theirs[name]), name


def same_numbers(a: bytes, b: bytes) -> bool:
    ta, tb = a.split(), b.split()
    if len(ta) != len(tb):
        return False
    for x, y in zip(ta, tb, strict=True):
        if x != y and not np.isclose(np.float32(x), np.float32(y), rtol=3e-7, atol=1e-9):
            return False
    return True


@pytest.mark.parametrize(
    "options",
    [{"units": "INCHES"}, {"units": "HAMMER", "axis_forward": "-X"}, {"units": "SOURCE", "axis_up": "-Y"}],
    ids=["inches", "hammer-forward-X", "source-up-Y"],
)
@pytest.mark.parametrize("relative", [METAL_BOX, UNEDITED[2], UNEDITED[3]], ids=lambda r: Path(r).stem)
def test_the_imports_scale_and_axes_are_undone_exactly(blender, tmp_path, relative, options):
    """Blender holds float32 after the scale and turn: every value within that precision of the file's is the
    file's, so the other scales and axes export the same bytes too. The one difference measured: at Hammer's scale
    (0.01905) Blender loses monster_cube's custom normal on one corner of a sliver triangle of head01 (it gives
    (0, 0, 1)); that corner is written with Blender's normal, everything else on the line equal."""
    path = sample_path("source", relative)
    imported(blender, path, **options)
    ours = export(blender, tmp_path / "export")
    theirs = decompiled(path, tmp_path / "decompiled")
    lost = 0
    for name in {d.split(":")[0] for d in differences(ours, theirs)}:
        assert name.endswith(".smd"), differences(ours, theirs)
        a, b = ours[name].splitlines(), theirs[name].splitlines()
        assert len(a) == len(b)
        for x, y in zip(a, b, strict=True):
            if x != y:
                x, y = x.split(), y.split()
                assert x[:4] == y[:4] and x[7:] == y[7:], (name, x, y)  # bone, position, UV, weights equal
                lost += 1
    assert lost <= (1 if "HAMMER" in options.values() and "monster" in relative else 0)
