"""The clinician's keyboard: one pure function from a key press to a command (no Qt).

Keys (the session view shows this legend):

- ``Enter`` / ``Space``: the lens is set -> show the letter. With the letter shown in a
  simulated session, the same key types the simulated patient's answer (one step per key).
- a letter of the protocol's set: the letter the patient named (scored against the one shown).
- ``+`` / ``-`` (or ``Y`` / ``N``): correct / incorrect, as judged by the clinician.
- ``1`` / ``2`` / ``=``: the answer to a comparison ("which is clearer, 1 or 2?"): lens 1,
  lens 2, no difference. With the lenses being compared in a simulated session, ``Enter`` /
  ``Space`` types the simulated patient's answer.
- ``Left`` / ``Right`` (or ``,`` / ``.``): a slider question ("turn the knob; where is it
  clearest?", :mod:`visiontune.refraction.slider`): turn the knob one click along its path;
  ``Enter`` / ``Space`` records the lens it is at as the patient's clearest. In a simulated
  session the simulated patient's choice is shown and ``Enter`` / ``Space`` types it.
- a chart line (:mod:`visiontune.app.logic.chart_line_entry`): each letter as the patient reads it,
  ``+`` / ``-`` (or ``Y`` / ``N``) or the letter named; or a digit, the number read right;
  ``Backspace`` takes back the last letter keyed (with none keyed it undoes the last answer);
  ``Enter`` / ``Space`` records the line. In a simulated session, ``Enter`` / ``Space`` with no
  letter keyed types the simulated patient's line.
- ``Backspace``: undo the last answer. ``P``: pause / resume. ``F``: finish (pressed twice).
- ``Escape``: blank the patient screen.

While a letter is awaited, a key that is also a letter of the set (``N`` of the Sloan set,
every letter of the 26-letter set) names that letter; ``Ctrl+P`` and ``Ctrl+F`` always pause
and finish. A key that means nothing in the current phase is :class:`Rejected` with a calm
sentence for the status bar; nothing is recorded.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class Phase(StrEnum):
    """Where the session view is: waiting for the engine, for the lens, for the answer..."""

    BUSY = "busy"
    LENS = "lens"
    ANSWER = "answer"
    COMPARE = "compare"
    SLIDE = "slide"
    LINE = "line"
    PAUSED = "paused"
    STOPPED = "stopped"
    FINISHED = "finished"


class Action(StrEnum):
    CONFIRM_LENS = "confirm-lens"
    SIMULATED_ANSWER = "simulated-answer"
    ANSWER_LETTER = "answer-letter"
    ANSWER_CORRECT = "answer-correct"
    ANSWER_WRONG = "answer-wrong"
    ANSWER_COMPARISON = "answer-comparison"
    SLIDER_LEFT = "slider-left"
    SLIDER_RIGHT = "slider-right"
    SLIDER_CHOOSE = "slider-choose"
    LINE_KEY = "line-key"
    UNDO = "undo"
    PAUSE_TOGGLE = "pause-toggle"
    FINISH = "finish"
    BLANK = "blank"


@dataclass(frozen=True)
class Command:
    """What a key asks for; ``letter`` is set for :attr:`Action.ANSWER_LETTER`,
    :attr:`Action.ANSWER_COMPARISON` (``"1"``, ``"2"`` or ``"="``) and :attr:`Action.LINE_KEY` (the
    key as :meth:`~visiontune.app.logic.chart_line_entry.LineEntry.press` takes it: a letter, ``+``,
    ``-``, a digit, ``BACKSPACE`` or ``ENTER``)."""

    action: Action
    letter: str | None = None


#: The keys of a comparison's answers: lens 1 clearer, lens 2 clearer, no difference.
COMPARISON_KEYS = ("1", "2", "=")
#: The keys that turn a slider's knob one click: key names, and the text of the unshifted ``<`` / ``>`` keys.
SLIDER_LEFT_KEYS, SLIDER_RIGHT_KEYS = frozenset({"Left"}), frozenset({"Right"})
SLIDER_LEFT_TEXT, SLIDER_RIGHT_TEXT = frozenset({",", "<"}), frozenset({".", ">"})


@dataclass(frozen=True)
class Rejected:
    """A key that does nothing now; ``message`` says why, for the status bar."""

    message: str


#: Key names the GUI passes for non-text keys (Qt key -> name in the main window).
ADVANCE_KEYS = frozenset({"Return", "Enter", "Space"})


def _label(name: str, text: str) -> str:
    return repr(text) if text and text.isprintable() and not text.isspace() else name


def interpret_key(
    name: str, text: str, *, phase: Phase, letters: tuple[str, ...], simulated: bool = False, ctrl: bool = False
) -> Command | Rejected:
    """The command for one key press.

    ``name``: the key's name (``"Return"``, ``"Space"``, ``"Backspace"``, ``"Escape"``, ``"K"``...);
    ``text``: the text it types (``"k"``, ``"+"``; may be empty); ``phase``: the view's phase;
    ``letters``: the protocol's letter set (upper case); ``simulated``: a simulated patient
    is answering; ``ctrl``: the Control modifier is held.
    """
    char = text.upper() if len(text) == 1 and text.isprintable() else ""
    if name == "Escape":
        return Command(Action.BLANK)
    if phase == Phase.FINISHED:
        return Rejected("The session is finished: nothing more is recorded.")
    if ctrl and char == "P" or ctrl and name == "P":
        return Command(Action.PAUSE_TOGGLE)
    if ctrl and (char == "F" or name == "F"):
        return Command(Action.FINISH)
    letter_awaited = phase in (Phase.ANSWER, Phase.LINE) and char in letters
    if char == "P" and not letter_awaited:
        return Command(Action.PAUSE_TOGGLE)
    if char == "F" and not letter_awaited:
        return Command(Action.FINISH)
    if phase == Phase.PAUSED:
        return Rejected("Session paused: press P to resume (F finishes).")
    if phase == Phase.BUSY:
        return Rejected("Computing the next lens, one moment.")
    if name == "Backspace":
        return Command(Action.LINE_KEY, "BACKSPACE") if phase == Phase.LINE else Command(Action.UNDO)
    if phase == Phase.STOPPED:
        return Rejected("The stopping rule is met: press F to finish, or Backspace to undo the last answer.")
    if phase == Phase.LENS:
        if name in ADVANCE_KEYS:
            return Command(Action.CONFIRM_LENS)
        return Rejected(f"Key {_label(name, text)} does nothing yet: set the lens, then press Enter or Space.")
    if phase == Phase.SLIDE:
        if name in SLIDER_LEFT_KEYS or char in SLIDER_LEFT_TEXT:
            return Command(Action.SLIDER_LEFT)
        if name in SLIDER_RIGHT_KEYS or char in SLIDER_RIGHT_TEXT:
            return Command(Action.SLIDER_RIGHT)
        if name in ADVANCE_KEYS:
            return Command(Action.SIMULATED_ANSWER if simulated else Action.SLIDER_CHOOSE)
        return Rejected(
            f"Key {_label(name, text)} does nothing here: turn the knob with ← / → (or , / .), "
            "press Enter where the letters are clearest."
        )
    if phase == Phase.COMPARE:
        if name in ADVANCE_KEYS and simulated:
            return Command(Action.SIMULATED_ANSWER)
        if char in COMPARISON_KEYS:
            return Command(Action.ANSWER_COMPARISON, char)
        return Rejected(
            f"Key {_label(name, text)} does nothing here: press 1 or 2 for the clearer lens, = for no difference."
        )
    if phase == Phase.LINE:
        return _line_key(name, text, char, letters, simulated, letter_awaited)
    # Phase.ANSWER
    if name in ADVANCE_KEYS:
        if simulated:
            return Command(Action.SIMULATED_ANSWER)
        return Rejected("The letter is on screen: type the letter the patient names, or + / -.")
    if letter_awaited:
        return Command(Action.ANSWER_LETTER, char)
    if char in ("+", "=", "Y"):  # '=' is the unshifted '+' key on US layouts
        return Command(Action.ANSWER_CORRECT)
    if char == "-" or char == "N":
        return Command(Action.ANSWER_WRONG)
    if char.isalpha():
        return Rejected(f"{char!r} is not a letter of this chart ({' '.join(letters)}): nothing recorded.")
    return Rejected(f"Key {_label(name, text)} does nothing here: type the letter named, or + / -.")


def _line_key(
    name: str, text: str, char: str, letters: tuple[str, ...], simulated: bool, letter_awaited: bool
) -> Command | Rejected:
    """A key while a chart line is read (module docstring): every key that may mean something goes
    to the line's entry, which says why it refuses one (nothing is recorded then)."""
    if name in ADVANCE_KEYS:
        return Command(Action.SIMULATED_ANSWER if simulated else Action.LINE_KEY, None if simulated else "ENTER")
    if letter_awaited:
        return Command(Action.LINE_KEY, char)
    if char in ("+", "=", "Y"):  # '=' is the unshifted '+' key on US layouts
        return Command(Action.LINE_KEY, "+")
    if char in ("-", "N"):
        return Command(Action.LINE_KEY, char)
    if char.isdigit():
        return Command(Action.LINE_KEY, char)
    if char.isalpha():
        return Rejected(f"{char!r} is not a letter of this chart ({' '.join(letters)}): nothing keyed.")
    return Rejected(
        f"Key {_label(name, text)} does nothing here: + or \u2212 for each letter read, the letter named, "
        "or the number read right; Enter records the line."
    )


def legend(letters: tuple[str, ...]) -> str:
    """The key legend shown under the lens, naming the clashes with this letter set."""
    clash = [k for k in ("P", "F", "Y", "N") if k in letters]
    lines = [
        "Enter/Space  lens set, show letter    a line: a key per letter read, Enter records it",
        "letter keys  letter named    + / -  correct / incorrect"
        + ("" if {"Y", "N"} & set(letters) else " (or Y / N)"),
        "1 / 2 / =  comparison    ← / → (, .)  turn the slider knob, Enter  clearest",
        "Backspace  undo    P  pause/resume    F F  finish    Esc  blank patient screen",
    ]
    if clash:
        lines.append(
            f"While a letter is awaited, {'/'.join(clash)} name letters; Ctrl+P / Ctrl+F always pause / finish."
        )
    return "\n".join(lines)
