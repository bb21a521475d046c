"""Live plots of the session (pyqtgraph): posterior acuity map with the trials, acuity at the
estimate against trial number, and the psychometric curve at the current best lens."""

from __future__ import annotations

import os

os.environ.setdefault("PYQTGRAPH_QT_LIB", "PySide6")

import numpy as np  # noqa: E402
import pyqtgraph as pg  # noqa: E402
from PySide6.QtCore import QRectF, Qt  # noqa: E402

from visiontune.app.worker import EstimateView  # noqa: E402

pg.setConfigOptions(antialias=True, background="w", foreground="k")

CORRECT_BRUSH = pg.mkBrush(30, 140, 60, 220)
WRONG_BRUSH = pg.mkBrush(200, 40, 40, 220)
#: logMAR range of the map's colour scale: 20/16 (bright) .. 20/400 (dark).
MAP_LEVELS = (-0.1, 1.3)


def _plot(title: str, xlabel: str, ylabel: str) -> pg.PlotWidget:
    w = pg.PlotWidget()
    w.setFocusPolicy(Qt.FocusPolicy.NoFocus)
    w.setTitle(title, size="10pt")
    w.setLabel("bottom", xlabel)
    w.setLabel("left", ylabel)
    w.setMenuEnabled(False)
    w.setMouseEnabled(x=False, y=False)
    w.hideButtons()
    w.showGrid(x=True, y=True, alpha=0.2)
    return w


class AcuityMapPlot(pg.GraphicsLayoutWidget):
    """Predicted acuity (logMAR) over (sphere, cylinder), trials (green correct, red wrong),
    the estimate (star) and its credible box."""

    def __init__(self, parent=None) -> None:
        super().__init__(parent)
        self.setFocusPolicy(Qt.FocusPolicy.NoFocus)
        self.plot = self.addPlot(title=(
            "Predicted acuity (logMAR) &nbsp; <span style='color:#1e8c3c'>\u25cf</span> correct "
            "<span style='color:#c82828'>\u25cf</span> wrong \u2605 best lens"))
        self.plot.setLabel("bottom", "sphere (D)")
        self.plot.setLabel("left", "cylinder (D)")
        self.plot.setMenuEnabled(False)
        self.plot.setMouseEnabled(x=False, y=False)
        self.plot.hideButtons()
        self.image = pg.ImageItem(axisOrder="row-major")
        self.plot.addItem(self.image)
        cmap = pg.colormap.get("viridis")
        cmap.reverse()  # bright = good acuity (low logMAR)
        self.image.setColorMap(cmap)
        self.image.setLevels(MAP_LEVELS)
        self.colorbar = pg.ColorBarItem(values=MAP_LEVELS, colorMap=cmap, interactive=False, width=12,
                                        label="logMAR")
        self.colorbar.setImageItem(self.image, insert_in=self.plot)
        self.trials = pg.ScatterPlotItem(size=7, pen=pg.mkPen("w", width=0.8))
        self.plot.addItem(self.trials)
        self.region = pg.PlotDataItem(pen=pg.mkPen((255, 255, 255), width=2, style=Qt.PenStyle.DashLine))
        self.plot.addItem(self.region)
        self.best = pg.ScatterPlotItem(size=18, symbol="star", brush=pg.mkBrush(255, 200, 0), pen=pg.mkPen("k"))
        self.plot.addItem(self.best)

    def set_box(self, box) -> None:
        (s0, s1), (c0, c1) = box
        self.plot.setRange(xRange=(s0, s1), yRange=(c0, c1), padding=0.02)

    def update_view(self, view: EstimateView) -> None:
        m = view.acuity_map
        sphere, cylinder = np.asarray(m["sphere_d"]), np.asarray(m["cylinder_d"])
        va = np.asarray(m["va_logmar"])  # rows: sphere
        ds, dc = sphere[1] - sphere[0], cylinder[1] - cylinder[0]
        self.image.setImage(va.T, autoLevels=False)  # rows: cylinder (y), columns: sphere (x)
        self.image.setLevels(MAP_LEVELS)
        self.image.setRect(QRectF(sphere[0] - ds / 2, cylinder[0] - dc / 2, ds * len(sphere), dc * len(cylinder)))
        t = view.trials
        brushes = [CORRECT_BRUSH if c else WRONG_BRUSH for c in t[:, 2]]
        self.trials.setData(t[:, 0], t[:, 1], brush=brushes)
        lens = view.estimate.lens
        self.best.setData([lens.sphere_d], [lens.cylinder_d])
        r = view.estimate.region
        if r is not None:
            (a, b), (c, d) = r.sphere_d, r.cylinder_d
            self.region.setData([a, b, b, a, a], [c, c, d, d, c])


class AcuityCurvePlot(pg.PlotWidget):
    """Predicted acuity (logMAR) through the estimate against the number of answers."""

    def __init__(self, parent=None) -> None:
        super().__init__(parent)
        self.setFocusPolicy(Qt.FocusPolicy.NoFocus)
        self.setTitle("Acuity at the estimate", size="10pt")
        self.setLabel("bottom", "answers")
        self.setLabel("left", "predicted logMAR")
        self.setMenuEnabled(False)
        self.setMouseEnabled(x=False, y=False)
        self.hideButtons()
        self.showGrid(x=True, y=True, alpha=0.2)
        self.curve = self.plot(pen=pg.mkPen((40, 90, 180), width=2), symbol="o", symbolSize=5,
                               symbolBrush=(40, 90, 180))  # fmt: skip

    def update_view(self, view: EstimateView) -> None:
        if view.curve:
            n, va = np.array(view.curve, dtype=float).T
            self.curve.setData(n, va)


class PsychometricPlot(pg.PlotWidget):
    """Model ``P(correct)`` against letter size at the best lens, its band, and (simulated
    sessions) the simulated patient's true curve."""

    def __init__(self, parent=None) -> None:
        super().__init__(parent)
        self.setFocusPolicy(Qt.FocusPolicy.NoFocus)
        self.setTitle("Psychometric curve at the best lens", size="10pt")
        self.setLabel("bottom", "letter size (logMAR)")
        self.setLabel("left", "P(correct)")
        self.setMenuEnabled(False)
        self.setMouseEnabled(x=False, y=False)
        self.hideButtons()
        self.showGrid(x=True, y=True, alpha=0.2)
        self.setYRange(0, 1, padding=0.02)
        self.addLegend(offset=(5, 5), labelTextSize="8pt")
        self.lo = self.plot(pen=pg.mkPen((40, 90, 180, 60)))
        self.hi = self.plot(pen=pg.mkPen((40, 90, 180, 60)))
        self.band = pg.FillBetweenItem(self.lo, self.hi, brush=pg.mkBrush(40, 90, 180, 50))
        self.addItem(self.band)
        self.mean = self.plot(pen=pg.mkPen((40, 90, 180), width=2), name="model")
        self.truth = self.plot(pen=pg.mkPen((200, 90, 0), width=2, style=Qt.PenStyle.DashLine), name="simulated patient")

    def update_view(self, view: EstimateView, true_p: np.ndarray | None = None) -> None:
        s = view.psychometric_s
        self.lo.setData(s, view.psychometric_lo)
        self.hi.setData(s, view.psychometric_hi)
        self.mean.setData(s, view.psychometric_p)
        if true_p is not None:
            self.truth.setData(s, true_p)
        else:
            self.truth.setData([], [])
