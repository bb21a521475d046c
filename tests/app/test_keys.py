"""Key -> command, phase by phase (pure; no Qt)."""

import pytest

from visiontune.app.logic.keys import Action, Command, Phase, Rejected, interpret_key, legend

SLOAN = tuple("CDHKNORSVZ")
LETTERS26 = tuple("ABCDEFGHIJKLMNOPQRSTUVWXYZ")


def key(name, text="", phase=Phase.ANSWER, letters=SLOAN, **kw):
    return interpret_key(name, text, phase=phase, letters=letters, **kw)


@pytest.mark.parametrize("name", ["Return", "Enter", "Space"])
def test_enter_and_space_confirm_the_lens(name):
    assert key(name, " " if name == "Space" else "\r", phase=Phase.LENS) == Command(Action.CONFIRM_LENS)


def test_letters_of_the_set_name_letters_case_blind():
    assert key("K", "k") == Command(Action.ANSWER_LETTER, "K")
    assert key("N", "N") == Command(Action.ANSWER_LETTER, "N")  # N is a Sloan letter, not "incorrect"


@pytest.mark.parametrize(
    "text,action",
    [
        ("+", Action.ANSWER_CORRECT),
        ("=", Action.ANSWER_CORRECT),
        ("y", Action.ANSWER_CORRECT),
        ("-", Action.ANSWER_WRONG),
    ],
)
def test_plus_minus_and_y_judge_the_answer(text, action):
    assert key(text.upper(), text) == Command(action)


def test_n_is_incorrect_only_when_it_is_not_a_letter_of_the_chart():
    assert key("N", "n", letters=tuple("CDHKORSVZ")) == Command(Action.ANSWER_WRONG)


def test_a_letter_outside_the_set_is_rejected_calmly():
    r = key("Q", "q")
    assert isinstance(r, Rejected) and "'Q' is not a letter" in r.message and "nothing recorded" in r.message


def test_backspace_pause_finish_escape():
    assert key("Backspace", "\b", phase=Phase.LENS) == Command(Action.UNDO)
    assert key("P", "p", phase=Phase.LENS) == Command(Action.PAUSE_TOGGLE)
    assert key("F", "f", phase=Phase.ANSWER) == Command(Action.FINISH)  # F is not a Sloan letter
    assert key("Escape", "\x1b", phase=Phase.ANSWER) == Command(Action.BLANK)


def test_with_26_letters_p_and_f_name_letters_and_ctrl_still_pauses_and_finishes():
    assert key("P", "p", letters=LETTERS26) == Command(Action.ANSWER_LETTER, "P")
    assert key("F", "f", letters=LETTERS26) == Command(Action.ANSWER_LETTER, "F")
    assert key("P", "\x10", letters=LETTERS26, ctrl=True) == Command(Action.PAUSE_TOGGLE)
    assert key("F", "\x06", letters=LETTERS26, ctrl=True) == Command(Action.FINISH)
    assert key("P", "p", letters=LETTERS26, phase=Phase.LENS) == Command(Action.PAUSE_TOGGLE)


def test_letters_before_the_lens_is_confirmed_do_nothing():
    r = key("K", "k", phase=Phase.LENS)
    assert isinstance(r, Rejected) and "set the lens" in r.message


def test_enter_with_the_letter_shown_types_the_simulated_answer_only_when_simulated():
    assert key("Return", "\r", simulated=True) == Command(Action.SIMULATED_ANSWER)
    assert isinstance(key("Return", "\r", simulated=False), Rejected)


@pytest.mark.parametrize("phase", [Phase.PAUSED, Phase.BUSY, Phase.STOPPED, Phase.FINISHED])
def test_answers_are_refused_outside_the_answer_phase(phase):
    assert isinstance(key("K", "k", phase=phase), Rejected)
    assert isinstance(key("Return", "\r", phase=phase), Rejected)


def test_while_paused_only_p_f_escape_act():
    assert key("P", "p", phase=Phase.PAUSED) == Command(Action.PAUSE_TOGGLE)
    assert key("F", "f", phase=Phase.PAUSED) == Command(Action.FINISH)
    assert isinstance(key("Backspace", "\b", phase=Phase.PAUSED), Rejected)


def test_stopped_allows_finish_and_undo():
    assert key("F", "f", phase=Phase.STOPPED) == Command(Action.FINISH)
    assert key("Backspace", "\b", phase=Phase.STOPPED) == Command(Action.UNDO)


def test_legend_names_the_clashes_of_the_letter_set():
    assert "N name letters" in legend(SLOAN) and "(or Y / N)" not in legend(SLOAN)
    assert "(or Y / N)" in legend(tuple("CDHKORSVZ"))
    assert "P/F/Y/N name letters" in legend(LETTERS26)
