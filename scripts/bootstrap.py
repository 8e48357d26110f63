"""Set up the pinned Blender environments and run the project's commands, the same way on Linux, macOS and Windows.

    python scripts/bootstrap.py import [FILES...] [-o OUT.blend]  # what ./scripts/import.sh does
    python scripts/bootstrap.py test [PYTEST ARGS...]             # what ./scripts/test.sh does
    python scripts/bootstrap.py env [VERSION...]                  # print environment folders, building missing ones
    python scripts/bootstrap.py where                             # print the folder that holds the environments

(On Windows: ``py -3.13 scripts\\bootstrap.py test``.) The shell scripts call this file, so there is one set-up.

Each environment is a virtual environment of the Python its Blender embeds (3.11 for 4.2 to 5.0, 3.13 for 5.1
and later: the line ``# python 3.13`` in its requirements file says so; pyenv's interpreters are found too) with
one Blender as the ``bpy`` wheel from PyPI (about 1 GB), named
``blender-<version>-<first 12 hex of sha256(requirements/blender-<version>.txt + requirements/dev.txt)>`` under
``$IO_MS3D_MDL_VENVS`` (default ``$XDG_CACHE_HOME/io_ms3d_mdl``, ``~/.cache/io_ms3d_mdl``, on Windows
``%LOCALAPPDATA%\\io_ms3d_mdl``). It is built in a ``partial-…`` folder beside its final place and renamed into place
only when pip succeeded and ``import bpy, numpy`` works: a failed or interrupted set-up never leaves a broken
environment behind, and its leftovers are removed by the next run.

Runs under any Python 3.8+ so that it can say clearly which Python is missing.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PINNED = ("4.2", "4.5", "5.0", "5.1", "5.2")
# A requirements file names the Python its Blender embeds (the only one its ``bpy`` wheel is built for) in a line
# ``# python 3.13``; without one, 3.11 (every Blender from 4.2 to 5.0).
PYTHON_LINE = re.compile(r"^#\s*python\s+(3\.\d+)\s*$", re.MULTILINE)
DEFAULT_PYTHON = "3.11"
CHECK = "import bpy, numpy"
# A marker with this text means "built and checked by this script". The first version of the set-up wrote an empty
# marker even when pip had failed, so an empty one is checked once before it is trusted.
MARKER = ".complete"
MARKER_TEXT = "pip install and the import check passed\n"
WINDOWS = os.name == "nt"


class SetupError(Exception):
    """A set-up step failed; the message says what failed and what to do."""


def say(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


# --- where things are ------------------------------------------------------------------------------------------


def venv_home() -> Path:
    """Same rule as ever (existing environments stay valid); Windows has no ~/.cache convention, so LOCALAPPDATA."""
    if os.environ.get("IO_MS3D_MDL_VENVS"):
        return Path(os.environ["IO_MS3D_MDL_VENVS"])
    if os.environ.get("XDG_CACHE_HOME"):
        return Path(os.environ["XDG_CACHE_HOME"]) / "io_ms3d_mdl"
    if WINDOWS and os.environ.get("LOCALAPPDATA"):
        return Path(os.environ["LOCALAPPDATA"]) / "io_ms3d_mdl"
    return Path.home() / ".cache" / "io_ms3d_mdl"


def requirements_dir() -> Path:
    # Tests point this at a throwaway folder so they never download Blender.
    return Path(os.environ.get("IO_MS3D_MDL_REQUIREMENTS") or ROOT / "requirements")


def blender_versions() -> list[str]:
    return os.environ.get("IO_MS3D_MDL_BLENDER", "").split() or list(PINNED)


def requirements_file(version: str) -> Path:
    req = requirements_dir() / f"blender-{version}.txt"
    if not req.is_file():
        raise SetupError(f"no requirements for Blender {version} ({req}); pinned versions: {', '.join(PINNED)}")
    return req


def env_name(version: str) -> str:
    """``blender-<version>-<hash>``: byte for byte what ``cat blender-<version>.txt dev.txt | sha256sum`` gives."""
    data = requirements_file(version).read_bytes() + (requirements_dir() / "dev.txt").read_bytes()
    return f"blender-{version}-{hashlib.sha256(data).hexdigest()[:12]}"


def partial_name(name: str) -> str:
    """``partial-…`` has exactly the length of ``blender-…``, so paths baked into scripts can be rewritten in place."""
    return "partial" + name[len("blender") :]


def env_python(folder: Path) -> Path:
    return folder / "Scripts" / "python.exe" if WINDOWS else folder / "bin" / "python"


def scripts_dir(folder: Path) -> Path:
    return folder / ("Scripts" if WINDOWS else "bin")


# --- small helpers ---------------------------------------------------------------------------------------------


def remove_tree(path: Path) -> None:
    def make_writable(func, failed, _info):  # read-only files (Windows) would stop rmtree
        os.chmod(failed, 0o700)
        func(failed)

    if path.is_symlink() or path.is_file():
        path.unlink()
    elif path.exists():
        shutil.rmtree(path, onerror=make_writable)


def run_step(command: list[str], what: str, hint: str, **kwargs) -> None:
    """Run one set-up command with its output on stderr (stdout carries only results); fail with one message."""
    try:
        code = subprocess.call(command, stdout=sys.stderr.fileno(), **kwargs)
    except OSError as exc:
        raise SetupError(f"{what} could not start ({exc}).\n  {hint}") from None
    if code != 0:
        raise SetupError(f"{what} failed (exit {code}; its messages are above).\n  {hint}")


def python_for(version: str) -> str:
    """The Python minor version a Blender embeds, as its requirements file says (``# python 3.13``)."""
    found = PYTHON_LINE.search(requirements_file(version).read_text(errors="replace"))
    return found.group(1) if found else DEFAULT_PYTHON


def pyenv_pythons(minor: str) -> list[str]:
    """pyenv's installed interpreters of ``minor`` (newest first), found without its shims, which refuse a version
    that is installed but not selected."""
    root = Path(os.environ.get("PYENV_ROOT") or Path.home() / ".pyenv") / "versions"
    if not root.is_dir():
        return []
    found = [p for p in root.glob(f"{minor}.*") if p.name.replace(".", "").isdigit()]
    found.sort(key=lambda p: [int(x) for x in p.name.split(".")], reverse=True)
    return [str(env_python(p) if WINDOWS else p / "bin" / "python3") for p in found]


def find_python(minor: str) -> str:
    """The interpreter for a Blender version: its ``bpy`` wheel exists only for the Python that Blender embeds."""
    if f"{sys.version_info[0]}.{sys.version_info[1]}" == minor:
        return sys.executable
    probe = f"import sys; print(sys.executable) if '%d.%d' % sys.version_info[:2] == '{minor}' else sys.exit(1)"
    candidates = [[f"python{minor}"], ["py", f"-{minor}"], *([p] for p in pyenv_pythons(minor))]
    for command in candidates:
        exe = shutil.which(command[0])
        if exe is None:
            continue
        found = subprocess.run([exe, *command[1:], "-c", probe], capture_output=True, text=True)
        if found.returncode == 0 and found.stdout.strip():
            return found.stdout.strip()
    raise SetupError(
        f"Python {minor} is required (Blender 4.2 to 5.0 embed 3.11, 5.1 and later 3.13) but was not found.\n  "
        f"Install it (python.org, your package manager or `pyenv install {minor}`) so that `python{minor}` "
        f"(Windows: `py -{minor}`) works, then re-run."
    )


@contextlib.contextmanager
def locked(home: Path):
    """One set-up at a time per venv home, so a second run waits instead of removing the first one's partial folder.

    POSIX locks the folder itself (nothing is left behind); Windows cannot, so it locks a ``.lock`` file in it.
    """
    home.mkdir(parents=True, exist_ok=True)
    if WINDOWS:
        import msvcrt

        with open(home / ".lock", "a+b") as handle:
            handle.seek(0)  # lock byte 0 whatever the append position
            waited = False
            while True:
                try:
                    msvcrt.locking(handle.fileno(), msvcrt.LK_NBLCK, 1)
                    break
                except OSError:
                    if not waited:
                        say(f"Waiting for another set-up in {home} to finish...")
                        waited = True
                    time.sleep(1)
            try:
                yield
            finally:
                handle.seek(0)
                msvcrt.locking(handle.fileno(), msvcrt.LK_UNLCK, 1)
        return
    import fcntl

    fd = os.open(home, os.O_RDONLY)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            say(f"Waiting for another set-up in {home} to finish...")
            fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # releases the lock


# --- one environment -------------------------------------------------------------------------------------------


def trusted(folder: Path) -> bool:
    """Built and checked by this script: no need to look further (the fast path of every run)."""
    marker = folder / MARKER
    return env_python(folder).exists() and marker.is_file() and marker.read_text(errors="replace").strip() != ""


def import_check() -> str:
    return os.environ.get("IO_MS3D_MDL_ENV_CHECK", CHECK)  # tests use a tiny local package instead of bpy


def passes_check(python: Path) -> bool:
    quiet = {"stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL}
    return subprocess.call([str(python), "-c", import_check()], **quiet) == 0


def usable(folder: Path, version: str) -> bool:
    """Whether an existing folder can be used as it is; an empty marker from the first set-up is checked once."""
    if trusted(folder):
        return True
    if not (env_python(folder).exists() and (folder / MARKER).is_file()):
        return False
    say(f"Checking the Blender {version} environment made by an earlier set-up ({folder})...")
    if passes_check(env_python(folder)):
        (folder / MARKER).write_text(MARKER_TEXT)
        return True
    say(f"It is broken (`{import_check()}` fails: an earlier set-up marked it complete after pip had failed).")
    return False


def remove_leftovers(home: Path) -> None:
    """Under the lock no set-up is running, so every ``partial-…`` folder is left from an interrupted one."""
    for leftover in sorted(home.glob("partial-*")):
        say(f"Removing {leftover}, left by an interrupted set-up.")
        remove_tree(leftover)


def relocate(partial: Path, final: Path) -> None:
    """venv and pip write the folder's absolute path into activate scripts, script shebangs and Windows launchers.

    The two names have the same length, so the bytes are swapped in place; offsets inside launchers stay right.
    """
    old, new = str(partial).encode(), str(final).encode()
    assert len(old) == len(new), (old, new)
    files = [partial / "pyvenv.cfg", *scripts_dir(partial).iterdir()]
    for path in files:
        if path.is_symlink() or not path.is_file():
            continue
        data = path.read_bytes()
        if old in data:
            path.write_bytes(data.replace(old, new))


def move_into_place(partial: Path, final: Path) -> None:
    for attempt in range(10):  # Windows: a virus scanner may still hold a file of the new folder for a moment
        try:
            os.rename(partial, final)
            return
        except PermissionError:
            if not WINDOWS or attempt == 9:
                raise
            time.sleep(1)


def check_new_environment(python: Path, version: str) -> None:
    """The check's own traceback would bury the cause, so its last line goes into the one message."""
    check = subprocess.run([str(python), "-c", import_check()], capture_output=True, text=True)
    if check.returncode != 0:
        cause = (check.stderr.strip().splitlines() or [f"exit {check.returncode}"])[-1]
        raise SetupError(
            f"The check `{import_check()}` failed in the new Blender {version} environment: {cause}\n"
            "  Nothing was kept; re-run, and if it fails again report it with this message."
        )


def build(version: str, final: Path, position: str) -> None:
    """Build in ``partial-…`` beside ``final``; rename only after pip and the import check passed."""
    req = requirements_file(version)
    partial = final.with_name(partial_name(final.name))
    python = find_python(python_for(version))
    if final.exists():
        say(f"Removing {final}: its set-up never finished.")
        remove_tree(final)
    say(
        f"{position}Building the Blender {version} environment in {final}\n"
        "  first use only: pip installs Blender as the bpy wheel (about 1 GB) and the test tools; "
        "this takes a few minutes"
    )
    index = os.environ.get("PIP_INDEX_URL") or "PyPI, or the index your pip configuration names"
    try:
        run_step(
            [python, "-m", "venv", "--prompt", final.name, str(partial)],
            f"Creating a virtual environment with {python}",
            f"On Debian or Ubuntu, install the python{python_for(version)}-venv package, then re-run.",
        )
        run_step(
            [str(env_python(partial)), "-m", "pip", "install", "--disable-pip-version-check", "-r", str(req)],
            f"pip install -r {req.name} for Blender {version}",
            f"Check that the package index ({index}) is reachable from here (network; proxy settings such as "
            f"HTTPS_PROXY) and that {final.parent} has about 1 GB free, then re-run. Nothing half-built was kept.",
        )
        check_new_environment(env_python(partial), version)
        (partial / MARKER).write_text(MARKER_TEXT)
        relocate(partial, final)
        move_into_place(partial, final)
    finally:
        if partial.exists():
            remove_tree(partial)
    say(f"Blender {version} environment ready: {final}")


def ensure(versions: list[str]) -> dict[str, Path]:
    """The environment folder of each version, building (under the lock) the ones that are missing or unfinished."""
    home = venv_home()
    finals = {version: home / env_name(version) for version in versions}
    pending = [version for version in versions if not trusted(finals[version])]
    if pending:
        with locked(home):
            remove_leftovers(home)
            pending = [version for version in pending if not usable(finals[version], version)]
            if len(pending) > 1:
                say(f"Setting up {len(pending)} Blender environments in {home} (about 1 GB each).")
            for number, version in enumerate(pending, 1):
                build(version, finals[version], f"[{number}/{len(pending)}] " if len(pending) > 1 else "")
    return finals


def rerun_with_bpy(script: str) -> int:
    """Run ``script`` again, with the same arguments, in the 5.0 environment (built on first use): for the scripts
    that need ``bpy`` when started with another Python."""
    try:
        (venv,) = ensure(["5.0"]).values()
    except SetupError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return subprocess.call([str(env_python(venv)), os.path.abspath(script), *sys.argv[1:]])


# --- commands --------------------------------------------------------------------------------------------------


def command_env(args: list[str]) -> int:
    for folder in ensure(args or blender_versions()).values():
        print(folder)
    return 0


def command_where(_args: list[str]) -> int:
    print(venv_home())
    return 0


def command_import(args: list[str]) -> int:
    # Like import.sh: the first of IO_MS3D_MDL_BLENDER if set, else the newest pinned version.
    first = os.environ.get("IO_MS3D_MDL_BLENDER", "").split()[:1] or [PINNED[-1]]
    (folder,) = ensure(first).values()
    return subprocess.call([str(env_python(folder)), str(ROOT / "scripts" / "import_models.py"), *args])


def junit_totals(reports: Path) -> str:
    total = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
    for path in sorted(reports.glob("*.xml")):
        for suite in ET.parse(path).getroot().iter("testsuite"):
            for key in total:
                total[key] += int(suite.get(key, 0))
    failed = total["failures"] + total["errors"]
    passed = total["tests"] - failed - total["skipped"]
    return f"all Blender versions: {passed} passed, {failed} failed, {total['skipped']} skipped"


def lts_ends(versions: list[str]) -> set[str]:
    """The versions that run the ``long`` tests (worst cases held to their time bounds, whole-corpus sweeps): the
    oldest and the newest of a run, the two LTS releases at the ends of what we support (4.2 and 5.2). What they
    test does not depend on the Blender in between, and five full passes would double CI's time."""
    return {versions[0], versions[-1]} if versions else set()


PASS_MINUTES = float(os.environ.get("IO_MS3D_MDL_PASS_MINUTES", "45"))


def run_pass(command: list[str], version: str) -> int:
    """One pytest pass, stopped with everything it started once it runs past ``IO_MS3D_MDL_PASS_MINUTES`` (45):
    a test that hangs fails its pass with a line saying so, and the other Blenders still run."""
    group = {"creationflags": subprocess.CREATE_NEW_PROCESS_GROUP} if WINDOWS else {"start_new_session": True}
    process = subprocess.Popen(command, cwd=ROOT / "tests", **group)
    try:
        return process.wait(timeout=PASS_MINUTES * 60)
    except subprocess.TimeoutExpired:
        stop_group(process)
        print(f"=== pytest on Blender {version} ran past {PASS_MINUTES:g} minutes and was stopped", flush=True)
        return 1
    except BaseException:  # Ctrl-C no longer reaches a child in its own session: take it down here
        stop_group(process)
        raise


def stop_group(process: subprocess.Popen) -> None:
    if WINDOWS:
        process.kill()
    else:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, 9)
    process.wait()


def command_test(args: list[str]) -> int:
    """ruff on the first environment, then pytest on every one; ends with one total line."""
    folders = ensure(blender_versions())
    first = str(env_python(next(iter(folders.values()))))
    status = 0
    print("=== ruff", flush=True)
    for ruff in (["check", str(ROOT)], ["format", "--check", str(ROOT)]):
        status |= subprocess.call([first, "-m", "ruff", *ruff]) != 0
    ends = lts_ends(list(folders))
    with tempfile.TemporaryDirectory() as reports:
        for version, folder in folders.items():
            narrowed = [] if version in ends else ["-m", "not long"]
            note = "" if version in ends else " (without the long tests)"
            print(f"=== pytest on Blender {version}{note}", flush=True)
            # Each pass has its own temporary folder: pytest's clean-up of earlier sessions' folders under the shared
            # /tmp/pytest-of-<user> must not end this pass for what another one left there.
            basetemp = [] if any(a.startswith("--basetemp") for a in args) else [f"--basetemp={reports}/tmp-{version}"]
            pytest = [str(env_python(folder)), "-m", "pytest", f"--junitxml={reports}/{version}.xml", *basetemp]
            status |= run_pass([*pytest, *narrowed, *args], version) != 0
        print(junit_totals(Path(reports)), flush=True)
    return int(status)


COMMANDS = {"env": command_env, "where": command_where, "import": command_import, "test": command_test}


def main(argv: list[str]) -> int:
    if not argv or argv[0] not in COMMANDS:
        print(__doc__, file=sys.stderr)
        return 0 if argv[:1] in (["-h"], ["--help"]) else 2
    try:
        return COMMANDS[argv[0]](argv[1:])
    except SetupError as exc:
        say(f"error: {exc}")
        return 1
    except KeyboardInterrupt:
        say("interrupted; nothing half-built was kept")
        return 130


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
