"""Live plots of the session (pyqtgraph): posterior acuity map with the trials, acuity at the
estimate against trial number, and the psychometric curve at the current best lens.

Drawing an estimate must cost the GUI thread a few milliseconds at most. So:
every item is created once and updated in place from a ready-to-draw
:class:`~visiontune.app.logic.plot_frames.ViewFrame` (built in the engine process); no plot
auto-ranges (each range is set explicitly, and only when it changes, so the axes are not
regenerated on every answer); and every axis is cached as a pixmap
(``DeviceCoordinateCache``): with the grid on, an axis covers its whole plot and was
repainted, tick labels and all, whenever a curve changed (measured: 2/3 of all paint time).
"""

from __future__ import annotations

import os

os.environ.setdefault("PYQTGRAPH_QT_LIB", "PySide6")

import pyqtgraph as pg
from PySide6.QtCore import QRectF, Qt
from PySide6.QtWidgets import QGraphicsItem

from visiontune.app.logic.plot_frames import ViewFrame
from visiontune.report.map_marks import LETTER_MISSED_RGB, LETTER_READ_RGB, SLIDER_RGB

pg.setConfigOptions(antialias=True, background="w", foreground="k")

CORRECT_BRUSH = pg.mkBrush(*LETTER_READ_RGB, 220)
WRONG_BRUSH = pg.mkBrush(*LETTER_MISSED_RGB, 220)
#: logMAR range of the map's colour scale: 20/16 (bright) .. 20/400 (dark).
MAP_LEVELS = (-0.1, 1.3)
#: Acuity-curve x range before the first estimate (answers).
INITIAL_CURVE_RANGE = (0.0, 10.0)


def cache_axes(plot_item: pg.PlotItem) -> None:
    """Render each axis of ``plot_item`` once into a pixmap, re-rendered only when its range,
    size or labels change (the axis calls ``update()`` then)."""
    for name in ("left", "bottom", "right", "top"):
        axis = plot_item.getAxis(name)
        axis.setCacheMode(QGraphicsItem.CacheMode.DeviceCoordinateCache)


def _fixed_plot(plot_item: pg.PlotItem, xlabel: str, ylabel: str) -> None:
    for name in ("left", "bottom"):
        # values in their own units: pyqtgraph's SI prefixes turned "predicted logMAR" into
        # "predicted logMAR (x0.001)" when the range was small
        plot_item.getAxis(name).enableAutoSIPrefix(False)
    plot_item.setLabel("bottom", xlabel)
    plot_item.setLabel("left", ylabel)
    plot_item.setMenuEnabled(False)
    plot_item.setMouseEnabled(x=False, y=False)
    plot_item.hideButtons()
    plot_item.disableAutoRange()
    cache_axes(plot_item)


class _Ranges:
    """Sets a view's ranges only when they change (``setRange`` regenerates both axes)."""

    def __init__(self, plot_item: pg.PlotItem, padding: float) -> None:
        self._plot = plot_item
        self._padding = padding
        self.x: tuple[float, float] | None = None
        self.y: tuple[float, float] | None = None

    def set(self, x=None, y=None) -> None:
        x = None if x is None else (float(x[0]), float(x[1]))
        y = None if y is None else (float(y[0]), float(y[1]))
        kwargs = {}
        if x is not None and x != self.x:
            kwargs["xRange"], self.x = x, x
        if y is not None and y != self.y:
            kwargs["yRange"], self.y = y, y
        if kwargs:
            self._plot.setRange(padding=self._padding, **kwargs)


#: The map's title: what it shows, and its legend.
MAP_TITLE = (
    "Predicted acuity (logMAR) &nbsp; "
    f"<span style='color:#{bytes(LETTER_READ_RGB).hex()}'>\u25cf</span> correct "
    f"<span style='color:#{bytes(LETTER_MISSED_RGB).hex()}'>\u25cf</span> wrong "
    f"<span style='color:#{bytes(SLIDER_RGB).hex()}'>\u25c6</span> slider "
    "\u2605 best lens"
)


def map_cylinder_label(axis_deg: float | None) -> str:
    """The map's cylinder axis label, with the cylinder axis (degrees) the map is drawn at."""
    return "cylinder (D)" if axis_deg is None else f"cylinder (D) at axis {round(axis_deg) % 180 or 180}\u00b0"


class AcuityMapPlot(pg.GraphicsLayoutWidget):
    """Predicted acuity (logMAR) over (sphere, cylinder) at one cylinder axis (the map's own
    extents and axis: around the estimate at its axis for the optics model, the protocol's box
    at its fixed axis for the GP), letter answers (green read, red missed) and slider answers (the
    lens chosen a blue diamond, the knob's path a thin blue line) in the map's plane, as on the
    PDF's map (:mod:`visiontune.report.map_marks`), the estimate (star) and its credible box."""

    def __init__(self, parent=None) -> None:
        super().__init__(parent)
        self.setFocusPolicy(Qt.FocusPolicy.NoFocus)
        self.axis_deg: float | None = None
        self.plot = self.addPlot()
        self.plot.setTitle(MAP_TITLE, size="10pt")
        _fixed_plot(self.plot, "sphere (D)", map_cylinder_label(None))
        self.ranges = _Ranges(self.plot, padding=0.02)
        self.image = pg.ImageItem(axisOrder="row-major")
        self.plot.addItem(self.image)
        # A colormap of our own: ``get`` returns a shared cached instance, and reversing that
        # one flipped the map of every other plot (every second window showed it upside down).
        cmap = pg.colormap.get("viridis", skipCache=True)
        cmap.reverse()  # bright = good acuity (low logMAR)
        self.image.setColorMap(cmap)
        self.image.setLevels(MAP_LEVELS)
        self.colorbar = pg.ColorBarItem(values=MAP_LEVELS, colorMap=cmap, interactive=False, width=12, label="logMAR")
        self.colorbar.setImageItem(self.image, insert_in=self.plot)
        self.colorbar.axis.setCacheMode(QGraphicsItem.CacheMode.DeviceCoordinateCache)
        outline = pg.mkPen("w", width=0.8)
        self.correct = pg.ScatterPlotItem(size=9, pen=outline, brush=CORRECT_BRUSH)
        self.wrong = pg.ScatterPlotItem(size=9, pen=outline, brush=WRONG_BRUSH)
        self.slider_paths = pg.PlotCurveItem(pen=pg.mkPen(SLIDER_RGB, width=1), connect="finite")
        self.sliders = pg.ScatterPlotItem(size=11, symbol="d", pen=outline, brush=pg.mkBrush(*SLIDER_RGB, 230))
        for item in (self.correct, self.wrong, self.slider_paths, self.sliders):
            self.plot.addItem(item)
        self.region = pg.PlotCurveItem(pen=pg.mkPen((255, 255, 255), width=2, style=Qt.PenStyle.DashLine))
        self.plot.addItem(self.region)
        self.best = pg.ScatterPlotItem(size=18, symbol="star", brush=pg.mkBrush(255, 200, 0), pen=pg.mkPen("k"))
        self.plot.addItem(self.best)
        self._rect: tuple[float, float, float, float] | None = None

    def update_frame(self, frame: ViewFrame) -> None:
        self.image.setImage(frame.map_image, autoLevels=False, levels=MAP_LEVELS)
        if frame.map_rect != self._rect:
            self._rect = frame.map_rect
            x, y, w, h = frame.map_rect
            self.image.setRect(QRectF(x, y, w, h))
            self.ranges.set(x=(x, x + w), y=(y, y + h))
        axis = None if frame.map_axis_deg is None else round(frame.map_axis_deg) % 180 or 180
        if axis != self.axis_deg:
            self.axis_deg = axis
            self.plot.setLabel("left", map_cylinder_label(axis))
        self.correct.setData(x=frame.correct_xy[0], y=frame.correct_xy[1])
        self.wrong.setData(x=frame.wrong_xy[0], y=frame.wrong_xy[1])
        self.slider_paths.setData(frame.slider_path_xy[0], frame.slider_path_xy[1])
        self.sliders.setData(x=frame.slider_xy[0], y=frame.slider_xy[1])
        self.best.setData(x=frame.best_lens[:1], y=frame.best_lens[1:])
        self.region.setData(frame.region_xy[0], frame.region_xy[1])


class AcuityCurvePlot(pg.PlotWidget):
    """Predicted acuity (logMAR) through the estimate against the number of answers."""

    def __init__(self, parent=None) -> None:
        super().__init__(parent)
        self.setFocusPolicy(Qt.FocusPolicy.NoFocus)
        self.setTitle("Acuity at the estimate", size="10pt")
        _fixed_plot(self.getPlotItem(), "answers (count)", "predicted acuity (logMAR)")
        self.showGrid(x=True, y=True, alpha=0.2)
        self.ranges = _Ranges(self.getPlotItem(), padding=0.02)
        self.ranges.set(x=INITIAL_CURVE_RANGE, y=(0.0, 1.0))
        self.curve = self.plot(
            pen=pg.mkPen((40, 90, 180), width=2), symbol="o", symbolSize=5, symbolBrush=(40, 90, 180)
        )

    def update_frame(self, frame: ViewFrame) -> None:
        self.ranges.set(x=frame.curve_x_range, y=frame.curve_y_range)
        self.curve.setData(frame.curve_xy[0], frame.curve_xy[1])


class PsychometricPlot(pg.PlotWidget):
    """Model ``P(correct)`` against letter size at the best lens, its band, and (simulated
    sessions) the simulated patient's true curve."""

    def __init__(self, parent=None) -> None:
        super().__init__(parent)
        self.setFocusPolicy(Qt.FocusPolicy.NoFocus)
        self.setTitle("Psychometric curve at the best lens", size="10pt")
        _fixed_plot(self.getPlotItem(), "letter size (logMAR)", "P(correct)")
        self.showGrid(x=True, y=True, alpha=0.2)
        self.ranges = _Ranges(self.getPlotItem(), padding=0.05)  # room for the end tick labels
        self.ranges.set(x=(-1.0, 2.0), y=(0.0, 1.0))
        self.legend = self.addLegend(offset=(5, 5), labelTextSize="8pt")
        # The band: one closed polygon (lower edge forwards, upper edge back), filled.
        self.band = pg.PlotCurveItem(
            pen=pg.mkPen((40, 90, 180, 60)), brush=pg.mkBrush(40, 90, 180, 50), fillLevel="enclosed"
        )
        self.addItem(self.band)
        self.mean = self.plot(pen=pg.mkPen((40, 90, 180), width=2), name="model")
        self.truth = self.plot(
            pen=pg.mkPen((200, 90, 0), width=2, style=Qt.PenStyle.DashLine), name="simulated patient"
        )

    def update_frame(self, frame: ViewFrame) -> None:
        s = frame.psychometric_s
        self.ranges.set(x=(s[0], s[-1]))
        self.band.setData(frame.band_xy[0], frame.band_xy[1])
        self.mean.setData(s, frame.psychometric_p)
        if frame.true_p is not None:
            self.truth.setData(s, frame.true_p)
        else:
            self.truth.setData([], [])
        self.show_truth_in_legend(frame.true_p is not None)

    def show_truth_in_legend(self, shown: bool) -> None:
        """The legend names the simulated patient's curve only in a simulated session (its row hidden,
        not removed, so that the plot is not laid out again)."""
        for sample, label in self.legend.items:
            if sample.item is self.truth:
                sample.setVisible(shown)
                label.setVisible(shown)
