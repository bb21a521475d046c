"""Kernel variants of the refraction experiment: the paper's SE in (S, C) stays the default; the
short-lengthscale SE (VisionTune fix) is chosen by name and runs through the one trial loop; the
power-vector SE keeps its shipped hyperparameters but not a run (the loop's GP engine lacks it)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from visiontune.errors import InvalidInputError, VisionTuneError
from visiontune.optics import Prescription
from visiontune.reproduction import gp_refraction_run as R


def test_default_kernel_is_the_papers():
    run = R.run_refraction("UCB-ALD", slope=5.0, trials=6, seed=3)
    assert run.kernel_variant == R.KERNEL_SE
    assert "kernel" not in run.to_json_dict()
    hp = R.refraction_hyperparameters(5.0, 26)
    assert run.hyperparameters == hp
    assert R.kernel_variant_hyperparameters(R.KERNEL_SE, 5.0) == hp


def test_short_lengthscale_run_uses_its_kernel_and_says_so():
    rx = Prescription(1.0, -2.0, 180.0)
    run = R.run_refraction("UCB-ALD", slope=5.0, trials=8, seed=3, kernel=R.KERNEL_SHORT_LENGTHSCALE, true_rx=rx)
    hp = R.kernel_variant_hyperparameters(R.KERNEL_SHORT_LENGTHSCALE, 5.0, 26)
    assert np.allclose(np.exp(run.final_model.kernel.params), [hp.theta, 2.0, 2.0, hp.variance])
    assert run.kernel_variant == R.KERNEL_SHORT_LENGTHSCALE and run.hyperparameters == hp
    doc = run.to_json_dict()
    assert doc["kernel"] == R.KERNEL_SHORT_LENGTHSCALE and doc["hyperparameters"]["lengthscales"] == [2.0, 2.0]
    json.dumps(doc)
    # the first 5 queries are the same random design as with the paper's kernel (same streams),
    # the model-driven ones after it are not
    paper = R.run_refraction("UCB-ALD", slope=5.0, trials=8, seed=3, true_rx=rx)
    assert [r.x for r in run.records[:5]] == [r.x for r in paper.records[:5]]
    assert [r.x for r in run.records[5:]] != [r.x for r in paper.records[5:]]


def test_unknown_kernel_variant_names_the_argument():
    with pytest.raises(InvalidInputError, match="kernel"):
        R.run_refraction("UCB-ALD", slope=5.0, trials=2, seed=0, kernel="matern")
    with pytest.raises(InvalidInputError, match="kernel"):
        R.refraction_kernel_variant("se", slope=5.0)


def test_a_power_vector_run_is_a_clear_error_before_any_trial():
    """The one trial loop's GP engine has the paper's kernel only; the refusal comes before a
    patient is drawn or a trial run (no progress call), and names the kernel."""
    seen = []
    with pytest.raises(VisionTuneError, match="refraction-power-vector-se"):
        R.run_refraction(
            "TS-ALD", slope=5.0, trials=7, seed=1, kernel=R.KERNEL_POWER_VECTOR, progress=lambda *a: seen.append(a)
        )
    assert seen == []
