"""``model.filed_lens = "most-probable"`` (visiontune.refraction.optics_engine): the trial lens filed
is, among the rounded estimate and its neighbouring trial lenses, the one most probably within
0.25 D (power-vector length) of the correction. Checked against closed forms on posteriors whose
answer is known (an isotropic normal posterior: the probability is a noncentral chi-square, and
the best lens is the trial lens nearest the posterior mean), with the over-minus guard as a
constraint, and on sessions: never less probable than the rounded lens, the protocol's setting
and its errors."""

from __future__ import annotations

import dataclasses
import itertools

import numpy as np
import pytest
from scipy import stats

from visiontune.errors import InvalidInputError, ProtocolError
from visiontune.optics import Prescription
from visiontune.refraction.estimate import weighted_quantile
from visiontune.refraction.lenses import LensSteps, neighbouring_lenses, trial_lens, trial_lens_power_vectors
from visiontune.refraction.loop import MemoryLog, make_engine
from visiontune.refraction.optics_engine import FILED_WITHIN_D, OVER_MINUS_D
from visiontune.refraction.protocol import load_protocol, parse_protocol
from visiontune.refraction.start import StartingPoint
from visiontune.refraction.trial import Trial

SHIPPED = load_protocol("clinical-sloan-compare")
LETTERS = load_protocol("clinical-sloan")
STEPS = LensSteps(axis_origin_deg=37.0)


def _most_probable():
    text = LETTERS.source_text.replace('type = "optics"', 'type = "optics"\nfiled_lens = "most-probable"')
    return parse_protocol(text, "most-probable.toml")


class _Draws:
    """Equally weighted draws of the correction, as the engine reads them (``theta``, ``weights``,
    ``best_correction``)."""

    def __init__(self, pv: np.ndarray) -> None:
        self.theta = np.column_stack([pv, np.zeros((len(pv), 3))])
        self.weights = np.full(len(pv), 1.0 / len(pv))

    def best_correction(self) -> np.ndarray:
        return self.theta[:, :3].mean(axis=0)


def _engine(protocol, age=60.0, cylinder=0.0):
    """An engine from an autorefraction of -2.00 D sphere and ``cylinder`` (axis 37)."""
    return make_engine(protocol, StartingPoint(Prescription(-2.0, cylinder, 37.0), "autorefraction", age), 3)


def _window_probability(draws: _Draws, lens: Prescription) -> float:
    d = np.linalg.norm(draws.theta[:, :3] - lens.power_vector_array(), axis=1)
    return float(draws.weights @ (d <= FILED_WITHIN_D + 1e-9))


# ------------------------------------------------------------------ the neighbours


@pytest.mark.parametrize(
    "lens",
    [
        Prescription(-1.25, -0.75, 92.0),
        Prescription(2.0, -0.25, 7.0),
        Prescription(0.5, 0.0, 180.0),
        Prescription(-3.0, -2.5, 167.0),
    ],
)
def test_the_neighbours_are_distinct_trial_lenses_around_the_lens(lens):
    lens = trial_lens(lens.power_vector_array(), STEPS)
    near = neighbouring_lenses(lens, STEPS)
    assert near[0] == lens.to_minus_cylinder()
    pv = np.array([x.power_vector_array() for x in near])
    assert len({tuple(np.round(v, 9)) for v in pv}) == len(near)  # none twice
    np.testing.assert_allclose(trial_lens_power_vectors(pv, STEPS), pv, atol=1e-9)  # each is a trial lens
    for x in near:
        assert x.cylinder_d <= 0.0
        assert abs(x.sphere_d - lens.to_minus_cylinder().sphere_d) <= 0.5 + 1e-9
        assert abs(x.cylinder_d - lens.to_minus_cylinder().cylinder_d) <= 0.25 + 1e-9
    spheres = {round(x.sphere_d - lens.to_minus_cylinder().sphere_d, 6) for x in near}
    assert spheres == {-0.5, -0.25, 0.0, 0.25, 0.5}


def test_a_lens_without_cylinder_gains_one_at_the_axis_given():
    near = neighbouring_lenses(Prescription(-1.25, 0.0, 180.0), LensSteps(), axis_deg=30.0)
    axes = {x.axis_deg for x in near if x.cylinder_d != 0.0}
    assert axes == {15.0, 30.0, 45.0}  # 0.25 D of cylinder turns in 15° steps
    assert {x.cylinder_d for x in near} == {0.0, -0.25}
    with pytest.raises(InvalidInputError, match="steps.step_d: neighbouring trial lenses need a lens step above 0"):
        neighbouring_lenses(Prescription(-1.0, 0.0, 180.0), LensSteps(step_d=0.0))


# ------------------------------------------------------------------ the choice, against closed forms


@pytest.mark.parametrize(
    "mean, sd", [((-1.62, 0.31, -0.12), 0.08), ((0.43, -0.05, 0.19), 0.12), ((-2.9, 0.6, 0.45), 0.1)]
)
def test_an_isotropic_posterior_files_the_trial_lens_nearest_its_mean(mean, sd):
    """For ``P* ~ N(μ, σ² I)``, ``|P(L) - P*|² / σ²`` is noncentral chi-square (3 degrees, noncentrality
    ``|P(L) - μ|² / σ²``), so the probability of the 0.25 D window falls with ``|P(L) - μ|``: the lens
    filed is the trial lens nearest ``μ`` (found by brute force over a wide grid of trial lenses),
    and its probability is the closed form's (Monte Carlo, 200 000 draws)."""
    mu = np.array(mean)
    draws = _Draws(np.random.default_rng(5).normal(mu, sd, (200_000, 3)))
    engine = _engine(_most_probable())
    steps = engine.protocol.lenses
    rounded = trial_lens(mu, steps)
    filed = engine._most_probable_lens(rounded, draws, guarded=False)
    grid = [
        Prescription(s, c, a)
        for s, c, a in itertools.product(
            np.arange(-4.0, 2.01, 0.25),
            np.arange(-2.0, 0.01, 0.25),
            (steps.axis_origin_deg + np.arange(1.0, 37.0) * steps.axis_step_deg) % 180.0 + 0.0,
        )
    ]
    pv = np.array([g.power_vector_array() for g in grid])
    pv = pv[np.all(np.abs(trial_lens_power_vectors(pv, steps) - pv) < 1e-9, axis=1)]  # the trial lenses among them
    nearest = pv[np.argmin(np.linalg.norm(pv - mu, axis=1))]
    np.testing.assert_allclose(filed.power_vector_array(), nearest, atol=1e-9)
    exact = stats.ncx2.cdf(FILED_WITHIN_D**2 / sd**2, 3, np.sum((nearest - mu) ** 2) / sd**2)
    assert _window_probability(draws, filed) == pytest.approx(exact, abs=4e-3)


def test_it_is_never_less_probable_than_the_rounded_lens_and_moves_when_rounding_misses():
    """A posterior lying between trial lenses: the rounded estimate (its mean, rounded one coordinate
    at a time) is less probably within 0.25 D than the lens filed, whose probability is the
    largest among every neighbour (brute force)."""
    rng = np.random.default_rng(8)
    engine = _engine(_most_probable())
    steps = engine.protocol.lenses
    moved = 0
    for _ in range(20):
        mu = np.array([rng.uniform(-3, 1), rng.uniform(-0.6, 0.6), rng.uniform(-0.6, 0.6)])
        cov = np.diag(rng.uniform(0.05, 0.2, 3) ** 2)
        draws = _Draws(rng.multivariate_normal(mu, cov, 20_000))
        rounded = trial_lens(draws.best_correction(), steps)
        filed = engine._most_probable_lens(rounded, draws, guarded=False)
        p = [_window_probability(draws, x) for x in neighbouring_lenses(rounded, steps, axis_deg=rounded.axis_deg)]
        assert _window_probability(draws, filed) == pytest.approx(max(p), abs=1e-12)
        assert _window_probability(draws, filed) >= _window_probability(draws, rounded)
        moved += filed.power_vector_array().round(9).tolist() != rounded.power_vector_array().round(9).tolist()
    assert moved > 0


def test_with_the_guard_only_lenses_as_plus_as_the_guarded_one_are_weighed():
    """Posteriors of ``M*`` with a long plus tail (an accommodating eye): the most probable lens
    unguarded is more minus than ``Q_97.5%(M*) - 0.25 D``; guarded, the lens filed is the most
    probable of the guard's lens and its neighbours at least as plus as it (never more minus than
    the guard's), so the guard has nothing left to move; in some of them that is not the guard's
    lens itself."""
    engine = _engine(
        dataclasses.replace(
            _most_probable(), model=dataclasses.replace(_most_probable().model, over_minus_guard="young")
        ),
        age=25.0,
    )
    rng = np.random.default_rng(2)
    moved = 0
    for _ in range(12):
        core, tail = rng.uniform(-2.0, -1.0), rng.uniform(0.5, 1.2)
        m = np.concatenate([rng.normal(core, 0.06, 8000), rng.uniform(core, core + tail, 2000)])
        j = rng.normal(rng.uniform(-0.3, 0.3, 2), 0.05, (10_000, 2))
        draws = _Draws(np.column_stack([m, j]))
        rounded = trial_lens(draws.best_correction(), engine.protocol.lenses)
        bound = weighted_quantile(m, draws.weights, 0.975) - OVER_MINUS_D
        guarded = engine._not_over_minus(rounded, draws)
        floor = guarded.power_vector_array()[0]
        free = engine._most_probable_lens(rounded, draws, guarded=False)
        filed = engine.filed_lens(draws)
        assert free.power_vector_array()[0] < bound <= floor <= filed.power_vector_array()[0] + 1e-9
        allowed = [
            x
            for x in neighbouring_lenses(guarded, engine.protocol.lenses, axis_deg=rounded.axis_deg)
            if x.power_vector_array()[0] >= floor - 1e-9
        ]
        best = max(_window_probability(draws, x) for x in allowed)
        assert _window_probability(draws, filed) == pytest.approx(best)
        assert filed == engine._not_over_minus(filed, draws)
        moved += _window_probability(draws, filed) > _window_probability(draws, guarded)
    assert moved > 0


def test_with_a_start_cylinder_the_axis_is_the_one_kept():
    """The start's axis is kept unless the answers show otherwise (``_kept_axis``); the lens filed
    weighs sphere and cylinder power at that axis only, and a new cylinder takes the start's axis,
    though a posterior between axes would be likelier a step away."""
    engine = _engine(_most_probable(), cylinder=-1.25)
    rng = np.random.default_rng(3)
    for mean, axis in (((-2.6, 0.2, 0.55), 37.0), ((-2.1, 0.05, 0.05), 37.0)):
        draws = _Draws(rng.normal(mean, 0.05, (20_000, 3)))
        lens = engine._kept_axis(draws)
        filed = engine._most_probable_lens(lens, draws, guarded=False)
        if filed.cylinder_d != 0.0:
            assert filed.to_minus_cylinder().axis_deg == axis
        near = neighbouring_lenses(lens, engine.protocol.lenses, axis_deg=axis, axis_steps=0)
        assert _window_probability(draws, filed) == pytest.approx(max(_window_probability(draws, x) for x in near))
    free = _engine(_most_probable())._most_probable_lens(lens, draws, guarded=False)
    assert _window_probability(draws, free) >= _window_probability(draws, filed)


def test_a_session_files_the_most_probable_lens_and_rounded_files_as_before():
    """The same answers under ``"rounded"`` and ``"most-probable"``: the estimate and its region are
    the same; the lens filed is the rounded one or a neighbour at least as probably within 0.25 D."""
    plain, best = _engine(LETTERS, age=45.0), _engine(_most_probable(), age=45.0)
    log = MemoryLog()
    rng = np.random.default_rng(4)
    for k in range(25):
        s, lens, _ = plain.propose(log.trials(), np.random.default_rng([3, k, 0]))
        log.record(Trial(k, s, lens, "H", bool(rng.random() < 0.7)))
    trials = log.trials()
    a = plain.estimate(trials, np.random.default_rng(0), np.random.default_rng(1), 0.95)
    b = best.estimate(trials, np.random.default_rng(0), np.random.default_rng(1), 0.95)
    assert a.lens == b.lens and a.region == b.region
    post = best.posterior(trials)
    assert _window_probability(post, b.rounded) >= _window_probability(post, a.rounded)
    assert b.rounded.to_minus_cylinder() in neighbouring_lenses(
        a.rounded, best.protocol.lenses, axis_deg=a.lens.to_minus_cylinder().axis_deg
    )


def test_the_setting_and_its_errors():
    assert SHIPPED.model.filed_lens == "most-probable" and LETTERS.model.filed_lens == "rounded"
    engine = _engine(LETTERS)
    with pytest.raises(InvalidInputError, match="rule: expected None or one of most-probable, rounded, got 'nearest'"):
        engine.filed_lens(engine.posterior([]), "nearest")
    text = LETTERS.source_text.replace('type = "optics"', 'type = "optics"\nfiled_lens = "nearest"')
    with pytest.raises(
        ProtocolError, match='model.filed_lens: expected one of "most-probable", "rounded", found "nearest"'
    ):
        parse_protocol(text, "bad.toml")
