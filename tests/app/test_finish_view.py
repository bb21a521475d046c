"""The finished-session page names the answers by kind (letters, comparisons, sliders), as the
PDF report and the FHIR note do."""

from __future__ import annotations

import pytest

from visiontune.app.finish_view import FinishView
from visiontune.app.logic.texts import MINUS
from visiontune.app.logic.worker_values import FinishedView

RESULT = {
    "estimate": {"sphere_d": -1.3125, "cylinder_d": -0.5625, "axis_deg": 90.0},
    "rounded": {"sphere_d": -1.25, "cylinder_d": -0.5, "axis_deg": 90.0},
    "credible_interval": {"level": 0.95, "sphere_d": [-1.75, -0.875], "cylinder_d": [-1.0, -0.125]},
    "predicted_va_logmar": 0.12,
    "predicted_va_interval": [0.02, 0.31],
    "trials_used": 51,
    "duration_s": 754.0,
    "stopped_by": "precision",
}


@pytest.mark.parametrize(
    ("counts", "text"),
    [
        ({"comparisons_used": 39, "sliders_used": 8}, "51 answers (4 letters, 39 comparisons, 8 sliders), stopped by"),
        ({"comparisons_used": 0, "sliders_used": 1}, "51 answers (50 letters, 1 slider), stopped by"),
        ({}, "51 answers, stopped by precision"),
    ],
)
def test_the_answers_are_counted_by_kind(qtbot, counts, text):
    view = FinishView()
    qtbot.addWidget(view)
    view.show_result(FinishedView(3, "SIM-0001", "OD", True, {**RESULT, **counts}))
    assert text in view.details.text().replace(MINUS, "-") and view.banner.isVisibleTo(view)
