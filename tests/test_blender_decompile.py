"""The *Decompile…* button of the Source Model panel, in the bpy wheel: it decompiles the imported model's own file
(on disk or inside a VPK) into ``<chosen folder>/<model>/``, reports what it wrote, and fails cleanly."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from source_writer import character_spec, write_source
from test_archives import KNIFE, needs_knife

import io_ms3d_mdl.decompile as decompile_package
from io_ms3d_mdl.decompile.registry import Decompiler

pytestmark = pytest.mark.blender


def stand_in_run(job) -> None:
    """Proves which file the button asked for: the QC records the model's path and size as read."""
    stem = Path(job.path.replace("\\", "/")).stem
    qc = job.output.name(stem, ".qc")
    job.output.write(qc, f'// {job.path} {len(job.data)}\n$modelname "{stem}.mdl"\n'.encode())
    job.result.qc = qc
    job.result.warnings.add("a warning for the report")


@pytest.fixture
def stand_in(monkeypatch):
    engine = Decompiler("stand-in", lambda head: head[:4] == b"IDST", stand_in_run)
    monkeypatch.setattr(decompile_package, "decompilers", lambda: (engine,))


def imported(bpy, path: str):
    assert bpy.ops.import_scene.source_mdl(filepath=path) == {"FINISHED"}
    return next(c for c in bpy.data.collections if "source_version" in c)


def test_the_panel_shows_the_button_for_an_imported_model(blender, tmp_path):
    bpy = blender
    write_source(character_spec(), tmp_path / "models", "guy")
    model = imported(bpy, str(tmp_path / "models" / "guy.mdl"))
    from io_ms3d_mdl.blender import source_switch

    calls = []

    class Layout:
        def __getattr__(self, name):
            def record(*args, **kwargs):
                calls.append((name, args, kwargs))
                return Recorder()

            return record

    class Recorder(Layout):
        def __setattr__(self, name, value):
            calls.append(("set", name, value))

    class Context:
        collection = model
        object = None

    source_switch.draw_switches(Layout(), Context())
    assert ("operator", ("io_ms3d_mdl.source_decompile",), {"icon": "EXPORT"}) in calls
    assert ("set", "model", model.name) in calls
    assert bpy.ops.io_ms3d_mdl.source_decompile.poll() is True  # the imported model is active
    bpy.context.view_layer.objects.active = None
    assert bpy.ops.io_ms3d_mdl.source_decompile.poll() is False  # nothing of a model active: no button


def test_the_button_decompiles_the_models_file(blender, tmp_path, stand_in):
    bpy = blender
    write_source(character_spec(), tmp_path / "models", "guy")
    model = imported(bpy, str(tmp_path / "models" / "guy.mdl"))
    out = tmp_path / "out"
    out.mkdir()
    result = bpy.ops.io_ms3d_mdl.source_decompile(model=model.name, directory=str(out))
    assert result == {"FINISHED"}
    qc = out / "guy" / "guy.qc"
    size = (tmp_path / "models" / "guy.mdl").stat().st_size
    assert qc.read_text().startswith(f"// {tmp_path / 'models' / 'guy.mdl'} {size}\n")
    assert model["source_decompiled_to"] == str(out / "guy")

    # again: the file is there; it is kept and the button says so, unless asked to overwrite
    qc.write_text("edited")
    with pytest.raises(RuntimeError, match="exists in the output folder"):
        bpy.ops.io_ms3d_mdl.source_decompile(model=model.name, directory=str(out))
    assert qc.read_text() == "edited"
    assert bpy.ops.io_ms3d_mdl.source_decompile(model=model.name, directory=str(out), overwrite=True) == {"FINISHED"}
    assert qc.read_text().startswith("//")


@needs_knife
def test_the_button_decompiles_a_model_inside_a_vpk(blender, tmp_path, stand_in):
    bpy = blender
    inside = os.path.join(str(KNIFE), "models", "v_models", "v_knife_t.mdl")
    model = imported(bpy, inside)
    assert bpy.ops.io_ms3d_mdl.source_decompile(model=model.name, directory=str(tmp_path)) == {"FINISHED"}
    text = (tmp_path / "v_knife_t" / "v_knife_t.qc").read_text()
    assert text.startswith(f"// {os.path.abspath(inside)} ")  # read through the archive


def test_errors_are_one_clean_message(blender, tmp_path, stand_in):
    bpy = blender
    write_source(character_spec(), tmp_path / "models", "guy")
    model = imported(bpy, str(tmp_path / "models" / "guy.mdl"))
    with pytest.raises(RuntimeError, match="choose a folder"):
        bpy.ops.io_ms3d_mdl.source_decompile(model=model.name, directory="")
    model["source_file"] = str(tmp_path / "models" / "gone.mdl")
    with pytest.raises(RuntimeError, match=r"Decompile failed: .*gone\.mdl"):
        bpy.ops.io_ms3d_mdl.source_decompile(model=model.name, directory=str(tmp_path / "out"))
    with pytest.raises(RuntimeError, match="no imported Source or GoldSrc model"):
        bpy.ops.io_ms3d_mdl.source_decompile(model="nothing", directory=str(tmp_path))


def test_the_real_decompiler_through_the_button(blender, tmp_path):
    """With the real engines (no stand-in): the QC and the files it names are there."""
    bpy = blender
    write_source(character_spec(), tmp_path / "models", "guy")
    model = imported(bpy, str(tmp_path / "models" / "guy.mdl"))
    try:
        result = bpy.ops.io_ms3d_mdl.source_decompile(model=model.name, directory=str(tmp_path / "out"))
    except RuntimeError as exc:
        if "decompile.source.model" in str(exc):
            pytest.skip("the Source decompiler core is not merged into this branch yet")
        raise
    assert result == {"FINISHED"}
    import qc_grammar

    qcs = list((tmp_path / "out" / "guy").glob("*.qc"))
    assert len(qcs) == 1
    qc_grammar.check_file(qcs[0])
