"""The architecture's promise: readers and the scene layer work with ``bpy`` absent."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

from conftest import EXAMPLE, ROOT
from no_bpy import without_bpy

PACKAGE = ROOT / "io_ms3d_mdl"

READ_WITHOUT_BPY = without_bpy(f"""
sys.path.insert(0, {str(ROOT)!r})
from io_ms3d_mdl.formats.ms3d import read_ms3d
from io_ms3d_mdl.scene.ms3d.convert import ms3d_to_scene
scene = ms3d_to_scene(read_ms3d({str(EXAMPLE)!r}))
print(len(scene.objects), scene.triangle_count, len(scene.materials))
assert not any(m.split('.')[0] == 'bpy' for m in sys.modules)
""")


def test_reader_and_scene_run_with_bpy_blocked():
    out = subprocess.run([sys.executable, "-c", READ_WITHOUT_BPY], capture_output=True, text=True, check=True)
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


# --- no import cycles inside the package ----------------------------------------------------------------------------


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def package_imports(name: str, path: Path, modules: set[str]) -> set[str]:
    """The package's modules that ``path`` imports anywhere (module level or inside a function), except under
    ``if TYPE_CHECKING:``, which never runs. ``from pkg import name`` counts as importing ``pkg.name`` when that
    is a module, else ``pkg``."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()

    def visit(node: ast.AST) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and "TYPE_CHECKING" in ast.unparse(child.test):
                for other in child.orelse:
                    visit_one(other)
            else:
                visit_one(child)

    def visit_one(node: ast.AST) -> None:
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names if alias.name in modules)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                base = ".".join(parts[: len(parts) - node.level + 1] + ([node.module] if node.module else []))
            for alias in node.names:
                target = f"{base}.{alias.name}"
                found.add(target if target in modules else base)
        visit(node)

    visit(ast.parse(path.read_text()))
    return (found & modules) - {name}


def import_cycles(graph: dict[str, set[str]]) -> list[set[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles = []
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, targets = work[-1]
            target = next(targets, None)
            if target is not None:
                if target not in index:
                    index[target] = low[target] = len(index)
                    stack.append(target)
                    on_stack.add(target)
                    work.append((target, iter(sorted(graph[target]))))
                elif target in on_stack:
                    low[node] = min(low[node], index[target])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = set()
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.add(member)
                    if member == node:
                        break
                if len(component) > 1:
                    cycles.append(component)
    return cycles


def test_no_import_cycles_inside_the_package():
    paths = {module_name(path): path for path in PACKAGE.rglob("*.py")}
    graph = {name: package_imports(name, path, set(paths)) for name, path in paths.items()}
    assert graph["io_ms3d_mdl.formats.source.animation"] >= {"io_ms3d_mdl.formats.source.animation53"}  # sanity
    cycles = import_cycles(graph)
    assert [sorted(cycle) for cycle in cycles] == []


def test_the_cycle_finder_sees_function_level_imports(tmp_path):
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert import_cycles(graph) == [{"a", "b", "c"}]
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "one.py").write_text("def f():\n    from .two import g\n")
    (package / "two.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from . import one\n")
    modules = {"pkg.one", "pkg.two"}
    assert package_imports("pkg.one", package / "one.py", modules) == {"pkg.two"}
    assert package_imports("pkg.two", package / "two.py", modules) == set()


def test_nothing_branches_on_a_blender_version_number():
    """What a Blender offers is found by a feature test (``hasattr``, an RNA parameter, a probe), never by comparing
    ``bpy.app.version``: a version number says nothing about a build that backports or drops a feature."""
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Attribute) and node.attr == "version" and ast.unparse(node.value) == "bpy.app":
                found.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert not found, found
