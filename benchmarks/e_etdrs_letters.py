"""How many single letters an E-ETDRS acuity test shows: the divisor of a seconds-per-letter.

Laidlaw et al. 2008 timed the E-ETDRS algorithm (Beck et al. 2003: one letter on the screen at a
time, named aloud by the patient and keyed in by the tester, as a VisionTune letter is) at a
median of 120 s per test in adults. The paper gives no letter count, so this script counts the
letters the algorithm shows to a simulated adult, with the protocol's own letter model
(``P(correct | s) = γ + (1-γ-λ) Φ(a (s - VA))``, Fauvel & Chalk (contextual BO), Eq. 13;
10 Sloan letters, lapse 0.04, slope ``a`` lognormal with median 5 logMAR⁻¹ and σ 0.4 as
``protocols/clinical-sloan-compare.toml``; ``VA`` normal, mean 0.0, SD 0.15 logMAR), then
``seconds per letter = 120 s / mean letters``. :mod:`visiontune.refraction.durations` quotes the result.

The E-ETDRS algorithm (Beck et al. 2003, as the EVA protocol sheet draws it), levels 0.1 logMAR
apart from 20/800 (1.6) to 20/12 (-0.2):

* screening: one letter at 20/400 (1.3), then 3-level steps (1.0, 0.7, 0.4, 0.1, -0.2) until a
  miss; after a miss, one letter two levels above the missed level, then one letter per level
  downwards until a miss (upwards until a correct answer if that letter was missed); the score
  is the last level answered correctly;
* threshold: a pool of the screening level and the next smaller one; letters drawn at random
  from the levels of the pool with fewer than 5 letters shown, the first and every third from
  the largest; a miss at the largest level adds the next larger level, a correct answer at the
  smallest adds the next smaller; it stops when a level with 5/5 correct, a smaller level with
  0/5 and 5 letters at every level between are known (or the chart's end is reached).

Run: python benchmarks/e_etdrs_letters.py
"""

from __future__ import annotations

import numpy as np
from scipy.stats import norm

CHANCE, LAPSE = 0.1, 0.04
TOP, BOTTOM = 16, -2  # levels in tenths of logMAR: 20/800 .. 20/12
E_ETDRS_MEDIAN_S = 120.0  # Laidlaw et al. 2008, adults


def _answer(rng, level: int, va: float, slope: float) -> bool:
    p = CHANCE + (1.0 - CHANCE - LAPSE) * norm.cdf(slope * (level / 10.0 - va))
    return bool(rng.random() < p)


def _screening(rng, va, slope) -> tuple[int, int]:
    """``(score level, letters shown)``."""
    shown = 1
    if not _answer(rng, 13, va, slope):
        level = 13
        while level < TOP:
            level += 1
            shown += 1
            if _answer(rng, level, va, slope):
                return level, shown
        return TOP, shown
    last = 13
    for level in (10, 7, 4, 1, -2):
        shown += 1
        if not _answer(rng, level, va, slope):
            break
        last = level
    else:
        return BOTTOM, shown
    level = level + 2
    shown += 1
    if _answer(rng, level, va, slope):
        last = level
        while level > BOTTOM:
            level -= 1
            shown += 1
            if not _answer(rng, level, va, slope):
                break
            last = level
        return last, shown
    while level < last - 1:
        level += 1
        shown += 1
        if _answer(rng, level, va, slope):
            return level, shown
    return last, shown


def _done(tested: dict) -> bool:
    full = sorted((lv for lv, (n, _) in tested.items() if n == 5), reverse=True)
    uppers = [lv for lv in full if tested[lv][1] == 5] + ([TOP + 1] if tested.get(TOP, (0, 0))[0] == 5 else [])
    for upper in uppers:
        lowers = [lv for lv in full if lv < upper and tested[lv][1] == 0]
        lower = max(lowers) if lowers else (BOTTOM - 1 if tested.get(BOTTOM, (0, 0))[0] == 5 else None)
        if lower is None:
            continue
        if all(tested.get(lv, (0, 0))[0] == 5 for lv in range(max(lower + 1, BOTTOM), min(upper, TOP + 1))):
            return True
    return False


def letters_shown(rng, va: float, slope: float) -> int:
    """Letters the E-ETDRS algorithm shows one simulated patient (module docstring)."""
    score, shown = _screening(rng, va, slope)
    tested = {score: [0, 0]}
    if score > BOTTOM:
        tested[score - 1] = [0, 0]
    count = 0
    while not _done({k: tuple(v) for k, v in tested.items()}):
        pool = [lv for lv, (n, _) in tested.items() if n < 5]
        if not pool:  # every level shown 5 times, no bracket yet: widen it
            missing_top = not any(c == 5 for n, c in tested.values() if n == 5)
            new = max(tested) + 1 if missing_top and max(tested) < TOP else min(tested) - 1
            if new < BOTTOM or new > TOP:
                break
            tested[new] = [0, 0]
            continue
        level = max(pool) if count % 3 == 0 else int(rng.choice(pool))
        correct = _answer(rng, level, va, slope)
        tested[level][0] += 1
        tested[level][1] += int(correct)
        count += 1
        if not correct and level == max(tested) and level < TOP:
            tested.setdefault(level + 1, [0, 0])
        if correct and level == min(tested) and level > BOTTOM:
            tested.setdefault(level - 1, [0, 0])
    return shown + count


def main(n: int = 4000, seed: int = 20260) -> None:
    rng = np.random.default_rng(seed)
    slopes = np.exp(np.log(5.0) + 0.4 * rng.standard_normal(n))
    vas = 0.15 * rng.standard_normal(n)
    counts = np.array([letters_shown(rng, va, a) for va, a in zip(vas, slopes, strict=True)])
    q1, med, q3 = np.percentile(counts, [25, 50, 75])
    print(
        f"E-ETDRS letters shown, {n} simulated adults: mean {counts.mean():.1f}, median {med:.0f} "
        f"(IQR {q1:.0f}-{q3:.0f})"
    )
    print(
        f"seconds per letter at the median test time of {E_ETDRS_MEDIAN_S:.0f} s: "
        f"{E_ETDRS_MEDIAN_S / counts.mean():.2f} (mean letters), {E_ETDRS_MEDIAN_S / med:.2f} (median letters)"
    )


if __name__ == "__main__":
    main()
