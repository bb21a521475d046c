"""The refraction experiment of Fauvel & Chalk (contextual BO) §5.3: one simulated run of the paper's GP policies.

A run is the paper's protocol (:func:`paper_protocol_text`: GP model, fixed hyperparameters,
continuous lenses in ``[-4, 4]²`` D at axis 180) driven through the one trial loop
(:class:`visiontune.refraction.loop.Refraction` over a :class:`~visiontune.refraction.loop.MemoryLog`),
the loop a clinical session runs over the SQLite store; the bench only adds the score, the
patient's true acuity through the session's estimate after every answer.

The kernel and its fitted hyperparameters live in :mod:`visiontune.reproduction.engines.gp_hyperparameters`
(re-exported here for the experiment's callers; refit them with
``python -m visiontune.reproduction.engines.gp_hyperparameters --regenerate``).
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from visiontune._validate import check_int, finite_array
from visiontune.errors import InvalidInputError
from visiontune.optics import SEARCH_BOX, Prescription, random_true_rx
from visiontune.refraction.loop import MemoryLog, Refraction, SimulatedPresenter
from visiontune.refraction.policies import GP_POLICIES
from visiontune.refraction.protocol import parse_protocol
from visiontune.refraction.simulated import paper_case
from visiontune.reproduction.acquisition import registry
from visiontune.reproduction.acquisition.binary_policies import Problem
from visiontune.reproduction.engines.gp_hyperparameters import (  # noqa: F401 (re-exported)
    _DEFAULT_CONTEXT,
    _DEFAULT_SEARCH,
    DEFAULT_REFERENCE_LOGMAR,
    FIT_SEED,
    FITTED_KERNEL_VARIANTS,
    FIXED_POLICIES,
    KERNEL_POWER_VECTOR,
    KERNEL_SE,
    KERNEL_SHORT_LENGTHSCALE,
    KERNEL_VARIANTS,
    N_FIT,
    SHORT_LENGTHSCALE_D,
    STORED_ALTERNATIVES,
    STORED_SLOPES,
    TS_ALD_SL,
    UCB_ALD_PV,
    UCB_ALD_SL,
    RefractionHyperparameters,
    _check_alternatives,
    _check_kernel_variant,
    _check_slope,
    fit_power_vector_hyperparameters,
    fit_refraction_hyperparameters,
    fitted_refraction_kernel,
    kernel_variant_hyperparameters,
    refraction_hyperparameters,
    refraction_kernel_variant,
    regenerate,
    short_lengthscale_hyperparameters,
    simulate_fit_data,
    stored_hyperparameters,
)
from visiontune.reproduction.gp import ProbitGP

__all__ = [
    "LOOP_KERNEL_VARIANTS",
    "PAPER_AXIS_DEG",
    "PAPER_INITIAL_RANDOM_TRIALS",
    "RefractionRun",
    "TrialRecord",
    "loop_policy",
    "paper_patient",
    "paper_protocol",
    "paper_protocol_text",
    "paper_true_rx",
    "policy_kernel",
    "posterior_acuity_map",
    "refraction_policy_names",
    "refraction_problem",
    "resolve_policy",
    "run_loop",
    "run_refraction",
]

# ======================================================================================
# One simulated run
# ======================================================================================


def refraction_problem(reference_context: float = DEFAULT_REFERENCE_LOGMAR):
    """The BO :class:`~visiontune.reproduction.acquisition.binary_policies.Problem`: lens box ``[-4, 4]²`` D, letter
    sizes ``[-1, 2]`` logMAR, reference letter size ``reference_context`` (logMAR)."""
    s0 = finite_array("reference_context", reference_context)
    if s0.ndim or not _DEFAULT_CONTEXT[0, 0] <= float(s0) <= _DEFAULT_CONTEXT[0, 1]:
        raise InvalidInputError(
            f"reference_context: expected one letter size in {_DEFAULT_CONTEXT[0].tolist()} logMAR, "
            f"got {reference_context!r}"
        )
    return Problem(box=_DEFAULT_SEARCH, context_box=_DEFAULT_CONTEXT, reference_context=np.array([float(s0)]))


def resolve_policy(name: str) -> str:
    """The canonical name of a refraction policy, matched case-insensitively: a registered
    contextual binary policy (UCB-ALD, TS-ALD, ...) or a named fix of :data:`FIXED_POLICIES`
    (``UCB-ALD-PV``, ``UCB-ALD-SL``)."""
    if not isinstance(name, str):
        raise InvalidInputError(f"policy: expected a name, got {type(name).__name__}")
    known = refraction_policy_names()
    by_lower = {n.lower(): n for n in known}
    found = by_lower.get(name.strip().lower())
    if found is None:
        raise InvalidInputError(f"policy: unknown contextual binary policy {name!r}; known: {', '.join(known)}")
    return found


def refraction_policy_names() -> list[str]:
    """Every refraction policy name :func:`resolve_policy` knows: the registry's contextual
    binary policies (the paper's rules and controls), then the named fixes of
    :data:`FIXED_POLICIES`. :func:`run_refraction` runs each of them but ``UCB-ALD-PV``, whose
    power-vector kernel the one trial loop does not have (:func:`loop_policy`)."""
    return [*registry.names("contextual-binary"), *FIXED_POLICIES]


def policy_kernel(name: str) -> tuple[str, str]:
    """``(registered policy, kernel variant)`` behind a refraction policy name: a registered
    policy runs on the paper's kernel (:data:`KERNEL_SE`); a named fix on its own kernel."""
    name = resolve_policy(name)
    return FIXED_POLICIES.get(name, (name, KERNEL_SE))


@dataclass(frozen=True)
class TrialRecord:
    """One trial: letter size ``s`` (logMAR), lens ``x = (S, C)`` (diopters), the answer
    ``correct``, the estimate ``x̂ = (S, C)`` after refitting on it, and ``va_logmar`` = the
    patient's true acuity through ``x̂`` (logMAR)."""

    s: float
    x: tuple[float, float]
    correct: bool
    estimate: tuple[float, float]
    va_logmar: float

    def to_dict(self) -> dict:
        return {
            "s": self.s,
            "x": list(self.x),
            "correct": self.correct,
            "estimate": list(self.estimate),
            "va_logmar": self.va_logmar,
        }


@dataclass(frozen=True)
class RefractionRun:
    """A simulated refraction: the patient's ``true_rx``, one :class:`TrialRecord` per answer,
    and the settings. The final estimate is the last record's; ``final_model`` (the probit GP
    after the last answer) is kept for plots and left out of comparisons."""

    policy: str
    seed: int
    slope: float
    n_alternatives: int
    best_corrected_logmar: float
    lapse: float
    inference: str
    reference_context: float
    hyperparameters: RefractionHyperparameters
    true_rx: Prescription
    records: tuple[TrialRecord, ...]
    final_model: ProbitGP | None = field(default=None, compare=False, repr=False)
    kernel_variant: str = "refraction-se"

    @property
    def final_estimate(self) -> Prescription:
        """The lens found (sphere, cylinder in diopters; the true correction's axis)."""
        S, C = self.records[-1].estimate
        return Prescription(S, C, self.true_rx.axis_deg)

    @property
    def sphere_error_d(self) -> float:
        """``|Ŝ - S*|`` (diopters)."""
        return abs(self.records[-1].estimate[0] - self.true_rx.sphere_d)

    @property
    def cylinder_error_d(self) -> float:
        """``|Ĉ - C*|`` (diopters)."""
        return abs(self.records[-1].estimate[1] - self.true_rx.cylinder_d)

    @property
    def final_va_logmar(self) -> float:
        """True acuity through the final estimate (logMAR)."""
        return self.records[-1].va_logmar

    def to_json_dict(self) -> dict:
        """JSON-ready summary (the ``visiontune simulate --json`` schema), marked simulated."""
        return {
            "simulated": True,
            "policy": self.policy,
            "seed": self.seed,
            "slope": self.slope,
            "n_alternatives": self.n_alternatives,
            "best_corrected_logmar": self.best_corrected_logmar,
            "lapse": self.lapse,
            "inference": self.inference,
            "reference_context_logmar": self.reference_context,
            **({"kernel": self.kernel_variant} if self.kernel_variant != KERNEL_SE else {}),
            "hyperparameters": self.hyperparameters.to_dict(),
            "true_rx": {
                "sphere_d": self.true_rx.sphere_d,
                "cylinder_d": self.true_rx.cylinder_d,
                "axis_deg": self.true_rx.axis_deg,
            },
            "trials": [r.to_dict() for r in self.records],
            "final": {
                "sphere_d": self.records[-1].estimate[0],
                "cylinder_d": self.records[-1].estimate[1],
                "sphere_error_d": self.sphere_error_d,
                "cylinder_error_d": self.cylinder_error_d,
                "va_logmar": self.final_va_logmar,
            },
        }


#: The fixed cylinder axis of the paper's search (Fauvel & Chalk (contextual BO), §5.3).
PAPER_AXIS_DEG = 180.0
#: Initial random trials of the paper's rules (Fauvel & Chalk (contextual BO), §4.1).
PAPER_INITIAL_RANDOM_TRIALS = 5
#: Registry policy name -> GP protocol policy name (``"UCB-ALD"`` -> ``"ucb-ald"``).
_PROTOCOL_POLICY = {registry: name for name, registry in GP_POLICIES.items()}


def _check_true_rx(true_rx) -> Prescription | None:
    if true_rx is None:
        return None
    if not isinstance(true_rx, Prescription):
        arr = finite_array("true_rx", true_rx)
        if arr.shape != (2,):
            raise InvalidInputError(
                f"true_rx: expected a Prescription or (sphere_d, cylinder_d), got shape {arr.shape}"
            )
        true_rx = Prescription(float(arr[0]), float(arr[1]), 180.0)
    if true_rx.cylinder_d != 0.0 and true_rx.axis_deg != PAPER_AXIS_DEG:
        raise InvalidInputError(
            f"true_rx: the paper's GP model searches sphere and cylinder at the fixed axis "
            f"{PAPER_AXIS_DEG:g} (Fauvel & Chalk (contextual BO), §5.3); got axis {true_rx.axis_deg:g}. "
            f"For any axis use `visiontune session run --simulate` with an optics protocol"
        )
    if not SEARCH_BOX.contains([true_rx.sphere_d, true_rx.cylinder_d])[0]:
        raise InvalidInputError(
            f"true_rx: ({true_rx.sphere_d:g}, {true_rx.cylinder_d:g}) D is outside the search space [-4, 4] x [-4, 4] D"
        )
    return Prescription(true_rx.sphere_d, true_rx.cylinder_d, PAPER_AXIS_DEG)


def _toml_float(x: float) -> str:
    """``x`` as a TOML float that reads back to the same double (``repr`` round-trips)."""
    text = repr(float(x))
    return text if any(c in text for c in ".en") else text + ".0"


def paper_protocol_text(
    policy_name: str, *, slope: float, trials: int, n_alternatives: int = 26, seed: int = 0, kernel: str | None = None
) -> str:
    """The refraction protocol of Fauvel & Chalk (contextual BO), §5.3 for one rule, as TOML text for
    :func:`~visiontune.refraction.protocol.parse_protocol`: the GP model on ``refraction-se``
    with the rule's kernel-variant hyperparameters held fixed (the paper's fit at ``slope`` and
    ``n_alternatives``, or its 2 D lengthscales for the ``-SL`` rules), the lens box
    ``[-4, 4]²`` D at axis 180, letter sizes ``[-1, 2]`` logMAR, continuous lenses
    (``[lenses] step_d = 0``, as the paper simulates), 5 initial random trials, ``trials``
    answers and no precision stop. Rules the loop cannot express are refused
    (:func:`loop_policy`)."""
    base, variant = loop_policy(policy_name, kernel)
    slope, n_alternatives = _check_slope(slope), _check_alternatives(n_alternatives)
    if n_alternatives > 26:
        raise InvalidInputError(f"n_alternatives: the loop's letter sets hold at most 26 letters, got {n_alternatives}")
    hp = kernel_variant_hyperparameters(variant, slope, n_alternatives)
    ls = ", ".join(_toml_float(v) for v in hp.lengthscales)
    rule = resolve_policy(policy_name)
    description = (
        f"Fauvel & Chalk (contextual BO) section 5.3: {rule}, slope {slope:g}, {n_alternatives} letters, "
        f"[-4, 4]^2 D at axis 180, {trials} trials"
    )
    return f"""name = "paper-{rule.lower()}"
description = "{description}"
policy = "{_PROTOCOL_POLICY[base]}"
seed = {int(seed)}
initial_random_trials = {min(PAPER_INITIAL_RANDOM_TRIALS, int(trials))}

[search_space]
sphere_d = [{_toml_float(_DEFAULT_SEARCH[0, 0])}, {_toml_float(_DEFAULT_SEARCH[0, 1])}]
cylinder_d = [{_toml_float(_DEFAULT_SEARCH[1, 0])}, {_toml_float(_DEFAULT_SEARCH[1, 1])}]
axis_deg = {_toml_float(PAPER_AXIS_DEG)}

[context_space]
logmar = [{_toml_float(_DEFAULT_CONTEXT[0, 0])}, {_toml_float(_DEFAULT_CONTEXT[0, 1])}]

[letters]
set = "letters26"
n_alternatives = {n_alternatives}

[lenses]
step_d = 0

[stopping]
max_trials = {int(trials)}

[model]
type = "gp"
kernel = "{KERNEL_SE}"
# {variant} at slope {slope:g}, {n_alternatives} alternatives (Fauvel & Chalk (contextual BO), §5.2), held fixed
hyperparameters = {{ theta = {_toml_float(hp.theta)}, lengthscales = [{ls}], variance = {_toml_float(hp.variance)} }}
"""


def paper_protocol(
    policy_name: str, *, slope: float, trials: int, n_alternatives: int = 26, seed: int = 0, kernel: str | None = None
):
    """:func:`paper_protocol_text` parsed and validated (a
    :class:`~visiontune.refraction.protocol.Protocol`)."""
    text = paper_protocol_text(
        policy_name, slope=slope, trials=trials, n_alternatives=n_alternatives, seed=seed, kernel=kernel
    )
    return parse_protocol(text, source=f"<paper protocol {resolve_policy(policy_name)}>")


def loop_policy(policy_name: str, kernel: str | None = None) -> tuple[str, str]:
    """``(registered policy, kernel variant)`` of a rule as the one trial loop runs it. The
    loop's GP engine has the paper's kernel ``refraction-se`` only, with fixed hyperparameters,
    so the short-lengthscale variant (``-SL`` rules) runs (it is ``refraction-se`` with 2 D
    lengthscales) and the power-vector kernel (``UCB-ALD-PV``) is refused."""
    name = resolve_policy(policy_name)
    base, own_kernel = policy_kernel(name)
    if kernel is None:
        kernel = own_kernel
    elif name in FIXED_POLICIES and kernel != own_kernel:
        raise InvalidInputError(f"kernel: policy {name} runs on {own_kernel!r}, got {kernel!r}")
    variant = _check_kernel_variant(kernel)
    if variant not in LOOP_KERNEL_VARIANTS:
        raise InvalidInputError(
            f"kernel: {variant!r} ({name}) cannot run through the one trial loop: its GP engine has only the "
            f"paper's kernel {KERNEL_SE!r} (protocol model.kernel); the power-vector kernel was an investigation "
            f"of the standalone loop (docs/results/refraction-investigation.md)"
        )
    if base not in _PROTOCOL_POLICY:
        raise InvalidInputError(f"policy: {base} has no GP protocol name (visiontune.refraction.policies.GP_POLICIES)")
    return base, variant


#: Kernel variants the loop's GP engine runs: the paper's kernel, with fitted or 2 D lengthscales.
LOOP_KERNEL_VARIANTS = (KERNEL_SE, KERNEL_SHORT_LENGTHSCALE)


def _at_axis(lens: Prescription, axis_deg: float) -> tuple[float, float]:
    """``(S, C)`` of ``lens`` written at ``axis_deg`` (transposed back from the clinic's
    cylinder form when its axis is the perpendicular one)."""
    if lens.cylinder_d == 0.0 or abs((lens.axis_deg - axis_deg + 90.0) % 180.0 - 90.0) < 45.0:
        return float(lens.sphere_d), float(lens.cylinder_d)
    t = lens.transposed()
    return float(t.sphere_d), float(t.cylinder_d)


def paper_patient(
    seed: int, protocol, true_rx: Prescription, *, slope: float, best_corrected_logmar: float = 0.0, lapse: float = 0.0
):
    """The simulated patient of one run: the session's patient of a GP protocol
    (:func:`visiontune.refraction.simulated.paper_case`, answers keyed by ``(seed, trial)``)
    with the given correction, slope, best acuity and lapse."""
    import dataclasses

    case = dataclasses.replace(
        paper_case(int(seed), protocol),
        true_rx=true_rx,
        slope=float(slope),
        best_corrected_logmar=float(best_corrected_logmar),
        lapse=float(lapse),
    )
    return case.patient(protocol.n_alternatives)


def paper_true_rx(seed: int) -> Prescription:
    """The patient of repetition ``seed``: uniform in ``[-4, 4]²`` D at axis 180, from the
    first of ``SeedSequence(seed).spawn(4)`` (the standalone loop's draw, kept so that every
    experiment since the stall investigation sees the same 20 patients)."""
    rx_seq = np.random.SeedSequence(int(seed)).spawn(4)[0]
    return random_true_rx(np.random.default_rng(rx_seq))


def run_refraction(
    policy_name: str,
    *,
    slope: float,
    trials: int,
    seed: int,
    true_rx=None,
    n_alternatives: int = 26,
    best_corrected_logmar: float = 0.0,
    lapse: float = 0.0,
    inference: str = "laplace",
    reference_context: float = DEFAULT_REFERENCE_LOGMAR,
    progress: Callable[[int, int, TrialRecord], None] | None = None,
    kernel: str | None = None,
) -> RefractionRun:
    """Simulate one refraction (Fauvel & Chalk (contextual BO), §5.3) through the one trial loop.

    The rule runs as a GP protocol (:func:`paper_protocol_text`) in
    :class:`visiontune.refraction.loop.Refraction` over a :class:`~visiontune.refraction.loop.MemoryLog`,
    exactly as ``visiontune session run --simulate`` runs a protocol over the SQLite store:
    each trial the policy proposes ``(s, x)`` from the probit GP refit (from scratch, fixed
    hyperparameters) on the answers so far (the first 5 at random, Fauvel & Chalk (contextual BO), §4.1); the simulated
    patient answers trial ``k`` from its stream keyed by ``(seed, k)`` with
    ``P = γ + (1-γ-λ) Φ(a (s - VA(x)))`` (Fauvel & Chalk (contextual BO), Eq. 13); then the session's estimate
    ``x̂ = argmax_x μ_c(0, x)`` (:func:`visiontune.reproduction.engines.gp_estimate.best_lens`) and the
    patient's true ``VA(x̂)`` are recorded. Every random choice of trial ``k`` draws from
    ``default_rng([seed, k, purpose])``. ``progress(k, trials, record)`` is called after each
    trial (k from 1).

    ``true_rx``: a :class:`Prescription` at axis 180 or ``(S, C)``; default
    :func:`paper_true_rx` (uniform in ``[-4, 4]²``). ``policy_name``: any of
    :func:`refraction_policy_names` but ``UCB-ALD-PV``; ``"UCB-ALD-SL"`` / ``"TS-ALD-SL"`` are the
    registry rules with 2 D lengthscales. ``kernel``: ``None`` = the policy's own;
    ``"refraction-se"`` or ``"refraction-se-short-lengthscale"``. ``inference`` must be
    ``"laplace"`` and ``reference_context`` 0: the loop's GP engine fits by Laplace and
    evaluates the x-rule and the estimate at ``s0 = 0`` logMAR (refused otherwise).
    """
    policy_name = resolve_policy(policy_name)
    _, variant = loop_policy(policy_name, kernel)
    slope, n_alternatives = _check_slope(slope), _check_alternatives(n_alternatives)
    check_int("trials", trials, lo=1)
    check_int("seed", seed, lo=0)
    true_rx = _check_true_rx(true_rx)
    if inference not in ("laplace", "ep"):
        raise InvalidInputError(f"inference: expected 'laplace' or 'ep', got {inference!r}")
    if inference != "laplace":
        raise InvalidInputError(
            "inference: the one trial loop's GP engine fits by Laplace only "
            "(visiontune.reproduction.engines.gp_engine); 'ep' is not available"
        )
    s0 = float(refraction_problem(reference_context).reference_context[0])
    if s0 != DEFAULT_REFERENCE_LOGMAR:
        raise InvalidInputError(
            f"reference_context: the one trial loop evaluates the x-rule and the estimate at "
            f"s0 = {DEFAULT_REFERENCE_LOGMAR:g} logMAR (gp_engine.REFERENCE_LOGMAR), got {s0:g}"
        )
    protocol = paper_protocol(
        policy_name, slope=slope, trials=int(trials), n_alternatives=n_alternatives, seed=int(seed), kernel=variant
    )
    hp = kernel_variant_hyperparameters(variant, slope, n_alternatives)
    if true_rx is None:
        true_rx = paper_true_rx(int(seed))
    patient = paper_patient(
        int(seed), protocol, true_rx, slope=slope, best_corrected_logmar=best_corrected_logmar, lapse=lapse
    )
    refraction = Refraction(MemoryLog(), protocol, seed=int(seed), simulated=True)
    axis = float(protocol.search_space.axis_deg)
    records: list[TrialRecord] = []

    def record(trial, r) -> None:
        est = _at_axis(r.current_estimate(with_region=False).lens, axis)
        rec = TrialRecord(
            float(trial.s_logmar),
            (float(trial.lens.sphere_d), float(trial.lens.cylinder_d)),
            bool(trial.correct),
            est,
            float(patient.acuity_logmar(Prescription(*est, axis))),
        )
        records.append(rec)
        if progress is not None:
            progress(len(records), int(trials), rec)

    run_loop(refraction, SimulatedPresenter(patient), record)
    model = refraction.engine.model(refraction.trials())
    return RefractionRun(
        policy_name,
        int(seed),
        slope,
        n_alternatives,
        float(best_corrected_logmar),
        float(lapse),
        inference,
        s0,
        hp,
        true_rx,
        tuple(records),
        model,
        variant,
    )


def run_loop(refraction, presenter, progress) -> None:
    """Drive ``refraction`` to its budget as :meth:`~visiontune.refraction.loop.Refraction.run`
    does (propose, present, record, ``progress(trial, refraction)``), without its ``finish``:
    the bench scores the estimate after every answer and needs neither the session result's
    credible region nor its replayed acuity curve."""
    while refraction.stop_reason() is None:
        query = refraction.next_query()
        refraction.mark_presented()
        trial = refraction.record(presenter.present(query))
        progress(trial, refraction)


def posterior_acuity_map(model: ProbitGP, n: int = 41, n_s: int = 121):
    """Predicted acuity (logMAR) on an ``n × n`` lens grid: ``(spheres (n,), cylinders (n,), va (n, n))``.

    ``va[i, j]`` is the smallest letter size where the latent mean ``μ_f(s, x)`` reaches 0, i.e.
    the model's ``P(correct) = ½`` (Fauvel & Chalk (contextual BO), Eq. 14 with ``γ ≈ 0``, §5.2), linearly interpolated
    on a grid of ``n_s`` sizes in ``[-1, 2]``; the top of the box where it never does.
    """
    spheres = np.linspace(*_DEFAULT_SEARCH[0], n)
    cylinders = np.linspace(*_DEFAULT_SEARCH[1], n)
    lenses = np.stack(np.meshgrid(spheres, cylinders, indexing="ij"), axis=-1).reshape(-1, 2)
    s_grid = np.linspace(*_DEFAULT_CONTEXT[0], n_s)
    inputs = np.column_stack([np.repeat(s_grid, len(lenses)), np.tile(lenses, (n_s, 1))])
    mu = model.predict(inputs)[0].reshape(n_s, len(lenses))
    reached = mu >= 0
    first = np.argmax(reached, axis=0)
    j = np.clip(first, 1, n_s - 1)
    cols = np.arange(len(lenses))
    v0, v1 = mu[j - 1, cols], mu[j, cols]
    with np.errstate(divide="ignore", invalid="ignore"):
        t = np.clip(np.where(v1 != v0, v0 / (v0 - v1), 0.0), 0.0, 1.0)
    va = s_grid[j - 1] + t * (s_grid[j] - s_grid[j - 1])
    va[reached[0]] = s_grid[0]
    va[~reached.any(axis=0)] = s_grid[-1]
    return spheres, cylinders, va.reshape(n, n)


if __name__ == "__main__":  # pragma: no cover
    # The hyperparameter fit moved to visiontune.reproduction.engines.gp_hyperparameters; the shipped data
    # file still names this module's command, so it keeps working.
    from visiontune.reproduction.engines.gp_hyperparameters import main

    sys.exit(main())
