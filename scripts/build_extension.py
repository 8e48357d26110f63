"""Build the installable extension zip (``dist/io_ms3d_mdl-<version>.zip``) with Blender's own extension tool.

Only files git tracks are shipped: they are copied (as they are in the work tree) into a temporary staging folder
and the tool builds from there, so outputs, experiments and other untracked files in the checkout never end up in
the zip. It must therefore run from a git checkout. The manifest's ``paths_exclude_pattern`` still applies.

Blender's ``blender_ext.py`` (the code behind ``blender --command extension build``) ships inside the ``bpy``
wheel, so this needs a Python with ``bpy``; run without one, it re-runs itself in the project's 5.0 environment.

    python scripts/build_extension.py [--output-dir DIR]   # prints the zip path
"""

from __future__ import annotations

import argparse
import glob
import importlib.util
import os
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PACKAGE_PATHS = ("__init__.py", "io_ms3d_mdl")  # where an untracked file is most likely a forgotten `git add`


class BuildError(Exception):
    """The build cannot go on; the message says why and what to do."""


def blender_ext_script() -> str:
    spec = importlib.util.find_spec("bpy")
    if spec is None or not spec.submodule_search_locations:
        raise LookupError("bpy is not installed in this Python")
    base = next(iter(spec.submodule_search_locations))
    found = glob.glob(os.path.join(base, "*", "scripts", "addons_core", "bl_pkg", "cli", "blender_ext.py"))
    if not found:
        raise LookupError(f"blender_ext.py not found under {base}")
    return found[0]


def git_files(*args: str) -> list[str]:
    """``git ls-files`` under ROOT (paths relative to it); a clear error outside a git checkout."""
    try:
        run = subprocess.run(["git", "-C", ROOT, "ls-files", "-z", *args], capture_output=True, text=True)
    except FileNotFoundError:
        raise BuildError("git is not installed; the zip is built from the files git tracks") from None
    if run.returncode != 0:
        raise BuildError(
            f"{ROOT} is not a git checkout ({run.stderr.strip()}); the zip holds only files git tracks, "
            "so build it from a clone of the repository"
        )
    return [path for path in run.stdout.split("\0") if path]


def tracked_files() -> list[str]:
    files = [path for path in git_files("--cached") if os.path.isfile(os.path.join(ROOT, path))]
    if "blender_manifest.toml" not in files:
        raise BuildError(f"git tracks no blender_manifest.toml under {ROOT}; is this the add-on's checkout?")
    return files


def warn_untracked() -> None:
    """A module someone forgot to `git add` would make the zip fail at import; say so before anyone ships it."""
    for path in git_files("--others", "--exclude-standard", "--", *PACKAGE_PATHS):
        print(f"warning: not shipped, git does not track it (git add it to ship it): {path}", file=sys.stderr)


def stage(files: list[str], staging: str) -> None:
    for path in files:
        target = os.path.join(staging, path)
        os.makedirs(os.path.dirname(target), exist_ok=True)
        shutil.copy2(os.path.join(ROOT, path), target)


def zip_name() -> str:
    import tomllib  # here, not at the top: a Python older than 3.11 must still reach reexec_with_bpy

    with open(os.path.join(ROOT, "blender_manifest.toml"), "rb") as handle:
        manifest = tomllib.load(handle)
    return f"{manifest['id']}-{manifest['version']}.zip"


def build(output_dir: str) -> str:
    files = tracked_files()
    warn_untracked()
    os.makedirs(output_dir, exist_ok=True)
    tool = blender_ext_script()
    output = os.path.join(output_dir, zip_name())
    with tempfile.TemporaryDirectory(prefix="io_ms3d_mdl-stage-") as staging:
        stage(files, staging)
        subprocess.run([sys.executable, tool, "validate", staging], check=True, cwd=staging)
        build_args = ["build", "--source-dir", staging, "--output-filepath", output]
        subprocess.run([sys.executable, tool, *build_args], check=True, cwd=staging)
    return output


def reexec_with_bpy() -> int:
    """Without bpy here, run again in the 5.0 environment (built on first use, like every script's)."""
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import bootstrap

    return bootstrap.rerun_with_bpy(__file__)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--output-dir", default=os.path.join(ROOT, "dist"))
    args = parser.parse_args()
    if importlib.util.find_spec("bpy") is None:
        return reexec_with_bpy()
    try:
        print(build(os.path.abspath(args.output_dir)))
    except BuildError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    except subprocess.CalledProcessError as exc:
        print(f"error: Blender's extension tool failed (exit {exc.returncode}); see its message above", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
