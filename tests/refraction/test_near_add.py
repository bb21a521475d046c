"""The near addition's model (refraction/near_add.py): the optics against hand-computed cases, the
reserve rule and its balanced-NRA/PRA form, the age table, the grid posterior and the expected
information against independent brute-force and Monte Carlo oracles, and the refusals."""

from __future__ import annotations

import math

import numpy as np
import pytest

from visiontune.errors import InvalidInputError
from visiontune.refraction.near_add import (
    NEAR_MODEL,
    NearEyeStep,
    NearPosterior,
    add_by_reserve_rule,
    amplitude_prior,
    balanced_add,
    check_near_distance_cm,
    check_size_logmar,
    fellow_prior,
    near_blur_d,
    near_demand_d,
    question_seconds,
    range_of_clear_vision,
    round_add,
    tentative_add,
)
from visiontune.refraction.near_population import NearCase, draw_near_patients


# --- optics, by hand -------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("add", "demand", "amp", "blur"),
    [
        (1.00, 2.50, 1.00, 0.50),  # 2.5 D asked, 1 D from the add, 1 D from the eye: 0.5 D short
        (2.00, 2.50, 1.00, 0.00),  # 0.5 D asked of an eye that has 1 D
        (1.50, 2.50, 1.00, 0.00),  # exactly enough
        (3.00, 2.50, 1.00, 0.50),  # add beyond the demand: the eye cannot relax below 0, myopic 0.5 D
        (0.00, 2.50, 0.00, 2.50),  # an absolute presbyope without an add
        (0.00, 3.00, 4.00, 0.00),  # 33 cm for a 4 D eye
        (2.50, 2.50, 0.00, 0.00),  # the full demand in the add
    ],
)
def test_near_blur_matches_hand_computed_cases(add, demand, amp, blur):
    assert near_blur_d(add, demand, amp) == pytest.approx(blur, abs=1e-12)


def test_near_demand_is_the_reciprocal_distance():
    assert near_demand_d(40) == pytest.approx(2.5)
    assert near_demand_d(33) == pytest.approx(100 / 33)
    assert near_demand_d(50) == pytest.approx(2.0)


@pytest.mark.parametrize("bad", [0, -40, float("nan"), float("inf"), "forty", None, 10, 150])
def test_a_near_distance_that_is_not_a_reading_distance_is_refused(bad):
    with pytest.raises(InvalidInputError, match="near distance"):
        check_near_distance_cm(bad)


def test_blur_refuses_nan_and_negative_amplitude():
    with pytest.raises(InvalidInputError, match="finite"):
        near_blur_d(float("nan"), 2.5, 1.0)
    with pytest.raises(InvalidInputError, match="usable_amplitude_d"):
        near_blur_d(1.0, 2.5, -0.5)


# --- the add filed ---------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("demand", "amp", "add"),
    [
        (2.5, 1.0, 2.0),  # 2.5 - 0.5
        (2.5, 1.4, 1.75),  # 1.8 -> the nearest trial lens
        (2.5, 0.0, 2.5),
        (2.5, 6.0, 0.0),  # enough amplitude: no add (never negative)
        (2.0, 1.0, 1.5),  # at 50 cm
    ],
)
def test_reserve_rule_keeps_half_the_amplitude(demand, amp, add):
    assert add_by_reserve_rule(demand, amp) == add
    # through the add, the eye uses at most half its amplitude
    unrounded = add_by_reserve_rule(demand, amp, rounded=False)
    assert demand - unrounded <= amp / 2 + 1e-12


def test_the_balanced_nra_pra_form_is_the_reserve_rule_for_any_tentative_add():
    rng = np.random.default_rng(0)
    for _ in range(50):
        demand, amp = 2.5, rng.uniform(0, 3)
        tentative = rng.uniform(max(demand - amp, 0), demand)  # an add through which the eye sees clearly
        nra, pra = demand - tentative, -(amp - demand + tentative)
        assert balanced_add(tentative, nra, pra) == pytest.approx(demand - amp / 2)
    with pytest.raises(InvalidInputError, match="PRA negative"):
        balanced_add(1.5, 1.0, +0.5)


def test_range_of_clear_vision():
    near, far = range_of_clear_vision(2.0, 1.0)
    assert (near, far) == (pytest.approx(1 / 3), pytest.approx(0.5))
    assert range_of_clear_vision(0.0, 2.0) == (pytest.approx(0.5), math.inf)
    assert range_of_clear_vision(0.0, 0.0) == (math.inf, math.inf)


def test_tentative_add_by_age_is_millodots_table_moved_with_the_distance():
    assert [tentative_add(a) for a in (40, 44.9, 45, 49, 50, 55, 59.9, 60, 80)] == [
        0.75,
        0.75,
        1.0,
        1.0,
        1.5,
        2.0,
        2.0,
        2.5,
        2.5,
    ]
    assert tentative_add(62, 33) == 3.0  # 2.50 + (3.03 - 2.50) -> 3.03, nearest trial lens 3.00
    assert tentative_add(45, 66.7) == 0.0  # 1.00 + (1.50 - 2.50) = 0
    assert round_add(1.125) == 1.25 and round_add(-0.3) == 0.0


# --- the posterior against independent oracles ------------------------------------------------
ANSWERS = [
    (2.0, 0.3, True),
    (1.0, 0.3, False),
    (1.5, 0.2, True),
    (1.0, 0.6, True),
    (0.5, 0.5, False),
    (1.25, 0.1, False),
]


def _brute_force_amplitude_marginal(age, answers):
    """The posterior of U by explicit loops and math.erf (nothing of NearPosterior but the grids)."""
    us = [i * 0.05 for i in range(161)]
    vas = [-0.3 + j * 0.025 for j in range(53)]
    prior_u = amplitude_prior(age, np.array(us))
    g, lapse, k = 0.1, 0.03, 5.0
    out = []
    for i, u in enumerate(us):
        total = 0.0
        for va in vas:
            w = prior_u[i] * math.exp(-0.5 * ((va - 0.05) / 0.2) ** 2)
            for add, size, correct in answers:
                blur = max(2.5 - add - u, 0.0) + max(add - 2.5, 0.0)
                threshold = va + math.log10(1 + blur * blur)
                p = g + (1 - g - lapse) * 0.5 * (1 + math.erf(k * (size - threshold) / math.sqrt(2)))
                w *= p if correct else 1 - p
            total += w
        out.append(total)
    out = np.array(out)
    return out / out.sum()


def test_the_grid_posterior_equals_a_brute_force_computation():
    post = NearPosterior(2.5, 52)
    for a in ANSWERS:
        post.update(*a)
    np.testing.assert_allclose(
        post.amplitude_marginal(), _brute_force_amplitude_marginal(52, ANSWERS), rtol=1e-9, atol=1e-14
    )


def test_the_posterior_agrees_with_monte_carlo_importance_sampling():
    """Draw (U, VA*) from the prior (U on a continuous jitter of the grid), weight by the likelihood:
    the posterior mean of U and the probability of the filed add agree within 4 standard errors."""
    post = NearPosterior(2.5, 52)
    for a in ANSWERS:
        post.update(*a)
    rng = np.random.default_rng(11)
    n = 200_000
    us = rng.choice(post.amplitude_d, size=n, p=amplitude_prior(52, post.amplitude_d))
    us = np.clip(us + rng.uniform(-0.025, 0.025, n), 0, None)
    vas = rng.normal(0.05, 0.2, n)
    logw = np.zeros(n)
    for add, size, correct in ANSWERS:
        p = NEAR_MODEL.p_correct(size, add, 2.5, us, vas)
        logw += np.log(p if correct else 1 - p)
    w = np.exp(logw - logw.max())
    w /= w.sum()
    mean_mc = float(w @ us)
    ess = 1 / float((w**2).sum())
    sd = math.sqrt(float(w @ (us - mean_mc) ** 2))
    assert abs(post.amplitude_mean() - mean_mc) < 4 * sd / math.sqrt(ess) + 0.01  # + grid/prior-truncation slack
    filed = post.filed_add()
    p_mc = float(w[np.abs(np.floor((2.5 - us / 2).clip(0) / 0.25 + 0.5) * 0.25 - filed) < 1e-9].sum())
    adds, probs = post.add_distribution()
    p_grid = float(probs[np.isclose(adds, filed)][0])
    assert abs(p_grid - p_mc) < 4 * math.sqrt(p_mc * (1 - p_mc) / ess) + 0.02


def test_expected_information_equals_brute_force_mutual_information():
    post = NearPosterior(2.5, 58)
    for a in ANSWERS[:3]:
        post.update(*a)
    w = post.weights
    sizes = (0.0, 0.3, 0.6)
    info = post.information_bits(1.25, sizes)
    for s, got in zip(sizes, info, strict=True):
        p = NEAR_MODEL.p_correct(s, 1.25, 2.5, post.amplitude_d[:, None], post.va_logmar[None, :])
        joint = {}
        for b in np.unique(post.bin_of_u):
            rows = post.bin_of_u == b
            pc = float((w[rows] * p[rows]).sum())
            joint[(b, 1)], joint[(b, 0)] = pc, float(w[rows].sum()) - pc
        py = {y: sum(v for (b, yy), v in joint.items() if yy == y) for y in (0, 1)}
        pb = {b: joint[(b, 0)] + joint[(b, 1)] for b in np.unique(post.bin_of_u)}
        mi = sum(v * math.log2(v / (py[y] * pb[b])) for (b, y), v in joint.items() if v > 0)
        assert got == pytest.approx(mi, abs=1e-9)


def test_questions_are_chosen_by_information_per_second():
    post = NearPosterior(2.5, 55)
    q = post.next_question(1.5)
    best_rate = max(
        float(post.information_bits(a).max()) / (3.0 + (0 if a == 1.5 else 4.0)) for a in post.candidate_adds()
    )
    assert q.info_bits / q.seconds == pytest.approx(best_rate)


def test_seconds_count_a_letter_and_every_add_put_in():
    step = NearPosterior(2.5, 60)
    for a in [(2.0, 0.3, True), (2.0, 0.2, True), (1.5, 0.2, False), (2.0, 0.1, True)]:
        step.update(*a)
    assert question_seconds(step.answers) == 4 * 3 + 3 * 4  # three add changes (the first put in)


def test_check_size_is_the_line_at_or_above_the_prediction():
    assert check_size_logmar(0.13) == 0.2 and check_size_logmar(0.2) == 0.2 and check_size_logmar(-0.5) == -0.2


def test_fellow_prior_is_the_posterior_widened():
    post = NearPosterior(2.5, 50)
    for a in ANSWERS:
        post.update(*a)
    prior = fellow_prior(post)
    assert prior.sum() == pytest.approx(1.0)
    mean = float(prior @ post.amplitude_d)
    var_post = float(post.amplitude_marginal() @ (post.amplitude_d - post.amplitude_mean()) ** 2)
    var_prior = float(prior @ (post.amplitude_d - mean) ** 2)
    assert var_prior > var_post


# --- the whole step on simulated presbyopes ----------------------------------------------------
def _run_eye(case, prior=None):
    post = NearPosterior(2.5, case.age_years, prior_amplitude=prior)
    step = NearEyeStep(post, tentative_add(case.age_years))
    i = 0
    while (nxt := step.next()) is not None:
        phase, q = nxt
        _, ok = case.answer(i, q.add_d, q.size_logmar, 2.5)
        step.record(phase, q.add_d, q.size_logmar, ok)
        i += 1
    return step


def test_the_step_files_adds_close_to_the_truth_on_a_small_population():
    """12 simulated presbyopes (seed 101, not a seed the design was tuned on), both eyes: most adds
    within 0.25 D of the true one; every add inside its credible region; the same answers, the same add."""
    within, total = 0, 0
    for od, os_ in draw_near_patients(12, 101):
        first = _run_eye(od)
        second = _run_eye(os_, fellow_prior(first.posterior))
        for case, step in ((od, first), (os_, second)):
            r = step.result()
            assert r.lower_d <= r.add_d <= r.upper_d and r.stop in ("precision", "budget")
            within += abs(r.add_d - case.true_add(2.5)) <= 0.25 + 1e-9
            total += 1
    assert within / total >= 0.75
    again = _run_eye(draw_near_patients(12, 101)[0][0]).result()
    assert again == _run_eye(draw_near_patients(12, 101)[0][0]).result()


def test_a_simulated_presbyope_blurs_as_the_formula_says():
    case = NearCase(60, 1.0, 0.25, 0.0, 5.0, 0.0, "blendowske", (0.0, 0.0, 0.0), 1)
    assert case.blur_d(1.0, 2.5) == pytest.approx(0.25)  # 1.5 D asked, 1 + 0.25 tolerated
    assert case.blur_d(3.0, 2.5) == pytest.approx(0.25)  # 0.5 D myopic, 0.25 tolerated
    assert case.true_add(2.5) == 2.0  # U = 1.25: 2.5 - 0.625 = 1.875 -> 2.00
    off = NearCase(60, 1.0, 0.25, 0.0, 5.0, 0.0, "blendowske", (0.0, 0.3, 0.4), 1)
    assert off.blur_d(2.0, 2.5) == pytest.approx(0.5)  # astigmatic residual only
    with pytest.raises(InvalidInputError, match="residual_d"):
        NearCase(60, 1.0, 0.25, 0.0, 5.0, 0.0, "blendowske", (float("nan"), 0, 0), 1)


def test_population_is_seeded_and_in_range():
    a, b = draw_near_patients(30, 7), draw_near_patients(30, 7)
    assert a == b and a != draw_near_patients(30, 8)
    ages = [od.age_years for od, _ in a]
    assert min(ages) >= 40 and max(ages) <= 80
    assert all(od.amplitude_d == os_.amplitude_d and od.residual_d != os_.residual_d for od, os_ in a)


def test_an_early_presbyope_is_asked_through_minus_lenses():
    """With more amplitude than the demand no add blurs: the step tests the positive relative
    accommodation with minus lenses over the distance correction, and files a small add."""
    case = NearCase(44, 4.5, 0.3, 0.0, 5.0, 0.01, "blendowske", (0.0, 0.0, 0.0), 9)
    step = _run_eye(case)
    assert any(a.add_d < 0 for a in step.posterior.answers)
    assert abs(step.result().add_d - case.true_add(2.5)) <= 0.25
