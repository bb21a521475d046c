"""Optotypes as vector data: letter sets loaded from ``visiontune/data/stimuli/*.json``.

A glyph is a list of closed rings (polygons) in *grid units* on the 5 x 5 Sloan design grid
(y up, origin at the bottom-left corner), filled with the even-odd rule. The design height
(5 units) is the optotype's nominal size, 5 x MAR (docs/design.md, *Letter size on
screen*). The outlines are our own drawings (``stimuli/make_letter_sets.py``).

A letter set declares its number of alternatives ``n``, which sets the chance rate
``gamma = 1/n`` of the psychometric function
``P(correct | s, x) = gamma + (1 - gamma) Phi(a (s - VA(x)))`` (Fauvel & Chalk (contextual BO), sec. 5).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache
from importlib import resources
from pathlib import Path

import numpy as np

from visiontune._validate import check_int, check_number
from visiontune.errors import ConfigurationError, InvalidInputError

#: The letter sets shipped with VisionTune.
LETTER_SETS = ("sloan", "letters26", "tumbling_e", "landolt_c")


@dataclass(frozen=True, eq=False)
class Glyph:
    """One optotype outline.

    ``rings``: tuple of ``(k, 2)`` float arrays (read-only), grid units, y up; even-odd fill.
    """

    name: str
    rings: tuple

    @property
    def ink_bounds(self) -> tuple[float, float, float, float]:
        """``(x_min, y_min, x_max, y_max)`` of the ink, grid units."""
        pts = np.concatenate(self.rings)
        (x0, y0), (x1, y1) = pts.min(axis=0), pts.max(axis=0)
        return float(x0), float(y0), float(x1), float(y1)

    @property
    def signed_area(self) -> float:
        """Sum of the rings' signed (shoelace) areas, grid units^2: the inked area when
        solid rings are counter-clockwise, holes clockwise and rings do not overlap."""
        total = 0.0
        for r in self.rings:
            x, y = r[:, 0], r[:, 1]
            total += 0.5 * float(np.dot(x, np.roll(y, -1)) - np.dot(np.roll(x, -1), y))
        return total


@dataclass(frozen=True)
class LetterSet:
    """A named set of glyphs drawn on one design grid.

    ``design_height``: nominal optotype height in grid units (5: the letter is 5 x MAR tall).
    ``n_alternatives``: number of answers the patient chooses from (sets the chance rate).
    """

    name: str
    n_alternatives: int
    design_height: float
    glyphs: tuple[Glyph, ...]
    description: str = ""
    note: str = ""

    @property
    def letters(self) -> tuple[str, ...]:
        """Glyph names in file order."""
        return tuple(g.name for g in self.glyphs)

    @property
    def chance_rate(self) -> float:
        """Guess rate ``gamma = 1 / n_alternatives`` (the contextual BO paper, sec. 5)."""
        return 1.0 / self.n_alternatives

    def glyph(self, letter: str) -> Glyph:
        """The glyph named ``letter``; InvalidInputError naming ``letter`` if absent."""
        for g in self.glyphs:
            if g.name == letter:
                return g
        raise InvalidInputError(
            f"letter: {letter!r} is not in letter set {self.name!r} (has {', '.join(self.letters)})"
        )

    def __len__(self) -> int:
        return len(self.glyphs)


def stimuli_dir() -> Path:
    """Folder holding the letter-set JSON files (works from a checkout and an installed wheel)."""
    return Path(str(resources.files("visiontune") / "data" / "stimuli"))


def _ring(name: str, letter: str, i: int, raw) -> np.ndarray:
    try:
        arr = np.array(raw, dtype=float)
    except (TypeError, ValueError):
        raise ConfigurationError(
            f"letter set {name!r}: glyph {letter!r} ring {i} is not a list of [x, y] numbers"
        ) from None
    if arr.ndim != 2 or arr.shape[1] != 2 or arr.shape[0] < 3 or not np.all(np.isfinite(arr)):
        raise ConfigurationError(
            f"letter set {name!r}: glyph {letter!r} ring {i} must be >= 3 finite [x, y] points, got shape {arr.shape}"
        )
    arr.setflags(write=False)
    return arr


def parse_letter_set(data: dict, source: str = "<data>") -> LetterSet:
    """Build a :class:`LetterSet` from the decoded JSON ``data``; ConfigurationError naming the key."""
    for key in ("name", "n_alternatives", "glyphs"):
        if key not in data:
            raise ConfigurationError(f"{source}: missing key {key!r}")
    name = data["name"]
    n = check_int(f"{source}: n_alternatives", data["n_alternatives"], lo=2, error=ConfigurationError)
    height = check_number(f"{source}: design_height", data.get("design_height", 5.0), error=ConfigurationError)
    if height <= 0:
        raise ConfigurationError(f"{source}: design_height must be > 0, got {height!r}")
    raw = data["glyphs"]
    if not isinstance(raw, dict) or not raw:
        raise ConfigurationError(f"{source}: glyphs must be a non-empty mapping name -> rings")
    glyphs = []
    for letter, rings in raw.items():
        if not isinstance(rings, list) or not rings:
            raise ConfigurationError(f"{source}: glyph {letter!r} must be a non-empty list of rings")
        glyphs.append(Glyph(letter, tuple(_ring(name, letter, i, r) for i, r in enumerate(rings))))
    if n < len(glyphs):
        raise ConfigurationError(f"{source}: n_alternatives={n} is fewer than the {len(glyphs)} glyphs")
    return LetterSet(
        str(name), n, float(height), tuple(glyphs), str(data.get("description", "")), str(data.get("note", ""))
    )


@cache
def load_letter_set(name: str) -> LetterSet:
    """Load a shipped letter set by name (one of :data:`LETTER_SETS`)."""
    if name not in LETTER_SETS:
        raise InvalidInputError(f"name: unknown letter set {name!r}; expected one of {', '.join(LETTER_SETS)}")
    path = stimuli_dir() / f"{name}.json"
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ConfigurationError(f"letter set file missing: {path} (reinstall VisionTune)") from None
    except json.JSONDecodeError as exc:
        raise ConfigurationError(f"{path}: not valid JSON ({exc})") from None
    return parse_letter_set(data, str(path))
