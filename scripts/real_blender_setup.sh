#!/usr/bin/env bash
# Set up one real-Blender lane for tests/test_real_blender.py with ../shared/tools/real-blender/setup.sh:
#
#   scripts/real_blender_setup.sh trixie [DIR]   Debian 13's Blender 4.3  (DIR default: ~/.cache/real-blender)
#   scripts/real_blender_setup.sh sid [DIR]      Debian unstable's Blender (5.2 LTS; default ~/.cache/real-blender-sid)
#
# Prints the lane's blender wrapper path last, like setup.sh. Re-running with a finished DIR takes seconds.
#
# Why sid needs more than setup.sh: Debian's blender 5.2.2 package does not depend on the Python modules Blender's own
# scripts import (bl_pkg, the extensions add-on, fails to register on every start without cattrs, requests and
# urllib3), and Debian has no cattrs package at all. The Debian ones are added to the closure; cattrs (pure Python, as
# upstream Blender bundles it) comes from PyPI into the lane's own site-packages. sid moves: a fresh DIR gets whatever
# Blender sid has that day; a kept DIR stays as it was.
set -euo pipefail

SUITE=${1:?usage: real_blender_setup.sh trixie|sid [DIR]}
SHARED="$(cd "$(dirname "$0")/.." && pwd)/../shared/tools/real-blender/setup.sh"
CATTRS=cattrs==26.2.1

case "$SUITE" in
    trixie)
        DIR=${2:-"$HOME/.cache/real-blender"}
        exec env REAL_BLENDER_SUITE=trixie "$SHARED" "$DIR"
        ;;
    sid)
        DIR=${2:-"$HOME/.cache/real-blender-sid"}
        wrapper=$(REAL_BLENDER_SUITE=sid \
            REAL_BLENDER_EXTRA_PKGS="python3-attr python3-typing-extensions python3-requests python3-urllib3 \
python3-zstandard ${REAL_BLENDER_EXTRA_PKGS:-}" "$SHARED" "$DIR" | tail -n 1)
        site=$(cd "$DIR/root/usr/lib/python3/dist-packages" && pwd -P)
        if [ ! -d "$site/cattrs" ]; then
            echo "[real-blender] adding $CATTRS (not packaged by Debian) to $site"
            partial="$DIR/cattrs.partial"
            rm -rf "$partial"
            python3 -m pip install --quiet --disable-pip-version-check --root-user-action=ignore --no-deps --target "$partial" "$CATTRS"
            mv "$partial"/* "$site"/
            rmdir "$partial"
        fi
        out=$("$wrapper" -b --factory-startup --python-expr "import cattrs, requests, bpy" 2>&1) || true
        if echo "$out" | grep -q "Traceback\|Exception in module"; then
            echo "$out" >&2
            echo "[real-blender] error: the sid Blender in $DIR does not start cleanly" >&2
            exit 1
        fi
        echo "$wrapper"
        ;;
    *)
        echo "error: unknown suite '$SUITE' (trixie or sid)" >&2
        exit 2
        ;;
esac
