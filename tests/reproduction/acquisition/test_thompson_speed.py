"""Thompson sampling with the cheaper search (a TS decision within 80 ms): 256 candidates and L-BFGS from the 4 best
separated ones still find the maximum of the sample path (a dense grid of the same sample)."""

import numpy as np
import pytest
from scipy.special import ndtr

from visiontune.errors import InvalidInputError
from visiontune.reproduction.acquisition.binary_policies import Problem, ThompsonX, sample_optimiser
from visiontune.reproduction.acquisition.sample_search import SampleSearch, separated_best
from visiontune.reproduction.gp.kernels import refraction_kernel
from visiontune.reproduction.gp.model import ProbitGP
from visiontune.reproduction.gp.sampling import sample_posterior_functions

PROBLEM = Problem(box=[[-4.0, 4.0], [-4.0, 4.0]], context_box=[[-1.0, 2.0]], reference_context=[0.0])


def _refraction_model(n=80, seed=0):
    """Letter-task answers (26 letters, slope 5 / logMAR, VA = log10(1 + blur^2), docs/design.md)."""
    rng = np.random.default_rng(seed)
    s, lens = rng.uniform(-1, 2, n), rng.uniform(-4, 4, (n, 2))
    dS, dC = lens[:, 0] - 1.5, lens[:, 1] + 1.0
    va = np.log10(1 + 0.5 * (dS**2 + (dS + dC) ** 2))
    p = 1 / 26 + (25 / 26) * ndtr(5 * (s - va))
    return ProbitGP(
        refraction_kernel(1.0, [1.5, 1.5], 4.0), np.column_stack([s, lens]), (rng.random(n) < p).astype(float)
    )


def test_default_search_is_the_cheaper_one():
    assert ThompsonX().optimiser == sample_optimiser() == SampleSearch(256, 4, 0.1)
    with pytest.raises(InvalidInputError, match="n_starts"):
        SampleSearch(n_starts=0)


def test_separated_best_skips_near_duplicates_of_better_candidates():
    U = np.array([[0.5, 0.5], [0.52, 0.5], [0.1, 0.9], [0.9, 0.1], [0.11, 0.88]])
    values = np.array([5.0, 4.9, 3.0, 1.0, 2.9])
    assert separated_best(U, values, 3, 0.1).tolist() == [0, 2, 3]
    assert separated_best(U, values, 3, 0.0).tolist() == [0, 1, 2]


def test_sample_search_finds_the_grid_maximum_of_a_multimodal_function():
    def f(X):
        return np.sin(3 * X[:, 0]) * np.cos(2 * X[:, 1]) + 0.1 * X[:, 0]

    def fg(X):
        return f(X), np.column_stack(
            [3 * np.cos(3 * X[:, 0]) * np.cos(2 * X[:, 1]) + 0.1, -2 * np.sin(3 * X[:, 0]) * np.sin(2 * X[:, 1])]
        )

    x, v = SampleSearch().run(fg, [[-3, 3], [-3, 3]], np.random.default_rng(0), values_only=f)
    g = np.linspace(-3, 3, 601)
    A, B = np.meshgrid(g, g, indexing="ij")
    assert v == pytest.approx(f(x[None])[0]) and v >= f(np.column_stack([A.ravel(), B.ravel()])).max() - 1e-6


@pytest.mark.parametrize("seed", range(3))
def test_thompson_choice_is_the_dense_grid_maximum_of_its_sample(seed):
    model = _refraction_model()
    x = ThompsonX(n_basis=1024).choose_x(model, PROBLEM, np.random.default_rng(seed))
    f = sample_posterior_functions(model, PROBLEM.input_box, 1, np.random.default_rng(seed), n_basis=1024)[0]
    g = np.linspace(-4, 4, 121)
    A, B = np.meshgrid(g, g, indexing="ij")
    values = f(np.column_stack([np.zeros(A.size), A.ravel(), B.ravel()]))
    chosen = f(np.r_[0.0, x][None, :])[0]
    assert chosen >= values.max() - 1e-3 * (values.max() - values.min())
