"""The psychometric plot's legend names the simulated patient's curve only in a simulated session."""

from __future__ import annotations

import numpy as np
from test_plot_frames import frame_for

from visiontune.app.plots import PsychometricPlot


def _truth_row_shown(plot: PsychometricPlot) -> bool:
    (row,) = [(sample, label) for sample, label in plot.legend.items if sample.item is plot.truth]
    return row[0].isVisible() and row[1].isVisible() and row[1].text == "simulated patient"


def test_a_real_patients_session_names_no_simulated_patient_in_the_legend(qtbot):
    plot = PsychometricPlot()
    qtbot.addWidget(plot)
    plot.show()
    trials = np.array([[1.0, -1.0, 1.0]])
    plot.update_frame(frame_for(trials, true_p=None))
    shown_y = plot.truth.getData()[1]
    assert not _truth_row_shown(plot) and (shown_y is None or len(shown_y) == 0)
    plot.update_frame(frame_for(trials, true_p=np.linspace(0.2, 0.8, 7)))
    assert _truth_row_shown(plot)
    plot.update_frame(frame_for(trials, true_p=None))
    assert not _truth_row_shown(plot)
