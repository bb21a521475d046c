"""The optics engine's proposals (visiontune.refraction.optics_rules / optics_engine), for every
policy of OPTICS_POLICIES on the shipped clinical-sloan protocol, called as the loop calls them
(``engine.propose(trials, default_rng([seed, k, 0]))`` with the trials of a MemoryLog)."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest

from visiontune.errors import ProtocolError
from visiontune.optics import Prescription
from visiontune.refraction.lenses import LensSteps, trial_lens
from visiontune.refraction.loop import MemoryLog, make_engine
from visiontune.refraction.optics_engine import OpticsEngine
from visiontune.refraction.optics_rules import mutual_information_bits, within_radius
from visiontune.refraction.policies import OPTICS_POLICIES
from visiontune.refraction.protocol import load_protocol, parse_protocol
from visiontune.refraction.start import StartingPoint
from visiontune.refraction.trial import Trial

PROTOCOL = load_protocol("clinical-sloan")
SEED = 11
START_AXIS = 37.0
STARTS = {
    "autorefraction": StartingPoint(Prescription(-2.0, -1.25, START_AXIS), "autorefraction", 30),
    "none": StartingPoint(),
}


def protocol_with(policy: str):
    return dataclasses.replace(PROTOCOL, policy=policy)


def thibos(rx: Prescription) -> np.ndarray:
    a = math.radians(rx.axis_deg)
    return np.array(
        [rx.sphere_d + rx.cylinder_d / 2, -rx.cylinder_d / 2 * math.cos(2 * a), -rx.cylinder_d / 2 * math.sin(2 * a)]
    )


def axis_gap(a: float, b: float) -> float:
    return abs((a - b + 90.0) % 180.0 - 90.0)


def small_cylinder_axis_step(cylinder: float, base: float) -> float:
    c = abs(cylinder)
    return max(15.0, base) if c <= 0.25 + 1e-9 else max(10.0, base) if c <= 0.5 + 1e-9 else base


def rounding_bound(lens: Prescription, q: float, axis_step: float) -> float:
    """Largest power-vector distance between a point and its trial lens ``lens``: q/2 on M
    (the sphere keeps M), and on the J plane q/4 of |J| plus the chord of half an axis step."""
    half_j = abs(lens.cylinder_d) / 2 + q / 4
    step = small_cylinder_axis_step(lens.cylinder_d, axis_step)
    return math.hypot(q / 2, q / 4 + 2 * half_j * math.sin(math.radians(step / 2)))


def make_log(kind: str, engine, n: int = 6) -> MemoryLog:
    """A log of ``kind``: "empty", "one" (one correct answer), "all-wrong" (``n`` wrong answers to
    the engine's own proposals), "mixed" (proposals answered right when the letter is large)."""
    log = MemoryLog()
    if kind == "empty":
        return log
    count = 1 if kind == "one" else n
    for k in range(count):
        s, lens, _ = engine.propose(log.trials(), np.random.default_rng([SEED, k, 0]))
        correct = {"one": True, "all-wrong": False, "mixed": s > 0.3}[kind]
        log.record(Trial(k, s, lens, "H", correct))
    return log


def expected_radius(engine: OpticsEngine, start: StartingPoint, trials) -> float:
    """The protocol's max_step_d with a start; without one 1.5 posterior sd of M clipped to
    [max_step_d, 2 D] (optics_engine docstring)."""
    step = PROTOCOL.search_space.max_step_d
    if start.rx is not None:
        return step
    post = engine.posterior(trials)
    w = post.weights
    m = post.theta[:, 0]
    sd = math.sqrt(np.sum(w * (m - np.sum(w * m)) ** 2))
    return min(max(1.5 * sd, step), 2.0)


CASES = [
    (policy, start, kind)
    for policy in sorted(OPTICS_POLICIES)
    for start in STARTS
    for kind in ("empty", "one", "all-wrong", "mixed")
]


@pytest.mark.parametrize("policy, start_name, kind", CASES)
def test_proposal_is_a_trial_lens_near_the_estimate_and_a_chart_size(policy, start_name, kind):
    start = STARTS[start_name]
    protocol = protocol_with(policy)
    engine = make_engine(protocol, start, SEED)
    assert isinstance(engine, OpticsEngine)
    log = make_log(kind, engine)
    trials = log.trials()
    if kind == "all-wrong":
        assert trials and not any(t.correct for t in trials)
    k = len(trials)
    s, lens, info = engine.propose(trials, np.random.default_rng([SEED, k, 0]))
    # letter size: on the protocol's chart range, on the 0.05 logMAR grid
    lo, hi = protocol.logmar_range
    assert lo - 1e-9 <= s <= hi + 1e-9
    assert abs(s / 0.05 - round(s / 0.05)) < 1e-6
    # expected information of a binary answer: in [0, 1] bit
    assert math.isfinite(info) and -1e-12 <= info <= 1.0
    # a trial lens: quarter diopters, minus-cylinder form, the axis on the grid counted from the
    # start's axis (15 / 10 deg steps for 0.25 / 0.50 D)
    assert isinstance(lens, Prescription)
    q = protocol.lenses.step_d
    assert q == 0.25
    assert lens.cylinder_d <= 0.0
    for v in (lens.sphere_d, lens.cylinder_d):
        assert abs(v / q - round(v / q)) < 1e-9
    origin = START_AXIS if start.rx is not None else 0.0
    if lens.cylinder_d != 0.0:
        step = small_cylinder_axis_step(lens.cylinder_d, protocol.lenses.axis_step_deg)
        kk = (lens.axis_deg - origin) / step
        assert abs(kk - round(kk)) < 1e-7, (lens, origin, step)
    # near the current estimate: the lens is the trial lens of a point within the radius, so
    # its distance is at most the radius plus the rounding error of a trial lens
    post = engine.posterior(trials)
    centre = post.best_correction()
    radius = expected_radius(engine, start, trials)
    assert engine.radius(post) == pytest.approx(radius, rel=1e-12)
    d = np.linalg.norm(thibos(lens) - centre)
    assert d <= radius + rounding_bound(lens, q, protocol.lenses.axis_step_deg) + 1e-9, (d, radius, lens)


@pytest.mark.parametrize("policy", sorted(OPTICS_POLICIES))
@pytest.mark.parametrize("start_name", sorted(STARTS))
def test_same_seed_and_log_give_the_same_proposal(policy, start_name):
    start = STARTS[start_name]
    protocol = protocol_with(policy)
    first = make_engine(protocol, start, SEED)
    log = make_log("mixed", first, n=5)
    trials = log.trials()
    a = first.propose(trials, np.random.default_rng([SEED, len(trials), 0]))
    # a fresh engine (a session rebuilt from its log) proposes the same query
    fresh = make_engine(protocol, start, SEED)
    b = fresh.propose(trials, np.random.default_rng([SEED, len(trials), 0]))
    assert a == b
    # an engine that saw another log first (an undo: the posterior is rebuilt) too
    first.propose(trials[:2], np.random.default_rng([SEED, 2, 0]))
    c = first.propose(trials, np.random.default_rng([SEED, len(trials), 0]))
    assert c == a
    np.testing.assert_array_equal(first.posterior(trials).theta, fresh.posterior(trials).theta)
    # another session seed gives another query stream (the check above is not vacuous)
    other = make_engine(protocol, start, SEED + 1)
    others = [other.propose(trials[:j], np.random.default_rng([SEED + 1, j, 0])) for j in range(len(trials) + 1)]
    mine = [fresh.propose(trials[:j], np.random.default_rng([SEED, j, 0])) for j in range(len(trials) + 1)]
    assert others != mine


def test_rules_answer_from_the_posterior_not_from_the_prior():
    """After answers all wrong through lenses near the start, BALD's expected information and
    the estimate change: the proposal depends on the log."""
    start = STARTS["autorefraction"]
    engine = make_engine(protocol_with("bald"), start, SEED)
    empty = engine.propose([], np.random.default_rng([SEED, 0, 0]))
    log = make_log("all-wrong", engine, n=8)
    after = engine.propose(log.trials(), np.random.default_rng([SEED, 0, 0]))
    assert after != empty
    # all wrong answers: the model believes the patient sees worse (higher VA*) than before
    post = engine.posterior(log.trials())
    assert post.mean()[3] > 0.1
    assert np.all(np.isfinite(post.best_correction()))


@pytest.mark.parametrize("start_name", sorted(STARTS))
def test_estimate_is_the_best_correction_and_its_filed_trial_lens(start_name):
    start = STARTS[start_name]
    engine = make_engine(PROTOCOL, start, SEED)
    log = make_log("mixed", engine, n=5)
    trials = log.trials()
    est = engine.estimate(trials, np.random.default_rng(0), np.random.default_rng(1), 0.95)
    post = engine.posterior(trials)
    centre = post.best_correction()
    np.testing.assert_allclose(thibos(est.lens), centre, atol=1e-9)
    assert est.n_trials == len(trials) and est.region is not None
    assert est.va_interval[0] <= est.va_logmar <= est.va_interval[1]
    # the filed lens: the trial lens of the estimate, or the same sphere and cylinder at the
    # start's axis when the answers do not show (posterior probability >= the level) that the
    # new axis corrects the cylinder better (optics_engine.filed_lens)
    origin = START_AXIS if start.rx is not None else 0.0
    rounded = trial_lens(centre, LensSteps(0.25, 5.0, "minus", origin))
    filed = est.rounded
    if np.allclose(thibos(filed), thibos(rounded), atol=1e-9):
        if start.rx is not None and rounded.cylinder_d != 0.0 and axis_gap(rounded.axis_deg, START_AXIS) > 1e-6:
            kept = Prescription(rounded.sphere_d, rounded.cylinder_d, START_AXIS)
            j = post.theta[:, 1:3]
            better = np.linalg.norm(j - thibos(rounded)[1:], axis=1) < np.linalg.norm(j - thibos(kept)[1:], axis=1)
            assert post.weights @ better >= 0.95
    else:
        assert start.rx is not None
        assert (filed.sphere_d, filed.cylinder_d) == (rounded.sphere_d, rounded.cylinder_d)
        assert axis_gap(filed.axis_deg, START_AXIS) < 1e-9


def test_within_radius_and_mutual_information_helpers():
    rng = np.random.default_rng(4)
    centre = np.array([-1.0, 0.2, -0.1])
    pv = centre + rng.normal(0, 1.5, (200, 3))
    out = within_radius(pv, centre, 1.0)
    d_in, d_out = np.linalg.norm(pv - centre, axis=1), np.linalg.norm(out - centre, axis=1)
    np.testing.assert_allclose(d_out, np.minimum(d_in, 1.0), atol=1e-12)
    # moved along the ray from the centre
    cos = np.sum((pv - centre) * (out - centre), axis=1) / (d_in * d_out)
    np.testing.assert_allclose(cos, 1.0, atol=1e-12)
    np.testing.assert_array_equal(out[d_in <= 1.0], pv[d_in <= 1.0])
    # I(y; theta) for particles with answer probabilities p: H(mean p) - mean H(p)
    p = rng.uniform(0.05, 0.95, (50, 4))

    def h(x):
        return -(x * np.log2(x) + (1 - x) * np.log2(1 - x))

    np.testing.assert_allclose(mutual_information_bits(p), h(p.mean(axis=0)) - h(p).mean(axis=0), rtol=1e-10)
    assert np.all(mutual_information_bits(np.tile(p[:1], (50, 1))) < 1e-12)  # identical particles: no information


def test_the_over_minus_guard_files_the_fewest_plus_steps_that_bound_the_tail():
    """``model.over_minus_guard = true``: the filed lens is the unguarded one made more plus by
    the fewest whole 0.25 D sphere steps k >= 0 that leave P(M* > M(filed) + 0.25 D) <= 2.5%,
    the cylinder and axis unchanged; off (the default), it is the unguarded lens."""
    text = PROTOCOL.source_text.replace('type = "optics"', 'type = "optics"\nover_minus_guard = true')
    guarded = parse_protocol(text, "guarded.toml")
    assert guarded.model.over_minus_guard == "always" and PROTOCOL.model.over_minus_guard == "never"
    moved = 0
    for start in STARTS.values():
        for n in (3, 5, 8):
            plain_engine, guard_engine = make_engine(PROTOCOL, start, SEED), make_engine(guarded, start, SEED)
            trials = make_log("mixed", plain_engine, n=n).trials()
            post = guard_engine.posterior(trials)
            plain, filed = plain_engine.filed_lens(plain_engine.posterior(trials)), guard_engine.filed_lens(post)
            m, w = post.theta[:, 0], post.weights / post.weights.sum()
            k = round((filed.sphere_d - plain.sphere_d) / 0.25)
            assert k >= 0 and math.isclose(filed.sphere_d, plain.sphere_d + 0.25 * k, abs_tol=1e-9)
            assert (filed.cylinder_d, filed.axis_deg) == (plain.cylinder_d, plain.axis_deg)
            assert w @ (m > thibos(filed)[0] + 0.25) <= 0.025 + 1e-12
            if k > 0:  # one step less plus would break the bound
                assert w @ (m > thibos(filed)[0]) > 0.025
                moved += 1
    assert moved > 0  # the wide posteriors of a few answers do move the lens


def _guarded(mode: str):
    text = PROTOCOL.source_text.replace('type = "optics"', f'type = "optics"\nover_minus_guard = "{mode}"')
    return parse_protocol(text, f"{mode}.toml")


@pytest.mark.parametrize("age", [30.0, 35.0, None, 35.5, 60.0])
def test_the_young_guard_acts_for_a_patient_who_may_accommodate(age):
    """``over_minus_guard = "young"`` files the guarded lens ("always") for a patient aged 35 or
    less or of unknown age, else the unguarded one ("never"), whatever the answers."""
    rx = STARTS["autorefraction"].rx
    start = StartingPoint(rx, "autorefraction", age) if age is not None else StartingPoint(rx, "autorefraction")
    modes = {m: _guarded(m) for m in ("never", "young", "always")}
    young = age is None or age <= 35
    guarded_some = False
    for n in (3, 5, 8):
        trials = make_log("mixed", make_engine(modes["never"], start, SEED), n=n).trials()
        filed = {}
        for name, protocol in modes.items():
            engine = make_engine(protocol, start, SEED)
            filed[name] = engine.filed_lens(engine.posterior(trials))
        assert filed["young"] == filed["always" if young else "never"]
        guarded_some |= filed["always"] != filed["never"]
    assert guarded_some  # the few answers leave a tail the guard moves


@pytest.mark.parametrize("value, mode", [(True, "always"), (False, "never"), ('"young"', "young")])
def test_the_over_minus_guard_reads_a_mode_or_a_boolean(value, mode):
    text = PROTOCOL.source_text.replace('type = "optics"', f'type = "optics"\nover_minus_guard = {str(value).lower()}')
    assert parse_protocol(text, "g.toml").model.over_minus_guard == mode
    assert load_protocol("clinical-sloan-compare").model.over_minus_guard == "young"


def test_the_over_minus_guard_must_be_a_known_mode():
    text = PROTOCOL.source_text.replace('type = "optics"', 'type = "optics"\nover_minus_guard = "yes"')
    with pytest.raises(ProtocolError, match='model.over_minus_guard: expected one of "always", "never", "young"'):
        parse_protocol(text, "bad.toml")
