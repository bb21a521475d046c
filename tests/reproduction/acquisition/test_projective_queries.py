"""Projective preferential queries: likelihood, Laplace inference, line choice, simulated user."""

import numpy as np
import pytest
from scipy import integrate
from scipy.special import ndtr

from visiontune.errors import InvalidInputError
from visiontune.reproduction.acquisition.projective_queries import (
    RULES,
    Line,
    ProjectiveGP,
    ProjectiveRule,
    answer_projective,
    initial_lines,
    line_interval,
    projective_ei,
    projective_log_likelihood,
    projective_objective,
    projective_varmax,
    pseudo_points,
    tgn_shape,
)
from visiontune.reproduction.gp.kernels import SquaredExponential

UNIT2 = np.array([[0.0, 1.0], [0.0, 1.0]])


def _quadratic(U):
    U = np.atleast_2d(U)
    return -((U[:, 0] - 0.3) ** 2) - 2.0 * (U[:, 1] - 0.7) ** 2


def _model(n_answers, seed=0, D=2, m=6, sigma=0.05):
    rng = np.random.default_rng(seed)
    lines = initial_lines(D, rng)
    while len(lines) < n_answers:
        lines.append(ProjectiveRule("RAND")(None, D, len(lines), rng))
    lines = lines[:n_answers]
    answers = [answer_projective(_quadratic, line, rng) for line in lines]
    kernel = SquaredExponential([0.3] * D, 1.0)
    return ProjectiveGP(kernel, lines, answers, sigma=sigma, m=m, rng=np.random.default_rng(seed + 100))


# ----------------------------------------------------------------------------- likelihood vs oracles


def test_one_comparison_matches_monte_carlo_of_the_noise_model():
    """P(α beats β) = 1 - [Φ∗φ](Δ) = 1 - Φ(Δ/√2), Δ = (f_β - f_α)/σ: simulate f + W at both points."""
    rng = np.random.default_rng(1)
    sigma, f_a, f_b = 0.3, 0.2, 0.35
    w = rng.normal(0.0, sigma, (2, 400_000))
    mc = np.mean(f_a + w[0] > f_b + w[1])
    assert mc == pytest.approx(1.0 - ndtr((f_b - f_a) / sigma / np.sqrt(2.0)), abs=3e-3)
    # the package's per-pair term with weight 1 is log of exp(-Φ(Δ/√2)), the continuum factor
    lp, _, _ = projective_log_likelihood(np.array([f_a, f_b]), [0], [1], [1.0], sigma)
    assert lp == pytest.approx(-ndtr((f_b - f_a) / sigma / np.sqrt(2.0)))


def test_likelihood_is_the_product_integral_of_the_comparisons():
    """exp(-Σ_j w_j Φ(Δ_j/√2)) with midpoint β_j, w = |I|/m -> exp(-∫_I Φ(Δ(β)/√2) dβ) (quadrature),
    and the finite product Π_j (1 - h Φ(Δ_j/√2)) tends to the same value."""
    sigma, lo, hi, alpha = 0.2, -0.5, 1.5, 0.4

    def f(t):
        return np.sin(2.0 * t) - 0.5 * t**2

    exact = np.exp(-integrate.quad(lambda b: ndtr((f(b) - f(alpha)) / sigma / np.sqrt(2.0)), lo, hi, limit=200)[0])
    for m, tol in ((50, 2e-3), (2000, 2e-6)):
        h = (hi - lo) / m
        betas = lo + h * (np.arange(m) + 0.5)
        vals = np.concatenate([[f(alpha)], f(betas)])
        lp, _, _ = projective_log_likelihood(vals, np.zeros(m, int), np.arange(1, m + 1), np.full(m, h), sigma)
        assert np.exp(lp) == pytest.approx(exact, rel=tol)
        product = np.prod(1.0 - h * ndtr((f(betas) - f(alpha)) / sigma / np.sqrt(2.0)))
        assert product == pytest.approx(exact, rel=50 * h)


def test_gradient_and_hessian_of_the_laplace_objective_match_finite_differences():
    rng = np.random.default_rng(3)
    n = 7
    X = rng.random((n, 2))
    K = SquaredExponential([0.4, 0.4], 1.0)(X) + 1e-6 * np.eye(n)
    anchors, betas = np.array([0, 0, 0, 3, 3, 3]), np.array([1, 2, 4, 5, 6, 2])
    w = rng.uniform(0.1, 0.5, anchors.size)
    f = rng.normal(0.0, 0.5, n)
    _, grad, H = projective_objective(f, K, anchors, betas, w, 0.3)
    eps = 1e-5
    num_g = np.array(
        [
            (
                projective_objective(f + eps * e, K, anchors, betas, w, 0.3)[0]
                - projective_objective(f - eps * e, K, anchors, betas, w, 0.3)[0]
            )
            / (2 * eps)
            for e in np.eye(n)
        ]
    )
    num_H = np.array(
        [
            (
                projective_objective(f + eps * e, K, anchors, betas, w, 0.3)[1]
                - projective_objective(f - eps * e, K, anchors, betas, w, 0.3)[1]
            )
            / (2 * eps)
            for e in np.eye(n)
        ]
    )
    np.testing.assert_allclose(grad, num_g, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(H, num_H, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(H, H.T)


def test_laplace_mode_is_a_stationary_point_of_the_paper_functional():
    """At the mode f̂ = K Aᵀa (posterior mean at the latent points), ∇T = -K⁻¹f̂ + ∇log p(f̂) =
    Aᵀ(∇_g log p - a) must vanish: ∇log p from the point-space code equals the scattered weights."""
    for sigma in (0.1, 0.001):
        model = _model(6, m=5, sigma=sigma)
        pts = np.vstack([model.betas_x, model.anchors_x])
        uniq, inv = np.unique(np.round(pts, 12), axis=0, return_inverse=True)
        inv = inv.reshape(-1)
        p = model.n_pairs
        f_hat = model.predict_mean(uniq)
        _, grad_lik, _ = projective_log_likelihood(f_hat, inv[p:], inv[:p], model.weights, model.sigma)
        scattered = np.zeros(len(uniq))
        np.add.at(scattered, inv[:p], model.approx.alpha)
        np.add.at(scattered, inv[p:], -model.approx.alpha)
        scale = 1.0 + np.max(np.abs(grad_lik))
        assert np.max(np.abs(grad_lik - scattered)) < 1e-6 * scale
        assert model.approx.n_iter < 200


def test_posterior_prefers_the_answers_over_the_rest_of_their_lines():
    model = _model(10, m=20)
    gaps = [
        np.max(model.predict_mean(line.point(line.grid(21)))) - model.predict_mean(line.point(np.array([t])))[0]
        for line, t in zip(model.lines, model.answers)
    ]
    assert np.mean(np.array(gaps) < 0.03) >= 0.8
    mu, var = model.predict(np.array([[0.3, 0.7], [0.9, 0.1]]))
    assert mu[0] > mu[1] and np.all(var > 0)


# ----------------------------------------------------------------------------- lines and answers


def test_line_interval_keeps_the_segment_in_the_box():
    bounds = np.array([[-1.0, 2.0], [0.0, 1.0], [-3.0, 3.0]])
    rng = np.random.default_rng(4)
    X = bounds[:, 0] + rng.random((50, 3)) * (bounds[:, 1] - bounds[:, 0])
    Xi = rng.normal(size=(50, 3))
    lo, hi = line_interval(bounds, X, Xi)
    for x, xi, a, b in zip(X, Xi, lo, hi):
        for t in (a, b):
            p = x + t * xi
            assert np.all(p >= bounds[:, 0] - 1e-9) and np.all(p <= bounds[:, 1] + 1e-9)
        assert np.any(np.isclose(x + a * xi, bounds[:, 0]) | np.isclose(x + a * xi, bounds[:, 1]))
    with pytest.raises(InvalidInputError):
        line_interval(bounds, X[0], np.zeros(3))


def test_simulated_user_finds_the_best_point_on_the_line_and_is_seeded():
    line = Line(np.array([0.0, 0.7]), np.array([1.0, 0.0]), 0.0, 1.0)
    assert answer_projective(_quadratic, line, np.random.default_rng(0)) == pytest.approx(0.3, abs=1e-5)
    noisy = [answer_projective(_quadratic, line, np.random.default_rng(s), noise_sd=0.01) for s in (5, 5, 6)]
    assert noisy[0] == noisy[1] and 0.0 <= noisy[2] <= 1.0
    assert (
        abs(
            np.mean([answer_projective(_quadratic, line, np.random.default_rng(s), noise_sd=0.002) for s in range(30)])
            - 0.3
        )
        < 0.1
    )


def test_pseudo_points_stay_in_the_interval_and_concentrate_as_queries_accumulate():
    rng = np.random.default_rng(2)
    early = pseudo_points(0.2, 0.0, 1.0, 4000, tgn_shape(1, 2), rng)
    late = pseudo_points(0.2, 0.0, 1.0, 4000, tgn_shape(200, 2), rng)
    assert tgn_shape(1, 2) == pytest.approx(5.0) and tgn_shape(10**6, 2) < 2.02
    for b in (early, late):
        assert np.all((b >= 0.0) & (b <= 1.0))
    assert np.std(late) < 0.5 * np.std(early)
    assert abs(np.median(late) - 0.2) < 0.05


# ----------------------------------------------------------------------------- acquisition (battery)


@pytest.mark.parametrize("rule", RULES)
@pytest.mark.parametrize("n_answers", [2, 5, 9])
def test_every_rule_returns_a_line_in_the_box_and_is_reproducible(rule, n_answers):
    model = _model(n_answers, seed=n_answers)
    choose = ProjectiveRule(rule, n_candidates=24, n_refine=8, n_samples=32)
    a = choose(model, 2, n_answers, np.random.default_rng(7))
    b = choose(model, 2, n_answers, np.random.default_rng(7))
    assert np.array_equal(a.base, b.base) and np.array_equal(a.direction, b.direction)
    assert a.lo < a.hi and np.any(a.direction != 0)
    for t in (a.lo, a.hi, 0.5 * (a.lo + a.hi)):
        p = a.point(t)
        assert np.all(p >= -1e-9) and np.all(p <= 1.0 + 1e-9)
    if rule in (
        "EI",
        "EXR",
        "EXT",
    ):  # the paper's parametrisation: coordinate d = n mod D held out
        assert a.direction[n_answers % 2] == 0.0


def test_rules_without_data_and_bad_names():
    empty = ProjectiveGP(SquaredExponential([0.3, 0.3], 1.0), [], [], rng=np.random.default_rng(0))
    for rule in RULES:
        line = ProjectiveRule(rule, n_candidates=8, n_refine=0, n_samples=16)(empty, 2, 0, np.random.default_rng(1))
        assert np.all(line.point(line.hi) <= 1.0 + 1e-9)
    with pytest.raises(InvalidInputError):
        ProjectiveRule("UCB")


def test_scores_are_vectorised_and_ei_prefers_the_unexplored_promising_line():
    model = _model(8)
    bases = np.array([[0.0, 0.7], [0.0, 0.05], [0.3, 0.0]])
    dirs = np.array([[1.0, 0.0], [1.0, 0.0], [0.0, 1.0]])
    _, mu_star = model.best(UNIT2, np.random.default_rng(0))
    ei = projective_ei(model, UNIT2, bases, dirs, mu_star, np.random.default_rng(1), n_samples=256)
    ei_one = [
        projective_ei(
            model,
            UNIT2,
            bases[i : i + 1],
            dirs[i : i + 1],
            mu_star,
            np.random.default_rng(1),
            n_samples=256,
        )[0]
        for i in range(3)
    ]
    np.testing.assert_allclose(ei, ei_one, rtol=1e-10)
    var = projective_varmax(model, UNIT2, bases, dirs, np.random.default_rng(1))
    assert ei.shape == var.shape == (3,) and np.all(ei >= 0) and np.all(var >= 0)
