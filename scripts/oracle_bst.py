"""Set up Blender Source Tools (GPL) as the independent reader of what the decompiler writes.

    python scripts/oracle_bst.py                         # clone github.com/Artfunkel/BlenderSourceTools (network)
    python scripts/oracle_bst.py /path/to/BlenderSourceTools   # or any local clone or bare repository
    python scripts/oracle_bst.py where                   # print where the tests look for it

It is never part of the project: the add-on folder ``io_scene_valvesource`` at one pinned commit is extracted into
the per-user cache, ``<cache>/oracles/BlenderSourceTools-<commit>/`` (``<cache>`` is ``$IO_MS3D_MDL_VENVS``,
``$XDG_CACHE_HOME/io_ms3d_mdl`` or ``~/.cache/io_ms3d_mdl``, as for the Blender environments), where
``tests/bst_oracle.py`` finds it (or wherever ``IO_MS3D_MDL_BST`` points). Extracted into a partial folder, renamed
into place once whole; an existing copy is kept.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

URL = "https://github.com/Artfunkel/BlenderSourceTools.git"
COMMIT = "3d5fd9bf681547d86fa369715a0e8dd6013edcb7"  # 3.4.3 with Blender 5.0 fixes
ADDON = "io_scene_valvesource"


def cache_home() -> Path:
    if os.environ.get("IO_MS3D_MDL_VENVS"):
        return Path(os.environ["IO_MS3D_MDL_VENVS"])
    if os.environ.get("XDG_CACHE_HOME"):
        return Path(os.environ["XDG_CACHE_HOME"]) / "io_ms3d_mdl"
    if sys.platform == "win32" and os.environ.get("LOCALAPPDATA"):
        return Path(os.environ["LOCALAPPDATA"]) / "io_ms3d_mdl"
    return Path.home() / ".cache" / "io_ms3d_mdl"


def target(commit: str = COMMIT) -> Path:
    return cache_home() / "oracles" / f"BlenderSourceTools-{commit[:12]}"


def git_dir(source: str, scratch: Path) -> list[str]:
    """``git`` arguments reaching a repository holding the commit: a local work tree, a bare repository, or a clone
    of a URL into ``scratch`` (only the history, blobs fetched as needed)."""
    local = Path(source)
    if local.is_dir():
        if (local / ".git").exists():
            return ["git", "-C", str(local)]
        if (local / "objects").is_dir() and (local / "HEAD").is_file():
            return ["git", f"--git-dir={local}"]
        raise SystemExit(f"{source} is neither a git work tree nor a bare repository")
    clone = scratch / "clone.git"
    subprocess.run(["git", "clone", "--quiet", "--bare", "--filter=blob:none", source, str(clone)], check=True)
    return ["git", f"--git-dir={clone}"]


def install(source: str, commit: str) -> Path:
    final = target(commit)
    if (final / ADDON / "__init__.py").is_file():
        print(f"already set up: {final}")
        return final
    final.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=final.parent, prefix="partial-") as scratch_name:
        scratch = Path(scratch_name)
        git = git_dir(source, scratch)
        archive = scratch / "addon.tar"
        with archive.open("wb") as out:
            subprocess.run([*git, "archive", "--format=tar", commit, ADDON], check=True, stdout=out)
        staged = scratch / "staged"
        with tarfile.open(archive) as tar:
            members = [m for m in tar.getmembers() if m.isfile() or m.isdir()]  # no links out of the folder
            for member in members:
                if Path(member.name).is_absolute() or ".." in Path(member.name).parts:
                    raise SystemExit(f"refusing the archive member {member.name}")
            tar.extractall(staged, members=members)
        if not (staged / ADDON / "__init__.py").is_file():
            raise SystemExit(f"commit {commit} has no {ADDON}/__init__.py")
        staged.rename(final) if not final.exists() else shutil.rmtree(staged)
    print(f"Blender Source Tools {commit[:12]} set up in {final}")
    return final


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("source", nargs="?", default=URL, help="git URL, local clone or bare repository, or 'where'")
    parser.add_argument("--commit", default=COMMIT, help=f"the commit to extract (default {COMMIT[:12]})")
    args = parser.parse_args(argv)
    if args.source == "where":
        print(target(args.commit))
        return 0
    try:
        install(args.source, args.commit)
    except subprocess.CalledProcessError as exc:
        print(f"error: {' '.join(map(str, exc.cmd[:4]))} failed (exit {exc.returncode})", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
