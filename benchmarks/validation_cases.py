"""What the benchmarks that rerun the validation's patients share: their command line and the age bands.

A benchmark that refracts the cases of ``visiontune validate`` (population seed ``--seed``, the
first ``--cases`` of ``--population``) with ``--protocol`` takes :func:`case_parser`'s options and
prints its figures by :data:`AGES` (:func:`by_age`). Imported by the scripts beside it (``python
benchmarks/NAME.py`` puts this folder first on the path).
"""

from __future__ import annotations

import argparse

#: Age bands (years, lower bound included): an eye that accommodates freely, less, hardly.
AGES = ((0.0, 35.0, "under 35"), (35.0, 50.0, "35-50"), (50.0, 200.0, "50 and over"))


def case_parser(description: str) -> argparse.ArgumentParser:
    """``--protocol`` (default the shipped ``clinical-sloan-compare``), ``--population`` (adult-clinic),
    ``--cases`` (100), ``--seed`` (the population seed, 1 as the validation's) and ``--jobs`` (2)."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--protocol", default="clinical-sloan-compare")
    parser.add_argument("--population", default="adult-clinic")
    parser.add_argument("--cases", type=int, default=100)
    parser.add_argument("--seed", type=int, default=1, help="population seed (default 1, the validation's)")
    parser.add_argument("--jobs", type=int, default=2)
    return parser


def by_age(rows: list[dict], ages=AGES) -> list[tuple[str, list[dict]]]:
    """``("all", rows)`` then, for each band of ``ages``, its label and the rows whose ``"age"`` lies in it."""
    return [("all", rows)] + [
        (label, [r for r in rows if r["age"] is not None and lo <= r["age"] < hi]) for lo, hi, label in ages
    ]
