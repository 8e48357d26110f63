"""The environment set-up cannot half-fail, and the release's version is stated once.

The set-up tests build real virtual environments, offline: a throwaway requirements folder
(``IO_MS3D_MDL_REQUIREMENTS``) pins a tiny local wheel instead of Blender, and the import check
(``IO_MS3D_MDL_ENV_CHECK``) imports it instead of ``bpy``. Everything else is the code path of a first install.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import pytest
from conftest import ROOT, script_module

VERSION = "9.9"  # not a Blender version: the requirements come from the test's own folder
PROBE = "io_ms3d_mdl_probe"
POSIX = pytest.mark.skipif(os.name == "nt", reason="drives the bash scripts")
# It builds real environments and runs the set-up scripts: the same whatever Blender runs the suite.
pytestmark = pytest.mark.long


def load_bootstrap():
    return script_module("bootstrap")


def write_probe_wheel(folder: Path) -> None:
    """A minimal wheel with a console script, so relocated script shebangs are tested too."""
    dist = f"{PROBE}-1.0.dist-info"
    files = {
        f"{PROBE}/__init__.py": "def main():\n    print('probe ok')\n",
        f"{dist}/METADATA": "Metadata-Version: 2.1\nName: io-ms3d-mdl-probe\nVersion: 1.0\n",
        f"{dist}/WHEEL": "Wheel-Version: 1.0\nGenerator: test_setup\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
        f"{dist}/entry_points.txt": f"[console_scripts]\nio-ms3d-mdl-probe = {PROBE}:main\n",
    }
    record = "".join(f"{path},,\n" for path in [*files, f"{dist}/RECORD"])
    with zipfile.ZipFile(folder / f"{PROBE}-1.0-py3-none-any.whl", "w") as wheel:
        for path, text in files.items():
            wheel.writestr(path, text)
        wheel.writestr(f"{dist}/RECORD", record)


class Setup:
    """A venv home, a requirements folder and the environment variables of a working or a failing install."""

    def __init__(self, tmp: Path) -> None:
        self.home = tmp / "venvs"
        self.requirements = tmp / "requirements"
        self.wheels = tmp / "wheels"
        for folder in (self.requirements, self.wheels):
            folder.mkdir()
        (self.requirements / f"blender-{VERSION}.txt").write_text("-r dev.txt\nio-ms3d-mdl-probe==1.0\n")
        (self.requirements / "dev.txt").write_text("# nothing shared\n")
        write_probe_wheel(self.wheels)
        digest = hashlib.sha256(b"-r dev.txt\nio-ms3d-mdl-probe==1.0\n# nothing shared\n").hexdigest()[:12]
        self.final = self.home / f"blender-{VERSION}-{digest}"
        self.partial = self.home / f"partial-{VERSION}-{digest}"

    def env(self, working: bool = True, **extra: str) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("PIP_", "IO_MS3D_MDL_", "VIRTUAL_ENV"))}
        env.update(
            IO_MS3D_MDL_VENVS=str(self.home),
            IO_MS3D_MDL_REQUIREMENTS=str(self.requirements),
            IO_MS3D_MDL_BLENDER=VERSION,
            IO_MS3D_MDL_ENV_CHECK=f"import {PROBE}",
            PIP_CONFIG_FILE=os.devnull,  # this machine's pip configuration must not change the outcome
            PIP_DISABLE_PIP_VERSION_CHECK="1",
        )
        if working:
            env.update(PIP_NO_INDEX="1", PIP_FIND_LINKS=str(self.wheels))
        else:  # nothing listens on the discard port: what a first install without network sees
            env.update(PIP_INDEX_URL="http://127.0.0.1:9/simple", PIP_RETRIES="0", PIP_TIMEOUT="2")
        env.update(extra)
        return env

    def run(self, command: list[str], env: dict[str, str]) -> subprocess.CompletedProcess:
        return subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)

    def venv_for(self, env: dict[str, str]) -> subprocess.CompletedProcess:
        return self.run(["bash", "-c", f'source scripts/_env.sh && venv_for "{VERSION}"'], env)


@pytest.fixture
def setup(tmp_path):
    return Setup(tmp_path)


def error_lines(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.startswith("error:")]


def assert_one_clear_failure(run: subprocess.CompletedProcess, *words: str) -> None:
    assert run.returncode != 0, run.stderr
    (error,) = error_lines(run.stderr)
    for word in words:
        assert word in run.stderr, run.stderr
    others = run.stderr.replace(error, "")
    for follow_on in ("Traceback", "No module named", "No such file", "command not found"):
        assert follow_on not in others, run.stderr


@POSIX
def test_a_failed_first_install_keeps_nothing_and_the_next_run_recovers(setup):
    failed = setup.run(["scripts/import.sh"], setup.env(working=False))
    assert_one_clear_failure(failed, "pip install", "package index (http://127.0.0.1:9/simple)", "re-run")
    assert failed.stdout == ""  # import.sh stopped at once: no import was attempted
    assert list(setup.home.iterdir()) == []

    # What an interrupted run or the first version of this script could leave: a half-built folder beside the
    # final one and a final one that never got its marker.
    (setup.partial / "bin").mkdir(parents=True)
    (setup.final / "bin").mkdir(parents=True)
    (setup.final / "bin" / "python").symlink_to(sys.executable)

    recovered = setup.venv_for(setup.env())
    assert recovered.returncode == 0, recovered.stderr
    assert recovered.stdout.strip() == str(setup.final)
    assert "Building the Blender 9.9 environment in " + str(setup.final) in recovered.stderr
    assert sorted(p.name for p in setup.home.iterdir()) == [setup.final.name]
    assert (setup.final / ".complete").read_text().strip()

    # Paths baked in by venv and pip name the final folder, not the partial one it was built in.
    tool = setup.run([str(setup.final / "bin" / "io-ms3d-mdl-probe")], setup.env())
    assert tool.stdout == "probe ok\n", tool.stderr
    pip = setup.run([str(setup.final / "bin" / "pip"), "--version"], setup.env())
    assert str(setup.final) in pip.stdout, pip.stderr
    assert "partial-" not in (setup.final / "bin" / "activate").read_text()

    again = setup.venv_for(setup.env(working=False))  # a built environment needs no index
    assert again.returncode == 0, again.stderr
    assert again.stdout.strip() == str(setup.final)
    assert "Building" not in again.stderr


@POSIX
def test_a_failed_import_check_keeps_nothing_and_stops_test_sh(setup):
    run = setup.run(["scripts/test.sh"], setup.env(IO_MS3D_MDL_ENV_CHECK="import bpy, numpy"))
    assert_one_clear_failure(run, "The check `import bpy, numpy` failed", "No module named 'bpy'")
    assert "===" not in run.stdout  # neither ruff nor pytest ran
    assert list(setup.home.iterdir()) == []


@POSIX
def test_an_empty_marker_from_the_first_set_up_is_checked_once(setup):
    """The first set-up wrote an empty ``.complete`` even when pip failed: such a folder is checked, not trusted."""
    (setup.final / "bin").mkdir(parents=True)
    (setup.final / "bin" / "python").write_text(f'#!/bin/sh\nexec "{sys.executable}" "$@"\n')  # no probe inside
    (setup.final / "bin" / "python").chmod(0o755)
    (setup.final / ".complete").touch()

    good = setup.venv_for(setup.env(IO_MS3D_MDL_ENV_CHECK="import pytest"))
    assert good.returncode == 0, good.stderr
    assert "Building" not in good.stderr and (setup.final / "bin" / "python").exists()
    assert (setup.final / ".complete").read_text().strip()  # trusted from now on

    (setup.final / ".complete").write_text("")
    rebuilt = setup.venv_for(setup.env())  # `import io_ms3d_mdl_probe` fails in it: broken, so rebuilt
    assert rebuilt.returncode == 0, rebuilt.stderr
    assert "It is broken" in rebuilt.stderr and "Building" in rebuilt.stderr
    assert setup.run([str(setup.final / "bin" / "io-ms3d-mdl-probe")], setup.env()).stdout == "probe ok\n"


def test_without_python_311_one_message_and_nothing_built(setup, monkeypatch, capsys):
    bootstrap = load_bootstrap()
    for key, value in setup.env().items():
        monkeypatch.setenv(key, value)
    monkeypatch.setenv("PATH", "")
    monkeypatch.setenv("PYENV_ROOT", str(setup.home.parent / "no-pyenv"))
    monkeypatch.setattr(bootstrap.sys, "version_info", (3, 12, 0))
    assert bootstrap.main(["env", VERSION]) == 1
    stderr = capsys.readouterr().err
    assert len(error_lines(stderr)) == 1 and "Python 3.11 is required" in stderr, stderr
    assert not setup.final.exists() and not setup.partial.exists()


def test_a_blender_embedding_python_313_asks_for_313_by_name(setup, monkeypatch, capsys):
    """5.1 and later embed Python 3.13: their requirements say so, and a missing 3.13 is named in one line, with
    where to get it (pyenv's interpreters are looked for too, outside PATH, since its shims refuse an unselected
    version)."""
    bootstrap = load_bootstrap()
    req = setup.requirements / f"blender-{VERSION}.txt"
    req.write_text("# python 3.13\n" + req.read_text())
    for key, value in setup.env().items():
        monkeypatch.setenv(key, value)
    monkeypatch.setenv("PATH", "")
    monkeypatch.setenv("PYENV_ROOT", str(setup.home.parent / "no-pyenv"))
    monkeypatch.setattr(bootstrap.sys, "version_info", (3, 11, 7))
    assert bootstrap.python_for(VERSION) == "3.13"
    assert bootstrap.main(["env", VERSION]) == 1
    stderr = capsys.readouterr().err
    assert len(error_lines(stderr)) == 1 and "Python 3.13 is required" in stderr and "pyenv install 3.13" in stderr
    assert not setup.home.exists() or not any(setup.home.glob("blender-*"))


def test_pinned_versions_name_the_python_their_blender_embeds():
    bootstrap = load_bootstrap()
    wanted = {"4.2": "3.11", "4.5": "3.11", "5.0": "3.11", "5.1": "3.13", "5.2": "3.13"}
    assert {v: bootstrap.python_for(v) for v in bootstrap.PINNED} == wanted


def test_pyenv_interpreters_are_found_newest_first(tmp_path, monkeypatch):
    bootstrap = load_bootstrap()
    for name in ("3.13.0", "3.13.10", "3.13.2", "3.11.7", "3.13.1t", "3.13-dev"):
        (tmp_path / "versions" / name / "bin").mkdir(parents=True)
    monkeypatch.setenv("PYENV_ROOT", str(tmp_path))
    found = [Path(p).parts[-3] for p in bootstrap.pyenv_pythons("3.13")]
    assert found == ["3.13.10", "3.13.2", "3.13.0"]


def test_environment_names_are_those_of_the_first_set_up():
    """Renaming would orphan every environment already built: ``cat blender-X.txt dev.txt | sha256sum``."""
    bootstrap = load_bootstrap()
    for version in bootstrap.PINNED:
        data = (ROOT / "requirements" / f"blender-{version}.txt").read_bytes()
        data += (ROOT / "requirements" / "dev.txt").read_bytes()
        assert bootstrap.env_name(version) == f"blender-{version}-{hashlib.sha256(data).hexdigest()[:12]}"
        assert len(bootstrap.partial_name(bootstrap.env_name(version))) == len(bootstrap.env_name(version))


@pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")
def test_shell_scripts_parse():
    scripts = [*sorted((ROOT / "scripts").glob("*.sh")), ROOT / ".ci" / "run"]
    for script in scripts:
        run = subprocess.run(["bash", "-n", str(script)], capture_output=True, text=True)
        assert run.returncode == 0, f"{script.name}: {run.stderr}"
    if shutil.which("shellcheck"):  # optional: catches unquoted expansions and the like where it is installed
        run = subprocess.run(
            ["shellcheck", "-x", "--severity=warning", *map(str, scripts)], cwd=ROOT, capture_output=True, text=True
        )
        assert run.returncode == 0, run.stdout


# --- one version everywhere ---------------------------------------------------------------------------------------


def released_versions(changelog: str) -> list[str]:
    return re.findall(r"^## \[(\d+\.\d+\.\d+)\]", changelog, flags=re.MULTILINE)


def test_manifest_package_and_changelog_agree_on_the_version():
    manifest = tomllib.loads((ROOT / "blender_manifest.toml").read_text())["version"]
    package = re.search(r'^__version__ = "([^"]+)"', (ROOT / "io_ms3d_mdl" / "__init__.py").read_text(), re.M)[1]
    changelog = (ROOT / "CHANGELOG.md").read_text()
    assert "## [Unreleased]" in changelog
    assert manifest == package == released_versions(changelog)[0]
    # A version the README or a static pyproject version states must be the same one.
    readme = (ROOT / "README.md").read_text()
    stated = re.findall(r"(?i)\bversion\s*:?\s*v?(\d+\.\d+\.\d+)|io_ms3d_mdl-(\d+\.\d+\.\d+)\.zip", readme)
    assert {a or b for a, b in stated} <= {manifest}
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text()).get("project", {})
    assert pyproject.get("version", manifest) == manifest


def test_changelog_dates_every_release():
    changelog = (ROOT / "CHANGELOG.md").read_text()
    for version in released_versions(changelog):
        assert re.search(rf"^## \[{re.escape(version)}\] - \d{{4}}-\d{{2}}-\d{{2}}$", changelog, re.M), version


def test_the_long_tests_run_on_the_oldest_and_newest_blender_of_a_run():
    bootstrap = load_bootstrap()
    assert bootstrap.lts_ends(list(bootstrap.PINNED)) == {"4.2", "5.2"}
    assert bootstrap.lts_ends(["5.0"]) == {"5.0"} and bootstrap.lts_ends([]) == set()
