"""``stopping.precision.over_minus_risk`` (visiontune.refraction.optics_engine): in a session the
over-minus guard covers, the precision stop also waits until the lens to file is more minus than
the correction by over 0.25 D with posterior probability at most the limit. The risk is checked
against the normal tail on normal draws (a closed form), the stop and the progress on simulated
young patients' sessions (the risk at the stop recomputed from the draws), and the protocol's
setting and its errors."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from scipy import stats

from visiontune.errors import ProtocolError
from visiontune.optics import Prescription
from visiontune.optics.patient import SimulatedPatient
from visiontune.refraction.loop import MemoryLog, Refraction, SimulatedPresenter, make_engine
from visiontune.refraction.optics_engine import OVER_MINUS_D
from visiontune.refraction.protocol import load_protocol, parse_protocol
from visiontune.refraction.start import StartingPoint
from visiontune.validation.validate_cli import _over_minus_note

SHIPPED = load_protocol("clinical-sloan-compare")
#: The former default: no over-minus wait, lens changes free.
PHOROPTER = load_protocol(
    str(
        Path(__file__).resolve().parents[2] / "docs" / "results" / "protocols" / "clinical-sloan-compare-phoropter.toml"
    )
)
LIMIT = 0.002


def _with_limit(protocol=PHOROPTER, line=f"over_minus_risk = {LIMIT}"):
    text = protocol.source_text.replace("[stopping.precision]\n", f"[stopping.precision]\n{line}\n")
    return parse_protocol(text, "over-minus-stop.toml")


class _Draws:
    """Weighted draws of the correction, as the engine reads them (``theta``, ``weights``,
    ``best_correction``: ``m_hat`` given, else the weighted mean)."""

    def __init__(self, m: np.ndarray, weights: np.ndarray, m_hat: float | None = None) -> None:
        self.theta = np.column_stack([m, np.zeros((len(m), 5))])
        self.weights = weights / weights.sum()
        self.m_hat = float(self.weights @ m) if m_hat is None else m_hat

    def best_correction(self) -> np.ndarray:
        return np.array([self.m_hat, 0.0, 0.0])


def _start(age):
    return StartingPoint(Prescription(-2.0, 0.0, 180.0), "autorefraction", age)


@pytest.mark.parametrize("mean, sd, lens_m", [(-2.0, 0.1, -2.25), (-2.0, 0.15, -2.0), (0.5, 0.2, 0.25)])
def test_the_risk_is_the_posterior_tail_beyond_the_lens_plus_a_quarter(mean, sd, lens_m):
    rng = np.random.default_rng(7)
    # importance-weighted draws (a wider normal, weighted to the target), so the weights matter
    m = rng.normal(mean, 2.0 * sd, 400_000)
    weights = stats.norm.pdf(m, mean, sd) / stats.norm.pdf(m, mean, 2.0 * sd)
    engine = make_engine(_with_limit(), _start(25.0), 3)
    risk = engine.over_minus_risk(_Draws(m, weights), Prescription(lens_m, 0.0, 180.0))
    expected = stats.norm.sf(lens_m + OVER_MINUS_D, mean, sd)
    assert risk == pytest.approx(expected, abs=4e-3 + 0.05 * expected)


@pytest.mark.parametrize("sd", [0.1, 0.2, 0.3])
def test_the_guard_still_files_at_its_own_risk(sd):
    """The limit is the stop's: the lens filed is bounded at ``(1 - level) / 2`` with or without it."""
    m = np.random.default_rng(2).normal(-2.0, sd, 200_000)
    draws = _Draws(m, np.ones(len(m)))
    bound = stats.norm.ppf(0.975, -2.0, sd) - OVER_MINUS_D
    for protocol in (_with_limit(), PHOROPTER):
        filed = make_engine(protocol, _start(25.0), 3).filed_lens(draws).power_vector_array()[0]
        assert bound - 0.01 <= filed < bound + 0.25 + 0.01  # whole steps past the 2.5% bound, no more
    unguarded = make_engine(_with_limit(), _start(60.0), 3).filed_lens(draws)
    assert unguarded.power_vector_array()[0] == pytest.approx(-2.0)


def test_the_risk_is_waited_for_only_where_the_guard_covers_the_session_and_the_limit_is_set():
    draws = _Draws(np.random.default_rng(1).normal(-2.0, 0.2, 1000), np.ones(1000))
    lens = Prescription(-2.25, 0.0, 180.0)
    assert make_engine(_with_limit(), _start(25.0), 3).over_minus_risk(draws, lens) > 0.0
    assert make_engine(_with_limit(), _start(None), 3).over_minus_risk(draws, lens) > 0.0
    assert make_engine(_with_limit(), _start(60.0), 3).over_minus_risk(draws, lens) is None  # guard "young"
    assert make_engine(PHOROPTER, _start(25.0), 3).over_minus_risk(draws, lens) is None  # no limit
    waits = [
        Refraction(MemoryLog(), protocol, seed=3, start=_start(age)).waits_for_over_minus()
        for protocol, age in ((_with_limit(), 25.0), (_with_limit(), None), (_with_limit(), 60.0), (PHOROPTER, 25.0))
    ]
    assert waits == [True, True, False, False]


def _young_session(protocol, seed=8):
    patient = SimulatedPatient(
        Prescription(-1.5, 0.0, 180.0),
        best_corrected_logmar=-0.05,
        slope=5.0,
        lapse=0.03,
        n_alternatives=protocol.n_alternatives,
        age_years=20.0,
        seed=seed,
    )
    start = StartingPoint(Prescription(-2.0, 0.0, 180.0), "autorefraction", 20.0)
    refraction = Refraction(MemoryLog(), protocol, seed=seed, start=start)
    checks = []
    while (reason := refraction.stop_reason()) is None:
        region = refraction.current_estimate().region
        within = refraction.engine.region_within_precision(region)
        engine = refraction.engine
        risk = engine.over_minus_risk(
            engine.correction_draws(refraction.trials()), refraction.current_estimate().rounded
        )
        checks.append((within, risk, refraction.progress()))
        refraction.run(SimulatedPresenter(patient), max_steps=1)
    return refraction, reason, checks


def test_a_young_session_stops_only_once_the_lens_filed_is_safe_and_its_progress_says_so():
    protocol = _with_limit()
    refraction, reason, checks = _young_session(protocol)
    engine = refraction.engine
    assert reason == "precision"
    draws = engine.correction_draws(refraction.trials())
    filed = refraction.current_estimate().rounded.power_vector_array()[0]
    assert draws.weights @ (draws.theta[:, 0] > filed + OVER_MINUS_D + 1e-9) <= LIMIT
    waited = [(risk, progress) for within, risk, progress in checks if within and risk > LIMIT]
    assert waited, "this session's region was within the precision before its over-minus risk was"
    for risk, progress in waited:
        assert progress == pytest.approx(np.log(risk) / np.log(LIMIT)) and progress < 1.0
    # where the stop without the wait would have fired on the same answers, the wait held it
    held = 0
    for n in (k for k, (within, risk, _) in enumerate(checks) if within and risk > LIMIT):
        verdicts = []
        for limited in (PHOROPTER, protocol):
            engine = make_engine(limited, refraction.start_point, refraction.seed)
            est = engine.estimate(refraction.trials()[:n], np.random.default_rng(0), np.random.default_rng(1), 0.95)
            verdicts.append(engine.precision_met(est.region))
        assert verdicts[1] is False
        held += verdicts[0] and n >= protocol.stopping.min_trials
    assert held > 0


def test_the_setting_and_its_errors():
    assert SHIPPED.stopping.precision.over_minus_risk == 0.001 and PHOROPTER.stopping.precision.over_minus_risk is None
    assert _with_limit().stopping.precision.over_minus_risk == LIMIT
    for value, found in (("0", "0"), ("0.5", "0.5"), ('"low"', '"low"')):
        with pytest.raises(
            ProtocolError, match=rf"stopping.precision.over_minus_risk: expected a number in \(0, 0.5\), found {found}"
        ):
            _with_limit(line=f"over_minus_risk = {value}")
    never = parse_protocol(
        PHOROPTER.source_text.replace('over_minus_guard = "young"', 'over_minus_guard = "never"'), "n.toml"
    )
    with pytest.raises(ProtocolError, match='over_minus_risk: expected model.over_minus_guard "young" or "always"'):
        _with_limit(never)
    gp = load_protocol("paper-ucb-ald").source_text.replace(
        "max_trials = 260\n",
        "max_trials = 260\n[stopping.precision]\nsphere_d = 0.5\ncylinder_d = 0.5\nover_minus_risk = 0.01\n",
    )
    with pytest.raises(ProtocolError, match="stopping.precision.over_minus_risk"):
        parse_protocol(gp, "gp.toml")


def test_the_validation_page_says_when_the_stop_waits_for_the_over_minus_risk():
    assert (
        "with posterior probability at most 0.1% (`stopping.precision.over_minus_risk`)" in _over_minus_note(SHIPPED)[0]
    )
    assert _over_minus_note(PHOROPTER) == [] and _over_minus_note(load_protocol("clinical-sloan")) == []
