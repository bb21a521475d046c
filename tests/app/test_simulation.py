"""The demo patient: same true correction as the command line's, answers following the
psychometric function (Monte Carlo against the closed form), wrong answers never the letter shown."""

import argparse

import numpy as np
import pytest

from visiontune.app.simulation import simulated_patient, simulated_reply, simulated_true_rx
from visiontune.errors import InvalidInputError
from visiontune.optics import Prescription

SLOAN = tuple("CDHKNORSVZ")
BOX = np.array([[-4.0, 4.0], [-4.0, 4.0]])


def test_true_rx_matches_the_headless_session_command():
    from visiontune.session.cli import _true_rx

    class FakeSession:  # what _true_rx reads
        seed, axis_deg = 11, 90.0
        problem = argparse.Namespace(box=BOX)

    expected = _true_rx(argparse.Namespace(true_rx=None), FakeSession())
    assert simulated_true_rx(11, BOX, 90.0) == expected


def test_answers_follow_the_psychometric_function():
    """Frequency of correct answers over 4000 trials vs P = γ + (1-γ) Φ(a (s - VA(x))) (002 Eq. 13)."""
    patient = simulated_patient(5, BOX, 90.0, n_alternatives=10, slope=5.0)
    lens = Prescription(patient.true_rx.sphere_d + 0.75, patient.true_rx.cylinder_d, 90.0)
    s = float(patient.acuity_logmar(lens))  # at threshold: P = γ + (1-γ)/2 = 0.55
    expected = 0.1 + 0.9 * 0.5
    replies = [simulated_reply(patient, s_logmar=s, lens=lens, letter_shown="K", letters=SLOAN, seed=5, trial_index=i)
               for i in range(4000)]  # fmt: skip
    freq = np.mean([r.correct for r in replies])
    assert abs(freq - expected) < 4 * np.sqrt(expected * (1 - expected) / 4000)
    assert all((r.letter_named == "K") == r.correct for r in replies)
    wrong = [r.letter_named for r in replies if not r.correct]
    counts = np.array([wrong.count(x) for x in SLOAN if x != "K"])
    assert counts.min() > 0.6 * counts.mean()  # wrong letters spread over the other 9


def test_replies_are_reproducible_from_the_seed():
    def run():
        p = simulated_patient(3, BOX, 90.0, n_alternatives=10)
        return [simulated_reply(p, s_logmar=0.3, lens=Prescription(0, 0, 90), letter_shown="C", letters=SLOAN,
                                seed=3, trial_index=i) for i in range(50)]  # fmt: skip

    assert run() == run()


def test_bad_letters_are_rejected():
    p = simulated_patient(3, BOX, 90.0, n_alternatives=10)
    with pytest.raises(InvalidInputError, match="letter_shown"):
        simulated_reply(p, s_logmar=0.0, lens=Prescription(0, 0, 90), letter_shown="Q", letters=SLOAN, seed=1, trial_index=0)
    with pytest.raises(InvalidInputError, match="box"):
        simulated_true_rx(1, [[0, 1]], 90.0)
