"""io_ms3d_mdl: MilkShape 3D and Valve Source model import for Blender.

Layers, each importable on its own:

- ``formats``: byte-exact readers that turn files into plain Python/numpy records. No ``bpy``.
- ``scene``: the neutral scene description the builders consume (meshes, materials as numpy arrays), plus the
  conversions from each format to it. No ``bpy``.
- ``decompile``: a model back to the sources ``studiomdl`` compiles (QC, SMD, VTA, BMP), written through the
  ``formats`` writers (``formats.smd``, ``formats.qc``). No ``bpy``; ``io_ms3d_mdl.decompile(path, out, options)``.
- ``blender``: the only package that imports ``bpy``; thin builders and the operators.
"""

__version__ = "0.1.0"


def __getattr__(name: str):
    """``io_ms3d_mdl.decompile(path, out, options)`` without importing the decompiler (or anything) up front."""
    if name == "decompile":
        import importlib

        return importlib.import_module(f"{__name__}.decompile")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
