"""A chart line at the clinician's keyboard and on the patient screen (no Qt).

The patient reads a line of letters aloud (:class:`~visiontune.refraction.loop.PendingLine`); the
clinician keys each letter as it is read, in order:

- ``+`` / ``Y``: the letter was read right; ``-`` / ``N``: wrong (``N`` names the letter N when N is
  on the line and a letter is expected: see below);
- a letter of the line's set: the letter the patient named, scored against the one at that place;
- a digit ``0``-``n`` before any letter is keyed: the number of letters read right (the line read
  to that letter, :meth:`~visiontune.refraction.loop.LineReply.from_count`), which completes it;
- ``Backspace``: take back the last letter keyed; ``Enter`` / ``Space``: record the line once
  every letter has its answer.

:class:`LineEntry` holds the keys of one line and gives the :class:`~visiontune.refraction.loop.LineReply`
to record; :func:`line_layout` places the letters at logMAR chart spacing (Bailey & Lovie 1976:
one letter width between letters; a Sloan letter is as wide as it is high).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from visiontune.display.geometry import line_centres_px
from visiontune.errors import InvalidInputError
from visiontune.refraction.loop import LineReply

__all__ = ["LineEntry", "line_layout"]

_RIGHT, _WRONG = ("+", "Y"), ("-", "N")


@dataclass
class LineEntry:
    """The answers keyed so far to a line of ``letters`` (in reading order), ``letter_set`` the
    letters a key may name."""

    letters: tuple[str, ...]
    letter_set: tuple[str, ...]
    marks: list[bool] = field(default_factory=list)

    def __post_init__(self) -> None:
        if len(self.letters) < 2 or any(x not in self.letter_set for x in self.letters):
            raise InvalidInputError(f"letters: expected two or more letters of the set, got {self.letters!r}")

    @property
    def complete(self) -> bool:
        return len(self.marks) == len(self.letters)

    @property
    def status(self) -> str:
        """One line for the clinician: each letter with its mark (+ right, - wrong, _ to come)."""
        signs = ["+" if m else "-" for m in self.marks] + ["_"] * (len(self.letters) - len(self.marks))
        return "  ".join(f"{x}{s}" for x, s in zip(self.letters, signs, strict=True))

    def press(self, key: str) -> LineReply | None:
        """Apply one key (module docstring); the :class:`LineReply` when ``Enter`` / ``Space``
        records a complete line or a digit gives the count, else None. A key that means nothing
        here raises :class:`InvalidInputError` saying why; nothing changes then."""
        k = key.strip().upper() if key.strip() else key
        if k in ("ENTER", "RETURN", " ", "SPACE"):
            if not self.complete:
                raise InvalidInputError(f"the line has {len(self.letters)} letters; {len(self.marks)} keyed so far")
            return LineReply(tuple(self.marks))
        if k == "BACKSPACE":
            if self.marks:
                self.marks.pop()
            return None
        if k.isdigit() and len(k) == 1:
            if self.marks:
                raise InvalidInputError("a count of letters read is keyed before any letter; Backspace to start again")
            n = int(k)
            if n > len(self.letters):
                raise InvalidInputError(f"the line has {len(self.letters)} letters; {n} cannot be read right")
            self.marks = [j < n for j in range(len(self.letters))]
            return LineReply(tuple(self.marks))
        if self.complete:
            raise InvalidInputError(
                "every letter of the line has its answer: Enter records it, Backspace takes one back"
            )
        if k in self.letter_set and not (k in _WRONG and k not in self.letters):
            self.marks.append(k == self.letters[len(self.marks)])
        elif k in _RIGHT or k in _WRONG:
            self.marks.append(k in _RIGHT)
        else:
            raise InvalidInputError(
                f"key {key!r}: + or - for the letter read, the letter named, or a count 0-{len(self.letters)}"
            )
        return None


def line_layout(n_letters: int, letter_height_px: float, centre_x_px: float = 0.0) -> list[float]:
    """The x of each letter's centre (px) for a line of ``n_letters`` Sloan letters of height
    ``letter_height_px``, centred on ``centre_x_px``: letters as wide as high with one letter width
    between neighbours (Bailey & Lovie 1976), so centres ``2 × height`` apart."""
    if n_letters < 1 or not letter_height_px > 0:
        raise InvalidInputError(f"line: expected letters and a positive height, got {n_letters}, {letter_height_px}")
    return line_centres_px(n_letters, letter_height_px, centre_x_px)  # the patient screen's own spacing
