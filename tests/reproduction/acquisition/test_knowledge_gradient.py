"""cBKG: look-ahead refits; no value of information where the answer carries none; the
envelope-theorem gradient against finite differences of refits."""

import numpy as np
import pytest
from acq_helpers import fd_grad, probit_model

from visiontune.errors import ConfigurationError
from visiontune.reproduction.acquisition.binary_policies import Data, Problem
from visiontune.reproduction.acquisition.knowledge_gradient import (
    CBKG,
    knowledge_gradient,
    knowledge_gradient_with_grad,
)
from visiontune.reproduction.acquisition.optimize import sobol_points

PROBLEM = Problem(box=[[-2.0, 2.0]], context_box=[[0.0, 1.0]], reference_context=[0.5])


def test_kg_is_zero_at_s_0_where_an_answer_says_nothing_about_f():
    # k((s,x),(s',x')) = s s' k(x,x'): f(0, x) = 0 surely, so an answer at s = 0 leaves the posterior unchanged
    model = probit_model(1, n=15, seed=1, context=True)
    ref = np.linspace(-2, 2, 41)[:, None]
    Z = np.column_stack([np.zeros(5), np.linspace(-2, 2, 5)])
    assert np.allclose(knowledge_gradient(model, PROBLEM, Z, ref), 0.0, atol=1e-8)
    Z1 = np.column_stack([np.ones(5), np.linspace(-2, 2, 5)])
    kg1 = knowledge_gradient(model, PROBLEM, Z1, ref)
    # not >= 0 everywhere: the Laplace posterior mean is not a martingale over the next answer
    assert np.abs(kg1).max() > 1e-3


def test_kg_matches_the_expected_change_of_the_best_mean_by_explicit_refits():
    # oracle: refit the model from scratch (no warm start) on D + (z, c) for both answers
    from scipy.special import ndtr

    from visiontune.reproduction.gp.model import ProbitGP

    model = probit_model(1, n=12, seed=2, context=True)
    z = np.array([0.8, 0.4])
    ref = np.linspace(-2, 2, 81)[:, None]
    R = np.column_stack([np.full(len(ref), 0.5), ref])
    mu, var = model.predict(z[None])
    p1 = ndtr(mu[0] / np.sqrt(1 + var[0]))
    best = [ProbitGP(model.kernel, np.vstack([model.X, z]), np.append(model.y, c)).predict(R)[0].max() for c in (0, 1)]
    oracle = (1 - p1) * best[0] + p1 * best[1] - model.predict(R)[0].max()
    assert np.isclose(knowledge_gradient(model, PROBLEM, z[None], ref)[0], oracle, atol=1e-7)


def test_envelope_gradient_matches_finite_differences_of_the_refit_kg():
    # oracle: central differences of KG, each value from two look-ahead refits (Fauvel & Chalk (contextual BO), supp. B,
    # S21-S30)
    model = probit_model(1, n=12, seed=2, context=True)
    ref = np.linspace(-2, 2, 41)[:, None]
    Z = np.array([[0.8, 0.4], [0.3, -1.2], [0.95, 1.7]])
    kg, grad = knowledge_gradient_with_grad(model, PROBLEM, Z, ref)
    assert np.allclose(kg, knowledge_gradient(model, PROBLEM, Z, ref), atol=1e-12)
    assert np.allclose(grad, fd_grad(lambda W: knowledge_gradient(model, PROBLEM, W, ref), Z, h=1e-5), atol=1e-6)
    assert np.abs(grad).max() > 1e-3


def test_envelope_gradient_on_a_binary_problem_and_refusal_for_ep():
    problem = Problem(box=[[-2.0, 2.0], [-2.0, 2.0]])
    model = probit_model(2, n=10, seed=4)
    ref = np.random.default_rng(0).uniform(-2, 2, (30, 2))
    Z = np.array([[0.5, -0.7], [-1.5, 1.1]])
    grad = knowledge_gradient_with_grad(model, problem, Z, ref)[1]
    assert np.allclose(grad, fd_grad(lambda W: knowledge_gradient(model, problem, W, ref), Z, h=1e-5), atol=1e-6)
    with pytest.raises(ConfigurationError, match="Laplace"):
        knowledge_gradient_with_grad(probit_model(2, n=10, seed=4, inference="ep"), problem, Z, ref)


def test_cbkg_refinement_never_does_worse_than_the_best_candidate():
    model = probit_model(1, n=10, seed=3, context=True)
    data = Data(model.X, model.y)
    ref_rng = np.random.default_rng(0)
    from visiontune.reproduction.acquisition.solution import solution

    ref = np.vstack([sobol_points(PROBLEM.box, 32, ref_rng), solution(model, PROBLEM, ref_rng)])
    Z = sobol_points(PROBLEM.input_box, 16, ref_rng)
    q = CBKG(n_candidates=16, n_reference=32)(model, PROBLEM, data, np.random.default_rng(0))
    chosen = knowledge_gradient(model, PROBLEM, np.r_[q.s, q.x][None], ref)[0]
    assert chosen >= knowledge_gradient(model, PROBLEM, Z, ref).max() - 1e-12


def test_cbkg_query_is_the_best_candidate():
    model = probit_model(1, n=10, seed=3, context=True)
    q = CBKG(n_candidates=16, n_reference=32, gradient=False)(
        model, PROBLEM, Data(model.X, model.y), np.random.default_rng(0)
    )
    rng = np.random.default_rng(0)  # the same draws as the policy: reference set, solution, candidates
    from visiontune.reproduction.acquisition.solution import solution

    ref = np.vstack([sobol_points(PROBLEM.box, 32, rng), solution(model, PROBLEM, rng)])
    Z = sobol_points(PROBLEM.input_box, 16, rng)
    kg = knowledge_gradient(model, PROBLEM, Z, ref)
    assert np.allclose(np.r_[q.s, q.x], Z[np.argmax(kg)])
