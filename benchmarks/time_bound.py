"""The fewest seconds of the patient's time any design could need: a Cramér-Rao bound in seconds.

The issue's target is a lens to file within 0.25 D of the correction with 85-88% probability in
180 s an eye with a trial frame (120 s with a motorized phoropter). This prints how long the best
possible sequence of questions takes to get there, under assumptions all in the design's favour
(:mod:`visiontune.validation.information_bound`): the patient answers by the model, everything but
the correction ``P* = (M, J0, J45)`` is known, every answer is the most informative question of its
kind, lenses within 1 D of the correction.

**Needed.** With an isotropic normal posterior of SD ``σ`` per component, the filed lens at the
posterior mean is within ``t = 0.25 D`` with probability ``P(χ²₃ <= t²/σ²)``; for ``q = 0.85`` this
asks ``σ <= t / sqrt(χ²₃(q))`` (= 0.108 D), i.e. information ``1/σ² - 1/σ_start²`` on each component,
``σ_start`` the autorefraction's prior SD (:data:`visiontune.refraction.start.SOURCES`: 0.50 D on
``M``, 0.8 D for an eye that may accommodate, 0.20 D on each ``J``).

**Per second**, each kind at its best (D⁻² per second of the patient's time):
- a letter, 3 s, through a lens already in place (no change counted: the bound's favour);
- a chart line of five letters at one size through one lens, 6 s, no change counted;
- a comparison of two lenses straddling the correction (``c ± h``, the best ``h``), 5 s and one
  change of lens (the lens in place is one of the two at best);
- a hand-held ±0.25 D flipper or cross-cylinder before the lens in place (``c ± 0.25``), 5 s, no change;
- the duochrome (red-green): the letters on red and on green seen at once through the lens in place,
  "which side is blacker, or the same?", 3 s (assumed: one look and one answer, a letter's time), no
  change; the eye's longitudinal chromatic aberration between the red (620 nm) and green (535 nm)
  filters, ``R(λ) = p - q / (λ - c)`` with ``p = 1.68524``, ``q = 633.46``, ``c = 214.102`` (Thibos et al.
  1992, the chromatic eye), is 0.41 D: a comparison of ``c ± 0.21`` along ``M`` only.

**On trial lenses.** The lens a session files is a trial lens, up to 0.125 D of sphere and of cylinder
from the posterior's centre, and the stop waits until *it* is 85% probably within 0.25 D. Per patient,
:func:`visiontune.validation.trial_lens_precision.sigma_needed_on_trial_lenses` gives the ``σ`` at which
the best trial lens around a posterior centred on the patient's correction reaches that (0.108 D for a
correction on a trial lens, about 0.08 D for one half a step between them), and the last columns of the
per-patient table are the bound with that ``σ``.

The comparisons by Eq. 11 of the letter task (Fauvel & Chalk's, the validation's simulated patient;
band 0.5, lapse 0.04) and by blur discrimination (Watson & Ahumada 2011: the ``blur`` answer model).

    python benchmarks/time_bound.py
"""

from __future__ import annotations

import numpy as np

from visiontune.optics.comparison_answers import ComparisonModel
from visiontune.refraction.lens_devices import DEVICE_KINDS
from visiontune.refraction.lenses import LensSteps
from visiontune.refraction.population import draw_cases, population_by_name
from visiontune.refraction.start import SOURCES, YOUNG_AUTOREFRACTION_SIGMA_M_D, StartingPoint
from visiontune.validation.information_bound import letter_information, pair_information
from visiontune.validation.trial_lens_precision import continuous_sigma, sigma_needed_on_trial_lenses

TARGET_D, PROBABILITY = 0.25, 0.85
LETTER_S, LINE_S, COMPARISON_S, LINE_LETTERS = 3.0, 6.0, 5.0, 5
FLIPPER_D = 0.25
DUOCHROME_S = 3.0


def chromatic_difference_d(wavelength_nm: float) -> float:
    """The eye's refraction at ``wavelength_nm`` relative to its far end, ``p - q / (λ - c)`` (D;
    Thibos, Ye, Zhang & Bradley 1992, the chromatic eye)."""
    return 1.68524 - 633.46 / (wavelength_nm - 214.102)


#: Half the chromatic difference between the duochrome's red (620 nm) and green (535 nm) filters (D).
DUOCHROME_HALF_D = 0.5 * (chromatic_difference_d(620.0) - chromatic_difference_d(535.0))


def needed_information(sigma_start: np.ndarray, sigma: float | None = None) -> np.ndarray:
    """Information per component (D⁻²) to take the start's prior SDs to ``sigma`` (default the lens
    at the centre's, :func:`continuous_sigma`)."""
    sigma = continuous_sigma(TARGET_D, PROBABILITY) if sigma is None else sigma
    return np.maximum(0.0, 1.0 / sigma**2 - 1.0 / sigma_start**2)


def best_per_second(model: ComparisonModel, slope: float, change_s: float, hs: np.ndarray) -> np.ndarray:
    """The most information per second (D⁻²/s) of any kind of question (module docstring) on ``M``
    and on each ``J`` component (the duochrome tells of ``M`` only)."""
    letter = letter_information(slope)[0]
    any_component = max(
        LINE_LETTERS * letter / LINE_S,
        letter / LETTER_S,
        max(pair_information(model, slope, h) for h in hs) / (COMPARISON_S + change_s),
        pair_information(model, slope, FLIPPER_D) / COMPARISON_S,
    )
    on_m = max(any_component, pair_information(model, slope, DUOCHROME_HALF_D) / DUOCHROME_S)
    return np.array([on_m, any_component, any_component])


def population_bounds(population: str, cases: int, seed: int, hs: np.ndarray) -> str:
    """Median and 90th percentile of the bound over a population's patients, each with its own slope
    and its start's prior SDs, with an Eq. 11 comparison (the validation's simulated patient): the
    lens filed at the posterior's centre, and a trial lens (module docstring, "On trial lenses")."""
    rows = []
    cases_ = [c for c in draw_cases(population_by_name(population), cases, seed) if c.start_rx is not None]
    on_lenses = [sigma_needed_on_trial_lenses(c.true_rx.power_vector_array(), LensSteps()) for c in cases_]
    for device in DEVICE_KINDS.values():
        centre, lens = [], []
        for case, sigma_lens in zip(cases_, on_lenses):
            sigma = StartingPoint(case.start_rx, case.start_source, case.age_years).sigma
            per_s = best_per_second(ComparisonModel(), case.slope, device.change_seconds, hs)
            centre.append(float(np.sum(needed_information(sigma) / per_s)))
            lens.append(float(np.sum(needed_information(sigma, sigma_lens) / per_s)))
        rows.append(
            f"| {population} | {len(cases_)} | {device.name} | {np.median(centre):.0f} | "
            f"{np.percentile(centre, 90):.0f} | {np.median(on_lenses):.3f} ({np.min(on_lenses):.3f}-"
            f"{np.max(on_lenses):.3f}) | {np.median(lens):.0f} | {np.percentile(lens, 90):.0f} |"
        )
    return "\n".join(rows)


def main() -> int:
    sigma_m, sigma_j = SOURCES["autorefraction"]
    starts = {
        "adult (autorefraction 0.50 / 0.20 D)": np.array([sigma_m, sigma_j, sigma_j]),
        "may accommodate (0.80 / 0.20 D)": np.array([YOUNG_AUTOREFRACTION_SIGMA_M_D, sigma_j, sigma_j]),
    }
    models = {"Eq. 11": ComparisonModel(), "blur discrimination": ComparisonModel(kind="blur")}
    hs = np.linspace(0.05, 1.0, 96)
    print(f"SIMULATED: the bound for a filed lens within {TARGET_D} D with probability {PROBABILITY}")
    print("(everything but the correction known; an eye that does not accommodate; no lapse in runs)\n")
    print(
        "| comparison model | slope | device | letter /s | line /s | comparison c±h (1 change) /s | "
        "flipper c±0.25 (no change) /s | duochrome (M only) /s | bound s, adult start | bound s, may accommodate |"
    )
    print("| --- | ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for name, model in models.items():
        for slope in (3.0, 5.0, 8.0):
            letter = letter_information(slope)[0]
            best_pair = max(pair_information(model, slope, h) for h in hs)
            flipper = pair_information(model, slope, FLIPPER_D)
            duochrome = pair_information(model, slope, DUOCHROME_HALF_D)
            for device in DEVICE_KINDS.values():
                per_s = best_per_second(model, slope, device.change_seconds, hs)
                bounds = [float(np.sum(needed_information(s) / per_s)) for s in starts.values()]
                pair_s = best_pair / (COMPARISON_S + device.change_seconds)
                print(
                    f"| {name} | {slope:g} | {device.name} | {letter / LETTER_S:.2f} | "
                    f"{LINE_LETTERS * letter / LINE_S:.2f} | {pair_s:.2f} | {flipper / COMPARISON_S:.2f} | "
                    f"{duochrome / DUOCHROME_S:.2f} | {bounds[0]:.0f} | {bounds[1]:.0f} |"
                )
    print("\nPer patient (population seed 1, the first 40 with a start; each its own slope and start's SDs;")
    print("Eq. 11 comparisons, as the validation's simulated patient answers):\n")
    print(
        "| population | n | device | bound s median | bound s p90 | σ needed on trial lenses, median (range), D | "
        "bound s on trial lenses, median | p90 |"
    )
    print("| --- | ---: | --- | ---: | ---: | ---: | ---: | ---: |")
    for population in ("adult-clinic", "young"):
        print(population_bounds(population, 40, 1, hs))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
