"""The GP model of Fauvel & Chalk (contextual BO) §5 as a refraction engine (the paper's reproduction).

Model inputs are ``(s, S, C)``: letter size (logMAR), sphere and cylinder (diopters) at the
protocol's fixed cylinder axis. Probit GP with kernel ``θ s s' + k_SE((S, C), (S', C'))``
(Eq. 15), hyperparameters held fixed; refit from the answers after each one. The
policy is a registered contextual binary rule (Fauvel & Chalk (contextual BO), §3.3); the estimate, its credible region
and the predicted acuity are those of :mod:`visiontune.reproduction.engines.gp_estimate`.
"""

from __future__ import annotations

import dataclasses

import numpy as np
from scipy.stats import norm

from visiontune.optics import Prescription
from visiontune.refraction.engine_interface import Engine
from visiontune.refraction.estimate import CurrentEstimate, Region, region_from_samples
from visiontune.refraction.lenses import in_form
from visiontune.refraction.policies import registry_name
from visiontune.refraction.protocol import Protocol
from visiontune.refraction.start import StartingPoint
from visiontune.reproduction.acquisition import registry
from visiontune.reproduction.acquisition.binary_policies import Data, Problem
from visiontune.reproduction.engines import gp_estimate
from visiontune.reproduction.engines.gp_hyperparameters import fitted_refraction_kernel
from visiontune.reproduction.gp import Kernel, ProbitGP, refraction_kernel

__all__ = ["REFERENCE_LOGMAR", "GPEngine", "build_gp_engine", "design_slope", "gp_kernel"]

#: Reference letter size (logMAR) at which the x-rule and the reported estimate are evaluated:
#: logMAR 0 (20/20), the acuity of the paper's best-corrected patient (Fauvel & Chalk (contextual BO), §5.1), where
#: ``f(0, x) = b(x)`` is the latent acuity term alone (Eq. 14 with ``s = 0``).
REFERENCE_LOGMAR = 0.0


def design_slope(protocol: Protocol) -> float:
    """The psychometric slope (logMAR⁻¹) the model is built for: the slope prior's centre
    (fixed value, mid-range of a uniform, median of a lognormal), 5 without a prior."""
    prior = protocol.slope_prior
    if prior is None:
        return 5.0
    if prior.distribution == "fixed":
        return float(prior.value)
    if prior.distribution == "uniform":
        return float(np.mean(prior.range))
    return float(prior.median)


def gp_kernel(protocol: Protocol) -> Kernel:
    """The protocol's kernel with its hyperparameters held fixed: the given ``theta``,
    ``lengthscales`` (sphere, cylinder; one value for both) and ``variance``, or
    (``model.fit = "simulation"``) maximum likelihood on 1000 simulated answers (Fauvel & Chalk (contextual BO), §5.2,
    :func:`visiontune.reproduction.engines.gp_hyperparameters.fitted_refraction_kernel`)."""
    spec = protocol.model
    box = np.array([protocol.search_space.sphere_d, protocol.search_space.cylinder_d], dtype=float)
    if spec.hyperparameters is not None:
        hp = spec.hyperparameters
        lengthscales = np.broadcast_to(np.atleast_1d(np.asarray(hp["lengthscales"], dtype=float)), (2,)).copy()
        return refraction_kernel(float(hp["theta"]), lengthscales, float(hp["variance"]))

    return fitted_refraction_kernel(
        slope=design_slope(protocol),
        n_alternatives=protocol.n_alternatives,
        search_box=box,
        context_box=np.array([protocol.logmar_range], dtype=float),
    )


class GPEngine(Engine):
    """Propose, estimate and map with the probit GP of Fauvel & Chalk (contextual BO), §5 (fixed axis)."""

    model_type = "gp"

    def __init__(self, protocol: Protocol) -> None:
        sp = protocol.search_space
        lo, hi = protocol.logmar_range
        self.protocol = protocol
        self.axis_deg = float(sp.axis_deg)
        self.problem = Problem(
            box=np.array([sp.sphere_d, sp.cylinder_d], dtype=float),
            context_box=np.array([[lo, hi]], dtype=float),
            reference_context=np.array([float(np.clip(REFERENCE_LOGMAR, lo, hi))]),
        )
        self.kernel = gp_kernel(protocol)
        self._policy = registry.make(registry_name(protocol.policy), n_initial=protocol.initial_random_trials)
        self._cache: tuple[tuple, ProbitGP] | None = None

    # ------------------------------------------------------------------ model
    @staticmethod
    def _key(trials) -> tuple:
        return tuple((t.s_logmar, t.lens.sphere_d, t.lens.cylinder_d, bool(t.correct)) for t in trials)

    def data(self, trials) -> Data:
        X = np.array([[t.s_logmar, t.lens.sphere_d, t.lens.cylinder_d] for t in trials], dtype=float).reshape(-1, 3)
        return Data(X, np.array([float(t.correct) for t in trials]))

    def model(self, trials) -> ProbitGP:
        """The probit GP fitted (fixed hyperparameters) to ``trials``' answers (cached)."""
        key = self._key(trials)
        if self._cache is None or self._cache[0] != key:
            data = self.data(trials)
            self._cache = (key, ProbitGP(self.kernel, data.X, data.y))
        return self._cache[1]

    def lens(self, x) -> Prescription:
        """``x = (S, C)`` as the lens set: rounded to the protocol's steps inside the box (a
        step of 0 keeps it continuous, the paper's simulation), at the fixed axis."""
        step = self.protocol.lenses.step_d
        box = self.problem.box
        x = np.asarray(x, dtype=float)
        if step:
            x = np.clip(np.round(x / step) * step, np.ceil(box[:, 0] / step) * step, np.floor(box[:, 1] / step) * step)
        return Prescription(float(x[0]), float(x[1]), self.axis_deg)

    # ------------------------------------------------------------------ the loop's interface
    def propose(self, trials, rng: np.random.Generator) -> tuple[float, Prescription, float | None]:
        """``(s, lens, None)``: the policy's query on the model of ``trials``."""
        q = self._policy(self.model(trials), self.problem, self.data(trials), rng)
        return float(q.s[0]), self.lens(q.x), None

    def estimate(
        self, trials, rng_best: np.random.Generator, rng_region: np.random.Generator | None, level: float
    ) -> CurrentEstimate:
        """Best lens ``argmax_x μ_c(s0, x)``, its credible region (when ``rng_region`` is given)
        and the predicted acuity through it."""
        model = self.model(trials)
        x = gp_estimate.best_lens(model, self.problem, rng_best)
        lens = in_form(Prescription(float(x[0]), float(x[1]), self.axis_deg), self.protocol.lenses.cylinder_form)
        region = None
        if rng_region is not None:
            cr = gp_estimate.credible_region(model, self.problem, rng_region, level=level)
            pv = np.array([Prescription(float(s), float(c), self.axis_deg).power_vector_array() for s, c in cr.maxima])
            region = region_from_samples(
                pv,
                np.full(len(pv), 1.0 / len(pv)),
                lens.power_vector_array(),
                level,
                self.protocol.lenses.cylinder_form,
                sphere_d=cr.sphere_d,
                cylinder_d=cr.cylinder_d,
            )
            region = dataclasses.replace(region, axis_pm_deg=None)  # the protocol fixes the axis: nothing to estimate
        va, lo, hi = gp_estimate.predicted_acuity(model, self.problem, x[None, :], level=level)
        rounded = in_form(
            self.lens(x) if self.protocol.lenses.step_d else lens.rounded(), self.protocol.lenses.cylinder_form
        )
        return CurrentEstimate(len(trials), lens, rounded, region, float(va[0]), (float(lo[0]), float(hi[0])))

    def precision_met(self, region: Region) -> bool:
        p = self.protocol.stopping.precision
        ws, wc = region.widths_d
        return ws <= p.sphere_d and wc <= p.cylinder_d

    def acuity_map(self, trials, estimate: CurrentEstimate) -> dict:
        return gp_estimate.acuity_map(self.model(trials), self.problem)

    def psychometric(self, trials, lens, level: float, n: int = 61):
        """``(s, p, lo, hi)``: the model's ``P(correct)`` against letter size through ``lens``
        (``μ_c = Φ(μ_f / √(1 + σ_f²))``, Fauvel & Chalk (binary/preferential BO), Eq. 3) and the band
        ``Φ(μ_f ± z σ_f)``."""
        s = np.linspace(*self.protocol.logmar_range, n)
        inputs = np.column_stack([s, np.tile([lens.sphere_d, lens.cylinder_d], (n, 1))])
        mu, var = self.model(trials).predict(inputs)
        sd = np.sqrt(np.maximum(var, 0.0))
        z = norm.ppf(0.5 + level / 2.0)
        return s, norm.cdf(mu / np.sqrt(1.0 + var)), norm.cdf(mu - z * sd), norm.cdf(mu + z * sd)

    def predicted_acuity(self, trials, rng: np.random.Generator) -> float:
        """Predicted acuity (logMAR) through the best lens of ``trials``' model."""
        model = self.model(trials)
        x = gp_estimate.best_lens(model, self.problem, rng)
        return float(gp_estimate.predicted_acuity(model, self.problem, x[None, :])[0][0])


def build_gp_engine(protocol: Protocol, start: StartingPoint, seed: int) -> GPEngine:
    """The GP model's engine (registered for ``model.type = "gp"`` in
    :mod:`visiontune.refraction.engine_registry`). The paper's model starts from its own design over
    the protocol's search box, not from ``start``, and draws only from the generators the loop
    hands it, so ``start`` and ``seed`` are not used."""
    return GPEngine(protocol)
