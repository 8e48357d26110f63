# Sourced by the other scripts: creates (once) and activates a pinned virtual environment per Blender version.
# Environments live in a per-user cache keyed by the hash of the requirement files, so a fresh clone (or CI)
# reuses one that matches and a changed pin builds a new one.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV_HOME="${IO_MS3D_MDL_VENVS:-${XDG_CACHE_HOME:-$HOME/.cache}/io_ms3d_mdl}"
BLENDER_VERSIONS=(${IO_MS3D_MDL_BLENDER:-4.2 4.5 5.0})

find_python() {
    for py in python3.11 python3; do
        if command -v "$py" >/dev/null 2>&1 && "$py" -c 'import sys; sys.exit(sys.version_info[:2] != (3, 11))'; then
            echo "$py"; return 0
        fi
    done
    echo "error: Python 3.11 is required (every Blender from 4.2 to 5.0 embeds 3.11)" >&2
    return 1
}

# venv_for VERSION -> prints the environment folder, creating it on first use.
venv_for() {
    local version="$1" req="$ROOT/requirements/blender-$1.txt"
    [ -f "$req" ] || { echo "error: no requirements for Blender $version ($req)" >&2; return 1; }
    local hash
    hash="$(cat "$req" "$ROOT/requirements/dev.txt" | sha256sum | cut -c1-12)"
    local dir="$VENV_HOME/blender-$version-$hash"
    if [ ! -x "$dir/bin/python" ] || [ ! -f "$dir/.complete" ]; then
        echo "Creating the Blender $version environment in $dir (first use; downloads about 1 GB)..." >&2
        rm -rf "$dir"
        mkdir -p "$VENV_HOME"
        "$(find_python)" -m venv "$dir"
        "$dir/bin/python" -m pip install --quiet --disable-pip-version-check -r "$req" >&2
        touch "$dir/.complete"
    fi
    echo "$dir"
}
