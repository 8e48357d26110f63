"""Everything that imports ``bpy``: builders, the import driver and the operators."""

from __future__ import annotations

import bpy

from .operators import CLASSES, menu_import


def register() -> None:
    for cls in CLASSES:
        bpy.utils.register_class(cls)
    bpy.types.TOPBAR_MT_file_import.append(menu_import)


def unregister() -> None:
    bpy.types.TOPBAR_MT_file_import.remove(menu_import)
    for cls in reversed(CLASSES):
        bpy.utils.unregister_class(cls)
