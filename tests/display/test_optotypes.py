"""Letter sets as data: contents, geometry on the 5 x 5 grid, and loader errors."""

import json

import numpy as np
import pytest

from visiontune.display.optotypes import LETTER_SETS, load_letter_set, parse_letter_set, stimuli_dir
from visiontune.errors import ConfigurationError, InvalidInputError

EXPECTED = {
    "sloan": (10, tuple("CDHKNORSVZ")),
    "letters26": (26, tuple("ABCDEFGHIJKLMNOPQRSTUVWXYZ")),
    "tumbling_e": (4, ("right", "up", "left", "down")),
    "landolt_c": (8, ("right", "up-right", "up", "up-left", "left", "down-left", "down", "down-right")),
}


def even_odd_inside(rings, pts):
    """Independent oracle: ray casting, count crossings of every ring edge (even-odd rule)."""
    x, y = pts[:, 0][:, None], pts[:, 1][:, None]
    inside = np.zeros(len(pts), dtype=bool)
    for r in rings:
        x0, y0 = r[:, 0][None, :], r[:, 1][None, :]
        x1, y1 = np.roll(r[:, 0], -1)[None, :], np.roll(r[:, 1], -1)[None, :]
        straddle = (y0 > y) != (y1 > y)
        with np.errstate(divide="ignore", invalid="ignore"):
            xc = x0 + (y - y0) * (x1 - x0) / (y1 - y0)
        inside ^= (np.sum(straddle & (x < xc), axis=1) % 2).astype(bool)
    return inside


@pytest.mark.parametrize("name", LETTER_SETS)
def test_letter_set_contents(name):
    ls = load_letter_set(name)
    n, letters = EXPECTED[name]
    assert ls.name == name
    assert ls.n_alternatives == n and len(ls) == n
    assert ls.letters == letters
    assert ls.chance_rate == pytest.approx(1.0 / n)
    assert ls.design_height == 5.0
    assert "our own drawings" in ls.note.lower()


@pytest.mark.parametrize("name", LETTER_SETS)
def test_glyphs_span_the_design_cell(name):
    ls = load_letter_set(name)
    for g in ls.glyphs:
        x0, y0, x1, y1 = g.ink_bounds
        assert x0 >= -1e-9 and y0 >= -1e-9 and x1 <= 5 + 1e-9 and y1 <= 5 + 1e-9, g.name
        if name == "landolt_c" and g.name in ("up", "down"):
            # the gap removes the ring's extreme: 2.5 - sqrt(2.5^2 - 0.5^2)
            assert y1 - y0 == pytest.approx(5 - (2.5 - np.sqrt(2.5**2 - 0.25)), abs=1e-5)
        else:
            assert y1 - y0 == pytest.approx(5.0, abs=1e-6), g.name


@pytest.mark.parametrize("name", LETTER_SETS)
def test_rings_do_not_overlap_and_are_oriented(name):
    """Even-odd area by Monte Carlo equals the sum of signed shoelace areas: true only if
    solid rings are CCW, holes CW and no two pieces overlap (an overlap would be a hole)."""
    rng = np.random.default_rng(7)
    pts = rng.uniform(0, 5, size=(6000, 2))
    for g in load_letter_set(name).glyphs:
        mc = even_odd_inside(g.rings, pts).mean() * 25.0
        se = 25.0 * np.sqrt(mc / 25 * (1 - mc / 25) / len(pts))
        assert g.signed_area > 0
        assert mc == pytest.approx(g.signed_area, abs=4 * se + 0.01), g.name


def test_stroke_is_one_fifth_of_height():
    """Sloan rule: H's bars are 1 unit wide; O is an annulus of radii 2.5 and 1.5."""
    ls = load_letter_set("sloan")
    assert ls.glyph("H").signed_area == pytest.approx(5 + 5 + 3)
    assert ls.glyph("O").signed_area == pytest.approx(np.pi * (2.5**2 - 1.5**2), rel=2e-3)
    # Landolt C: the annulus minus a gap 1 unit wide (parallel sides)
    c = load_letter_set("landolt_c").glyph("right")
    assert c.signed_area == pytest.approx(np.pi * 4 - 1.0, rel=5e-3)


def test_tumbling_e_orientations_are_rotations():
    ls = load_letter_set("tumbling_e")
    right = ls.glyph("right").rings
    up = ls.glyph("up").rings
    # rotating (x, y) by +90 degrees about (2.5, 2.5): (x, y) -> (5 - y, x)
    for a, b in zip(right, up):
        rot = np.column_stack([5 - a[:, 1], a[:, 0]])
        assert np.allclose(rot, b)


def test_unknown_set_and_letter():
    with pytest.raises(InvalidInputError, match="name"):
        load_letter_set("klingon")
    with pytest.raises(InvalidInputError, match="letter"):
        load_letter_set("sloan").glyph("A")


def test_files_live_in_package_data():
    assert sorted(p.stem for p in stimuli_dir().glob("*.json")) == sorted(LETTER_SETS)


@pytest.mark.parametrize(
    "patch, message",
    [
        ({"n_alternatives": None}, "n_alternatives"),
        ({"n_alternatives": 1}, "n_alternatives"),
        ({"n_alternatives": 3}, "fewer than"),
        ({"glyphs": {}}, "glyphs"),
        ({"glyphs": {"X": [[[0, 0], [1, 1]]]}}, "ring 0"),
        ({"glyphs": {"X": [[[0, 0], [1, "a"], [1, 2]]]}}, "ring 0"),
        ({"design_height": -5}, "design_height"),
    ],
)
def test_malformed_letter_set(patch, message):
    data = json.loads((stimuli_dir() / "sloan.json").read_text())
    data.update(patch)
    if patch.get("n_alternatives", 0) is None:
        del data["n_alternatives"]
    with pytest.raises(ConfigurationError, match=message):
        parse_letter_set(data, "test.json")
