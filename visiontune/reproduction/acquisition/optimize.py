"""Maximise an acquisition function over a box: scrambled Sobol candidates, then multistart L-BFGS-B.

The recipe follows the authors' BO toolbox (docs/design.md, "Details from the authors' public
MATLAB toolboxes"): evaluate the acquisition on a few hundred low-discrepancy candidates,
draw the L-BFGS starts with probability proportional to ``exp(z)`` where ``z`` is the
z-score of the candidate's acquisition value, and refine each start with bounded L-BFGS-B.
We add the best candidate to the starts, so the result is never worse than the best
candidate. Optimisation runs in the unit cube (columns rescaled to ``[0, 1]``), so boxes
whose sides differ by orders of magnitude are handled alike.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable

import numpy as np
from scipy.optimize import minimize
from scipy.stats import qmc

from visiontune._validate import check_box, check_int, check_rng, finite_array
from visiontune.errors import InvalidInputError, NumericalError

__all__ = ["as_box", "grid_maximize_1d", "maximize", "refine_in_box", "sobol_points"]


def as_box(name: str, box) -> np.ndarray:
    """Return ``box`` as a finite ``(d, 2)`` array of ``[low, high]`` rows with ``low <= high``.

    A 1-D ``[low, high]`` is read as a one-dimensional box (the rest is :func:`check_box`).
    """
    arr = finite_array(name, box)
    return check_box(name, arr[None, :] if arr.ndim == 1 and arr.shape[0] == 2 else arr)


def sobol_points(box, n: int, rng: np.random.Generator) -> np.ndarray:
    """``n`` scrambled Sobol points in ``box`` (d, 2), as an ``(n, d)`` array.

    The scrambling is seeded from ``rng`` (one draw), so the set is reproducible. A power of
    two at least ``n`` is drawn and its first ``n`` points kept (a prefix of a Sobol sequence
    is still low-discrepancy; drawing a non-power of two directly only triggers a warning).
    """
    box = as_box("box", box)
    n = check_int("n", n, lo=1, whole_float=True)
    d = box.shape[0]
    sampler = qmc.Sobol(d, scramble=True, seed=np.random.default_rng(rng.integers(2**63)))
    m = max(int(np.ceil(np.log2(n))), 0)
    u = sampler.random_base2(m)[:n]
    return box[:, 0] + u * (box[:, 1] - box[:, 0])


def _evaluate(acq: Callable, X: np.ndarray, grad: bool) -> tuple[np.ndarray, np.ndarray | None]:
    out = acq(X)
    if grad:
        try:
            values, grads = out
        except (TypeError, ValueError):
            raise InvalidInputError("acq: with grad=True it must return (values (m,), grads (m, d))") from None
        values = np.asarray(values, dtype=float).reshape(-1)
        grads = np.asarray(grads, dtype=float).reshape(X.shape)
    else:
        values, grads = np.asarray(out, dtype=float).reshape(-1), None
    if values.shape[0] != X.shape[0]:
        raise InvalidInputError(f"acq: returned {values.shape[0]} values for {X.shape[0]} points")
    return values, grads


def maximize(
    acq: Callable,
    box,
    rng: np.random.Generator,
    *,
    n_candidates: int = 512,
    n_starts: int = 10,
    grad: bool = True,
    values_only: Callable | None = None,
    ftol: float = 1e-7,
    gtol: float = 1e-4,
) -> tuple[np.ndarray, float]:
    """Maximise ``acq`` over ``box``; return ``(x_best (d,), value)``.

    ``acq(X (m, d)) -> values (m,)``, or ``(values (m,), grads (m, d))`` when ``grad`` is true.
    ``box``: (d, 2) array of ``[low, high]``; a side with ``low == high`` is held fixed.

    Steps (authors' BO toolbox, docs/design.md): ``n_candidates`` scrambled Sobol points; z-scores
    ``z_i = (a_i - mean a) / sd a``; ``n_starts - 1`` starts drawn without replacement with
    probability ``exp(z_i) / sum_j exp(z_j)``, plus the best candidate; bounded L-BFGS-B from
    each, all starts in one run on the sum of their values (:func:`refine_in_box`; finite-difference
    gradients when ``grad`` is false). Deterministic for a given ``rng`` state. Raises
    :class:`NumericalError` if the acquisition is not finite on the candidates.
    ``values_only(X) -> (m,)``: optional cheaper evaluation without gradients, used on the
    candidate set (e.g. a Thompson sample, whose Jacobian is costly). ``ftol``, ``gtol``:
    L-BFGS-B stopping tolerances (relative decrease of the summed value; projected gradient
    in unit-cube coordinates).
    """
    box = as_box("box", box)
    rng = check_rng(rng)
    n_candidates = check_int("n_candidates", n_candidates, lo=1, whole_float=True)
    n_starts = check_int("n_starts", n_starts, lo=0, whole_float=True)

    candidates = sobol_points(box, int(n_candidates), rng)
    values = (
        _evaluate(values_only, candidates, False)[0] if values_only is not None else _evaluate(acq, candidates, grad)[0]
    )
    if not np.all(np.isfinite(values)):
        raise NumericalError("acq: non-finite acquisition values on the candidate set")
    best = int(np.argmax(values))
    best_x, best_value = candidates[best].copy(), float(values[best])

    n_other = min(int(n_starts) - 1, len(values) - 1)
    starts = [best] if n_starts > 0 else []
    if n_other > 0:
        sd = values.std()
        z = (values - values.mean()) / sd if sd > 0 else np.zeros_like(values)
        weights = np.exp(z - z.max())
        weights[best] = 0.0
        others = np.flatnonzero(weights > 0)
        p = weights[others] / weights[others].sum()
        starts += list(rng.choice(others, size=min(n_other, len(others)), replace=False, p=p))

    return refine_in_box(
        acq,
        box,
        candidates[starts],
        grad=grad,
        values_only=values_only,
        incumbent=(best_x, best_value),
        options={"ftol": ftol, "gtol": gtol},
    )


def refine_in_box(
    fn: Callable,
    box,
    starts,
    *,
    grad: bool = True,
    values_only: Callable | None = None,
    incumbent: tuple[np.ndarray, float] | None = None,
    options: dict | None = None,
) -> tuple[np.ndarray, float]:
    """Refine ``starts (k, d)`` by bounded L-BFGS-B on ``fn`` over ``box (d, 2)``; return the best ``(x (d,), value)``.

    ``fn(X (m, d)) -> values (m,)``, or ``(values (m,), grads (m, d))`` when ``grad`` is true (finite-difference
    gradients otherwise). The search runs in unit-cube coordinates ``u = (x - low) / (high - low)`` with bounds
    ``[0, 1]`` (a side with ``low == high`` stays at ``low``), so sides of different scales are handled alike. All
    ``k`` starts are refined by one run that minimises ``-sum_i fn(x_i)`` (as BoTorch's ``gen_candidates_scipy``
    does): one vectorised call of ``fn`` per iteration instead of one per start, and since the sum is separable
    each start still converges to a local maximum of its own. If ``fn`` is not finite at any of the ``k`` points the
    summed objective is ``+inf`` (the gradient rows of those points are zero): L-BFGS-B rejects the step (and may
    stop at the last finite point).
    ``options``: scipy's L-BFGS-B options, passed as given (``None``: scipy's defaults).

    The end points are scored by ``values_only(X) -> (m,)`` when given, else by ``fn``; a non-finite score counts as
    ``-inf``. Returns the best-scoring end point, or ``incumbent`` ``(x, value)`` (e.g. the best candidate) unless an
    end point scores strictly higher; with no starts, ``incumbent``. No random draws: ``fn`` is called once per
    L-BFGS-B evaluation and ``values_only`` (or ``fn``) once on the end points.
    """
    box = as_box("box", box)
    d = box.shape[0]
    starts = np.asarray(starts, dtype=float).reshape(-1, d)
    k = starts.shape[0]
    if k == 0:
        if incumbent is None:
            raise InvalidInputError("starts: no start and no incumbent")
        return incumbent
    low, width = box[:, 0], box[:, 1] - box[:, 0]
    safe_width = np.where(width > 0, width, 1.0)

    def objective(u_flat: np.ndarray):
        U = np.clip(u_flat.reshape(k, d), 0.0, 1.0)
        v, g = _evaluate(fn, low + U * width, grad)
        ok = np.isfinite(v)
        total = -np.sum(np.where(ok, v, 0.0)) + (np.inf if not np.all(ok) else 0.0)
        if grad:
            g = np.where(ok[:, None], g, 0.0)
            return total, (-g * width).reshape(-1)
        return total

    U0 = np.where(width > 0, (starts - low) / safe_width, 0.0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        res = minimize(
            objective,
            U0.reshape(-1),
            jac=grad,
            method="L-BFGS-B",
            bounds=[(0.0, 1.0)] * (k * d),
            options=options,
        )
    X_end = low + np.clip(res.x.reshape(k, d), 0.0, 1.0) * width
    v_end = _evaluate(values_only, X_end, False)[0] if values_only is not None else _evaluate(fn, X_end, grad)[0]
    v_end = np.where(np.isfinite(v_end), v_end, -np.inf)
    i = int(np.argmax(v_end))
    if incumbent is None or v_end[i] > incumbent[1]:
        return X_end[i], float(v_end[i])
    return incumbent


def grid_maximize_1d(
    values_fn: Callable, interval, *, n_grid: int = 65, n_refine: int = 33
) -> tuple[np.ndarray, float]:
    """Maximise a function of one variable over ``interval`` ``[low, high]`` by two vectorised grids.

    ``values_fn(S (m, 1)) -> values (m,)`` (no gradient needed). Steps: ``n_grid`` evenly spaced
    points including both ends; around the best one, ``n_refine`` evenly spaced points on
    ``[g_{i-1}, g_{i+1}]`` (clipped to the interval); then one parabolic step through the best refined
    point and its two neighbours (vertex ``t - h (v₊ - v₋) / (2 (v₊ - 2 v₀ + v₋))`` of the
    interpolating parabola, kept only if its value is higher). Three calls of ``values_fn`` in all;
    deterministic (no random draws). For a maximiser in the interior of a smooth, locally concave
    function the location error is about the cube of the refined spacing
    ``2 (high - low) / ((n_grid - 1)(n_refine - 1))``; a maximum narrower than the coarse spacing
    ``(high - low) / (n_grid - 1)`` can be missed, so use it for smooth, slowly varying functions
    (BALD over a letter size, Fauvel & Chalk (contextual BO), §3.3). Returns ``(s (1,), value)``. Raises
    :class:`NumericalError` if ``values_fn`` is not finite on the coarse grid.
    """
    box = as_box("interval", interval)
    if box.shape[0] != 1:
        raise InvalidInputError(f"interval: expected one [low, high] row, got shape {box.shape}")
    for name, n in (("n_grid", n_grid), ("n_refine", n_refine)):
        check_int(name, n, lo=3, whole_float=True)
    low, high = float(box[0, 0]), float(box[0, 1])
    if high == low:
        x = np.array([low])
        return x, float(_evaluate(values_fn, x[:, None], False)[0][0])
    grid = np.linspace(low, high, int(n_grid))
    values = _evaluate(values_fn, grid[:, None], False)[0]
    if not np.all(np.isfinite(values)):
        raise NumericalError("values_fn: non-finite values on the grid")
    i = int(np.argmax(values))
    best_x, best_v = float(grid[i]), float(values[i])
    fine = np.linspace(grid[max(i - 1, 0)], grid[min(i + 1, len(grid) - 1)], int(n_refine))
    fv = _evaluate(values_fn, fine[:, None], False)[0]
    fv = np.where(np.isfinite(fv), fv, -np.inf)
    j = int(np.argmax(fv))
    if fv[j] > best_v:
        best_x, best_v = float(fine[j]), float(fv[j])
    if 0 < j < len(fine) - 1:
        h = fine[1] - fine[0]
        v_minus, v0, v_plus = fv[j - 1], fv[j], fv[j + 1]
        curvature = v_plus - 2.0 * v0 + v_minus
        if np.isfinite(curvature) and curvature < 0:
            vertex = float(np.clip(fine[j] - h * (v_plus - v_minus) / (2.0 * curvature), fine[j - 1], fine[j + 1]))
            vv = float(_evaluate(values_fn, np.array([[vertex]]), False)[0][0])
            if np.isfinite(vv) and vv > best_v:
                best_x, best_v = vertex, vv
    return np.array([best_x]), best_v
