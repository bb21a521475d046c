"""Packaging assets, checked without building (fast): the icons are the rendering of our SVG,
the .desktop entry is well formed, the frozen entry script dispatches as documented."""

import configparser
import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
PACKAGING = REPO / "packaging"


def _packaging_script(name: str):
    """The module of ``packaging/<name>.py``, loaded from its file (the folder is not a package)."""
    spec = importlib.util.spec_from_file_location(name, PACKAGING / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


make_icons = _packaging_script("make_icons")
visiontune_entry = _packaging_script("visiontune_entry")


def _qimage(path):
    from PySide6.QtGui import QImage

    image = QImage(str(path))
    assert not image.isNull(), f"{path.name}: Qt cannot read it"
    return image.convertToFormat(QImage.Format.Format_ARGB32)


def _pixels(image):
    import numpy as np

    ptr = image.constBits()
    arr = np.frombuffer(ptr, dtype=np.uint8, count=image.sizeInBytes())
    return (
        arr.reshape(image.height(), image.bytesPerLine())[:, : 4 * image.width()]
        .reshape(image.height(), image.width(), 4)
        .astype(int)
    )


@pytest.mark.parametrize("suffix", ["png", "ico", "icns"])
def test_committed_icons_are_the_rendering_of_the_svg(suffix):
    """Oracle: Qt's SVG renderer run now on visiontune.svg; a stale raster fails."""
    fresh = _pixels(make_icons.render())
    stored = _pixels(_qimage(PACKAGING / f"visiontune.{suffix}"))
    assert stored.shape == (make_icons.SIZE_PX, make_icons.SIZE_PX, 4)
    assert abs(fresh - stored).max() <= 2


def test_icon_draws_a_dark_letter_on_a_light_lens_over_a_transparent_corner():
    px = _pixels(make_icons.render())  # BGRA
    assert px[0, 0, 3] == 0  # rounded corner: transparent
    assert px[86, 118, :3].max() < 40  # top bar of the E (y 78..94)
    assert px[118, 150, :3].min() > 240  # white glass right of the E's middle bar (ends at x 142)
    assert px[128, 128, 3] == 255


def test_desktop_entry_launches_the_app_without_a_terminal():
    entry = configparser.ConfigParser(interpolation=None)
    entry.optionxform = str  # keys are case-sensitive
    entry.read(PACKAGING / "visiontune.desktop", encoding="utf-8")
    d = entry["Desktop Entry"]
    assert d["Type"] == "Application" and d["Name"] == "VisionTune"
    assert d["Exec"].split() == ["visiontune", "app"]
    assert d["Icon"] == "visiontune" and d["Terminal"] == "false"
    assert d["Categories"].endswith(";") and "MedicalSoftware" in d["Categories"].split(";")


def test_entry_script_rejects_modules_it_does_not_serve(capsys):
    assert visiontune_entry.main(["-m", "os"]) == 2
    assert visiontune_entry.main(["-m"]) == 2
    assert "visiontune.display._psychopy_child" in capsys.readouterr().err


def test_entry_script_hands_everything_else_to_the_cli(capsys):
    from visiontune import __version__

    with pytest.raises(SystemExit) as exc:
        visiontune_entry.main(["--version"])
    assert exc.value.code == 0
    assert capsys.readouterr().out.strip() == f"visiontune {__version__}"


def test_entry_script_serves_the_psychopy_child_through_the_renderer(tmp_path):
    """``python visiontune_entry.py -m visiontune.display._psychopy_child`` is the frozen
    child's command line; drive it with the real parent, null backend."""
    from visiontune.display.calibration import Calibration
    from visiontune.display.psychopy_renderer import PsychoPyRenderer

    shim = tmp_path / "entry-python"
    shim.write_text(f'#!/bin/sh\nexec "{sys.executable}" "{PACKAGING / "visiontune_entry.py"}" "$@"\n')
    shim.chmod(0o755)
    cal = Calibration(100.0, 100.0, 400, 400, 4000.0)
    with PsychoPyRenderer(cal, "sloan", python=shim, backend="null", fullscreen=False, timeout_s=20) as r:
        assert r.info["backend"] == "null"
        r.show("K", 0.3)
        r.blank()
    assert r._process.poll() == 0


def test_build_script_is_valid_bash_and_refuses_unknown_arguments():
    subprocess.run(["bash", "-n", str(PACKAGING / "build.sh")], check=True)
    subprocess.run(["bash", "-n", str(PACKAGING / "install-desktop-entry.sh")], check=True)
    out = subprocess.run(["bash", str(PACKAGING / "build.sh"), "--bogus"], capture_output=True, text=True)
    assert out.returncode == 2 and "--bogus" in out.stderr
