#!/usr/bin/env bash
# Import models headless and print what was built: ./scripts/import.sh [FILES...] [-o OUT.blend] [OPTIONS]
# With no file, imports the bundled example. --help lists the import options (io-ms3d-mdl convert's).
# First use creates the pinned Blender environment; IO_MS3D_MDL_BLENDER picks its version (default: the newest).
source "$(dirname "$0")/_env.sh"
version="${IO_MS3D_MDL_BLENDER:-5.2}"
venv="$(venv_for "${version%% *}")"
exec "$venv/bin/python" "$ROOT/scripts/import_models.py" "$@"
