"""The optics-GP hybrid: the optics formula enters the probit GP exactly as its prior mean."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
from scipy.optimize import minimize
from scipy.special import log_ndtr, ndtr, ndtri

from tests.stored_runs import assert_holds
from visiontune.errors import InvalidInputError, ProtocolError
from visiontune.optics import Prescription
from visiontune.refraction.loop import Answer, MemoryLog, Refraction, SimulatedPresenter
from visiontune.refraction.optics_model import (
    AMPLITUDE,
    OpticsModelSpec,
    ParticlePosterior,
    acuity_logmar,
    probability_correct,
)
from visiontune.refraction.policies import OPTICS_POLICIES
from visiontune.refraction.protocol import load_protocol, parse_protocol
from visiontune.refraction.simulated import simulated_case
from visiontune.refraction.start import StartingPoint
from visiontune.reproduction.engines.optics_gp_engine import OpticsGPEngine
from visiontune.reproduction.engines.optics_gp_model import (
    ResidualSpec,
    fit_residual,
    half_latent,
    probit_mean,
    threshold_slope,
)
from visiontune.session.engine import RefractionSession
from visiontune.session.store import TrialStore

PROTOCOL = Path(__file__).resolve().parents[2] / "docs" / "results" / "protocols" / "clinical-sloan-optics-gp.toml"
SPEC = OpticsModelSpec(10, lapse=0.04, n_particles=500)
START = StartingPoint(Prescription(-2.0, -1.0, 30.0), "autorefraction", 45.0)


def _posterior(n_answers: int = 40, seed: int = 3) -> ParticlePosterior:
    """A particle posterior after ``n_answers`` answers of a patient who is not the formula:
    acuity falls linearly with blur (0.5 logMAR per diopter), best lens (-1.5, 0.3, -0.2)."""
    post = ParticlePosterior(SPEC, START, seed)
    rng = np.random.default_rng(seed)
    truth = np.array([-1.5, 0.3, -0.2])
    for _ in range(n_answers):
        lens = truth + rng.normal(0.0, 0.5, 3)
        s = rng.uniform(-0.2, 0.6)
        va = 0.5 * np.linalg.norm(lens - truth)
        p = 0.1 + 0.86 * ndtr(5.0 * (s - va))
        post.update(s, lens, bool(rng.random() < p))
    return post


def _fit(post, sd=0.5):
    return fit_residual(post, ResidualSpec(sd=sd, lengthscale_logmar=0.3, lengthscale_d=0.5))


def test_the_prior_mean_is_the_optics_probability_on_the_probit_scale():
    post = _posterior(5)
    s = np.linspace(-0.3, 1.0, 7)
    lenses = np.random.default_rng(0).normal(-2.0, 0.6, (7, 3))
    assert np.allclose(
        ndtr(probit_mean(post.theta, s, lenses, SPEC)),
        probability_correct(post.theta, s, lenses, SPEC),
        rtol=0,
        atol=1e-12,
    )


def test_with_a_vanishing_amplitude_the_hybrid_is_the_optics_formula():
    """σ_g -> 0: the predictive probability, the best corrections and the acuity are the
    optics model's at each particle (the GP adds nothing), to numerical precision."""
    post = _posterior(40)
    fit = _fit(post, sd=1e-6)
    theta = post.theta[:50]
    s = np.linspace(-0.3, 1.0, 9)
    lenses = np.random.default_rng(1).normal(-1.5, 0.5, (9, 3))
    hat = post.mean()[None, :6]
    assert np.allclose(fit.probabilities(hat, s, lenses), probability_correct(hat, s, lenses, SPEC), rtol=0, atol=1e-9)
    assert np.allclose(
        fit.probabilities(theta, s, lenses), probability_correct(theta, s, lenses, SPEC), rtol=0, atol=1e-9
    )
    assert np.allclose(
        fit.probabilities(theta, s, lenses, marginal=False),
        probability_correct(theta, s, lenses, SPEC),
        rtol=0,
        atol=1e-9,
    )
    grid = fit.probability_grid(theta, s, lenses)
    assert np.allclose(grid[:, 3, :], probability_correct(theta, np.full(9, s[3]), lenses, SPEC), rtol=0, atol=1e-9)
    assert np.allclose(fit.corrections(theta), theta[:, :3], rtol=0, atol=1e-9)
    assert np.allclose(fit.acuity(theta, lenses), acuity_logmar(theta, lenses), rtol=0, atol=1e-9)


def test_the_prior_mean_is_the_optics_posterior_predictive_and_enters_the_fit_exactly():
    """The prior mean at the answers is Φ⁻¹ of the particles' weighted mean P(correct), and the
    GP's posterior of g there is the mode of -½ gᵀK⁻¹g + Σ log Φ(y'(μ̄ + g)), found here by a
    general-purpose optimiser (an independent oracle)."""
    post = _posterior(25)
    fit = _fit(post)
    X = np.column_stack([post.s, post.lenses])
    K = fit.gp.kernel(X) + 1e-10 * np.eye(len(X))
    w = post.weights
    m = ndtri(
        np.array(
            [
                w @ probability_correct(post.theta, post.s[j : j + 1], post.lenses[j : j + 1], SPEC)[:, 0]
                for j in range(len(X))
            ]
        )
    )
    assert np.allclose(fit.prior_mean, m, rtol=0, atol=1e-12)
    ys = 2.0 * post.correct - 1.0
    K_inv = np.linalg.inv(K)

    def objective(g):
        return 0.5 * g @ K_inv @ g - np.sum(log_ndtr(ys * (m + g)))

    mode = minimize(objective, np.zeros(len(X)), method="BFGS", options={"gtol": 1e-10}).x
    assert np.allclose(fit.gp.predict(X)[0], mode, atol=1e-4)


def test_the_lens_gradient_matches_finite_differences():
    post = _posterior(30)
    fit = _fit(post)
    s = np.array([0.1, 0.3])
    lenses = np.array([[-1.3, 0.2, -0.1], [-1.9, 0.5, 0.0]])
    grad = fit.lens_gradient(s, lenses)
    h = 1e-5
    for k in range(3):
        step = np.zeros(3)
        step[k] = h
        fd = (fit.predict(s, lenses + step)[0] - fit.predict(s, lenses - step)[0]) / (2 * h)
        assert np.allclose(grad[:, k], fd, rtol=1e-5, atol=1e-8)


def test_the_threshold_slope_and_the_curvature_match_finite_differences():
    """``∂μ/∂s`` at threshold and, without accommodation, ``-κ = ∂²μ/∂L²`` at the best lens."""
    theta = _posterior(5).theta[:5].copy()
    theta[:, AMPLITUDE] = 0.0
    slope = threshold_slope(theta, SPEC)
    h = 1e-4
    for i, t in enumerate(theta):
        va = t[3]
        pv = t[None, :3]
        mu = [probit_mean(t[None, :], np.array([va + d]), pv, SPEC)[0, 0] for d in (-h, 0.0, h)]
        assert mu[1] == pytest.approx(half_latent(SPEC), abs=1e-12)
        assert (mu[2] - mu[0]) / (2 * h) == pytest.approx(slope[i], rel=1e-6)
        kappa = 2.0 * slope[i] / math.log(10.0)
        for k in range(3):
            step = np.zeros(3)
            step[k] = 1e-3
            vals = [probit_mean(t[None, :], np.array([va]), pv + d * step, SPEC)[0, 0] for d in (-1.0, 0.0, 1.0)]
            assert (vals[2] - 2 * vals[1] + vals[0]) / 1e-6 == pytest.approx(-kappa, rel=1e-3)


def test_a_draws_best_correction_is_the_maximum_of_its_hybrid_latent():
    """P*_i + δ_i (one Newton step) against the numerical maximiser of μ_θi(VA*_i, L) + m_g(VA*_i, L)
    without accommodation, for draws whose shift is small."""
    post = _posterior(60)
    fit = _fit(post)
    theta = post.theta[:8].copy()
    theta[:, AMPLITUDE] = 0.0
    moved = fit.corrections(theta)
    for t, c in zip(theta, moved):

        def negative(pv):
            lens = pv[None, :]
            s = np.array([t[3]])
            return -(probit_mean(t[None, :], s, lens, SPEC)[0, 0] + fit.predict(s, lens)[0][0])

        best = minimize(negative, t[:3], method="Nelder-Mead", options={"xatol": 1e-7, "fatol": 1e-12}).x
        shift = np.linalg.norm(c - t[:3])
        assert np.linalg.norm(c - best) <= 0.1 * shift + 2e-3


def test_the_fit_refuses_answers_of_another_kind():
    post = _posterior(3)
    post.answers.append(object())
    with pytest.raises(InvalidInputError, match="letter answers only"):
        _fit(post)


def test_a_bad_residual_spec_is_refused():
    with pytest.raises(InvalidInputError, match="sd: expected a positive number"):
        ResidualSpec(sd=0.0)


# ------------------------------------------------------------------ protocol and sessions


def test_the_protocol_parses_as_the_hybrid_and_refuses_comparisons_and_sliders():
    protocol = load_protocol(PROTOCOL)
    assert protocol.model.type == "optics-gp" and protocol.policy == "evr"
    assert (protocol.model.residual_sd, protocol.model.residual_lengthscale_d) == (0.25, 0.75)
    text = PROTOCOL.read_text()
    for table in ("comparisons", "sliders"):
        with pytest.raises(
            ProtocolError, match=f'x.toml: {table}: expected no such table for model.type = "optics-gp"'
        ):
            parse_protocol(text + f"\n[{table}]\n", "x.toml")
    with pytest.raises(ProtocolError, match="model.residual_sd: expected a number in"):
        parse_protocol(text.replace("residual_sd = 0.25", "residual_sd = 0"), "x.toml")
    with pytest.raises(ProtocolError, match="model.over_minus_guard: unknown key"):
        parse_protocol(text.replace('type = "optics-gp"', 'type = "optics-gp"\nover_minus_guard = true'), "x.toml")


def _queries(trials):
    return [(t.s_logmar, t.lens.sphere_d, t.lens.cylinder_d, t.lens.axis_deg % 180.0, bool(t.correct)) for t in trials]


def test_a_simulated_session_runs_and_a_rebuilt_one_replays_it_bit_for_bit():
    protocol = load_protocol(PROTOCOL)
    case = simulated_case(seed=4, protocol=protocol)
    start = StartingPoint(case.start_rx, case.start_source, case.age_years)
    log = MemoryLog()
    live = Refraction(log, protocol, seed=case.seed, start=start, simulated=True)
    assert isinstance(live.engine, OpticsGPEngine)
    live.run(SimulatedPresenter(case.patient(10)), max_steps=22)
    trials = live.trials()
    assert len(trials) == 22 and len({q[1:4] for q in _queries(trials)}) > 2
    # an interrupted session resumed from its log asks the same next queries
    half = MemoryLog()
    first = Refraction(half, protocol, seed=case.seed, start=start, simulated=True)
    first.run(SimulatedPresenter(case.patient(10)), max_steps=9)
    resumed = Refraction(half, protocol, seed=case.seed, start=start, simulated=True)
    resumed.run(SimulatedPresenter(case.patient(10)), max_steps=13)
    assert _queries(resumed.trials()) == _queries(trials)
    a, b = live.current_estimate(), resumed.current_estimate()
    assert a.lens == b.lens and a.rounded == b.rounded and a.region == b.region and a.va_logmar == b.va_logmar
    result = live.finish("clinician")
    assert result["model"] == "optics-gp" and result["simulated"] is True
    assert result["credible_interval"]["m_pm_d"] > 0.0


@pytest.mark.parametrize("policy", sorted(OPTICS_POLICIES))
def test_every_optics_rule_runs_on_the_hybrid_in_a_stored_session(tmp_path, policy):
    protocol = parse_protocol(PROTOCOL.read_text().replace('policy = "evr"', f'policy = "{policy}"'), f"{policy}.toml")
    with TrialStore.open(tmp_path / "log.sqlite3") as store:
        with RefractionSession.start(
            store, patient_id="P", eye="OD", protocol=protocol, simulated=True, seed=1, start=START
        ) as session:
            for correct in (True, False, True, True):
                q = session.next_query()
                assert protocol.logmar_range[0] <= q.s_logmar <= protocol.logmar_range[1]
                assert q.information_bits is not None and q.information_bits >= 0.0
                session.record(Answer(correct=correct))
            assert len(session.trials()) == 4


def test_with_a_vanishing_amplitude_a_session_asks_the_optics_models_queries():
    """σ_g -> 0 through the whole loop: the same letters and lenses as the optics model's session
    and the same filed lens (the GP adds nothing, the draws and the rules are the optics ones)."""
    text = PROTOCOL.read_text().replace("residual_sd = 0.25", "residual_sd = 1e-6")
    hybrid = parse_protocol(text, "tiny.toml")
    optics = load_protocol("clinical-sloan")
    case = simulated_case(seed=6, protocol=optics)
    start = StartingPoint(case.start_rx, case.start_source, case.age_years)
    runs = []
    for protocol in (optics, hybrid):
        r = Refraction(MemoryLog(), protocol, seed=case.seed, start=start, simulated=True)
        r.run(SimulatedPresenter(case.patient(10)), max_steps=15)
        runs.append(r)
    assert _queries(runs[0].trials()) == _queries(runs[1].trials())
    assert runs[0].current_estimate().rounded == runs[1].current_estimate().rounded


#: Names the runs held; their figures and answers are read from tests/fixtures/stored_runs.json.
STORE = PROTOCOL.parents[1] / "clinical-validation-optics-gp.sqlite"


@pytest.mark.replay
def test_a_stored_validation_run_holds_on_any_machine():
    """Case 0 of each population of docs/results/clinical-validation-optics-gp.md: recomputed from
    their recorded answers and rerun, what tests/stored_runs.py's assert_holds checks."""
    protocol = load_protocol(PROTOCOL)
    for population in ("adult-clinic", "adult-clinic-misspecified"):
        assert_holds(STORE, "clinical-sloan-optics-gp-seed1", protocol, population, 0)
