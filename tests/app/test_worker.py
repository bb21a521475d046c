"""The worker: plot data checked against independent computations, results via signals."""

import numpy as np
from app_helpers import SCREENSHOTS
from scipy.stats import norm

from visiontune.app.worker import export_basename, psychometric_at


class GaussianModel:
    """A model with a known latent mean and variance: ``μ_f = 2 s - 1``, ``σ_f² = 0.5 + s²``."""

    def predict(self, X):
        s = X[:, 0]
        return 2 * s - 1, 0.5 + s**2


def test_psychometric_curve_is_the_expected_probability_by_monte_carlo():
    """``Φ(μ/√(1+σ²)) = E[Φ(f)]`` for ``f ~ N(μ, σ²)`` (seed 000, Eq. 3): Monte Carlo oracle."""
    s, p, lo, hi = psychometric_at(GaussianModel(), np.array([0.5, -0.5]), (-1.0, 2.0), n=7)
    rng = np.random.default_rng(0)
    mu, var = 2 * s - 1, 0.5 + s**2
    draws = mu[:, None] + np.sqrt(var)[:, None] * rng.standard_normal((7, 200_000))
    np.testing.assert_allclose(p, norm.cdf(draws).mean(axis=1), atol=4e-3)
    z = norm.ppf(0.975)
    np.testing.assert_allclose(lo, norm.cdf(mu - z * np.sqrt(var)))
    np.testing.assert_allclose(hi, norm.cdf(mu + z * np.sqrt(var)))
    assert np.all(lo <= p) and np.all(p <= hi)


def test_export_names_say_simulated():
    assert export_basename(3, "P-1", "OS", True) == "visiontune-session-3-P-1-OS-SIMULATED"
    assert export_basename(3, "P-1", "OS", False) == "visiontune-session-3-P-1-OS"


def test_estimate_shown_is_the_engine_estimate_of_the_same_log(qtbot, make_window, paths):
    """The window's estimate equals a fresh engine replay of the stored log (same seeds)."""
    from PySide6.QtCore import Qt

    from visiontune.app.keys import Phase
    from visiontune.session.engine import RefractionSession
    from visiontune.session.store import TrialStore

    window = make_window(pace_s=0.01)
    window.start_view.patient_id.setText("SIM-EST")
    qtbot.mouseClick(window.start_view.start_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: window.last_estimate is not None and window.last_estimate.n_trials >= 20, timeout=90_000)
    window.sim_patient = None  # stop auto-answering
    window.auto_timer.stop()
    qtbot.waitUntil(lambda: window.worker_idle and window.phase in (Phase.LENS, Phase.ANSWER), timeout=30_000)
    qtbot.waitUntil(lambda: window.last_estimate.n_trials == window.snapshot.n_trials, timeout=30_000)
    view, sid = window.last_estimate, window.snapshot.session_id
    qtbot.wait(200)
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    assert window.grab().save(str(SCREENSHOTS / "readme_session_view.png"))  # a session well under way
    n = view.n_trials
    window.close()
    with TrialStore.open(paths["db"]) as store, RefractionSession.resume(store, sid) as session:
        assert len(session.trials()) == n
        est = session.current_estimate()
        model = session.model
    assert view.estimate.lens == est.lens and view.estimate.va_logmar == est.va_logmar
    assert view.trials.shape == (n, 3)
    ref = psychometric_at(model, np.array([est.lens.sphere_d, est.lens.cylinder_d]), session.problem.context_box[0])
    np.testing.assert_allclose(view.psychometric_p, ref[1])
    assert view.curve[-1] == (n, est.va_logmar)
    va = np.asarray(view.acuity_map["va_logmar"])
    assert va.shape == (21, 21) and np.all((va >= -1.0) & (va <= 2.0))
