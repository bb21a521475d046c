"""From a protocol to the pieces a session runs on: the BO problem, the kernel, the policy.

Model inputs are ``(s, S, C)``: letter size (logMAR), sphere and cylinder (diopters), at the
protocol's fixed cylinder axis. Kernel ``θ s s' + k_SE((S, C), (S', C'))`` (seed 002, Eq. 15).
"""

from __future__ import annotations

import numpy as np

from visiontune.acquisition import registry
from visiontune.acquisition.policy import Problem
from visiontune.errors import ProtocolError
from visiontune.gp import Kernel, refraction_kernel
from visiontune.session.protocol import Protocol

#: Reference letter size (logMAR) at which the x-rule and the reported estimate are evaluated:
#: logMAR 0 (20/20), the acuity of the paper's best-corrected patient (002 §5.1), where
#: ``f(0, x) = b(x)`` is the latent acuity term alone (Eq. 14 with ``s = 0``).
REFERENCE_LOGMAR = 0.0

DEFAULT_AXIS_DEG = 180.0

#: Trial lenses (trial sets, phoropters) come in quarter-diopter steps: the proposed lens is
#: rounded to the nearest one inside the search box, and the model learns from the lens set.
LENS_STEP_D = 0.25


def axis_deg(protocol: Protocol) -> float:
    """The protocol's fixed cylinder axis in degrees, ``(0, 180]`` (0 is written 180)."""
    axis = protocol.search_space.axis_deg
    if axis is None:
        return DEFAULT_AXIS_DEG
    return 180.0 if float(axis) % 180.0 == 0.0 else float(axis) % 180.0


def problem(protocol: Protocol) -> Problem:
    """The contextual BO problem: lens box ``(S, C)``, context box ``s``, reference context."""
    sp = protocol.search_space
    lo, hi = protocol.logmar_range
    s0 = float(np.clip(REFERENCE_LOGMAR, lo, hi))
    return Problem(
        box=np.array([sp.sphere_d, sp.cylinder_d], dtype=float),
        context_box=np.array([[lo, hi]], dtype=float),
        reference_context=np.array([s0]),
    )


def trial_lens(x, problem: Problem) -> tuple[float, float]:
    """``(sphere, cylinder)`` of the proposed lens ``x (2,)`` rounded to :data:`LENS_STEP_D`
    steps, kept inside the search box."""
    box = problem.box
    steps = np.round(np.asarray(x, dtype=float) / LENS_STEP_D) * LENS_STEP_D
    inside = np.clip(steps, np.ceil(box[:, 0] / LENS_STEP_D) * LENS_STEP_D, np.floor(box[:, 1] / LENS_STEP_D) * LENS_STEP_D)
    return float(inside[0]), float(inside[1])


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


def kernel(protocol: Protocol) -> Kernel:
    """The GP kernel the protocol asks for, with its hyperparameters held fixed.

    ``model.hyperparameters``: ``theta`` (linear variance of ``s``), ``lengthscales``
    ``[sphere, cylinder]`` (diopters), ``variance`` (SE output variance).
    ``model.fit = "simulation"``: maximum likelihood on 1000 simulated answers (002 §5.2),
    see :func:`visiontune.bench.refraction.fitted_refraction_kernel`.
    """
    spec = protocol.model
    if spec.kernel != "refraction-se":
        raise ProtocolError(f"{protocol.source}: model.kernel: {spec.kernel!r} is not supported by the session engine yet "
                            f"(supported: 'refraction-se')")  # fmt: skip
    if spec.hyperparameters is not None:
        hp = dict(spec.hyperparameters)
        missing = {"theta", "lengthscales", "variance"} - hp.keys()
        if missing:
            raise ProtocolError(f"{protocol.source}: model.hyperparameters: missing {', '.join(sorted(missing))}")
        lengthscales = np.atleast_1d(np.asarray(hp["lengthscales"], dtype=float))
        if lengthscales.shape[0] not in (1, 2):
            raise ProtocolError(f"{protocol.source}: model.hyperparameters.lengthscales: expected 1 or 2 values, "
                                f"found {lengthscales.shape[0]}")  # fmt: skip
        return refraction_kernel(float(hp["theta"]), np.broadcast_to(lengthscales, (2,)).copy(), float(hp["variance"]))
    from visiontune.bench.refraction import fitted_refraction_kernel

    return fitted_refraction_kernel(
        slope=design_slope(protocol),
        n_alternatives=protocol.n_alternatives,
        search_box=np.array([protocol.search_space.sphere_d, protocol.search_space.cylinder_d], dtype=float),
        context_box=np.array([protocol.logmar_range], dtype=float),
    )


def policy(protocol: Protocol):
    """The registered policy named by the protocol (names match case-blind), with the
    protocol's number of initial random trials."""
    by_lower = {name.lower(): name for name in registry.names()}
    name = by_lower.get(protocol.policy.lower())
    if name is None:
        raise ProtocolError(f"{protocol.source}: policy: unknown policy {protocol.policy!r}; "
                            f"known: {', '.join(sorted(registry.names('contextual-binary')))}")  # fmt: skip
    spec = registry.get(name)
    if spec.scenario != "contextual-binary":
        raise ProtocolError(f"{protocol.source}: policy: {protocol.policy!r} is a {spec.scenario} policy; "
                            f"a letter-chart session needs a contextual binary one")  # fmt: skip
    return registry.make(name, n_initial=protocol.initial_random_trials)
