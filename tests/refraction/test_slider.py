"""Slider (knob) questions in the optics model (visiontune.refraction.slider) against independent
oracles: the choice probabilities written out per scalar, Monte Carlo frequencies of the simulated
patient's choice, Prescription round trips of the knob paths, the expected variance reduction by
enumerating the answers and reweighting by hand, and the particle posterior after slider answers
(with its resample-move step run)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from visiontune.errors import InvalidInputError
from visiontune.optics import PowerVector, Prescription, SimulatedPatient
from visiontune.refraction.lenses import LensSteps
from visiontune.refraction.optics_model import LetterAnswer, OpticsModelSpec, ParticlePosterior
from visiontune.refraction.slider import (
    KNOBS,
    SliderAnswer,
    SliderModel,
    choice_probabilities,
    knob_path,
    log_sum_exp_last,
    propose_slider,
    simulated_slider_choice,
    slider_probabilities,
    slider_value,
)
from visiontune.refraction.start import StartingPoint

SPEC = OpticsModelSpec(n_alternatives=10, lapse=0.04, n_particles=2000)
MODEL = SliderModel(noise_logmar=0.03, lapse=0.05)


def va_scalar(theta, lens) -> float:
    """``VA* + log10(1 + |r|²)`` for one particle and one lens, from the formula."""
    m, j0, j45, va0, _log_a, amp = (float(v) for v in theta[:6])
    r_m = lens[0] - m
    r_m = r_m + min(amp, max(-r_m, 0.0))
    return va0 + math.log10(1.0 + r_m * r_m + (lens[1] - j0) ** 2 + (lens[2] - j45) ** 2)


def choice_scalar(theta, lenses, tau, lapse) -> list[float]:
    e = [math.exp(-va_scalar(theta, lens) / tau) for lens in lenses]
    total = sum(e)
    return [(1.0 - lapse) * x / total + lapse / len(lenses) for x in e]


def particles(n: int, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    theta = np.column_stack(
        [
            rng.normal(-1.0, 0.5, n),
            rng.normal(0.0, 0.3, n),
            rng.normal(0.0, 0.3, n),
            rng.normal(0.0, 0.1, n),
            rng.normal(np.log(5.0), 0.3, n),
            rng.uniform(0.0, 4.0, n),
        ]
    )
    return theta


CENTRE = Prescription(-1.25, -0.75, 30.0)


def paths():
    return [knob_path(k, CENTRE) for k in KNOBS]


# ---------------------------------------------------------------------------------- paths
def test_sphere_knob_changes_the_sphere_only():
    path = knob_path("sphere", CENTRE)
    assert path.t == tuple(np.arange(-4, 5) * 0.25)
    for t, pv in zip(path.t, path.lenses):
        expected = Prescription(CENTRE.sphere_d + t, CENTRE.cylinder_d, CENTRE.axis_deg).power_vector_array()
        np.testing.assert_allclose(pv, expected, atol=1e-12)
        np.testing.assert_allclose(np.array(pv) - CENTRE.power_vector_array(), [t, 0.0, 0.0], atol=1e-12)


def test_cylinder_knob_keeps_the_sphere_and_axis():
    path = knob_path("cylinder", CENTRE)
    assert max(path.t) == 0.75 and min(path.t) == -1.0  # the dial stops at plano: C + t <= 0
    two_a = math.radians(2 * CENTRE.axis_deg)
    for t, pv in zip(path.t, path.lenses):
        rx = PowerVector(*pv).to_prescription()  # minus-cylinder form
        assert rx.sphere_d == pytest.approx(CENTRE.sphere_d, abs=1e-9)
        assert rx.cylinder_d == pytest.approx(CENTRE.cylinder_d + t, abs=1e-9)
        if rx.cylinder_d < 0:
            assert rx.axis_deg == pytest.approx(CENTRE.axis_deg, abs=1e-6)
        d = np.array(pv) - CENTRE.power_vector_array()
        np.testing.assert_allclose(d, [t / 2, -t / 2 * math.cos(two_a), -t / 2 * math.sin(two_a)], atol=1e-12)


def test_axis_knob_turns_j_on_its_circle():
    path = knob_path("axis", CENTRE, half_range=20.0)
    assert path.t == (-20.0, -15.0, -10.0, -5.0, 0.0, 5.0, 10.0, 15.0, 20.0)
    c = CENTRE.power_vector_array()
    for t, pv, rx in zip(path.t, path.lenses, path.prescriptions()):
        assert pv[0] == pytest.approx(c[0], abs=1e-12)
        assert math.hypot(pv[1], pv[2]) == pytest.approx(math.hypot(c[1], c[2]), abs=1e-12)
        assert rx.sphere_d == pytest.approx(CENTRE.sphere_d) and rx.cylinder_d == pytest.approx(CENTRE.cylinder_d)
        assert (rx.axis_deg - (CENTRE.axis_deg + t)) % 180.0 == pytest.approx(0.0, abs=1e-6) or (
            rx.axis_deg - (CENTRE.axis_deg + t)
        ) % 180.0 == pytest.approx(180.0, abs=1e-6)


def test_axis_knob_step_is_coarser_for_small_cylinders_and_needs_a_cylinder():
    assert knob_path("axis", Prescription(-1.0, -0.25, 90.0)).t == (-30.0, -15.0, 0.0, 15.0, 30.0)
    with pytest.raises(InvalidInputError, match="no cylinder"):
        knob_path("axis", Prescription(-1.0, 0.0, 180.0))


def test_knob_path_from_a_power_vector_and_plus_cylinder_is_the_same_lens():
    a = knob_path("cylinder", CENTRE.transposed())
    b = knob_path("cylinder", CENTRE.power_vector_array())
    np.testing.assert_allclose(a.power_vectors(), knob_path("cylinder", CENTRE).power_vectors(), atol=1e-12)
    np.testing.assert_allclose(b.power_vectors(), a.power_vectors(), atol=1e-12)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"knob": "prism"}, "knob"),
        ({"knob": "sphere", "half_range": -1.0}, "half_range"),
        ({"knob": "sphere", "half_range": 0.1}, "at least 2"),
        ({"knob": "sphere", "step": 0.0}, "step"),
    ],
)
def test_knob_path_rejects_bad_input(kwargs, match):
    knob = kwargs.pop("knob")
    with pytest.raises(InvalidInputError, match=match):
        knob_path(knob, CENTRE, **kwargs)


# ---------------------------------------------------------------------------------- likelihood
def test_likelihood_sums_to_one_over_the_grid_for_every_particle():
    theta = particles(300)
    for path in paths():
        total = np.zeros(len(theta))
        for j in range(len(path.lenses)):
            total += np.exp(SliderAnswer(path.lenses, 0.1, j, MODEL).log_likelihood(theta, SPEC))
        np.testing.assert_allclose(total, 1.0, atol=1e-12)


def test_likelihood_is_the_choice_formula_per_scalar():
    theta = particles(20, seed=3)
    for path in paths():
        p = slider_probabilities(theta, path.lenses, MODEL)
        for i in range(len(theta)):
            np.testing.assert_allclose(p[i], choice_scalar(theta[i], path.lenses, 0.03, 0.05), rtol=1e-10)


def test_ties_on_the_accommodated_side_get_equal_probabilities():
    # a particle with P* = (-1, 0, 0) and 3 D of accommodation: every sphere <= -1 D reads alike
    theta = np.array([[-1.0, 0.0, 0.0, 0.0, np.log(5.0), 3.0]])
    path = knob_path("sphere", Prescription(-1.0))
    p = slider_probabilities(theta, path.lenses, MODEL)[0]
    minus = np.array(path.t) <= 0
    np.testing.assert_allclose(p[minus], p[minus][0], rtol=1e-12)
    assert np.all(p[~minus] < p[minus][0])


def test_batch_is_the_sum_of_single_answers_with_paths_of_different_lengths():
    theta = particles(200, seed=5)
    answers = [SliderAnswer(path.lenses, 0.1, j % len(path.lenses), MODEL) for j, path in enumerate(paths() * 2)]
    single = sum(a.log_likelihood(theta, SPEC) for a in answers)
    np.testing.assert_allclose(SliderAnswer.batch_log_likelihood(answers, theta, SPEC), single, rtol=1e-12)
    no_lapse = [SliderAnswer(a.lenses, a.s, a.choice, SliderModel(0.05, 0.0)) for a in answers]
    expected = sum(np.log(slider_probabilities(theta, a.lenses, a.model)[:, a.choice]) for a in no_lapse)
    np.testing.assert_allclose(SliderAnswer.batch_log_likelihood(no_lapse, theta, SPEC), expected, rtol=1e-12)


def test_simulated_choice_frequencies_match_the_likelihood():
    true_rx = Prescription(-1.5, -0.5, 20.0)
    patient = SimulatedPatient(true_rx, best_corrected_logmar=-0.05, accommodation_d=0.5, accommodation_fraction=1.0)
    pv = true_rx.power_vector_array()
    theta = np.array([[pv[0], pv[1], pv[2], -0.05, np.log(5.0), 0.5]])
    rng = np.random.default_rng(11)
    n_draws = 20000
    for path in (
        knob_path("sphere", Prescription(-1.25, -0.5, 20.0)),
        knob_path("axis", Prescription(-1.5, -0.5, 40.0)),
    ):
        p = slider_probabilities(theta, path.lenses, MODEL)[0]
        counts = np.bincount(
            [simulated_slider_choice(patient, path.lenses, MODEL, rng) for _ in range(n_draws)], minlength=len(p)
        )
        freq = counts / n_draws
        sd = np.sqrt(p * (1 - p) / n_draws)
        assert np.all(np.abs(freq - p) < 4.5 * sd + 1e-9), (freq, p)


def test_choice_probabilities_broadcast_and_the_answer_validates():
    va = np.array([[0.0, 0.1], [0.2, 0.2]])
    np.testing.assert_allclose(choice_probabilities(va, SliderModel(0.1, 0.0))[1], [0.5, 0.5])
    lenses = knob_path("sphere", CENTRE).lenses
    with pytest.raises(InvalidInputError, match="choice"):
        SliderAnswer(lenses, 0.1, len(lenses))
    with pytest.raises(InvalidInputError, match="lenses"):
        SliderAnswer(((0.0, 0.0, 0.0),), 0.1, 0)
    with pytest.raises(InvalidInputError, match="lenses"):
        SliderAnswer(((0.0, 0.0),) * 3, 0.1, 0)
    with pytest.raises(InvalidInputError, match="model"):
        SliderAnswer(lenses, 0.1, 0, model=None)
    with pytest.raises(InvalidInputError, match="noise_logmar"):
        SliderModel(noise_logmar=0.0)
    assert SliderAnswer(lenses, 0.1, 0).batch_key == ("slider", SliderModel())


# ---------------------------------------------------------------------------------- value
def brute_force_value(theta, w, lenses, tau, lapse) -> float:
    """Enumerate the answers, reweight each particle by hand, compute the variances."""
    w = np.asarray(w, dtype=float) / np.sum(w)

    def trace_cov(weights):
        weights = weights / weights.sum()
        mean = [sum(weights[i] * theta[i, c] for i in range(len(theta))) for c in range(3)]
        return sum(weights[i] * sum((theta[i, c] - mean[c]) ** 2 for c in range(3)) for i in range(len(theta)))

    before = trace_cov(w.copy())
    probs = [choice_scalar(theta[i], lenses, tau, lapse) for i in range(len(theta))]
    after = 0.0
    for j in range(len(lenses)):
        post = np.array([w[i] * probs[i][j] for i in range(len(theta))])
        after += post.sum() * trace_cov(post)
    return before - after


def test_expected_variance_reduction_equals_brute_force_and_is_non_negative():
    theta = particles(60, seed=7)
    w = np.random.default_rng(8).uniform(0.1, 1.0, len(theta))
    for path in paths():
        value = slider_value(theta, path.lenses, MODEL, w)
        assert value == pytest.approx(brute_force_value(theta, w, path.lenses, 0.03, 0.05), rel=1e-9, abs=1e-13)
        assert value >= 0.0
        assert slider_value(theta, path.lenses, MODEL) == pytest.approx(
            brute_force_value(theta, np.ones(len(theta)), path.lenses, 0.03, 0.05), rel=1e-9, abs=1e-13
        )


def test_a_flat_path_teaches_nothing():
    theta = particles(50)
    lenses = ((-1.0, 0.0, 0.0),) * 4  # four identical lenses: every answer equally likely for every particle
    assert slider_value(theta, lenses, MODEL) == pytest.approx(0.0, abs=1e-12)
    with pytest.raises(InvalidInputError, match="weights"):
        slider_value(theta, lenses, MODEL, np.zeros(len(theta)))


# ---------------------------------------------------------------------------------- posterior
def test_posterior_concentrates_near_the_truth_after_sphere_knob_answers():
    true_rx = Prescription(-2.0, -0.5, 90.0)
    start = StartingPoint(Prescription(-1.25, -0.5, 90.0), "autorefraction", 60.0)  # 0.75 D too plus
    patient = SimulatedPatient(true_rx, best_corrected_logmar=0.0, age_years=60.0)
    post = ParticlePosterior(SPEC, start, seed=4)
    rng = np.random.default_rng(21)
    steps = LensSteps()

    def summary():
        w = post.weights
        mean = float(w @ post.theta[:, 0])
        return mean, float(np.sqrt(w @ (post.theta[:, 0] - mean) ** 2))

    mean0, sd0 = summary()
    for k in range(10):
        q = propose_slider(post, rng=np.random.default_rng([4, k]), knobs=("sphere",), steps=steps)
        j = simulated_slider_choice(patient, q.path.lenses, MODEL, rng)
        post.observe(SliderAnswer(q.path.lenses, q.s_logmar, j, MODEL))
    mean1, sd1 = summary()
    truth = true_rx.spherical_equivalent_d
    assert sd1 < 0.5 * sd0
    assert abs(mean1 - truth) < abs(mean0 - truth) - 0.4
    assert abs(mean1 - truth) < 0.35


def test_observe_and_moves_use_the_slider_answers():
    spec = OpticsModelSpec(n_alternatives=10, lapse=0.04, n_particles=500)
    start = StartingPoint(Prescription(-1.0, -0.75, 10.0), "autorefraction", 35.0)
    post = ParticlePosterior(spec, start, seed=9)
    patient = SimulatedPatient(Prescription(-1.5, -1.0, 15.0), age_years=35.0, n_alternatives=10, seed=3)
    rng = np.random.default_rng(2)
    post.observe(LetterAnswer(0.1, (-1.25, 0.3, 0.1), True))
    k = 0
    while post.n_moves == 0:
        assert k < 30, "no resample-move after 30 slider answers"
        q = propose_slider(post, rng=np.random.default_rng([9, k]))
        post.observe(
            SliderAnswer(q.path.lenses, q.s_logmar, simulated_slider_choice(patient, q.path.lenses, MODEL, rng), MODEL)
        )
        k += 1
    sliders = [a for a in post.answers if isinstance(a, SliderAnswer)]
    assert len(sliders) == k and post._groups[("slider", MODEL)] == sliders
    theta = particles(100, seed=1)
    expected = LetterAnswer.batch_log_likelihood(post._groups["letter"], theta, spec) + sum(
        a.log_likelihood(theta, spec) for a in sliders
    )
    np.testing.assert_allclose(post._log_likelihood(theta), expected, rtol=1e-10)
    # a posterior rebuilt from the same answers has the same particles (the draws are keyed)
    again = ParticlePosterior(spec, start, seed=9)
    for a in post.answers:
        again.observe(a)
    np.testing.assert_array_equal(again.theta, post.theta)


def test_propose_slider_returns_the_best_knob_and_skips_the_axis_without_cylinder():
    start = StartingPoint(Prescription(-1.0, -1.0, 30.0), "autorefraction", 40.0)
    post = ParticlePosterior(SPEC, start, seed=1)
    q = propose_slider(post, rng=np.random.default_rng(0), s_grid=np.arange(-0.3, 1.01, 0.05))
    assert [k for k, _ in q.values] == list(KNOBS)
    assert q.value == max(v for _, v in q.values) and dict(q.values)[q.knob] == q.value
    assert q.information_bits > 0 and q.s_logmar == pytest.approx(round(q.s_logmar / 0.05) * 0.05)
    plano = ParticlePosterior(SPEC, StartingPoint(Prescription(-1.0), "autorefraction", 40.0), seed=1)
    if abs(float(np.hypot(*plano.best_correction()[1:]))) < 0.06:
        q = propose_slider(plano, rng=np.random.default_rng(0))
        assert "axis" not in dict(q.values)
    with pytest.raises(InvalidInputError, match="knobs"):
        propose_slider(post, rng=np.random.default_rng(0), knobs=("focus",))
    with pytest.raises(InvalidInputError, match="rng"):
        propose_slider(post, rng=0)


@pytest.mark.parametrize("seed", range(6))
def test_log_sum_exp_last_is_scipys_to_the_bit(seed):
    """The normaliser of the slider likelihood against scipy.special.logsumexp (the oracle): the
    same bits on rows with ties at the maximum, -inf padding and wide and narrow ranges; and the
    closed form on a row of equal values (log n + a)."""
    from scipy.special import logsumexp

    rng = np.random.default_rng(seed)
    z = rng.normal(size=(300, int(rng.integers(1, 40)), int(rng.integers(2, 12)))) * rng.uniform(0.1, 30.0)
    if seed % 2:
        z = np.round(z)  # many ties at the maximum
    if seed % 3:
        z[:, ::2, -1] = -np.inf  # shorter paths padded
    assert np.array_equal(log_sum_exp_last(z), logsumexp(z, axis=-1, keepdims=True))
    assert log_sum_exp_last(np.full((1, 7), 2.5))[0, 0] == pytest.approx(2.5 + math.log(7), rel=1e-15)
