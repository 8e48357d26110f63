#!/usr/bin/env bash
# Run the whole suite: ruff, then pytest on every pinned Blender version (4.2 LTS, 4.5 LTS and 5.0 by default;
# IO_MS3D_MDL_BLENDER="5.0" narrows it). Extra arguments go to pytest. Ends with one total line.
source "$(dirname "$0")/_env.sh"

venvs=()
for version in "${BLENDER_VERSIONS[@]}"; do
    venvs+=("$(venv_for "$version")")
done

status=0
echo "=== ruff"
"${venvs[0]}/bin/ruff" check "$ROOT" && "${venvs[0]}/bin/ruff" format --check "$ROOT" || status=1

reports="$(mktemp -d)"
trap 'rm -rf "$reports"' EXIT
for i in "${!BLENDER_VERSIONS[@]}"; do
    version="${BLENDER_VERSIONS[$i]}"
    echo "=== pytest on Blender $version"
    (cd "$ROOT/tests" && "${venvs[$i]}/bin/python" -m pytest --junitxml="$reports/$version.xml" "$@") || status=1
done

"${venvs[0]}/bin/python" - "$reports" <<'PY'
import glob, sys
import xml.etree.ElementTree as ET
total = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
for path in glob.glob(sys.argv[1] + "/*.xml"):
    for suite in ET.parse(path).getroot().iter("testsuite"):
        for key in total:
            total[key] += int(suite.get(key, 0))
failed = total["failures"] + total["errors"]
passed = total["tests"] - failed - total["skipped"]
print(f"all Blender versions: {passed} passed, {failed} failed, {total['skipped']} skipped")
PY
exit $status
