"""Render ``packaging/visiontune.svg`` to the bundle's raster icons (Qt's SVG renderer).

Writes, next to the SVG:

- ``visiontune.png``  256 x 256 RGBA (Linux ``.desktop`` icon, ``hicolor/256x256``);
- ``visiontune.ico``  256 x 256 (Windows executable icon, PyInstaller ``icon=``);
- ``visiontune.icns`` 256 x 256 (macOS ``.app`` icon, PyInstaller ``BUNDLE(icon=)``).

The rasters are committed so that a build needs no renderer; ``tests/packaging`` checks that
the PNG is still the rendering of the SVG. Run after editing the SVG:

    QT_QPA_PLATFORM=offscreen /work/venv/bin/python packaging/make_icons.py
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
SVG = HERE / "visiontune.svg"
SIZE_PX = 256
FORMATS = {"png": "PNG", "ico": "ICO", "icns": "ICNS"}


def render(svg: Path = SVG, size_px: int = SIZE_PX):
    """The SVG drawn into a ``size_px`` x ``size_px`` ARGB32 ``QImage`` (transparent background)."""
    from PySide6.QtCore import Qt
    from PySide6.QtGui import QGuiApplication, QImage, QPainter
    from PySide6.QtSvg import QSvgRenderer

    _app = QGuiApplication.instance() or QGuiApplication(sys.argv[:1])
    renderer = QSvgRenderer(str(svg))
    if not renderer.isValid():
        raise SystemExit(f"{svg}: not a valid SVG")
    image = QImage(size_px, size_px, QImage.Format.Format_ARGB32)
    image.fill(Qt.GlobalColor.transparent)
    painter = QPainter(image)
    painter.setRenderHint(QPainter.RenderHint.Antialiasing)
    renderer.render(painter)
    painter.end()
    return image


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out-dir", type=Path, default=HERE, help="where to write (default: packaging/)")
    args = parser.parse_args(argv)
    image = render()
    for suffix, fmt in FORMATS.items():
        path = args.out_dir / f"visiontune.{suffix}"
        if not image.save(str(path), fmt):
            raise SystemExit(f"{path}: Qt could not write {fmt} (image format plugin missing?)")
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
