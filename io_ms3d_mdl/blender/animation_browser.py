"""Animations on demand: every animation a Source model offers (its own, its ``.ani`` blocks', its includes') is
listed on the model's collection at import, and a click builds the one picked (if the import did not) and plays it.

Building a thousand actions nobody asked for is what made opening a character take twenty seconds; the list costs
almost nothing, and one animation builds in milliseconds (the parsed files are kept, see ``scene/load.py``).
"""

from __future__ import annotations

import bpy
from bpy.props import BoolProperty, CollectionProperty, FloatProperty, IntProperty, StringProperty

from ..errors import FormatError
from ..scene.load import load_source_animation
from ..scene.source.convert import SourceOptions
from ..scene.types import AnimationEntry
from .animation import Limits, build_action, set_scene_timing, stash_actions
from .preferences import mounted_games, search_roots


class IO_MS3D_MDL_animation_item(bpy.types.PropertyGroup):
    frames: IntProperty(name="Frames")  # type: ignore[valid-type]
    fps: FloatProperty(name="FPS")  # type: ignore[valid-type]
    delta: BoolProperty(name="Delta", description="Adds to another pose (a gesture or layer)")  # type: ignore[valid-type]
    activity: StringProperty(name="Activity")  # type: ignore[valid-type]
    source: StringProperty(name="From", description="The included model it comes from")  # type: ignore[valid-type]


def fill(collection: bpy.types.Collection, entries: list[AnimationEntry]) -> None:
    """Store the model's offer on its collection (a property collection, so the list can filter and sort it)."""
    items = collection.io_ms3d_mdl_animations
    for entry in entries:
        item = items.add()
        item.name, item.frames, item.fps, item.delta = entry.name, entry.frames, entry.fps, entry.delta
        item.activity, item.source = entry.activity, entry.source


def armature_of(collection: bpy.types.Collection) -> bpy.types.Object | None:
    return next((o for o in collection.objects if o.type == "ARMATURE"), None)


def built_action(armature: bpy.types.Object, name: str) -> bpy.types.Action | None:
    """The action already made for animation ``name`` on this armature (active, or on one of its NLA tracks)."""
    anim = armature.animation_data
    if anim is None:
        return None
    actions = [anim.action] + [strip.action for track in anim.nla_tracks for strip in track.strips]
    return next((a for a in actions if a is not None and a.get("source_animation") == name), None)


def play(context: bpy.types.Context, collection: bpy.types.Collection, name: str) -> tuple[bpy.types.Action, list]:
    """Make animation ``name`` the armature's active action (building it first if needed) and show its frames."""
    armature = armature_of(collection)
    if armature is None or "source_path" not in collection:
        raise FormatError(None, None, f"'{collection.name}' has no armature or no source file to build from")
    warnings: list[str] = []
    action = built_action(armature, name)
    if action is None:
        action, warnings = _build(armature, collection, name)
    armature.animation_data_create().action = action
    lo, hi = action.frame_range
    set_scene_timing(context.scene, float(collection["source_fps"]), (lo, hi), Limits())
    context.scene.frame_current = int(lo)
    return action, warnings


def _build(armature: bpy.types.Object, collection: bpy.types.Collection, name: str) -> tuple[bpy.types.Action, list]:
    options = SourceOptions(
        scale=float(collection["source_scale"]),
        bone_orientation=str(collection["source_bone_orientation"]),
        search_roots=search_roots(bpy.context),
        mounts=mounted_games(bpy.context),
    )
    scene = load_source_animation(str(collection["source_path"]), name, options, float(collection["source_fps"]))
    if not scene.actions:
        raise FormatError(collection["source_path"], None, f"animation '{name}' could not be built")
    data = scene.actions[0]
    action = build_action(armature, data, scene.skeleton)
    stash_actions(armature, [action], [data])  # fake user, markers, properties; active
    return action, list(scene.warnings)


def _on_pick(collection: bpy.types.Collection, context: bpy.types.Context) -> None:
    index = collection.io_ms3d_mdl_animation_index
    if 0 <= index < len(collection.io_ms3d_mdl_animations):
        bpy.ops.io_ms3d_mdl.source_play_animation(
            model=collection.name, animation=collection.io_ms3d_mdl_animations[index].name
        )


class IO_MS3D_MDL_OT_source_play_animation(bpy.types.Operator):
    """Build (if needed) and play one animation of an imported Source model"""

    bl_idname = "io_ms3d_mdl.source_play_animation"
    bl_label = "Play Source Animation"
    bl_options = {"REGISTER", "UNDO"}  # noqa: RUF012 - Blender reads a set

    model: StringProperty(name="Model", description="The model's collection")  # type: ignore[valid-type]
    animation: StringProperty(name="Animation")  # type: ignore[valid-type]

    def execute(self, context: bpy.types.Context) -> set[str]:
        collection = bpy.data.collections.get(self.model)
        if collection is None or self.animation not in collection.io_ms3d_mdl_animations:
            self.report({"ERROR"}, f"No animation '{self.animation}' on model '{self.model}'")
            return {"CANCELLED"}
        try:
            action, warnings = play(context, collection, self.animation)
        except FormatError as exc:
            self.report({"ERROR"}, exc.message)
            return {"CANCELLED"}
        for warning in warnings:
            self.report({"WARNING"}, warning)
        screen = context.screen
        if screen is not None and not screen.is_animation_playing and context.window is not None:
            bpy.ops.screen.animation_play()
        self.report({"INFO"}, f"Playing '{action.name}'")
        return {"FINISHED"}


class IO_MS3D_MDL_UL_source_animations(bpy.types.UIList):
    """Name, frames, and marks for deltas and animations from included models; the filter searches names."""

    def draw_item(self, context, layout, data, item, icon, active_data, active_property, index=0, flt_flag=0):
        row = layout.row(align=True)
        row.label(text=item.name, icon="ACTION" if is_built(data, item.name) else "BLANK1")
        if item.delta:
            row.label(text="", icon="MOD_OFFSET")
        if item.source:
            row.label(text="", icon="LINKED")
        row.label(text=f"{item.frames}")


def is_built(collection: bpy.types.Collection, name: str) -> bool:
    armature = armature_of(collection)
    return armature is not None and built_action(armature, name) is not None


def draw_list(layout: bpy.types.UILayout, collection: bpy.types.Collection) -> None:
    if not len(collection.io_ms3d_mdl_animations):
        return
    layout.label(text=f"Animations ({len(collection.io_ms3d_mdl_animations)}): click one to play it", icon="ACTION")
    layout.template_list(
        IO_MS3D_MDL_UL_source_animations.__name__,
        "",
        collection,
        "io_ms3d_mdl_animations",
        collection,
        "io_ms3d_mdl_animation_index",
        rows=6,
    )


def register_properties() -> None:
    bpy.types.Collection.io_ms3d_mdl_animations = CollectionProperty(type=IO_MS3D_MDL_animation_item)
    bpy.types.Collection.io_ms3d_mdl_animation_index = IntProperty(
        name="Animation", default=-1, update=lambda self, context: _on_pick(self, context)
    )


def unregister_properties() -> None:
    del bpy.types.Collection.io_ms3d_mdl_animation_index
    del bpy.types.Collection.io_ms3d_mdl_animations


CLASSES = (IO_MS3D_MDL_animation_item, IO_MS3D_MDL_OT_source_play_animation, IO_MS3D_MDL_UL_source_animations)
