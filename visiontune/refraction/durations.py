"""How long a letter, a comparison and a slider take: the defaults, their sources and what is assumed.

The mixed rule (:mod:`visiontune.refraction.mixed_rules`) asks the question worth most per
second of the patient's time, so it needs each kind's duration: the time from the question on
screen (the lens in place, ``presented_at``) to the answer recorded (``answered_at``). These are
the defaults of :class:`~visiontune.refraction.mixed_rules.MixedSettings` and
:class:`~visiontune.refraction.slider.SliderSettings`; a protocol may set its own
(``[comparisons]`` and ``[sliders]``), and a clinic can refit them from its own sessions
(``visiontune sessions durations``, :mod:`visiontune.session.answer_times`, which also measures
what a change of lens adds between answers: none of these durations holds the change to a
question's first lens, which is in place when the question is on screen).

**Letter** (one letter through a lens already in place, named aloud, keyed by the clinician):
``LETTER_SECONDS = T / N``, with ``T = 120 s`` the median time of one E-ETDRS test in adults
(Laidlaw et al. 2008; the E-ETDRS algorithm of Beck et al. 2003 shows one letter at a time,
the patient names it, the tester keys it) and ``N = 38.5`` letters per test (mean; median 36,
IQR 29-43), counted by ``benchmarks/e_etdrs_letters.py``, which runs that algorithm on simulated
adults with the protocol's letter model (the paper gives no count). ``120 / 38.5 = 3.1 s``;
3.3 s at the median count, 2.8-3.8 s over psychometric slopes of 3 to 12 logMAR⁻¹. Cross-checks:
recognising and naming one optotype takes 1.5-1.9 s (high-contrast distance acuity through 0 to
3 D of defocus, Vasudevan et al. 2016), leaving about 1.3 s to key the answer and show the next
letter; a self-paced FrACT trial, the patient keying one of 8 Landolt-C orientations, takes
``1.7 min / 18 = 5.7 s`` (Bach 2007), an upper reference for a letter the patient keys. **3 s**
(cited; the count ``N`` is computed, not measured).

**Comparison** ("which is clearer, 1 or 2?"): one letter's cycle through lens 2 (look, answer,
keying: ``LETTER_SECONDS``) plus a look through lens 1 first, which takes as long as recognising
the target through it (``T_view`` = 1.5-1.9 s, Vasudevan et al. 2016)::

    COMPARISON_SECONDS = LETTER_SECONDS + T_view = 3 + 1.7 = 4.7 s  ->  5 s

**Assumed**: the lens switch (a phoropter flip, a screen change) is part of the half second of
rounding, and judging two near-equal lenses is no slower than naming a letter. Two-choice
perceptual decisions take "a second or two" (Ratcliff et al. 2016); if the judgement near the
end point adds a second of its own the comparison takes about 6 s. **5 s** (partly cited; the
first value to refit from real sessions).

**Slider** ("turn the knob; where is it clearest?"), at a phoropter (or a tunable lens; with a
trial frame the same question means ``n`` lens changes and takes far longer, which is one reason
no shipped protocol asks it): the clinician turns one knob through the path's ``n`` lenses (9 for
the default sphere and cylinder paths, up to 13 for the axis,
:mod:`visiontune.refraction.slider`) while the patient watches one line, then the patient names
the clearest and the clinician keys it::

    SLIDER_SECONDS = n T_click + T_decide + T_key = 9 x 0.5 + 2 + 1.3 = 7.8 s  ->  8 s

with ``T_key`` = 1.3 s from the letter above and ``T_decide`` = 2 s, the upper end of "a second
or two" (Ratcliff et al. 2016) for a choice among ``n``. **Assumed**: ``T_click`` = 0.5 s per
lens (a dial click and a glance); no published timing of a method-of-adjustment sweep to best
focus was found. **8 s** (assumed; 10 s for a 13-lens axis path at the same rate).

**Lens change** (the clinician reading the next lens, setting it, confirming): between answers,
not inside any duration above. ``LENS_CHANGE_SECONDS = 0``: at a phoropter a dial click or a
flip, within the rounding. With a trial frame each change is a swap of lenses; no published timing
of one was found, so a clinic measures its own (``visiontune sessions durations``: the median gap
between answers with the lens changed minus kept) and sets ``[comparisons] lens_change_seconds``;
the choice then weighs each question's lens changes from the lens in place, and the patient's time
counts them (:mod:`visiontune.refraction.mixed_rules`). **0 s** (a phoropter; assumed). The clinic's
device sets it: :mod:`visiontune.refraction.lens_devices` gives each kind's seconds per change (trial
frame 4 s, manual phoropter 1 s, motorized phoropter 0.5 s, each with its source or stated as assumed),
``--lens-device`` on ``visiontune session run`` and ``visiontune validate``.

**Chart line** (``n`` letters of one size read aloud through one lens, the clinician keying each
right or wrong as the patient reads; :mod:`visiontune.refraction.chart_line`): reading a logMAR
chart aloud runs at about one letter a second. Laidlaw et al. 2008 timed the standard ETDRS chart
at a median 56 s in adults, read from the top line (1.0 logMAR at 4 m) down to the line where the
adult stops, about 0.0 logMAR: 11 lines of 5 letters, 55 letters plus a few on the line missed,
so ``T_chart = 56 / 58 = 0.97 s`` a letter, the line change and the examiner's scoring included
(the count of letters read is ours, from the chart's design, Bailey & Lovie 1976; the paper gives
none). A line on our screen adds one look to find it after the clinician sets the lens, as a
chart's next line does, and one confirming key press after the last letter (``T_key`` = 1.3 s
from the letter above)::

    LINE_SECONDS = n T_chart + T_key = 5 x 0.97 + 1.3 = 6.2 s  ->  6 s   (n = 5)

Cross-check: Camparini et al. 2001 shortened the ETDRS test by 30% by having the patient read one
letter per line, not five, far from threshold (ETDRS-Fast): most of a chart test's time is the
letters read, not the moves between lines, as the per-letter rate above assumes. **6 s** for 5
letters (cited rate; the count is
computed). A protocol with another ``letters_per_line`` sets its own ``line_seconds``.

References: docs/references.md ([Beck et al. 2003], [Laidlaw et al. 2008], [Vasudevan et al.
2016], [Bach 2007], [Ratcliff et al. 2016], [Bailey & Lovie 1976], [Camparini et al. 2001]).
"""

from __future__ import annotations

__all__ = [
    "COMPARISON_SECONDS",
    "LENS_CHANGE_SECONDS",
    "LETTER_SECONDS",
    "LINE_LETTERS",
    "LINE_SECONDS",
    "SLIDER_SECONDS",
]

#: Patient's time per letter answer, s (module docstring: E-ETDRS, 120 s / 38.5 letters = 3.1 s).
LETTER_SECONDS = 3.0
#: Patient's time per comparison answer, s (one letter's cycle plus a look through lens 1: 4.7 s).
COMPARISON_SECONDS = 5.0
#: Patient's time per slider answer, s (9 lenses at 0.5 s, a 2 s decision, 1.3 s keying: 7.8 s; assumed).
SLIDER_SECONDS = 8.0
#: A change of lens between answers, s (module docstring: 0 at a phoropter; a trial frame's is measured by the clinic).
LENS_CHANGE_SECONDS = 0.0
#: Letters of a chart line (Bailey & Lovie 1976; ETDRS, ISO 8596: five a line).
LINE_LETTERS = 5
#: Patient's time per chart line of :data:`LINE_LETTERS` letters read aloud, s (module docstring:
#: 5 x 0.97 s, Laidlaw et al. 2008's ETDRS chart time over the letters read, plus 1.3 s keying: 6.2 s).
LINE_SECONDS = 6.0
