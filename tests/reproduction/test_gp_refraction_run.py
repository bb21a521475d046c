"""The refraction experiment (Fauvel & Chalk (contextual BO) §5): hyperparameters
(:mod:`visiontune.reproduction.engines.gp_hyperparameters`, re-exported by
:mod:`visiontune.reproduction.gp_refraction_run`) and one simulated run through the one trial loop."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import numpy as np
import pytest
from scipy.special import ndtr

from visiontune.errors import InvalidInputError, VisionTuneError
from visiontune.optics import Prescription
from visiontune.refraction.loop import MemoryLog, Refraction, SimulatedPresenter
from visiontune.reproduction import gp_refraction_run as R
from visiontune.reproduction.engines import gp_hyperparameters as H
from visiontune.reproduction.gp import ProbitGP, refraction_kernel
from visiontune.reproduction.gp.fit import log_evidence


def blendowske_va(estimate, true_rx):
    """Independent oracle: VA = log10(1 + β²), β = √(½(ΔS² + (ΔS + ΔC)²)) (contextual BO Eq. 12; docs/design.md)."""
    dS, dC = estimate[0] - true_rx[0], estimate[1] - true_rx[1]
    beta2 = 0.5 * (dS**2 + (dS + dC) ** 2)
    return float(np.log10(1.0 + beta2))


# --------------------------------------------------------------------- hyperparameters


def test_shipped_file_holds_every_stored_slope_and_alternative():
    stored = H.stored_hyperparameters()
    assert set(stored) == {(round(a, 9), n) for a in np.linspace(1, 8, 8) for n in (26, 10)}
    for hp in stored.values():
        assert hp.n_answers == H.N_FIT and hp.seed == H.FIT_SEED
        assert hp.theta > 0 and hp.variance > 0 and min(hp.lengthscales) > 0
        assert np.isfinite(hp.log_marginal_likelihood)


def test_the_bench_re_exports_the_hyperparameters_module():
    """The experiment's callers (benchmarks/, the investigation) import the fit from the bench."""
    for name in H.__all__:
        assert getattr(R, name) is getattr(H, name), name


def test_stored_slope_is_not_refit(monkeypatch):
    monkeypatch.setattr(H, "fit_refraction_hyperparameters", lambda *a, **k: pytest.fail("refit a stored slope"))
    H._fit_cached.cache_clear()
    hp = H.refraction_hyperparameters(5.0, 26)
    assert hp == H.stored_hyperparameters()[(5.0, 26)]
    k = H.fitted_refraction_kernel(slope=5.0, n_alternatives=26)
    assert np.allclose(np.exp(k.params), [hp.theta, *hp.lengthscales, hp.variance])


def test_other_slope_is_fit_on_the_fly_once(monkeypatch):
    calls = []

    def fake_fit(slope, n_alternatives, **kw):
        calls.append((slope, n_alternatives))
        return H.RefractionHyperparameters(slope, n_alternatives, 1.0, (2.0, 2.0), 1.0, -1.0)

    monkeypatch.setattr(H, "fit_refraction_hyperparameters", fake_fit)
    H._fit_cached.cache_clear()
    a = H.refraction_hyperparameters(3.3, 26)
    b = H.refraction_hyperparameters(3.3, 26)
    assert a is b and calls == [(3.3, 26)]
    # the experiment's run takes the same values into its protocol
    assert R.kernel_variant_hyperparameters(R.KERNEL_SE, 3.3, 26) is a
    H._fit_cached.cache_clear()


def test_simulated_fit_answers_follow_the_psychometric_function():
    """Monte Carlo: the mean answer equals the mean of γ + (1-γ) Φ(a (s - VA(x))) within 4 s.e."""
    X, y, rx = H.simulate_fit_data(5.0, 26, n=4000, seed=3)
    va = np.array([blendowske_va(x, (rx.sphere_d, rx.cylinder_d)) for x in X[:, 1:]])
    p = 1 / 26 + 25 / 26 * ndtr(5.0 * (X[:, 0] - va))
    assert abs(y.mean() - p.mean()) < 4 * np.sqrt(np.sum(p * (1 - p))) / len(p)
    assert np.all((X[:, 0] >= -1) & (X[:, 0] <= 2)) and np.all(np.abs(X[:, 1:]) <= 4)
    X2, y2, rx2 = H.simulate_fit_data(5.0, 26, n=4000, seed=3)
    assert np.array_equal(X, X2) and np.array_equal(y, y2) and rx == rx2


def test_shipped_fit_is_a_local_maximum_of_the_evidence():
    """Each log-hyperparameter moved by ±0.4 lowers the Laplace evidence on the fitting data."""
    hp = H.stored_hyperparameters()[(5.0, 26)]
    X, y, _ = H.simulate_fit_data(5.0, 26)
    kernel = hp.kernel()
    best = log_evidence(kernel, X, y)
    assert best == pytest.approx(hp.log_marginal_likelihood, abs=1e-3)
    for i in range(kernel.n_params):
        for step in (-0.4, 0.4):
            theta = kernel.params.copy()
            theta[i] += step
            assert log_evidence(kernel.with_params(theta), X, y) < best


def test_fitted_model_predicts_held_out_answers_better_than_a_constant():
    """Held-out answers of the same patient: mean log predictive density of the fitted GP beats
    the base-rate constant model, chance (log ½), and a short-lengthscale kernel."""
    hp = H.stored_hyperparameters()[(5.0, 26)]
    X, y, _ = H.simulate_fit_data(5.0, 26, n=1300, seed=11)
    Xtr, ytr, Xte, yte = X[:1000], y[:1000], X[1000:], y[1000:]

    def mean_log_pred(kernel):
        mu, var = ProbitGP(kernel, Xtr, ytr).predict(Xte)
        p = np.clip(ndtr(mu / np.sqrt(1 + var)), 1e-12, 1 - 1e-12)
        return np.mean(yte * np.log(p) + (1 - yte) * np.log(1 - p))

    fitted = mean_log_pred(hp.kernel())
    rate = ytr.mean()
    constant = np.mean(yte * np.log(rate) + (1 - yte) * np.log(1 - rate))
    short = mean_log_pred(refraction_kernel(hp.theta, np.array([0.05, 0.05]), hp.variance))
    assert fitted > constant + 0.1
    assert fitted > np.log(0.5) + 0.2
    assert fitted > short


def test_fit_on_a_small_data_set_returns_sensible_values():
    hp = H.fit_refraction_hyperparameters(4.0, 10, n=150, seed=5, n_starts=1)
    assert hp.slope == 4.0 and hp.n_alternatives == 10 and hp.n_answers == 150
    X, y, _ = H.simulate_fit_data(4.0, 10, n=150, seed=5)
    assert hp.log_marginal_likelihood == pytest.approx(log_evidence(hp.kernel(), X, y), abs=1e-6)
    assert hp.log_marginal_likelihood > log_evidence(refraction_kernel(1.0, np.array([2.0, 2.0]), 1.0), X, y)


def test_regenerate_writes_a_loadable_file(tmp_path, monkeypatch):
    monkeypatch.setattr(
        H,
        "fit_refraction_hyperparameters",
        lambda a, n, **k: H.RefractionHyperparameters(a, n, a, (1.0, 2.0), 3.0, -4.0),
    )
    monkeypatch.setattr(
        H,
        "fit_power_vector_hyperparameters",
        lambda a, n, **k: H.RefractionHyperparameters(a, n, a, (5.0, 6.0), 7.0, -8.0),
    )
    path = H.regenerate(tmp_path / "hp.json", slopes=(1.0, 2.0), alternatives=(26,))
    doc = json.loads(path.read_text())
    assert [e["slope"] for e in doc["entries"]] == [1.0, 2.0]
    assert H.RefractionHyperparameters.from_dict(doc["entries"][1]).theta == 2.0
    assert "python -m visiontune.reproduction.engines.gp_hyperparameters --regenerate" in doc["description"]


@pytest.mark.parametrize(
    "kwargs, name", [({"slope": 0.0}, "slope"), ({"slope": -1.0}, "slope"), ({"n_alternatives": 1}, "n_alternatives")]
)
def test_bad_fit_settings_name_the_argument(kwargs, name):
    args = {"slope": 5.0, "n_alternatives": 26, **kwargs}
    with pytest.raises(InvalidInputError, match=name):
        H.refraction_hyperparameters(args["slope"], args["n_alternatives"])


# --------------------------------------------------------------------- posterior acuity map


class _LinearLatent:
    """A stand-in model whose latent mean is a (s - VA(x)) exactly (no uncertainty)."""

    def __init__(self, true_rx):
        self.true_rx = true_rx

    def predict(self, Z):
        va = np.array([blendowske_va(x, self.true_rx) for x in Z[:, 1:]])
        return 5.0 * (Z[:, 0] - va), np.zeros(len(Z))


def test_posterior_acuity_map_recovers_the_zero_crossing():
    spheres, cylinders, va = R.posterior_acuity_map(_LinearLatent((1.0, -1.0)), n=9, n_s=301)
    for i, S in enumerate(spheres):
        for j, C in enumerate(cylinders):
            expected = min(blendowske_va((S, C), (1.0, -1.0)), 2.0)
            assert va[i, j] == pytest.approx(expected, abs=1e-3)


# --------------------------------------------------------------------- runs


def test_same_seed_gives_the_same_run_and_json():
    a = R.run_refraction("UCB-ALD", slope=5.0, trials=12, seed=4)
    b = R.run_refraction("ucb-ald", slope=5.0, trials=12, seed=4)
    assert a == b
    assert json.dumps(a.to_json_dict()) == json.dumps(b.to_json_dict())
    c = R.run_refraction("UCB-ALD", slope=5.0, trials=12, seed=5)
    assert c.true_rx != a.true_rx and c.records != a.records


def test_given_true_rx_keeps_the_other_streams():
    """The correction stream is separate: fixing true_rx leaves the policy's first random queries unchanged."""
    a = R.run_refraction("UCB-ALD", slope=5.0, trials=3, seed=8)
    b = R.run_refraction("UCB-ALD", slope=5.0, trials=3, seed=8, true_rx=(1.0, -2.0))
    assert [r.x for r in a.records] == [r.x for r in b.records]
    assert (b.true_rx.sphere_d, b.true_rx.cylinder_d) == (1.0, -2.0)


def test_records_are_consistent_with_the_patient_model():
    run = R.run_refraction("TS-ALD", slope=3.0, trials=8, seed=2, true_rx=Prescription(-1.5, -0.75, 180.0))
    assert len(run.records) == 8
    for rec in run.records:
        assert -1 <= rec.s <= 2 and all(-4 <= v <= 4 for v in rec.x + rec.estimate)
        assert rec.va_logmar == pytest.approx(blendowske_va(rec.estimate, (-1.5, -0.75)), abs=1e-9)
    assert run.sphere_error_d == pytest.approx(abs(run.final_estimate.sphere_d + 1.5))
    assert run.cylinder_error_d == pytest.approx(abs(run.final_estimate.cylinder_d + 0.75))
    assert run.final_model.n == 8
    final = run.to_json_dict()["final"]
    assert final["va_logmar"] == run.records[-1].va_logmar


def test_progress_is_called_once_per_trial():
    seen = []
    R.run_refraction("random-contextual", slope=5.0, trials=4, seed=0, progress=lambda k, n, r: seen.append((k, n)))
    assert seen == [(1, 4), (2, 4), (3, 4), (4, 4)]


def test_short_ucb_ald_runs_improve_the_acuity():
    """60 trials of UCB-ALD at slope 5 (seeds 0-3): the acuity through the estimate improves on
    average by more than 0.3 logMAR from the estimate after the first answer (the paper's
    Fig. 3B trend), and no run ends worse than it started."""
    runs = [R.run_refraction("UCB-ALD", slope=5.0, trials=60, seed=seed) for seed in range(4)]
    first = np.array([run.records[0].va_logmar for run in runs])
    final = np.array([run.final_va_logmar for run in runs])
    assert np.all(final <= first + 0.05)
    assert np.mean(first - final) > 0.3


@pytest.mark.parametrize(
    "kwargs, name",
    [
        ({"slope": 0.0}, "slope"),
        ({"slope": -2.0}, "slope"),
        ({"trials": 0}, "trials"),
        ({"trials": 2.5}, "trials"),
        ({"seed": -1}, "seed"),
        ({"true_rx": (4.5, 0.0)}, "true_rx"),
        ({"true_rx": (0.0, 0.0, 1.0)}, "true_rx"),
        ({"true_rx": Prescription(0.0, -1.0, 90.0)}, "true_rx"),
        ({"reference_context": 2.5}, "reference_context"),
        ({"inference": "mcmc"}, "inference"),
    ],
)
def test_bad_run_settings_name_the_argument(kwargs, name):
    args = {"slope": 5.0, "trials": 3, "seed": 0, **kwargs}
    with pytest.raises(VisionTuneError, match=name):
        R.run_refraction("UCB-ALD", **args)


@pytest.mark.parametrize("policy", ["no-such-rule", "MUC", "UCB_Phi"])
def test_unknown_or_non_contextual_policy_is_refused(policy):
    with pytest.raises(InvalidInputError, match="policy"):
        R.run_refraction(policy, slope=5.0, trials=3, seed=0)


def test_policy_names_match_case_insensitively():
    assert R.resolve_policy("ts-ald") == "TS-ALD"
    assert R.resolve_policy("Ucb-Ald") == "UCB-ALD"


# --------------------------------------------------------------------- the one trial loop


def test_a_run_is_the_paper_protocol_through_the_one_trial_loop():
    """Oracle: the session's loop (Refraction.run, the path of `visiontune session run --simulate`)
    driven by hand over a MemoryLog with the bench's protocol and patient: the same trials and
    answers, and the session result's estimate is the run's final estimate."""
    rx = Prescription(-2.0, 1.5, 180.0)
    run = R.run_refraction("TS-ALD", slope=3.0, trials=9, seed=11, true_rx=rx)
    protocol = R.paper_protocol("TS-ALD", slope=3.0, trials=9, seed=11)
    log = MemoryLog()
    result = Refraction(log, protocol, seed=11, simulated=True).run(
        SimulatedPresenter(R.paper_patient(11, protocol, rx, slope=3.0))
    )
    assert result["stopped_by"] == "budget" and result["trials_used"] == 9 and log.state == "finished"
    logged = [(t.s_logmar, (t.lens.sphere_d, t.lens.cylinder_d), t.correct) for t in log.trials()]
    assert logged == [(r.s, r.x, r.correct) for r in run.records]
    found = Prescription(**result["estimate"]).power_vector_array()  # the clinic's minus-cylinder form
    assert found == pytest.approx(Prescription(*run.records[-1].estimate, 180.0).power_vector_array(), abs=1e-12)


def test_the_paper_protocol_holds_the_rules_fixed_hyperparameters_and_continuous_lenses():
    for name, variant in (("UCB-ALD", R.KERNEL_SE), ("TS-ALD-SL", R.KERNEL_SHORT_LENGTHSCALE)):
        hp = R.kernel_variant_hyperparameters(variant, 4.0, 10)
        p = R.paper_protocol(name, slope=4.0, trials=40, n_alternatives=10, seed=3)
        assert p.model.type == "gp" and p.model.kernel == R.KERNEL_SE
        assert p.model.hyperparameters["theta"] == hp.theta and p.model.hyperparameters["variance"] == hp.variance
        assert tuple(p.model.hyperparameters["lengthscales"]) == hp.lengthscales
        assert p.policy == name.removesuffix("-SL").lower() and p.initial_random_trials == 5
        assert p.lenses.step_d == 0 and p.search_space.axis_deg == 180.0
        assert (tuple(p.search_space.sphere_d), tuple(p.search_space.cylinder_d)) == ((-4.0, 4.0), (-4.0, 4.0))
        assert p.n_alternatives == 10 and p.stopping.max_trials == 40 and p.stopping.precision is None
    with pytest.raises(InvalidInputError, match="26 letters"):
        R.paper_protocol("UCB-ALD", slope=4.0, trials=4, n_alternatives=27)


def test_lenses_stay_continuous_and_every_score_is_the_acuity_through_the_estimate():
    """No trial lens or estimate is rounded to 0.25 D steps (the paper simulates continuous lenses)."""
    run = R.run_refraction("UCB-ALD-SL", slope=5.0, trials=20, seed=2, true_rx=(0.3, -1.1))
    values = np.array([v for r in run.records for v in (*r.x, *r.estimate)])
    assert np.mean(np.abs(values * 4 - np.round(values * 4)) > 1e-6) > 0.5
    for r in run.records:
        assert r.va_logmar == pytest.approx(blendowske_va(r.estimate, (0.3, -1.1)), abs=1e-12)


def _imports(package: str) -> set[str]:
    root = Path(R.__file__).resolve().parents[1] / package
    found = set()
    for path in root.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module:
                found.add(node.module)
                found.update(f"{node.module}.{a.name}" for a in node.names)
            elif isinstance(node, ast.Import):
                found.update(a.name for a in node.names)
    return found


def test_bench_and_session_do_not_import_each_other():
    """docs/design.md, "Layers": the reproduction and session/ sit side by side on refraction/ (lazy imports
    included), and the session imports none of the reproduction."""
    assert not {m for m in _imports("reproduction") if m.startswith("visiontune.session")}
    assert not {m for m in _imports("session") if m.startswith("visiontune.reproduction")}
    assert "visiontune.refraction.loop" in _imports("reproduction")
