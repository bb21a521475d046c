"""``model.keep_start_margin`` (visiontune.refraction.optics_engine, ``_kept_start``): the starting
prescription is filed in place of the lens the rules chose unless its posterior probability of
lying within 0.25 D of the correction is more than the margin below that lens's. Checked against
the closed form of an isotropic normal posterior (the probability of the 0.25 D window is a
noncentral chi-square), with the over-minus guard as a floor, on a session's answers, and the
setting's errors."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from scipy import stats

from visiontune.errors import ProtocolError
from visiontune.optics import Prescription
from visiontune.refraction.loop import MemoryLog, make_engine
from visiontune.refraction.optics_engine import FILED_WITHIN_D, filed_within_probability
from visiontune.refraction.protocol import load_protocol, parse_protocol
from visiontune.refraction.start import StartingPoint
from visiontune.refraction.trial import Trial
from visiontune.validation.validate_cli import _keep_start_note

LETTERS = load_protocol("clinical-sloan")
START = Prescription(-2.0, -0.5, 40.0)


def _protocol(margin: float | None, guard: str = "never"):
    model = dataclasses.replace(
        LETTERS.model, filed_lens="most-probable", keep_start_margin=margin, over_minus_guard=guard
    )
    return dataclasses.replace(LETTERS, model=model)


def _engine(margin: float | None, *, age: float = 60.0, guard: str = "never", start: Prescription | None = START):
    source = "autorefraction" if start is not None else "none"
    return make_engine(_protocol(margin, guard), StartingPoint(start, source, age), 3)


class _Draws:
    """Equally weighted draws of the correction, as the engine reads them."""

    def __init__(self, pv: np.ndarray) -> None:
        self.theta = np.column_stack([pv, np.zeros((len(pv), 3))])
        self.weights = np.full(len(pv), 1.0 / len(pv))

    def best_correction(self) -> np.ndarray:
        return self.theta[:, :3].mean(axis=0)


def _window(mu: np.ndarray, sd: float, lens: Prescription) -> float:
    """``P(|P(L) - P*| <= 0.25)`` for ``P* ~ N(mu, sd² I)``: the noncentral chi-square with 3 degrees."""
    centre = np.sum((lens.power_vector_array() - mu) ** 2) / sd**2
    return float(stats.ncx2.cdf(FILED_WITHIN_D**2 / sd**2, 3, centre))


@pytest.mark.parametrize(
    "offset, sd",
    [
        ((0.0, 0.0, 0.0), 0.10),  # the start is the correction: kept
        ((0.06, 0.03, -0.02), 0.10),  # a little off, between trial lenses: kept
        ((0.19, 0.05, 0.0), 0.08),  # a trial lens is clearly likelier: changed
        ((-0.45, 0.1, 0.1), 0.10),  # far: changed
        ((0.13, 0.0, 0.0), 0.10),  # the next sphere step a little likelier: kept
        ((0.14, 0.0, 0.0), 0.10),  # likelier by more than the margin: changed
    ],
)
def test_the_start_is_kept_exactly_when_the_closed_form_says_it_is_within_the_margin(offset, sd):
    """``P* ~ N(P(S) + offset, sd² I)``: the lens filed without the margin is the most probable trial
    lens; with ``δ = 0.05`` the start is filed when the closed-form ``P(S) >= P(L) - δ``, else ``L``
    (each case chosen at least 0.01 from the boundary, far beyond the Monte Carlo error of 200 000 draws)."""
    mu = START.power_vector_array() + np.array(offset)
    draws = _Draws(np.random.default_rng(11).normal(mu, sd, (200_000, 3)))
    free = _engine(None).filed_lens(draws)
    filed = _engine(0.05).filed_lens(draws)
    p_start, p_free = _window(mu, sd, START), _window(mu, sd, free)
    assert abs(p_start - (p_free - 0.05)) > 0.01
    expected = START if p_start >= p_free - 0.05 else free
    np.testing.assert_allclose(filed.power_vector_array(), expected.power_vector_array(), atol=1e-9)
    assert filed_within_probability(draws, filed) == pytest.approx(_window(mu, sd, filed), abs=4e-3)


def test_the_cases_above_keep_some_starts_and_change_others():
    """The parametrised cases are not all on one side: the start is kept in some, changed in others."""
    kept = []
    for offset, sd in (((0.0, 0.0, 0.0), 0.10), ((0.19, 0.05, 0.0), 0.08)):
        mu = START.power_vector_array() + np.array(offset)
        draws = _Draws(np.random.default_rng(11).normal(mu, sd, (50_000, 3)))
        kept.append(_engine(0.05).filed_lens(draws) == START.to_minus_cylinder())
    assert kept == [True, False]


def test_a_larger_margin_keeps_the_start_farther_from_the_posterior():
    """The window probability of the start falls as the posterior moves away from it; the largest
    offset along ``M`` at which it is kept grows with the margin, and is 0 with no margin unless the
    start is itself the most probable lens."""
    sd, rng = 0.08, np.random.default_rng(2)
    noise = rng.normal(0.0, sd, (100_000, 3))
    offsets = np.arange(0.0, 0.40, 0.02)

    def farthest(margin):
        kept = [
            o
            for o in offsets
            if _engine(margin).filed_lens(_Draws(START.power_vector_array() + [o, 0.0, 0.0] + noise))
            == START.to_minus_cylinder()
        ]
        return max(kept)

    small, large = farthest(0.02), farthest(0.2)
    assert 0.0 < small < large < 0.4


def test_with_the_guard_a_start_more_minus_than_the_guarded_lens_is_not_kept():
    """A young patient's posterior with a long plus tail of ``M*``: the guard lifts the lens filed
    above ``Q_97.5%(M*) - 0.25 D``; a start more minus than that is not filed however probable."""
    rng = np.random.default_rng(6)
    mu = START.power_vector_array()
    m = np.concatenate([rng.normal(mu[0], 0.06, 8000), rng.uniform(mu[0], mu[0] + 1.2, 2000)])
    draws = _Draws(np.column_stack([m, rng.normal(mu[1:], 0.05, (10_000, 2))]))
    young = _engine(0.5, age=25.0, guard="young")
    filed = young.filed_lens(draws)
    assert filed.power_vector_array()[0] > mu[0] + 1e-9
    assert filed_within_probability(draws, START) >= filed_within_probability(draws, filed) - 0.5
    old = _engine(0.5, age=60.0, guard="young")  # the guard does not cover an older patient
    assert old.filed_lens(draws) == START.to_minus_cylinder()


def test_without_a_margin_or_a_start_the_lens_is_the_rules():
    rng = np.random.default_rng(4)
    draws = _Draws(rng.normal(START.power_vector_array() + [0.13, 0.0, 0.0], 0.1, (20_000, 3)))  # a sphere step nearer
    assert _engine(None).filed_lens(draws) != START.to_minus_cylinder()
    assert _engine(0.05).filed_lens(draws) == START.to_minus_cylinder()
    assert _engine(0.05, start=None).filed_lens(draws) == _engine(None, start=None).filed_lens(draws)


def test_a_session_files_the_start_only_within_the_margin_of_the_lens_it_would_file():
    """The same letter answers read with and without the margin: the estimate and its region are the
    same; the lens filed is the same or the start, and the start only within 0.05 of the other's
    probability."""
    plain, keep = _engine(None, age=45.0), _engine(0.05, age=45.0)
    rng = np.random.default_rng(9)
    log, filed_start = MemoryLog(), 0
    for k in range(40):
        s, lens, _ = plain.propose(log.trials(), np.random.default_rng([3, k, 0]))
        log.record(Trial(k, s, lens, "H", bool(rng.random() < 0.75)))
        trials = log.trials()
        a = plain.estimate(trials, np.random.default_rng(0), np.random.default_rng(1), 0.95)
        b = keep.estimate(trials, np.random.default_rng(0), np.random.default_rng(1), 0.95)
        assert a.lens == b.lens and a.region == b.region
        post = keep.posterior(trials)
        if b.rounded != a.rounded:
            assert b.rounded == START.to_minus_cylinder()
            assert filed_within_probability(post, START) >= filed_within_probability(post, a.rounded) - 0.05
            filed_start += 1
    assert filed_start > 0


@pytest.mark.parametrize("value", ["0.05", "0", "0.5"])
def test_the_setting_is_read(value):
    text = LETTERS.source_text.replace('type = "optics"', f'type = "optics"\nkeep_start_margin = {value}')
    assert parse_protocol(text, "keep.toml").model.keep_start_margin == float(value)
    assert LETTERS.model.keep_start_margin is None


@pytest.mark.parametrize("value", ["0.6", "-0.01", '"small"', "nan", "true"])
def test_a_bad_setting_is_refused_naming_it(value):
    text = LETTERS.source_text.replace('type = "optics"', f'type = "optics"\nkeep_start_margin = {value}')
    with pytest.raises(ProtocolError, match=r"bad\.toml: model\.keep_start_margin: expected a number in \[0, 0\.5\]"):
        parse_protocol(text, "bad.toml")


def test_the_validation_page_states_the_margin_of_a_protocol_that_keeps_the_start():
    note = _keep_start_note(load_protocol("clinical-sloan-lines-two-formulas"))[0]
    assert "at most 0.05 below that lens's" in note and "`model.keep_start_margin`" in note
    assert _keep_start_note(LETTERS) == [] and _keep_start_note(load_protocol("clinical-sloan-compare")) == []
