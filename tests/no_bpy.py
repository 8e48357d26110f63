"""Scripts a test runs in a child Python to prove a path of the add-on needs no Blender: each starts with the same
lines, after which importing Blender's modules fails there."""

from __future__ import annotations

BLOCK_BPY = """
import sys
class Block:
    def find_spec(self, name, path=None, target=None):
        if name.split('.')[0] in ('bpy', 'bpy_extras', 'mathutils', 'bmesh'):
            raise ImportError('bpy is blocked in this test: ' + name)
sys.meta_path.insert(0, Block())
"""


def without_bpy(script: str) -> str:
    """``script`` (``sys`` already imported) run where ``bpy``, ``bpy_extras``, ``mathutils`` and ``bmesh`` cannot
    be imported."""
    return BLOCK_BPY + script
