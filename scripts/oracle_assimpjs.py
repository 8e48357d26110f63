"""Set up Assimp itself as a second reader of MilkShape files, for what the Python binding (assimp_py) does not
expose: the animation's channels and their key counts.

    python scripts/oracle_assimpjs.py          # npm install assimpjs (Assimp built to WebAssembly; needs Node, npm)
    python scripts/oracle_assimpjs.py where    # print where the tests look for it

It is never part of the project: the pinned ``assimpjs`` package (MIT; Assimp's BSD licence inside) goes into the
per-user cache, ``<cache>/oracles/assimpjs-<version>/`` (the cache of ``scripts/oracle_bst.py``), where
``tests/assimp_js.py`` finds it. Installed into a partial folder, renamed into place once whole; an existing copy
is kept.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from oracle_bst import cache_home

VERSION = "0.0.10"  # kovacsv/assimpjs: Assimp 5.x, MS3D loader included


def target(version: str = VERSION) -> Path:
    return cache_home() / "oracles" / f"assimpjs-{version}"


def module(folder: Path) -> Path:
    """The package folder ``require('assimpjs')`` finds with ``NODE_PATH`` at ``folder / 'node_modules'``."""
    return folder / "node_modules" / "assimpjs"


def installed(folder: Path) -> bool:
    return (module(folder) / "dist" / "assimpjs.wasm").is_file()


def install(version: str = VERSION) -> Path:
    final = target(version)
    if installed(final):
        return final
    npm = shutil.which("npm")
    if npm is None:
        raise SystemExit("npm is not on PATH: install Node.js (it brings npm), then run this again")
    final.parent.mkdir(parents=True, exist_ok=True)
    partial = Path(tempfile.mkdtemp(prefix=f".{final.name}.", suffix=".partial", dir=final.parent))
    try:
        subprocess.run(
            [npm, "install", "--no-audit", "--no-fund", "--no-save", "--prefix", str(partial), f"assimpjs@{version}"],
            check=True,
            stdout=subprocess.DEVNULL,
        )
        if not installed(partial):
            raise SystemExit(f"npm installed no assimpjs {version} into {partial}")
        partial.rename(final)
    finally:
        shutil.rmtree(partial, ignore_errors=True)
    return final


def main(argv: list[str]) -> int:
    if argv[:1] == ["where"]:
        print(target())
        return 0
    print(install())
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
