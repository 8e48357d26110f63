#!/usr/bin/env bash
# Run the whole suite: ruff, then pytest on every pinned Blender version (4.2 LTS, 4.5 LTS and 5.0 by default;
# IO_MS3D_MDL_BLENDER="5.0" narrows it). Extra arguments go to pytest. Ends with one total line.
# Missing environments are built first, with pip's progress shown; a failed set-up stops here with one message.
# scripts/bootstrap.py does the work, so `py -3.11 scripts\bootstrap.py test` is the same on Windows.
# shellcheck source-path=SCRIPTDIR
source "$(dirname "$0")/_env.sh"
py="$(bootstrap_python)"
exec "$py" "$ROOT/scripts/bootstrap.py" test "$@"
