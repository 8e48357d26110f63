"""Blender extension entry point: registration only. The code lives in the ``io_ms3d_mdl`` package beside this file."""


def register() -> None:
    from .io_ms3d_mdl.blender import register as _register

    _register()


def unregister() -> None:
    from .io_ms3d_mdl.blender import unregister as _unregister

    _unregister()
