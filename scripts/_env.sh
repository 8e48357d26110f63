# shellcheck shell=bash
# Sourced by the other scripts: creates (once) and finds the pinned virtual environment of each Blender version.
# The work is done by scripts/bootstrap.py (also the Windows entry point), so every platform builds environments
# the same way: in a partial folder renamed into place only after pip and `import bpy, numpy` succeeded, under
# a per-user cache keyed by the hash of the requirement files (a fresh clone or CI reuses a matching one).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# shellcheck disable=SC2034  # both are for the scripts that source this file
VENV_HOME="${IO_MS3D_MDL_VENVS:-${XDG_CACHE_HOME:-$HOME/.cache}/io_ms3d_mdl}"
# shellcheck disable=SC2034
read -r -a BLENDER_VERSIONS <<< "${IO_MS3D_MDL_BLENDER:-4.2 4.5 5.0 5.1 5.2}"

# bootstrap_python -> a Python able to run scripts/bootstrap.py (3.8+); bootstrap.py itself finds 3.11 or 3.13 for the
# environments and says so clearly when it is missing.
bootstrap_python() {
    local py
    for py in python3.11 python3 python; do
        if command -v "$py" >/dev/null 2>&1 && "$py" -c 'import sys; sys.exit(sys.version_info < (3, 8))' 2>/dev/null
        then
            echo "$py"; return 0
        fi
    done
    echo "error: no Python 3 found; install Python 3.11 (Blender 4.2 to 5.0) and 3.13 (Blender 5.1 and later), then re-run" >&2
    return 1
}

# venv_for VERSION... -> prints each environment folder, creating missing ones; on failure prints one message
# and returns non-zero (callers write `dir="$(venv_for 5.0)"`, which stops a `set -e` script at once).
venv_for() {
    local py
    py="$(bootstrap_python)" || return 1
    "$py" "$ROOT/scripts/bootstrap.py" env "$@"
}
