"""Kernel variants of the refraction experiment: the paper's SE in (S, C) stays the default;
the power-vector SE (VisionTune fix) is chosen by name, with its own shipped hyperparameters."""

from __future__ import annotations

import json

import numpy as np
import pytest

from visiontune.bench import refraction as R
from visiontune.errors import InvalidInputError, VisionTuneError
from visiontune.gp import ProbitGP
from visiontune.gp.transformed import LinearlyTransformed, refraction_power_vector_kernel
from visiontune.optics import Prescription


def test_default_kernel_is_the_papers():
    run = R.run_refraction("UCB-ALD", slope=5.0, trials=6, seed=3)
    assert run.kernel_variant == R.KERNEL_SE
    assert "kernel" not in run.to_json_dict()
    hp = R.refraction_hyperparameters(5.0, 26)
    assert run.hyperparameters == hp
    assert R.kernel_variant_hyperparameters(R.KERNEL_SE, 5.0) == hp


def test_power_vector_run_uses_the_transformed_kernel_and_says_so():
    run = R.run_refraction("UCB-ALD", slope=5.0, trials=8, seed=3, kernel=R.KERNEL_POWER_VECTOR,
                           true_rx=Prescription(1.0, -2.0, 180.0))  # fmt: skip
    kernel = run.final_model.kernel
    assert any(isinstance(k, LinearlyTransformed) for k in kernel.kernels)
    assert run.kernel_variant == R.KERNEL_POWER_VECTOR
    doc = run.to_json_dict()
    assert doc["kernel"] == R.KERNEL_POWER_VECTOR
    json.dumps(doc)
    # the first 5 queries are the same random design as with the paper's kernel (same streams)
    paper = R.run_refraction("UCB-ALD", slope=5.0, trials=5, seed=3, true_rx=Prescription(1.0, -2.0, 180.0))
    assert [r.x for r in run.records[:5]] == [r.x for r in paper.records]


def test_unknown_kernel_variant_names_the_argument():
    with pytest.raises(InvalidInputError, match="kernel"):
        R.run_refraction("UCB-ALD", slope=5.0, trials=2, seed=0, kernel="matern")
    with pytest.raises(InvalidInputError, match="kernel"):
        R.refraction_kernel_variant("se", slope=5.0)


def test_shipped_power_vector_hyperparameters_are_a_maximum_of_the_evidence():
    """Oracle: recompute the Laplace evidence of the stored values on the fitting data (002 §5.2,
    same 1000 answers as the paper's kernel); it matches the stored number, and central finite
    differences of it in every log-hyperparameter are ~0 (a stationary point of the fit)."""
    hp = R.kernel_variant_hyperparameters(R.KERNEL_POWER_VECTOR, 5.0, 26)
    X, y, _ = R.simulate_fit_data(5.0, 26)
    kernel = refraction_power_vector_kernel(hp.theta, np.array(hp.lengthscales), hp.variance)
    lml = ProbitGP(kernel, X, y).log_marginal_likelihood()
    assert lml == pytest.approx(hp.log_marginal_likelihood, abs=1e-6)
    h = 1e-3
    for p in range(kernel.n_params):
        e = np.zeros(kernel.n_params)
        e[p] = h
        up = ProbitGP(kernel.with_params(kernel.params + e), X, y).log_marginal_likelihood()
        down = ProbitGP(kernel.with_params(kernel.params - e), X, y).log_marginal_likelihood()
        assert abs(up - down) / (2 * h) < 0.05, kernel.param_names[p]


def test_thompson_sampling_on_the_power_vector_kernel_is_a_clear_error():
    """sampling.py has feature maps for stationary/linear/sum/product kernels only."""
    with pytest.raises(VisionTuneError, match="kernel"):
        R.run_refraction("TS-ALD", slope=5.0, trials=7, seed=1, kernel=R.KERNEL_POWER_VECTOR)
