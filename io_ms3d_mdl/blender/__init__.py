"""Everything that imports ``bpy``: builders, the import driver and the operators."""

from __future__ import annotations

import bpy

from . import (
    animation_browser,
    decompile_button,
    game_browser,
    ms3d_export,
    operators,
    preferences,
    source_export,
    source_switch,
)
from .operators import menu_import

# The game browser's sidebar panel registers before the Source Model panel: it heads the "Source" tab, where it
# stays put whatever model is active.
CLASSES = preferences.CLASSES + animation_browser.CLASSES + operators.CLASSES + game_browser.CLASSES
CLASSES += decompile_button.CLASSES + source_switch.CLASSES + ms3d_export.CLASSES
CLASSES += source_export.CLASSES


def register() -> None:
    for cls in CLASSES:
        bpy.utils.register_class(cls)
    animation_browser.register_properties()
    game_browser.register_properties()
    bpy.types.TOPBAR_MT_file_import.append(menu_import)
    bpy.types.TOPBAR_MT_file_export.append(ms3d_export.menu_export)
    bpy.types.TOPBAR_MT_file_export.append(source_export.menu_export)
    if preferences.ADDON and not bpy.app.background:
        bpy.app.timers.register(preferences.discover_later, first_interval=1.0)


def unregister() -> None:
    if bpy.app.timers.is_registered(preferences.discover_later):
        bpy.app.timers.unregister(preferences.discover_later)
    bpy.types.TOPBAR_MT_file_export.remove(source_export.menu_export)
    bpy.types.TOPBAR_MT_file_export.remove(ms3d_export.menu_export)
    bpy.types.TOPBAR_MT_file_import.remove(menu_import)
    game_browser.unregister_properties()
    animation_browser.unregister_properties()
    for cls in reversed(CLASSES):
        bpy.utils.unregister_class(cls)
