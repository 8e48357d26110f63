"""The architecture's promise: readers and the scene layer work with ``bpy`` absent."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

from conftest import EXAMPLE, ROOT

PACKAGE = ROOT / "io_ms3d_mdl"

BLOCK_BPY = f"""
import sys
class Block:
    def find_spec(self, name, path=None, target=None):
        if name.split('.')[0] in ('bpy', 'bpy_extras', 'mathutils', 'bmesh'):
            raise ImportError('bpy is blocked in this test: ' + name)
sys.meta_path.insert(0, Block())
sys.path.insert(0, {str(ROOT)!r})
from io_ms3d_mdl.formats.ms3d import read_ms3d
from io_ms3d_mdl.scene.ms3d.convert import ms3d_to_scene
scene = ms3d_to_scene(read_ms3d({str(EXAMPLE)!r}))
print(len(scene.objects), scene.triangle_count, len(scene.materials))
assert not any(m.split('.')[0] == 'bpy' for m in sys.modules)
"""


def test_reader_and_scene_run_with_bpy_blocked():
    out = subprocess.run([sys.executable, "-c", BLOCK_BPY], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["4", "18", "4"]


def imported_modules(path: Path) -> set[str]:
    tree = ast.parse(path.read_text())
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(a.name.split(".")[0] for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module.split(".")[0])
    return names


def test_only_the_blender_package_imports_bpy():
    offenders = []
    for path in PACKAGE.rglob("*.py"):
        if "blender" in path.relative_to(PACKAGE).parts:
            continue
        if imported_modules(path) & {"bpy", "bpy_extras", "mathutils", "bmesh"}:
            offenders.append(str(path.relative_to(ROOT)))
    assert offenders == []


def test_addon_entry_only_registers():
    source = (ROOT / "__init__.py").read_text()
    tree = ast.parse(source)
    functions = {n.name for n in tree.body if isinstance(n, ast.FunctionDef)}
    assert functions == {"register", "unregister"}
    assert "bpy" not in imported_modules(ROOT / "__init__.py")
