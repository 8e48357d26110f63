"""Build the installable extension zip (``dist/io_ms3d_mdl-<version>.zip``) with Blender's own extension tool.

Blender's ``blender_ext.py`` (the code behind ``blender --command extension build``) ships inside the ``bpy``
wheel, so this needs a Python with ``bpy``; run without one, it re-runs itself in the project's 5.0 environment.

    python scripts/build_extension.py [--output-dir DIR]   # prints the zip path
"""

from __future__ import annotations

import argparse
import glob
import importlib.util
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def blender_ext_script() -> str:
    spec = importlib.util.find_spec("bpy")
    if spec is None or not spec.submodule_search_locations:
        raise LookupError("bpy is not installed in this Python")
    base = next(iter(spec.submodule_search_locations))
    found = glob.glob(os.path.join(base, "*", "scripts", "addons_core", "bl_pkg", "cli", "blender_ext.py"))
    if not found:
        raise LookupError(f"blender_ext.py not found under {base}")
    return found[0]


def build(output_dir: str) -> str:
    os.makedirs(output_dir, exist_ok=True)
    tool = blender_ext_script()
    subprocess.run([sys.executable, tool, "validate", ROOT], check=True, cwd=ROOT)
    subprocess.run(
        [sys.executable, tool, "build", "--source-dir", ROOT, "--output-dir", output_dir], check=True, cwd=ROOT
    )
    zips = sorted(glob.glob(os.path.join(output_dir, "io_ms3d_mdl-*.zip")), key=os.path.getmtime)
    return zips[-1]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--output-dir", default=os.path.join(ROOT, "dist"))
    args = parser.parse_args()
    if importlib.util.find_spec("bpy") is None:
        venv = subprocess.run(
            ["bash", "-c", 'source "$0/scripts/_env.sh" && venv_for 5.0', ROOT],
            check=True,
            capture_output=True,
            text=True,
        ).stdout.strip()
        return subprocess.call([os.path.join(venv, "bin", "python"), __file__, *sys.argv[1:]])
    try:
        print(build(os.path.abspath(args.output_dir)))
    except subprocess.CalledProcessError as exc:
        print(f"error: Blender's extension tool failed (exit {exc.returncode}); see its message above", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
