#!/usr/bin/env bash
# Import models headless: ./scripts/import.sh [FILES...] [-o OUT.blend]
# With no file, imports the bundled example. First use creates the pinned Blender environment.
# IO_MS3D_MDL_BLENDER picks the Blender version (default: the newest pinned one).
source "$(dirname "$0")/_env.sh"
version="${IO_MS3D_MDL_BLENDER:-5.0}"
venv="$(venv_for "${version%% *}")"
exec "$venv/bin/python" "$ROOT/scripts/import_models.py" "$@"
