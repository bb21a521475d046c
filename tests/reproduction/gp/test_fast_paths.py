"""The fast paths of the GP engine (for speed) give the same numbers as the plain formulas.

Oracles: kernels against the definition evaluated with (n, m, d) broadcasting; the triangular
products with a cached ``L⁻¹W½`` against dense solves of ``B`` and ``K + W⁻¹``; the separable
contraction of a Hilbert-space sample path against the formed features ``φ(X) W`` and against
central finite differences; the feature-map cache against a fresh build. No timing here
(benchmarks/bench_gp.py and benchmarks/bench_sampling.py print the timings).
"""

import numpy as np
import pytest

from visiontune.reproduction.gp import sampling
from visiontune.reproduction.gp.ep import expectation_propagation
from visiontune.reproduction.gp.kernels import (
    Constant,
    Linear,
    Matern32,
    Matern52,
    Preference,
    SquaredExponential,
    contextual_benchmark_kernel,
    refraction_kernel,
)
from visiontune.reproduction.gp.laplace import b_inverse_diag, laplace_mode, predict_latent
from visiontune.reproduction.gp.model import ProbitGP
from visiontune.reproduction.gp.sampling import prior_features, sample_posterior_functions


def _definition(kernel, X1, X2):
    """Stationary kernel from its definition: r² by broadcasting over (n1, n2, d)."""
    dims = list(range(X1.shape[1])) if kernel.dims is None else list(kernel.dims)
    D = (X1[:, None, dims] - X2[None, :, dims]) / kernel.lengthscales
    r2 = np.sum(D * D, axis=2)
    r = np.sqrt(r2)
    if isinstance(kernel, SquaredExponential):
        k = np.exp(-0.5 * r2)
    elif isinstance(kernel, Matern32):
        k = (1 + np.sqrt(3) * r) * np.exp(-np.sqrt(3) * r)
    else:
        k = (1 + np.sqrt(5) * r + 5 * r2 / 3) * np.exp(-np.sqrt(5) * r)
    return kernel.variance * k


STATIONARY = [
    SquaredExponential([0.7, 1.3, 0.4], 2.0),
    Matern32([0.5], 1.5, dims=(1,)),
    Matern52([0.9, 0.3], 0.7, dims=(0, 2)),
]


@pytest.mark.parametrize("kernel", STATIONARY, ids=lambda k: type(k).__name__)
def test_stationary_gram_matrices_match_the_definition(kernel):
    rng = np.random.default_rng(0)
    X1, X2 = rng.normal(size=(37, 3)), rng.normal(size=(23, 3))
    np.testing.assert_allclose(kernel(X1, X2), _definition(kernel, X1, X2), rtol=1e-12, atol=1e-14)
    K = kernel(X1)
    assert np.array_equal(K, K.T)  # exactly symmetric
    assert np.array_equal(np.diag(K), np.full(37, kernel.variance))  # exactly σ² on the diagonal


@pytest.mark.parametrize("kernel", STATIONARY, ids=lambda k: type(k).__name__)
def test_input_and_parameter_gradients_match_finite_differences(kernel):
    rng = np.random.default_rng(1)
    X1, X2 = rng.normal(size=(5, 3)), rng.normal(size=(4, 3))
    G, h = kernel.grad_inputs(X1, X2), 1e-6
    for c in range(3):
        E = np.zeros_like(X1)
        E[:, c] = h
        np.testing.assert_allclose(G[:, :, c], (kernel(X1 + E, X2) - kernel(X1 - E, X2)) / (2 * h), atol=1e-8)
    P, theta = kernel.grad_params(X1), kernel.params
    for j in range(theta.size):
        e = np.zeros_like(theta)
        e[j] = h
        fd = (kernel.with_params(theta + e)(X1) - kernel.with_params(theta - e)(X1)) / (2 * h)
        np.testing.assert_allclose(P[j], fd, atol=1e-8)


def test_sums_and_products_equal_their_terms_and_leave_no_shared_state():
    rng = np.random.default_rng(2)
    X1, X2 = rng.normal(size=(31, 3)), rng.normal(size=(17, 3))
    lin, const, se = Linear(0.6, dims=(0, 2)), Constant(0.3), SquaredExponential([1.1, 0.8], 1.7, dims=(1, 2))
    terms = [lin(X1, X2), const(X1, X2), se(X1, X2)]
    for kernel in (lin + const + se, se + lin, const + lin):
        parts = [t for k, t in zip((lin, const, se), terms) if k in kernel.kernels]
        np.testing.assert_allclose(kernel(X1, X2), sum(parts), rtol=1e-13, atol=1e-14)
    prod = lin * se
    np.testing.assert_allclose(prod(X1, X2), terms[0] * terms[2], rtol=1e-13, atol=1e-14)
    # repeated calls give the same numbers (in-place accumulation touches no cached array)
    k = lin + se + const
    first = k(X1, X2)
    assert np.array_equal(k(X1, X2), first)
    np.testing.assert_allclose(
        refraction_kernel(0.5, [1.0, 2.0], 1.5)(X1, X2),
        0.5 * np.outer(X1[:, 0], X2[:, 0]) + _definition(SquaredExponential([1.0, 2.0], 1.5, dims=(1, 2)), X1, X2),
        rtol=1e-13,
    )


# ---- Laplace / EP linear algebra ------------------------------------------------------------


def _fitted(n=60, seed=3):
    rng = np.random.default_rng(seed)
    X = np.column_stack([rng.uniform(-1, 2, n), rng.uniform(-4, 4, (n, 2))])
    y = (rng.random(n) < 0.5).astype(float)
    kernel = refraction_kernel(1.0, [1.5, 1.5], 2.0)
    return kernel, X, y, laplace_mode(kernel(X), y)


@pytest.mark.parametrize("m", [3, 15, 16, 200])
def test_variance_reduction_and_weighted_solve_match_dense_algebra(m):
    kernel, X, y, approx = _fitted()
    Xs = np.random.default_rng(4).uniform(-4, 4, (m, 3))
    ks = kernel(X, Xs)
    L, sw = approx.chol, approx.sqrt_w
    v_oracle = np.linalg.solve(L, sw[:, None] * ks)
    np.testing.assert_allclose(approx.reduction(ks), v_oracle, atol=1e-12)
    W_inv = np.diag(1.0 / sw**2)
    R_oracle = np.linalg.solve(kernel(X) + W_inv, ks)  # (K + W⁻¹)⁻¹ k*
    np.testing.assert_allclose(approx.solve_b_weighted(ks), R_oracle, rtol=1e-8, atol=1e-10)
    mu, var = predict_latent(approx, ks, kernel.diag(Xs))
    copy = ks.copy()
    mu2, var2 = predict_latent(approx, copy, kernel.diag(Xs), overwrite_k_star=True)
    np.testing.assert_allclose(mu2, mu, rtol=1e-13, atol=1e-14)
    np.testing.assert_allclose(var2, var, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(var, kernel.diag(Xs) - np.sum(v_oracle**2, axis=0), atol=1e-12)


def test_model_predictions_do_not_depend_on_the_batch_size():
    kernel, X, y, _ = _fitted()
    model = ProbitGP(kernel, X, y)
    Xs = np.random.default_rng(5).uniform(-4, 4, (40, 3))
    mu, var = model.predict(Xs)  # trmm path (>= 16 points)
    one = [model.predict(Xs[i : i + 1]) for i in range(5)]  # triangular-solve path
    np.testing.assert_allclose([o[0][0] for o in one], mu[:5], rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose([o[1][0] for o in one], var[:5], rtol=1e-10, atol=1e-14)


def test_diagonal_of_b_inverse_and_ep_marginals():
    kernel, X, y, approx = _fitted()
    B = np.eye(len(y)) + approx.sqrt_w[:, None] * kernel(X) * approx.sqrt_w[None, :]
    np.testing.assert_allclose(b_inverse_diag(approx.chol), np.diag(np.linalg.inv(B)), rtol=1e-12)
    ep = expectation_propagation(kernel(X), y)
    K = kernel(X)
    S = np.diag(ep.sqrt_w**2)
    Sigma = np.linalg.inv(np.linalg.inv(K + 1e-8 * np.eye(len(y))) + S)
    # EP's mean is Σ ν̃ at its fixed point (R&W Alg. 3.5 line 15)
    np.testing.assert_allclose(ep.mean, Sigma @ ep.nu_site, rtol=1e-5, atol=1e-6)


# ---- sample paths: separable contraction ---------------------------------------------------

PATH_CASES = {
    "se_1d": (SquaredExponential([0.3], 1.5), [[-1, 1]]),
    "m52_2d_ard": (Matern52([0.3, 0.8], 2.0), [[-1, 1], [0, 3]]),
    "se_3d": (SquaredExponential([0.3, 0.4, 0.5], 1.0), [[0, 1]] * 3),
    "refraction": (refraction_kernel(2.0, [1.0, 1.5], 1.0), [[-1, 2], [-4, 4], [-4, 4]]),
    "benchmark": (contextual_benchmark_kernel(Matern32, [0.2, 0.3], 1.0, 2), [[0, 1]] * 3),
    "product_se_first": (SquaredExponential([0.5], 1.0, dims=(1,)) * Linear(1.0, dims=(0,)), [[0, 1], [0, 1]]),
    "random_features": (SquaredExponential([0.3] * 4, 1.0), [[0, 1]] * 4),
}


@pytest.mark.parametrize("name", list(PATH_CASES))
@pytest.mark.parametrize("dense_factor", [sampling._DENSE_FACTOR, 0])
def test_sample_path_combination_matches_formed_features(name, dense_factor, monkeypatch):
    monkeypatch.setattr(sampling, "_DENSE_FACTOR", dense_factor)  # 0: gather path
    sampling._HILBERT_CACHE.clear()
    kernel, box = PATH_CASES[name]
    fm = prior_features(kernel, box, n_basis=512, rng=np.random.default_rng(0))
    rng = np.random.default_rng(1)
    W = rng.standard_normal((fm.n_features, 3))
    box = np.asarray(box, float)
    X = box[:, 0] + rng.random((25, box.shape[0])) * (box[:, 1] - box[:, 0])
    path = fm._combination(W)
    np.testing.assert_allclose(path.values(X), fm.values(X) @ W, rtol=1e-10, atol=1e-11)
    G = path.grad(X)
    np.testing.assert_allclose(G, np.einsum("mfd,fs->smd", fm.jacobian(X), W), rtol=1e-9, atol=1e-10)
    h = 1e-6
    for c in range(X.shape[1]):
        E = np.zeros_like(X)
        E[:, c] = h
        fd = (path.values(X + E) - path.values(X - E)) / (2 * h)
        np.testing.assert_allclose(G[:, :, c].T, fd, atol=1e-6 * (1 + np.abs(fd).max()))
    sampling._HILBERT_CACHE.clear()


def test_preference_sample_path_matches_formed_features():
    base = SquaredExponential([0.4, 0.6], 1.0)
    fm = prior_features(Preference(base), [[0, 1], [0, 1]], n_basis=256)
    rng = np.random.default_rng(2)
    W, duels = rng.standard_normal((fm.n_features, 2)), rng.random((10, 4))
    path = fm._combination(W)
    np.testing.assert_allclose(path.values(duels), fm.values(duels) @ W, rtol=1e-10, atol=1e-11)
    np.testing.assert_allclose(path.grad(duels), np.einsum("mfd,fs->smd", fm.jacobian(duels), W), atol=1e-10)


def test_feature_maps_are_cached_per_kernel_and_box_without_changing_results():
    sampling._HILBERT_CACHE.clear()
    box = [[-1, 2], [-4, 4], [-4, 4]]
    k1, k2 = refraction_kernel(1.0, [1.5, 1.5], 2.0), refraction_kernel(1.0, [1.5, 1.5], 2.0)
    a = prior_features(k1, box, rng=np.random.default_rng(0))
    b = prior_features(k2, box, rng=np.random.default_rng(0))
    X = np.random.default_rng(1).uniform(-4, 4, (20, 3))
    np.testing.assert_array_equal(a.values(X), b.values(X))
    assert len(sampling._HILBERT_CACHE) == 1  # one stationary term, built once
    prior_features(refraction_kernel(1.0, [1.5, 1.0], 2.0), box)
    prior_features(k1, [[-1, 2], [-4, 4], [-3, 4]])
    assert len(sampling._HILBERT_CACHE) == 3  # other lengthscales, other box: other maps
    # same seed, same samples whether or not the map came from the cache
    kernel, X, y, _ = _fitted()
    model = ProbitGP(kernel, X, y)
    Xs = np.random.default_rng(6).uniform(-4, 4, (30, 3))
    cached = sample_posterior_functions(model, box, 2, np.random.default_rng(7)).values(Xs)
    sampling._HILBERT_CACHE.clear()
    fresh = sample_posterior_functions(model, box, 2, np.random.default_rng(7)).values(Xs)
    np.testing.assert_array_equal(cached, fresh)


def test_indexed_samples_are_reused_and_equal_the_batch():
    kernel, X, y, _ = _fitted()
    model = ProbitGP(kernel, X, y)
    box = [[-1, 2], [-4, 4], [-4, 4]]
    samples = sample_posterior_functions(model, box, 3, np.random.default_rng(8), n_basis=256)
    Xs = np.random.default_rng(9).uniform(-4, 4, (12, 3))
    batch = samples.values(Xs)
    for i, f in enumerate(samples):
        np.testing.assert_allclose(f(Xs), batch[i], rtol=1e-12, atol=1e-12)
        assert samples[i]._sub() is samples[i]._sub()


@pytest.mark.parametrize(
    "kernel",
    [
        refraction_kernel(0.8, [1.2, 0.7], 1.5),
        contextual_benchmark_kernel(Matern52, [0.3, 0.5], 1.2, 2),
        Linear(0.7, dims=(0, 2)) * Linear(1.3, dims=(1,)) + Constant(0.2),
        Linear(0.5) * SquaredExponential([0.4, 0.9, 1.1], 2.0),
    ],
    ids=["refraction", "benchmark", "linear_products", "linear_times_se"],
)
def test_structural_diagonal_gradient_matches_the_block_evaluation_and_finite_differences(kernel):
    from visiontune.reproduction.gp import model as model_module

    Xs = np.random.default_rng(10).normal(size=(9, 3))
    fast = model_module._diag_gradient(kernel, Xs)
    assert fast is not None
    blocks = np.stack([2.0 * kernel.grad_inputs(x[None], x[None])[0, 0] for x in Xs])
    np.testing.assert_allclose(fast, blocks, rtol=1e-12, atol=1e-12)
    h = 1e-6
    for c in range(3):
        E = np.zeros_like(Xs)
        E[:, c] = h
        fd = (kernel.diag(Xs + E) - kernel.diag(Xs - E)) / (2 * h)
        np.testing.assert_allclose(fast[:, c], fd, atol=1e-7)
    assert model_module._diag_gradient(Preference(SquaredExponential([1.0], 1.0)), np.zeros((2, 2))) is None


def test_results_do_not_depend_on_what_the_model_computed_before():
    """Cached factors must not change later numbers (same seed, same query: a replayed log, docs/design.md)."""
    kernel, X, y, _ = _fitted()
    model = ProbitGP(kernel, X, y)
    Xs = np.random.default_rng(11).uniform(-4, 4, (3, 3))
    before = model.predict_with_grad(Xs)
    model.predict(np.random.default_rng(12).uniform(-4, 4, (100, 3)))  # builds the cached L⁻¹W½
    after = model.predict_with_grad(Xs)
    for a, b in zip(before, after):
        assert np.array_equal(a, b)
