"""Simulated patient: model composition, sampling against binomial error, duels, seeds."""

import math
from dataclasses import dataclass

import numpy as np
import pytest

from visiontune.errors import InvalidInputError
from visiontune.optics.acuity import BlendowskeAcuity
from visiontune.optics.patient import SimulatedPatient, random_true_rx
from visiontune.optics.prescription import Prescription
from visiontune.optics.search_space import SEARCH_BOX

TRUE_RX = Prescription(-1.5, -0.75, 180)


def phi(z):
    return 0.5 * (1.0 + math.erf(z / math.sqrt(2.0)))


def expected_p(s, sphere, cyl, *, va_star=0.0, slope=5.0, n=26, lapse=0.0, true=TRUE_RX):
    """Fauvel & Chalk (contextual BO) written out: Eq. 12 blur (aligned axes), Blendowske VA, Eq. 13 with lapse."""
    ds, dc = sphere - true.sphere_d, cyl - true.cylinder_d
    beta = math.sqrt(0.5 * (ds**2 + (ds + dc) ** 2))
    va = va_star + math.log10(1 + beta**2)
    return 1 / n + (1 - 1 / n - lapse) * phi(slope * (s - va))


def test_probability_correct_composes_the_paper_model():
    patient = SimulatedPatient(TRUE_RX, best_corrected_logmar=0.1, slope=3.0, n_alternatives=10, lapse=0.03)
    rng = np.random.default_rng(5)
    lenses = rng.uniform(-4, 4, size=(30, 2))
    s = rng.uniform(-1, 2, size=30)
    got = patient.probability_correct(s, lenses)
    want = [expected_p(si, a, b, va_star=0.1, slope=3.0, n=10, lapse=0.03) for si, (a, b) in zip(s, lenses)]
    assert got == pytest.approx(want, abs=1e-12)
    assert patient.probability_correct(0.1, TRUE_RX) == pytest.approx(0.1 + (1 - 0.1 - 0.03) / 2)
    assert patient.acuity_logmar(TRUE_RX) == pytest.approx(0.1)
    assert patient.blur_diopters([-0.5, -0.75]) == pytest.approx(1.0)  # 1 D of sphere left


def test_empirical_proportion_matches_within_binomial_error():
    patient = SimulatedPatient(TRUE_RX, seed=11)
    lens, s = np.array([-1.0, -0.75]), 0.1  # 0.5 D blur: VA = log10(1.25) ≈ 0.097
    p = patient.probability_correct(s, lens)
    assert 0.3 < p < 0.8
    n = 20000  # answers() is the loop of answer() (test_same_seed_same_answers_and_batch_equals_loop)
    hits = patient.answers(np.full(n, s), np.tile(lens, (n, 1))).sum()
    assert abs(hits / n - p) < 4 * math.sqrt(p * (1 - p) / n)
    loop = sum(patient.answer(s, lens) for _ in range(2000))  # the scalar path, coarser
    assert abs(loop / 2000 - p) < 4 * math.sqrt(p * (1 - p) / 2000)


def test_vectorised_answers_match_probabilities_over_a_grid():
    patient = SimulatedPatient(TRUE_RX, slope=2.0, n_alternatives=10, lapse=0.05, seed=3)
    s_grid = np.repeat(np.linspace(-0.5, 1.5, 5), 4000)
    lenses = np.tile([[0.0, 0.0]], (s_grid.size, 1))
    answers = patient.answers(s_grid, lenses)
    assert answers.dtype == bool and answers.shape == (20000,)
    for k, s in enumerate(np.linspace(-0.5, 1.5, 5)):
        p = patient.probability_correct(s, [0.0, 0.0])
        block = answers[k * 4000 : (k + 1) * 4000]
        assert abs(block.mean() - p) < 4 * math.sqrt(p * (1 - p) / 4000)


def test_preference_probability_is_eq11_with_the_linear_latent():
    patient = SimulatedPatient(TRUE_RX, slope=5.0)
    x1, x2 = np.array([-1.25, -0.75]), np.array([-0.5, -0.5])
    va1, va2 = patient.acuity_logmar(x1), patient.acuity_logmar(x2)
    for s in (-1.0, 0.3, 2.0):  # the linear latent's s cancels: Φ(a (VA2 - VA1))
        assert patient.preference_probability(s, x1, x2) == pytest.approx(phi(5.0 * (va2 - va1)), abs=1e-12)
    assert patient.preference_probability(0.0, x1, x1) == pytest.approx(0.5)
    # Monte Carlo oracle of Eq. 11: P(f1 + ε1 > f2 + ε2), ε ~ N(0, 1/2) (Thurstone model)
    rng = np.random.default_rng(0)
    f1, f2 = patient.latent(0.3, x1), patient.latent(0.3, x2)
    eps = rng.normal(0, math.sqrt(0.5), size=(2, 200000))
    mc = np.mean(f1 + eps[0] > f2 + eps[1])
    p = patient.preference_probability(0.3, x1, x2)
    assert abs(mc - p) < 4 * math.sqrt(p * (1 - p) / 200000)


def test_prefers_frequency_matches_probability():
    patient = SimulatedPatient(TRUE_RX, slope=1.0, seed=8)
    x1, x2 = Prescription(-1.0, -0.75, 180), Prescription(-2.5, -0.75, 180)
    p = patient.preference_probability(0.5, x1, x2)
    assert 0.55 < p < 0.95
    n = 20000
    wins = patient.preferences(np.full(n, 0.5), [x1] * n, [x2] * n).sum()
    assert abs(wins / n - p) < 4 * math.sqrt(p * (1 - p) / n)
    loop = sum(patient.prefers(0.5, x1, x2) for _ in range(2000))
    assert abs(loop / 2000 - p) < 4 * math.sqrt(p * (1 - p) / 2000)


def test_probit_latent_preferences_depend_on_letter_size():
    patient = SimulatedPatient(TRUE_RX, slope=5.0, preference_latent="probit")
    x1, x2 = [-1.5, -0.75], [-0.5, -0.75]  # perfect lens vs 1 D of blur (VA 0 vs 0.30)
    p1, p2 = patient.probability_correct(0.15, x1), patient.probability_correct(0.15, x2)
    expected = phi(_probit(p1) - _probit(p2))
    assert patient.preference_probability(0.15, x1, x2) == pytest.approx(expected, abs=1e-9)
    # letters far too small: both lenses at chance, the duel is a coin flip
    assert patient.preference_probability(-1.0, x1, x2) == pytest.approx(0.5, abs=1e-3)
    # with a lapse, letters far too large: both at 1 - λ, a coin flip again
    lapsing = SimulatedPatient(TRUE_RX, slope=5.0, lapse=0.05, preference_latent="probit")
    assert lapsing.preference_probability(2.0, x1, x2) == pytest.approx(0.5, abs=1e-3)
    # without a lapse, large letters: tends to the linear latent's Φ(a (VA2 - VA1)) (tail of Φ⁻¹)
    linear = phi(5.0 * (patient.acuity_logmar(x2) - patient.acuity_logmar(x1)))
    assert patient.preference_probability(2.0, x1, x2) == pytest.approx(linear, abs=0.02)


def _probit(p):
    lo, hi = -10.0, 10.0
    for _ in range(200):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if phi(mid) < p else (lo, mid)
    return (lo + hi) / 2


def test_same_seed_same_answers_and_batch_equals_loop():
    queries = np.random.default_rng(2).uniform([-1, -4, -4], [2, 4, 4], size=(300, 3))
    a = SimulatedPatient(TRUE_RX, seed=42)
    b = SimulatedPatient(TRUE_RX, seed=42)
    c = SimulatedPatient(TRUE_RX, seed=43)
    loop_a = [a.answer(q[0], q[1:]) for q in queries]
    loop_b = [b.answer(q[0], q[1:]) for q in queries]
    assert loop_a == loop_b
    assert loop_a != [c.answer(q[0], q[1:]) for q in queries]
    batch = SimulatedPatient(TRUE_RX, seed=42).answers(queries[:, 0], queries[:, 1:])
    assert batch.tolist() == loop_a
    duels = queries[:, 1:], queries[::-1, 1:]
    loop_duels = [SimulatedPatient(TRUE_RX, seed=1, slope=1.0) for _ in range(2)]
    loop_duels = [[p.prefers(0.0, x1, x2) for x1, x2 in zip(*duels)] for p in loop_duels]
    assert loop_duels[0] == loop_duels[1] and 0 < sum(loop_duels[0]) < 300
    batch_duels = SimulatedPatient(TRUE_RX, seed=1, slope=1.0).preferences(0.0, *duels)
    assert batch_duels.tolist() == loop_duels[0]
    gen_patient = SimulatedPatient(TRUE_RX, seed=np.random.default_rng(42))
    assert [gen_patient.answer(q[0], q[1:]) for q in queries] == loop_a


def test_pluggable_acuity_model():
    @dataclass(frozen=True)
    class LinearAcuity:
        best_corrected_logmar: float = 0.0

        def __call__(self, blur_d):
            return self.best_corrected_logmar + 0.25 * np.asarray(blur_d)

    patient = SimulatedPatient(TRUE_RX, acuity_model=LinearAcuity(0.2))
    assert patient.acuity_logmar([-0.5, -0.75]) == pytest.approx(0.45)
    assert isinstance(SimulatedPatient(TRUE_RX).acuity_model, BlendowskeAcuity)


def test_random_true_rx():
    rx = [random_true_rx(np.random.default_rng(7)) for _ in range(2)]
    assert rx[0] == rx[1]
    rng = np.random.default_rng(9)
    draws = np.array([[r.sphere_d, r.cylinder_d] for r in (random_true_rx(rng) for _ in range(4000))])
    assert np.all(SEARCH_BOX.contains(draws))
    assert np.abs(draws.mean(axis=0)).max() < 0.15  # sd of the mean ≈ 0.037
    assert draws.min() < -3.9 and draws.max() > 3.9
    assert random_true_rx(rng, axis_deg=90).axis_deg == 90


@pytest.mark.parametrize(
    "kwargs, name",
    [
        (dict(slope=0.0), "slope"),
        (dict(slope=-2.0), "slope"),
        (dict(slope=float("nan")), "slope"),
        (dict(n_alternatives=1), "n_alternatives"),
        (dict(lapse=-0.1), "lapse"),
        (dict(lapse=1 - 1 / 26), "lapse"),
        (dict(best_corrected_logmar=float("nan")), "best_corrected_logmar"),
        (dict(seed=-1), "seed"),
        (dict(seed=1.5), "seed"),
        (dict(preference_latent="cubic"), "preference_latent"),
        (dict(acuity_model=BlendowskeAcuity(), best_corrected_logmar=0.2), "best_corrected_logmar"),
        (dict(acuity_model="blendowske"), "acuity_model"),
    ],
)
def test_bad_parameters_raise_naming_the_argument(kwargs, name):
    with pytest.raises(InvalidInputError, match=name):
        SimulatedPatient(TRUE_RX, **kwargs)


def test_bad_queries_raise_naming_the_argument():
    patient = SimulatedPatient(TRUE_RX)
    with pytest.raises(InvalidInputError, match="true_rx"):
        SimulatedPatient((-1.5, -0.75))
    with pytest.raises(InvalidInputError, match="s:"):
        patient.answer(float("nan"), [0, 0])
    with pytest.raises(InvalidInputError, match="lens"):
        patient.answer(0.0, [np.nan, 0])
    with pytest.raises(InvalidInputError, match="s:"):
        patient.answer(np.zeros(3), np.zeros((3, 2)))
    with pytest.raises(InvalidInputError, match="s:"):
        patient.prefers(np.zeros(2), [0, 0], [1, 1])
    with pytest.raises(InvalidInputError, match="rng"):
        random_true_rx(3)


def test_probability_grid_peaks_at_the_true_correction():
    from visiontune.optics.patient import probability_grid

    patient = SimulatedPatient(Prescription(-1.5, 1.0, 180))
    spheres, cylinders, p = probability_grid(patient, s=0.0, n_grid=33)  # 0.25 D steps
    assert p.shape == (33, 33)
    i, j = np.unravel_index(np.argmax(p), p.shape)
    assert (spheres[i], cylinders[j]) == pytest.approx((-1.5, 1.0))
    assert p[i, j] == pytest.approx((1 + 1 / 26) / 2)
    assert p[5, 7] == pytest.approx(patient.probability_correct(0.0, [spheres[5], cylinders[7]]))
    with pytest.raises(InvalidInputError, match="n_grid"):
        probability_grid(patient, 0.0, n_grid=1)
    with pytest.raises(InvalidInputError, match="patient"):
        probability_grid(None, 0.0)


def test_letter_difficulty_offsets():
    from visiontune.optics.letter_difficulty import letter_offsets_from_percent_correct

    psy = SimulatedPatient(TRUE_RX).psychometric
    # illustrative percentages (not a data table): an easy and a hard letter
    offsets = letter_offsets_from_percent_correct({"Z": 94.0, "C": 71.0}, psy)
    assert offsets["Z"] < 0 < offsets["C"]
    patient = SimulatedPatient(TRUE_RX, slope=5.0, letter_offsets_logmar=offsets, seed=4)
    # at the size where the average letter scores 82.5% (the mean), each letter scores its own
    s0 = psy.threshold(0.825, 0.0)  # perfect lens: VA = VA* = 0
    assert patient.probability_correct(s0, TRUE_RX, "Z") == pytest.approx(0.94)
    assert patient.probability_correct(s0, TRUE_RX, "C") == pytest.approx(0.71)
    assert patient.probability_correct(s0, TRUE_RX) == pytest.approx(0.825)
    # closed form with the offset: γ + (1-γ) Φ(a (s - VA - δ))
    s, lens = 0.4, [-0.5, -0.75]
    want = expected_p(s - offsets["C"], -0.5, -0.75)
    assert patient.probability_correct(s, lens, "C") == pytest.approx(want, abs=1e-12)
    letters = ["Z", "C"] * 5000
    hits = patient.answers(np.full(10000, s0), np.tile([-1.5, -0.75], (10000, 1)), letters)
    assert abs(hits[0::2].mean() - 0.94) < 4 * math.sqrt(0.94 * 0.06 / 5000)
    assert abs(hits[1::2].mean() - 0.71) < 4 * math.sqrt(0.71 * 0.29 / 5000)
    with pytest.raises(InvalidInputError, match="letter"):
        patient.answer(0.0, TRUE_RX, "Q")
    with pytest.raises(InvalidInputError, match="letter_offsets_logmar"):
        SimulatedPatient(TRUE_RX, letter_offsets_logmar={"C": float("nan")})
    with pytest.raises(InvalidInputError, match="percent_correct"):
        letter_offsets_from_percent_correct({"C": 2.0}, psy)  # below chance (1/26 ≈ 3.8%)
    with pytest.raises(InvalidInputError, match="reference_percent"):
        letter_offsets_from_percent_correct({"C": 70.0}, psy, reference_percent=100.0)


# --- keyed answers (exact resume) ---------------------------------------------------------------

OBLIQUE_RX = Prescription(-1.75, -1.25, 35)


def test_answer_trial_does_not_depend_on_the_order_of_calls():
    queries = np.random.default_rng(3).uniform([-0.3, -4, -3], [0.8, 1, 0], size=(120, 3))
    lenses = [Prescription(q[1], q[2], 20 + 1.3 * k) for k, q in enumerate(queries)]

    def run(order, interleave):
        patient = SimulatedPatient(OBLIQUE_RX, slope=3.0, n_alternatives=10, lapse=0.02, seed=77)
        out = {}
        for k in order:
            if interleave:  # stream answers in between must not move the keyed draws
                patient.answer(0.1, lenses[k])
            out[k] = patient.answer_trial(k, queries[k, 0], lenses[k])
        return [out[k] for k in range(len(queries))]

    forward = run(range(120), False)
    shuffled = run(np.random.default_rng(0).permutation(120).tolist(), True)
    assert forward == shuffled
    assert 10 < sum(forward) < 110
    # the documented key: one uniform from default_rng([seed, k, 0x5EED])
    patient = SimulatedPatient(OBLIQUE_RX, slope=3.0, n_alternatives=10, lapse=0.02, seed=77)
    for k in (0, 5, 119):
        u = np.random.default_rng([77, k, 0x5EED]).random()
        assert forward[k] == (u < patient.probability_correct(queries[k, 0], lenses[k]))
    # a resumed session (a new patient object, trials 60..119 only) meets the same answers
    resumed = SimulatedPatient(OBLIQUE_RX, slope=3.0, n_alternatives=10, lapse=0.02, seed=77)
    assert [resumed.answer_trial(k, queries[k, 0], lenses[k]) for k in range(60, 120)] == forward[60:]
    other_seed = SimulatedPatient(OBLIQUE_RX, slope=3.0, n_alternatives=10, lapse=0.02, seed=78)
    assert [other_seed.answer_trial(k, queries[k, 0], lenses[k]) for k in range(120)] != forward


def test_answer_trial_frequency_matches_probability():
    patient = SimulatedPatient(OBLIQUE_RX, slope=4.0, seed=5)
    lens = Prescription(-1.25, -1.0, 50)
    p = patient.probability_correct(0.15, lens)
    assert 0.2 < p < 0.8
    n = 4000
    hits = sum(patient.answer_trial(k, 0.15, lens) for k in range(n))
    assert abs(hits / n - p) < 4 * math.sqrt(p * (1 - p) / n)


def test_prefers_trial_is_keyed_too():
    x1, x2 = Prescription(-1.5, -1.25, 35), Prescription(-2.25, -0.75, 40)
    a = SimulatedPatient(OBLIQUE_RX, slope=1.0, seed=9)
    b = SimulatedPatient(OBLIQUE_RX, slope=1.0, seed=9)
    forward = [a.prefers_trial(k, 0.0, x1, x2) for k in range(200)]
    backward = [b.prefers_trial(k, 0.0, x1, x2) for k in reversed(range(200))][::-1]
    assert forward == backward
    p = a.preference_probability(0.0, x1, x2)
    assert abs(np.mean(forward) - p) < 4 * math.sqrt(p * (1 - p) / 200)
    u = np.random.default_rng([9, 17, 0x5EED, 1]).random()
    assert forward[17] == (u < p)


def test_keyed_answers_need_an_integer_seed_and_a_trial_index():
    patient = SimulatedPatient(TRUE_RX, seed=np.random.default_rng(1))
    with pytest.raises(InvalidInputError, match="seed"):
        patient.answer_trial(0, 0.0, TRUE_RX)
    with pytest.raises(InvalidInputError, match="seed"):
        patient.prefers_trial(0, 0.0, TRUE_RX, TRUE_RX)
    keyed = SimulatedPatient(TRUE_RX, seed=np.int64(4))
    assert keyed.seed == 4
    for k in (-1, 1.5, True, "3"):
        with pytest.raises(InvalidInputError, match="k:"):
            keyed.answer_trial(k, 0.0, TRUE_RX)
    with pytest.raises(InvalidInputError, match="s:"):
        keyed.answer_trial(0, np.zeros(2), np.zeros((2, 2)))
