"""The *Decompile…* button of the *Source Model* panel: the imported model's own file (its collection keeps its path,
on disk or inside a VPK/GMA) back to QC, SMD and VTA (BMP for GoldSrc), into a folder the user picks.

The work is ``io_ms3d_mdl.decompile`` (no Blender in it): the files go into ``<chosen folder>/<model name>/``, made
one step at a time without following links, each written fresh (an existing file is kept, and the model fails with
its name, unless *Overwrite* is on). The games and folders of the add-on's preferences are where included models and
archives are found, as for the import.
"""

from __future__ import annotations

import os
from pathlib import Path

import bpy
from bpy.props import BoolProperty, StringProperty

from ..decompile import DecompileOptions, decompile
from ..errors import FormatError
from ..filesystem import mounts
from ..filesystem.no_links import output_folder
from .preferences import mounted_games, search_roots
from .source_switch import model_collection

SHOWN_FILES = 6  # files named in the report line; the console lists them all


def model_file(model: bpy.types.Collection) -> str | None:
    path = model.get("source_file") or model.get("source_path")  # (imports before source_file: animated only)
    return str(path) if path else None


def output_for(folder: str, source: str) -> Path:
    """``<folder>/<model stem>``: a model's files together, as the command line writes them."""
    return Path(os.path.abspath(bpy.path.abspath(folder))) / Path(source.replace("\\", "/")).stem


class IO_MS3D_MDL_OT_source_decompile(bpy.types.Operator):
    """Write this model back as the QC, SMD and VTA files studiomdl compiles (BMP textures for GoldSrc), into a
    folder named after it inside the folder you choose"""

    bl_idname = "io_ms3d_mdl.source_decompile"
    bl_label = "Decompile…"
    bl_options = {"REGISTER"}  # noqa: RUF012 - Blender reads a set (writes files; nothing to undo in the scene)

    model: StringProperty(name="Model", description="The model's collection (default: the active object's)")  # type: ignore[valid-type]
    directory: StringProperty(  # type: ignore[valid-type]
        name="Folder", description="The model's folder is made inside this one", subtype="DIR_PATH"
    )
    filter_folder: BoolProperty(default=True, options={"HIDDEN"})  # type: ignore[valid-type]
    overwrite: BoolProperty(  # type: ignore[valid-type]
        name="Overwrite", description="Replace files already in the model's folder (default: keep them and stop)"
    )

    @classmethod
    def poll(cls, context: bpy.types.Context) -> bool:
        return model_collection(context) is not None

    def _model(self, context: bpy.types.Context) -> bpy.types.Collection | None:
        return bpy.data.collections.get(self.model) if self.model else model_collection(context)

    def invoke(self, context: bpy.types.Context, event: bpy.types.Event) -> set[str]:
        model = self._model(context)
        source = model_file(model) if model is not None else None
        if source and not self.directory:
            inside = mounts.split(source)  # in an archive: start beside the archive
            self.directory = os.path.dirname(inside[0] if inside else source) + os.sep
        context.window_manager.fileselect_add(self)
        return {"RUNNING_MODAL"}

    def execute(self, context: bpy.types.Context) -> set[str]:
        model = self._model(context)
        if model is None:
            self.report({"ERROR"}, f"no imported Source or GoldSrc model named '{self.model}'")
            return {"CANCELLED"}
        source = model_file(model)
        if not source:
            self.report({"ERROR"}, f"'{model.name}' does not record the file it was imported from")
            return {"CANCELLED"}
        if not self.directory:
            self.report({"ERROR"}, "choose a folder to decompile into")
            return {"CANCELLED"}
        target = output_for(self.directory, source)
        options = DecompileOptions(
            search_roots=search_roots(context),
            mounts=mounted_games(context),
            overwrite=self.overwrite,
        )
        try:
            with output_folder(target, target.parent):  # the chosen folder as it is; the model's made, no link
                pass
            result = decompile(source, str(target), options)
        except FormatError as exc:
            self.report({"ERROR"}, f"Decompile failed: {exc}")
            return {"CANCELLED"}
        except Exception as exc:  # a stranger's file: one message, never a traceback in the user's face
            self.report({"ERROR"}, f"Decompile failed: {source}: {type(exc).__name__}: {exc}")
            return {"CANCELLED"}
        for warning in result.warnings:
            self.report({"WARNING"}, warning)
        shown = ", ".join(result.files[:SHOWN_FILES]) + (" …" if len(result.files) > SHOWN_FILES else "")
        print(f"Decompiled {source} into {target}:", *result.files, sep="\n  ")
        self.report({"INFO"}, f"Decompiled {model.name}: {len(result.files)} files in {target} ({shown})")
        model["source_decompiled_to"] = str(target)
        return {"FINISHED"}


CLASSES = (IO_MS3D_MDL_OT_source_decompile,)
