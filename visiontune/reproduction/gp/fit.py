"""Type-II maximum likelihood for the kernel hyperparameters of a probit GP.

Maximises the approximate log marginal likelihood (Laplace, R&W Eq. 3.32 with the gradient of
R&W Alg. 5.1; or EP, R&W Eq. 3.65 with the gradient of R&W Eq. 5.27) over the kernel's
log-hyperparameters by multistart L-BFGS-B within ``kernel.bounds``. Fauvel & Chalk (contextual BO) fits the
refraction kernel this way once, on 1000 simulated answers, and then holds it fixed;
the authors' toolbox for the binary/preferential paper uses 5 optimiser starts.
"""

from __future__ import annotations

import numpy as np
from scipy.linalg import LinAlgError
from scipy.optimize import minimize

from visiontune._validate import binary_labels, check_int, check_rng, points
from visiontune.errors import InvalidInputError, NumericalError
from visiontune.reproduction.gp.ep import ep_lml_grad, expectation_propagation
from visiontune.reproduction.gp.kernels import Kernel, Preference
from visiontune.reproduction.gp.laplace import laplace_lml_grad, laplace_mode
from visiontune.reproduction.gp.model import check_inference


class _Objective:
    """Negative log evidence and its gradient in log-hyperparameters, warm-starting each solve."""

    def __init__(self, kernel: Kernel, X: np.ndarray, y: np.ndarray, inference: str):
        self.kernel, self.X, self.y, self.inference = kernel, X, y, inference
        self._warm = None

    def __call__(self, theta):
        k = self.kernel.with_params(theta)
        K = k(self.X)
        try:
            if self.inference == "laplace":
                approx = laplace_mode(K, self.y, f0=self._warm)
                self._warm = approx.mean
                grad = laplace_lml_grad(approx, K, self.y, k.grad_params(self.X))
            else:
                approx = expectation_propagation(K, self.y, sites=self._warm)
                self._warm = (approx.tau_site, approx.nu_site)
                grad = ep_lml_grad(approx, K, self.y, k.grad_params(self.X))
        except (LinAlgError, NumericalError):
            self._warm = None
            return 1e100, np.zeros_like(theta)
        value = approx.log_marginal_likelihood
        if not (np.isfinite(value) and np.all(np.isfinite(grad))):
            self._warm = None
            return 1e100, np.zeros_like(theta)
        return -value, -grad


def log_evidence(kernel: Kernel, X, y, *, inference: str = "laplace", preference: bool = False) -> float:
    """Approximate log marginal likelihood of ``kernel`` on data ``(X, y)`` (see module docstring)."""
    kernel, X, y, inference = _check(kernel, X, y, inference, preference)
    value, _ = _Objective(kernel, X, y, inference)(kernel.params)
    return -value


def _check(kernel, X, y, inference, preference):
    if not isinstance(kernel, Kernel):
        raise InvalidInputError(
            f"kernel: expected a visiontune.reproduction.gp.kernels.Kernel, got {type(kernel).__name__}"
        )
    inference = check_inference(inference)
    X = points("X", X)
    y = binary_labels("y", y, X.shape[0])
    if preference:
        if isinstance(kernel, Preference):
            raise InvalidInputError("kernel: with preference=True pass the utility kernel, not a Preference kernel")
        kernel = Preference(kernel)
    kernel(X[:1])  # the kernel validates the number of columns
    return kernel, X, y, inference


def fit_hyperparameters(
    kernel: Kernel,
    X,
    y,
    *,
    inference: str = "laplace",
    preference: bool = False,
    n_starts: int = 5,
    rng,
    max_iter: int = 200,
) -> Kernel:
    """Return ``kernel`` with the log-hyperparameters that maximise the approximate log evidence.

    ``θ* = argmax_θ log q(y | X, θ)`` by L-BFGS-B with analytic gradients inside
    ``kernel.bounds``, from ``n_starts`` starts: the kernel's own parameters (clipped to the
    bounds) and ``n_starts - 1`` points drawn uniformly in the bounds with ``rng``.
    ``X``: (n, d) inputs, or (n, 2d) duels with ``preference=True`` (then ``kernel`` is the
    utility kernel and the returned kernel is too). ``y``: (n,) answers in {0, 1}.
    ``rng``: numpy Generator or integer seed. A kernel without free hyperparameters is returned as is.
    Raises :class:`InvalidInputError` on bad input and :class:`NumericalError` if no start
    gives a finite evidence.
    """
    wrapped, X, y, inference = _check(kernel, X, y, inference, preference)
    check_int("n_starts", n_starts, lo=1)
    rng = check_rng(rng, allow_seed=True)
    if wrapped.n_params == 0:
        return kernel
    bounds = np.asarray(wrapped.bounds, float)
    starts = [np.clip(wrapped.params, bounds[:, 0], bounds[:, 1])]
    starts += [rng.uniform(bounds[:, 0], bounds[:, 1]) for _ in range(n_starts - 1)]
    best_theta, best_value = None, np.inf
    for theta0 in starts:
        objective = _Objective(wrapped, X, y, inference)
        result = minimize(objective, theta0, jac=True, method="L-BFGS-B", bounds=bounds, options={"maxiter": max_iter})
        value = float(result.fun)
        if np.isfinite(value) and value < 1e99 and value < best_value:
            best_theta, best_value = np.asarray(result.x, float), value
    if best_theta is None:
        raise NumericalError("fit_hyperparameters: no start gave a finite log marginal likelihood")
    fitted = wrapped.with_params(best_theta)
    return fitted.base if preference else fitted
