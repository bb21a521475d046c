"""One-change comparisons (``pairs = "one-change"``): the pairs a clinician shows."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest

from visiontune.errors import InvalidInputError, ProtocolError
from visiontune.optics import Prescription, SimulatedPatient
from visiontune.refraction.clinical_pairs import cross_cylinder, frame_lens_of, one_change_pairs, pair_changes
from visiontune.refraction.lenses import LensSteps, in_form, trial_lens
from visiontune.refraction.loop import MemoryLog, Refraction, SimulatedPresenter, is_comparison
from visiontune.refraction.mixed_rules import MixedSettings
from visiontune.refraction.protocol import load_protocol
from visiontune.refraction.start import StartingPoint

ONE_CHANGE = "docs/results/protocols/clinical-sloan-compare-one-change.toml"
HELD = "docs/results/protocols/clinical-sloan-lines-held.toml"
START = StartingPoint(Prescription(-1.0, -0.75, 20.0), "autorefraction", 45)
STEPS = LensSteps()


def _pv(s, c, a):
    return Prescription(s, c, a).power_vector_array()


def test_cross_cylinder_power_check_by_sphero_cylinder_arithmetic():
    """Plano -1.00 x 090 with a +/-0.25 JCC aligned (minus axis at 090 or 180). By hand, same-axis
    cylinders add: +0.25 / -0.50 x 090 on it gives +0.25 / -1.50 x 090; the flip +0.25 / -0.50 x 180
    = -0.25 / +0.50 x 090 gives -0.25 / -0.50 x 090."""
    lens = _pv(0.0, -1.0, 90.0)
    np.testing.assert_allclose(lens + cross_cylinder(0.25, 90.0), _pv(0.25, -1.5, 90.0), atol=1e-12)
    np.testing.assert_allclose(lens + cross_cylinder(0.25, 180.0), _pv(-0.25, -0.5, 90.0), atol=1e-12)
    np.testing.assert_allclose(cross_cylinder(0.25, 37.0), _pv(0.25, -0.5, 37.0), atol=1e-12)
    np.testing.assert_allclose(cross_cylinder(0.25, 127.0), -cross_cylinder(0.25, 37.0), atol=1e-12)


def test_cross_cylinder_axis_check_by_obliquely_crossed_cylinders():
    """Plano -1.00 x 090 with the JCC's minus axis at 135 (+0.25 / -0.50 x 135), worked by the
    crossed-cylinder formulas (Borish's clinical refraction; Keating): C1 = -1.00 x 090, C2 = -0.50
    at alpha = 45 deg from it: C = -sqrt(C1^2 + C2^2 + 2 C1 C2 cos 2alpha) = -1.118, tan 2theta =
    C2 sin 2alpha / (C1 + C2 cos 2alpha) = 0.5, theta = 13.28 deg, axis 103.28, sphere (C1 + C2 - C)/2
    + 0.25 = 0.059."""
    c1, c2, alpha = -1.0, -0.5, math.radians(45.0)
    c = -math.sqrt(c1**2 + c2**2 + 2 * c1 * c2 * math.cos(2 * alpha))
    theta = math.degrees(0.5 * math.atan(c2 * math.sin(2 * alpha) / (c1 + c2 * math.cos(2 * alpha))))
    sphere = (c1 + c2 - c) / 2.0 + 0.25
    assert (round(c, 3), round(90.0 + theta, 2), round(sphere, 3)) == (-1.118, 103.28, 0.059)
    got = _pv(0.0, -1.0, 90.0) + cross_cylinder(0.25, 135.0)
    np.testing.assert_allclose(got, _pv(sphere, c, 90.0 + theta), atol=1e-12)


def _rx(pv):
    return trial_lens(pv, STEPS)


@pytest.mark.parametrize("lens", [(-2.0, -1.0, 30.0), (0.5, -0.25, 175.0), (-6.0, -2.5, 90.0), (1.25, 0.0, 180.0)])
def test_every_pair_is_the_lens_and_one_clinical_change_of_trial_lenses(lens):
    pairs, kinds = one_change_pairs([_pv(*lens)], STEPS, with_kinds=True)
    base = _rx(_pv(*lens)).power_vector_array()  # the base itself rounded (-0.25 x 175: 15 deg steps, x 180)
    assert {k for k, _ in kinds} >= {"sphere", "flipper", "jcc-axis", "jcc-power", "cylinder"}
    for (a, b), (kind, _) in zip(pairs, kinds):
        ra, rb = _rx(a), _rx(b)
        for r in (ra, rb):  # trial lenses: 0.25 D, the axis steps
            assert r.sphere_d / 0.25 == round(r.sphere_d / 0.25) and r.cylinder_d / 0.25 == round(r.cylinder_d / 0.25)
            assert r.cylinder_d == 0.0 or r.axis_deg % 5.0 == 0.0
        if kind in ("jcc-axis", "jcc-power", "flipper"):
            # two flips held before the trial lens, exactly: base ± (0.25, 0, 0) or ± a 0.25 D cross-cylinder
            np.testing.assert_allclose((a + b) / 2, base, atol=1e-12)
            assert np.isclose(np.linalg.norm(a - b) / 2, 0.25, atol=1e-12)
            assert (kind == "flipper") == bool(abs(a[0] - b[0]) > 1e-9)
            continue
        np.testing.assert_allclose(a, base, atol=1e-12)  # lens 1 is the lens in place
        if kind == "sphere":
            assert (rb.cylinder_d, rb.axis_deg) == (ra.cylinder_d, ra.axis_deg)
            assert abs(rb.sphere_d - ra.sphere_d) in (0.25, 0.5)
        elif kind == "axis":
            assert (rb.sphere_d, rb.cylinder_d) == (ra.sphere_d, ra.cylinder_d) and rb.axis_deg != ra.axis_deg
        else:  # cylinder power, M kept to the rounding
            assert abs(rb.cylinder_d - ra.cylinder_d) == 0.25 and abs(b[0] - a[0]) <= 0.125 + 1e-12
            assert ra.cylinder_d == 0.0 or rb.cylinder_d == 0.0 or rb.axis_deg == ra.axis_deg


def test_jcc_flips_straddle_the_axis_for_the_axis_and_align_with_it_for_the_power():
    pairs, kinds = one_change_pairs([_pv(-2.0, -1.0, 30.0)], STEPS, with_kinds=True)
    by_kind = {k: (_rx(a), _rx(b)) for (a, b), (k, _) in zip(pairs, kinds) if k.startswith("jcc")}
    axis_1, axis_2 = by_kind["jcc-axis"]
    assert {axis_1.axis_deg, axis_2.axis_deg} == {15.0, 45.0} and axis_1.cylinder_d == axis_2.cylinder_d == -1.0
    power_1, power_2 = by_kind["jcc-power"]
    assert power_1.axis_deg == power_2.axis_deg == 30.0
    assert {power_1.cylinder_d, power_2.cylinder_d} == {-1.5, -0.5}
    # M kept by both flips: S + C/2 = -2.5
    assert power_1.sphere_d + power_1.cylinder_d / 2 == power_2.sphere_d + power_2.cylinder_d / 2 == -2.5


def test_no_pair_twice_and_a_cross_cylinder_before_the_lens_in_place_costs_no_change():
    here, estimate = _pv(-2.0, -1.0, 30.0), _pv(-1.5, -1.0, 30.0)
    pairs, kinds = one_change_pairs([here, estimate], STEPS, with_kinds=True)
    keys = {tuple(np.round(p.ravel(), 6)) for p in pairs} | {tuple(np.round(p[::-1].ravel(), 6)) for p in pairs}
    assert len(keys) == 2 * len(pairs)
    changes = pair_changes(pairs, kinds, here)
    for c, (kind, base) in zip(changes, kinds):
        holds = bool((np.abs(pairs - here).max(axis=-1) <= 1e-6).any())
        expected = 0.0 if kind in ("jcc-axis", "jcc-power", "flipper") and base == 0 else None
        if expected is not None:
            assert c == 0.0
    assert set(changes[[k.startswith("jcc") and b == 1 for k, b in kinds]]) == {
        1.0
    }  # the estimate placed, then flipped
    assert set(changes[[k == "sphere" and b == 0 for k, b in kinds]]) == {1.0}
    assert holds
    held = np.array([k in ("jcc-axis", "jcc-power", "flipper") for k, _ in kinds])
    assert set(pair_changes(pairs, kinds, None)[held]) == {1.0} and set(pair_changes(pairs, kinds, None)[~held]) == {
        2.0
    }


def _session(log, protocol, seed=5):
    return Refraction(log, protocol, seed=seed, start=START, simulated=True)


def _one_change(r1, r2) -> bool:
    """Whether two trial lenses are a clinician's pair: a sphere step, an axis turn, a cylinder
    step along the same axis, or a cross-cylinder's two flips (same axis, cylinders 0.50 D each side;
    the same axis to the trial lenses' rounding)."""
    turn = abs(r1.axis_deg - r2.axis_deg) % 180.0
    # a 0.25 or 0.50 D cylinder's axis is rounded to 15 or 10 deg steps
    same_axis = r1.cylinder_d == 0.0 or r2.cylinder_d == 0.0 or min(turn, 180.0 - turn) <= 15.0
    if (r1.cylinder_d, r1.axis_deg) == (r2.cylinder_d, r2.axis_deg):
        return abs(r1.sphere_d - r2.sphere_d) in (0.25, 0.5)  # a ±0.25 flipper's two sides: 0.50
    if (r1.sphere_d, r1.cylinder_d) == (r2.sphere_d, r2.cylinder_d):
        return True
    return same_axis and abs(r1.cylinder_d - r2.cylinder_d) in (0.25, 0.5, 0.75, 1.0)


def test_a_one_change_session_asks_only_clinical_pairs_and_resumes_to_the_same_question():
    protocol = load_protocol(ONE_CHANGE)
    assert protocol.comparisons.pairs == "one-change"
    patient = SimulatedPatient(Prescription(-1.25, -1.0, 30.0), n_alternatives=10, lapse=0.02, seed=9)
    log = MemoryLog()
    session = _session(log, protocol)
    session.run(SimulatedPresenter(patient), max_steps=25)
    compared = [t for t in log.trials() if is_comparison(t)]
    assert len(compared) >= 5, "too few comparisons were asked"
    for t in compared:
        if t.frame_lens is not None:  # a ±0.25 D flipper or cross-cylinder held before the trial lens
            held = t.lens.power_vector_array() - t.frame_lens.power_vector_array()
            assert np.allclose(t.lens2.power_vector_array() - t.frame_lens.power_vector_array(), -held, atol=1e-9)
            assert np.isclose(np.linalg.norm(held), 0.25) and (held[0] == 0.0 or np.allclose(held[1:], 0.0))
            continue
        assert _one_change(in_form(t.lens, "minus"), in_form(t.lens2, "minus")), (t.lens, t.lens2)
    assert any(t.frame_lens is not None for t in compared)
    rebuilt = _session(log, protocol)
    assert rebuilt.next_query() == session.next_query()


def test_the_shipped_held_protocol_is_the_two_formulas_one_with_a_clinicians_pairs_only():
    """``clinical-sloan-held`` is ``clinical-sloan-lines-two-formulas`` but for its pairs (one clinical
    change, or a flipper / cross-cylinder of 0.25-1.00 D held before the lens), and a young patient's
    session through it asks no other comparison: a held sphere as plus only, "with or without"."""
    held, base = load_protocol("clinical-sloan-held"), load_protocol("clinical-sloan-lines-two-formulas")
    assert (held.comparisons.pairs, held.comparisons.hand_held_d) == ("one-change", (0.25, 0.5, 0.75, 1.0))
    same = dataclasses.replace(held.comparisons, pairs=base.comparisons.pairs, hand_held_d=base.comparisons.hand_held_d)
    assert same == base.comparisons
    for part in ("policy", "seed", "search_space", "logmar_range", "letter_set", "stopping", "model", "slope_prior"):
        assert getattr(held, part) == getattr(base, part), part
    assert (held.lenses, held.chart_line) == (base.lenses, base.chart_line)
    patient = SimulatedPatient(Prescription(-1.25, -1.0, 30.0), n_alternatives=10, lapse=0.02, seed=9, age_years=25)
    log = MemoryLog()
    young = StartingPoint(Prescription(-1.0, -0.75, 20.0), "autorefraction", 25)
    Refraction(log, held, seed=5, start=young, simulated=True).run(SimulatedPresenter(patient), max_steps=40)
    compared, powers = [t for t in log.trials() if is_comparison(t)], np.array([0.25, 0.5, 0.75, 1.0])
    assert len(compared) >= 5, "too few comparisons were asked"
    for t in compared:
        if t.frame_lens is None:
            assert _one_change(in_form(t.lens, "minus"), in_form(t.lens2, "minus")), (t.lens, t.lens2)
            continue
        frame = t.frame_lens.power_vector_array()
        one, two = t.lens.power_vector_array() - frame, t.lens2.power_vector_array() - frame
        if np.allclose(one, 0.0, atol=1e-9):  # a plus sphere "with or without"
            assert np.isclose(powers, two[0], atol=1e-9).any() and np.allclose(two[1:], 0.0, atol=1e-9), two
            continue
        assert np.allclose(one, -two, atol=1e-9) and np.isclose(powers, np.linalg.norm(one), atol=1e-9).any()
        assert abs(one[0]) < 1e-9, "a flipper (a minus sphere held) before an eye that may accommodate"
    assert any(t.frame_lens is not None for t in compared), "no lens was held"


def test_the_shipped_protocol_asks_pairs_no_clinician_would_and_keeps_its_setting():
    """The shipped default keeps ``pairs = "any"`` and, on the same patient, asks a pair that is not
    one clinical change (what the one-change setting removes)."""
    protocol = load_protocol("clinical-sloan-compare")
    assert protocol.comparisons.pairs == "any"
    patient = SimulatedPatient(Prescription(-1.25, -1.0, 30.0), n_alternatives=10, lapse=0.02, seed=9)
    log = MemoryLog()
    _session(log, protocol).run(SimulatedPresenter(patient), max_steps=25)
    compared = [t for t in log.trials() if is_comparison(t)]
    assert any(not _one_change(in_form(t.lens, "minus"), in_form(t.lens2, "minus")) for t in compared)


@pytest.mark.parametrize("lens", [(-2.0, -1.0, 30.0), (1.25, 0.0, 180.0)])
def test_lenses_held_before_the_trial_lens_come_in_every_power_asked_and_plus_only_for_an_eye_that_accommodates(lens):
    powers = (0.25, 0.5, 1.0)
    base = _rx(_pv(*lens)).power_vector_array()
    pairs, kinds = one_change_pairs([_pv(*lens)], STEPS, with_kinds=True, hand_held_d=powers)
    flips = {round(float(a[0] - b[0]) / 2, 9) for (a, b), (k, _) in zip(pairs, kinds) if k == "flipper"}
    assert flips == set(powers)
    for (a, b), (kind, _) in zip(pairs, kinds):
        if kind.startswith("jcc"):  # a cross-cylinder keeps M and turns J by its power each way
            assert a[0] == b[0] == base[0]
            assert round(float(np.linalg.norm(a - b)) / 2, 9) in powers
            np.testing.assert_allclose(frame_lens_of(kind, (a, b)), base, atol=1e-12)
    plus, plus_kinds = one_change_pairs([_pv(*lens)], STEPS, with_kinds=True, hand_held_d=powers, plus_only=True)
    assert "flipper" not in {k for k, _ in plus_kinds}
    held = [(a, b) for (a, b), (k, _) in zip(plus, plus_kinds) if k == "with-without"]
    assert sorted(round(float(b[0] - a[0]), 9) for a, b in held) == sorted(powers)  # plus only
    for a, b in held:
        np.testing.assert_allclose(a, base, atol=1e-12)  # lens 1: the trial lens alone, then with the sphere
        np.testing.assert_allclose(frame_lens_of("with-without", (a, b)), base, atol=1e-12)
    assert set(pair_changes(plus, plus_kinds, base)[[k == "with-without" for k, _ in plus_kinds]]) == {0.0}


@pytest.mark.parametrize("bad", [(), (0.3,), (0.0,), (2.5,), [0.25]])
def test_hand_held_powers_outside_the_lenses_made_are_refused_with_their_name(bad):
    with pytest.raises(InvalidInputError, match="hand_held_d"):
        MixedSettings(pairs="one-change", hand_held_d=bad)


def test_the_protocol_key_of_the_powers_held_is_read_and_checked(tmp_path):
    text = load_protocol(HELD).source_text
    assert load_protocol(HELD).comparisons.hand_held_d == (0.25, 0.5, 0.75, 1.0)
    for bad, expected in (("[0.3]", "multiple of 0.25"), ("[0.5, 0.5]", "distinct"), ("0.5", "non-empty list")):
        path = tmp_path / "bad.toml"
        path.write_text(text.replace("hand_held_d = [0.25, 0.5, 0.75, 1.0]", f"hand_held_d = {bad}"))
        with pytest.raises(ProtocolError, match=f"comparisons.hand_held_d: expected .*{expected}"):
            load_protocol(path)
    path = tmp_path / "any.toml"
    path.write_text(text.replace('pairs = "one-change"', 'pairs = "any"'))
    with pytest.raises(ProtocolError, match='comparisons.hand_held_d: expected pairs = "one-change"'):
        load_protocol(path)
