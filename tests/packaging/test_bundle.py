"""The desktop bundle, built by ``packaging/build.sh`` from a clean checkout (slow: ~3-5 min).

Source: a ``git clone`` of this repository's HEAD when HEAD holds everything the bundle needs,
else a copy of the working tree's tracked and untracked, not ignored files
(``git ls-files -co --exclude-standard``); ``VISIONTUNE_BUNDLE_SOURCE=clone|worktree`` forces
one. ``VISIONTUNE_BUNDLE_TARBALL=path.tar.gz`` tests an existing build instead (development
shortcut). The tarball is unpacked elsewhere and run from there with a bare environment
(no PYTHONPATH, no virtual environment, HOME and XDG dirs in tmp), as on a clinic's machine.

Oracles: the source tree (version, data files), the same package installed unfrozen in the
build's own venv (same libraries: the bundle must propose exactly the same trials), SQLite
read directly, ``platformdirs`` for the default store location, the real PsychoPy parent.
"""

from __future__ import annotations

import configparser
import json
import os
import re
import shlex
import shutil
import sqlite3
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.protocol_text import small_protocol_text

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]
BUILD_TIMEOUT_S = 1800
RUN_TIMEOUT_S = 300
#: What HEAD must hold for a plain clone to build and pass these tests.
NEEDED_AT_HEAD = (
    "packaging/build.sh",
    "packaging/visiontune.spec",
    "packaging/visiontune_entry.py",
    "visiontune/session/engine.py",
    "visiontune/session/cli.py",
    "visiontune/display/_psychopy_child.py",
)

PROTOCOL = small_protocol_text("bundle-test", purpose="the bundle tests", initial_random_trials=2, max_trials=30)


@dataclass(frozen=True)
class Bundle:
    """An unpacked bundle. ``root``: the folder with ``visiontune`` and ``_internal/``;
    ``checkout``: the source it was built from (``None`` if unknown)."""

    root: Path
    tarball: Path
    checkout: Path | None
    source: str

    @property
    def exe(self) -> Path:
        return self.root / "visiontune"

    @property
    def build_python(self) -> Path | None:
        if self.checkout is None:
            return None
        python = self.checkout / "build" / "venv" / "bin" / "python"
        return python if python.exists() else None


def _git(*args: str) -> str:
    return subprocess.run(["git", "-C", str(REPO), *args], check=True, capture_output=True, text=True).stdout


def _checkout(dest: Path) -> str:
    """Put a clean source tree at ``dest``; return how ("clone <sha>" or "worktree")."""
    mode = os.environ.get("VISIONTUNE_BUNDLE_SOURCE", "auto")
    at_head = set(_git("ls-tree", "-r", "--name-only", "HEAD").splitlines())
    if mode == "clone" or (mode == "auto" and all(p in at_head for p in NEEDED_AT_HEAD)):
        subprocess.run(["git", "clone", "--quiet", "--no-hardlinks", str(REPO), str(dest)], check=True)
        return "clone " + _git("rev-parse", "--short", "HEAD").strip()
    for rel in _git("ls-files", "-co", "--exclude-standard", "-z").split("\0"):
        src = REPO / rel
        if not rel or not (src.exists() or src.is_symlink()):
            continue  # deleted in the working tree
        target = dest / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        if src.is_symlink():
            target.symlink_to(os.readlink(src))
        else:
            shutil.copy2(src, target)
    return "worktree"


@pytest.fixture(scope="module")
def bundle(tmp_path_factory):
    """The unpacked bundle; its checkout, venv and archive (~1.5 GB) are deleted afterwards."""
    base = tmp_path_factory.mktemp("bundle")
    given = os.environ.get("VISIONTUNE_BUNDLE_TARBALL")
    if given:
        tarball = Path(given).resolve()
        checkout, source = tarball.parent.parent, f"given {tarball}"
    else:
        checkout = base / "src"
        source = _checkout(checkout)
        out = subprocess.run(
            ["bash", str(checkout / "packaging" / "build.sh")],
            env={**os.environ, "PYTHON": sys.executable},
            capture_output=True,
            text=True,
            timeout=BUILD_TIMEOUT_S,
        )
        assert out.returncode == 0, f"build.sh failed ({source}):\n{out.stdout[-3000:]}\n{out.stderr[-6000:]}"
        tarball = Path(out.stdout.strip().splitlines()[-1])
    unpacked = base / "unpacked"
    unpacked.mkdir()
    subprocess.run(["tar", "-xzf", str(tarball), "-C", str(unpacked)], check=True)
    (root,) = unpacked.iterdir()
    print(f"bundle built from {source}: {tarball}")
    yield Bundle(root, tarball, checkout if (checkout / "packaging").exists() else None, source)
    shutil.rmtree(base, ignore_errors=True)


def bare_env(tmp: Path, **extra: str) -> dict[str, str]:
    """A clinic machine: no Python on the path, home and XDG dirs under ``tmp``."""
    env = {
        "PATH": "/usr/bin:/bin",
        "HOME": str(tmp / "home"),
        "XDG_DATA_HOME": str(tmp / "xdg-data"),
        "XDG_CONFIG_HOME": str(tmp / "xdg-config"),
        "XDG_CACHE_HOME": str(tmp / "xdg-cache"),
        "LANG": "C.UTF-8",
        "QT_QPA_PLATFORM": "offscreen",
    }
    (tmp / "home").mkdir(exist_ok=True)
    env.update(extra)
    return env


def run(cmd, env, cwd=None, timeout=RUN_TIMEOUT_S) -> subprocess.CompletedProcess:
    out = subprocess.run([str(c) for c in cmd], env=env, cwd=cwd, capture_output=True, text=True, timeout=timeout)
    assert out.returncode == 0, f"{cmd} exited {out.returncode}:\n{out.stdout[-2000:]}\n{out.stderr[-4000:]}"
    for bad in ("Traceback", "Exception ignored", "No such file"):
        assert bad not in out.stderr, f"{cmd}: {bad!r} on stderr:\n{out.stderr[-4000:]}"
    return out


def logged_trials(db: Path) -> list[tuple]:
    """Every trial row, straight from SQLite (not through the package)."""
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as con:
        return con.execute(
            "SELECT session_id, idx, round(s_logmar, 12), round(sphere_d, 12), round(cylinder_d, 12), axis_deg, "
            "letter_shown, letter_named, correct FROM trials ORDER BY session_id, idx"
        ).fetchall()


def snapshot(root: Path) -> dict[str, tuple[int, int]]:
    return {str(p.relative_to(root)): (p.lstat().st_size, p.lstat().st_mtime_ns) for p in root.rglob("*")}


def source_version(bundle: Bundle) -> str:
    init = (bundle.checkout or REPO) / "visiontune" / "__init__.py"
    return re.search(r'__version__ = "([^"]+)"', init.read_text()).group(1)


def session_cmd(protocol: Path, steps: int | None = 4) -> list[str]:
    """A simulated session from a fixed seed; ``steps=None`` runs it to the protocol's budget."""
    return [
        "session",
        "run",
        "--simulate",
        "--protocol",
        str(protocol),
        "--seed",
        "5",
        "--true-rx",
        "1.0 -1.0",
        "--quiet",
        *([] if steps is None else ["--max-steps", str(steps)]),
    ]


# -- the archive -------------------------------------------------------------------------------


def test_archive_holds_the_folder_the_desktop_entry_and_the_icons(bundle):
    version = source_version(bundle)
    arch = subprocess.run(["uname", "-m"], capture_output=True, text=True, check=True).stdout.strip()
    assert bundle.tarball.name == f"visiontune-{version}-linux-{arch}.tar.gz"
    assert bundle.root.name == f"visiontune-{version}-linux-{arch}"
    assert os.access(bundle.exe, os.X_OK)
    for name in ("visiontune.desktop", "visiontune.png", "visiontune.svg", "install-desktop-entry.sh"):
        assert (bundle.root / name).is_file(), name
    internal = bundle.root / "_internal"
    for unwanted in ("tkinter", "PyQt5", "PyQt6", "PySide2", "matplotlib", "psychopy", "pyglet", "pytest"):
        assert not (internal / unwanted).exists(), f"{unwanted} was bundled"


def test_package_data_is_bundled_byte_for_byte(bundle):
    """Oracle: the source tree's visiontune/data."""
    source = (bundle.checkout or REPO) / "visiontune" / "data"
    shipped = bundle.root / "_internal" / "visiontune" / "data"
    files = sorted(p.relative_to(source) for p in source.rglob("*") if p.is_file() and "__pycache__" not in p.parts)
    assert files, "no package data in the source?"
    for rel in files:
        assert (shipped / rel).read_bytes() == (source / rel).read_bytes(), rel
    assert (bundle.root / "_internal" / "scipy" / "stats" / "_sobol_direction_numbers.npz").is_file()


# -- running it --------------------------------------------------------------------------------


def test_version_comes_from_the_bundle_not_from_any_python_on_the_machine(bundle, tmp_path):
    """A decoy ``visiontune`` package on PYTHONPATH and in the working directory is ignored."""
    decoy = tmp_path / "decoy" / "visiontune"
    decoy.mkdir(parents=True)
    (decoy / "__init__.py").write_text('__version__ = "decoy"\nraise SystemExit("decoy imported")\n')
    env = bare_env(tmp_path, PYTHONPATH=str(decoy.parent), PYTHONHOME=str(tmp_path / "nohome"))
    out = run([bundle.exe, "--version"], env, cwd=decoy.parent)
    assert out.stdout.strip() == f"visiontune {source_version(bundle)}"


def test_simulated_trials_land_in_the_store_outside_the_bundle(bundle, tmp_path):
    protocol = tmp_path / "bundle-test.toml"
    protocol.write_text(PROTOCOL)
    data_dir = tmp_path / "data"
    before = snapshot(bundle.root)
    run([bundle.exe, *session_cmd(protocol)], bare_env(tmp_path, VISIONTUNE_DATA_DIR=str(data_dir)))
    db = data_dir / "visiontune.sqlite3"
    trials = logged_trials(db)
    assert [t[:2] for t in trials] == [(1, 0), (1, 1), (1, 2), (1, 3)]
    for _, _, s, sphere, cyl, axis, shown, _, correct in trials:
        assert -1.0 <= s <= 2.0 and -4.0 <= sphere <= 4.0 and -4.0 <= cyl <= 4.0 and axis == 90.0
        assert shown in "CDHKNORSVZ" and correct in (0, 1)
    listing = run([bundle.exe, "sessions", "list", "--db", db], bare_env(tmp_path)).stdout
    assert re.search(r"^\s+1\s+SIM-0001\s+OD\s+open\s+4\s", listing, re.M), listing
    assert snapshot(bundle.root) == before, "the bundle wrote into its own folder"


def test_bundle_proposes_exactly_what_the_unfrozen_package_proposes(bundle, tmp_path):
    """Same code, same numpy/scipy (the build venv): frozen or not, the same trials. This is
    what caught scipy's Sobol tables missing from the bundle."""
    if bundle.build_python is None:
        pytest.skip("no build venv next to the given tarball")
    protocol = tmp_path / "bundle-test.toml"
    protocol.write_text(PROTOCOL)
    frozen, plain = tmp_path / "frozen.sqlite3", tmp_path / "plain.sqlite3"
    run([bundle.exe, *session_cmd(protocol, 6), "--db", frozen], bare_env(tmp_path))
    run(
        [bundle.build_python, "-I", "-m", "visiontune", *session_cmd(protocol, 6), "--db", plain],
        bare_env(tmp_path),
        cwd=tmp_path,
    )
    assert len(logged_trials(frozen)) == 6
    assert logged_trials(frozen) == logged_trials(plain)


def test_reports_of_a_finished_session_match_the_unfrozen_package(bundle, tmp_path):
    """``visiontune report``: CSV, JSON and FHIR byte for byte as the build venv writes them from
    the same log (FHIR needs fhir.resources/pydantic in the bundle); the PDF is a PDF."""
    if bundle.build_python is None:
        pytest.skip("no build venv next to the given tarball")
    protocol = tmp_path / "bundle-test.toml"
    protocol.write_text(PROTOCOL.replace("max_trials = 30", "max_trials = 4"))
    db = tmp_path / "log.sqlite3"
    env = bare_env(tmp_path)
    run([bundle.exe, *session_cmd(protocol, None), "--db", db], env)
    outputs = {}
    for name, cmd in (("frozen", [bundle.exe]), ("plain", [bundle.build_python, "-I", "-m", "visiontune"])):
        out = tmp_path / name
        out.mkdir()
        run(
            [
                *cmd,
                "report",
                "1",
                "--db",
                db,
                "--pdf",
                out / "r.pdf",
                "--csv",
                out / "r.csv",
                "--json",
                out / "r.json",
                "--fhir",
                out / "r.fhir.json",
            ],
            env,
            cwd=tmp_path,
        )
        outputs[name] = out
    for name in ("r.csv", "r.json", "r.fhir.json"):
        assert (outputs["frozen"] / name).read_bytes() == (outputs["plain"] / name).read_bytes(), name
    assert json.loads((outputs["frozen"] / "r.fhir.json").read_text())["resourceType"] == "VisionPrescription"
    pdf = (outputs["frozen"] / "r.pdf").read_bytes()
    assert pdf.startswith(b"%PDF-") and pdf.rstrip().endswith(b"%%EOF")
    assert len(pdf) > 0.5 * (outputs["plain"] / "r.pdf").stat().st_size


def test_default_store_is_the_platformdirs_user_data_dir(bundle, tmp_path, monkeypatch):
    """No VISIONTUNE_DATA_DIR: the trial log goes where platformdirs says, under XDG_DATA_HOME."""
    import platformdirs

    protocol = tmp_path / "bundle-test.toml"
    protocol.write_text(PROTOCOL)
    env = bare_env(tmp_path)
    run([bundle.exe, *session_cmd(protocol, 2)], env)
    monkeypatch.setenv("XDG_DATA_HOME", env["XDG_DATA_HOME"])
    expected = Path(platformdirs.user_data_dir("visiontune", appauthor=False)) / "visiontune.sqlite3"
    assert str(expected).startswith(str(tmp_path))
    assert len(logged_trials(expected)) == 2


def test_psychopy_child_runs_from_the_bundle_and_reports_missing_psychopy(bundle):
    """The real parent (PsychoPyRenderer) drives the bundled child: ``visiontune -m
    visiontune.display._psychopy_child``. PsychoPy is not bundled: asking for it is a clear error."""
    from visiontune.display.calibration import Calibration
    from visiontune.display.psychopy_renderer import PsychoPyRenderer
    from visiontune.display.renderer import RendererError

    cal = Calibration(100.0, 100.0, 400, 400, 4000.0)
    with PsychoPyRenderer(cal, "sloan", python=bundle.exe, backend="null", fullscreen=False, timeout_s=30) as r:
        assert r.info["backend"] == "null"
        r.show("Z", 0.5)
        r.blank()
    assert r._process.poll() == 0
    with pytest.raises(RendererError, match="psychopy"):
        PsychoPyRenderer(cal, "sloan", python=bundle.exe, backend="psychopy", fullscreen=False, timeout_s=30)


def test_desktop_entry_installs_with_an_absolute_exec(bundle, tmp_path):
    env = bare_env(tmp_path)
    run(["bash", bundle.root / "install-desktop-entry.sh"], env)
    data = Path(env["XDG_DATA_HOME"])
    entry = configparser.ConfigParser(interpolation=None)
    entry.optionxform = str
    entry.read(data / "applications" / "visiontune.desktop", encoding="utf-8")
    d = entry["Desktop Entry"]
    exe, *args = shlex.split(d["Exec"])
    assert Path(exe) == bundle.exe and args == ["app"]
    assert Path(d["Icon"]).is_file()
    assert (data / "icons" / "hicolor" / "256x256" / "apps" / "visiontune.png").is_file()
    assert run([exe, "--version"], env).stdout.startswith("visiontune ")
    if shutil.which("desktop-file-validate"):
        run(["desktop-file-validate", data / "applications" / "visiontune.desktop"], env)


def test_bundled_app_runs_offscreen_and_logs_its_trials(bundle, tmp_path):
    """``visiontune app --simulate --exit-after 3`` under QT_QPA_PLATFORM=offscreen: three
    trials in the store, nothing written into the bundle."""
    env = bare_env(tmp_path, VISIONTUNE_DATA_DIR=str(tmp_path / "data"))
    commands = run([bundle.exe, "--help"], env).stdout
    if not re.search(r"^\s+app\s", commands, re.M):
        pytest.skip("the bundled CLI has no `app` command yet (visiontune/cli.py COMMANDS)")
    db = tmp_path / "app.sqlite3"
    before = snapshot(bundle.root)
    run([bundle.exe, "app", "--simulate", "--exit-after", "3", "--db", db], env, timeout=600)
    trials = logged_trials(db)
    assert [t[:2] for t in trials] == [(1, 0), (1, 1), (1, 2)]
    assert snapshot(bundle.root) == before, "the app wrote into its own folder"
