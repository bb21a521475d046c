"""Boxes of the refraction problem (Fauvel & Chalk (contextual BO) §5.3)."""

import numpy as np
import pytest

from visiontune.errors import InvalidInputError
from visiontune.optics.search_space import CONTEXT_BOX, SEARCH_BOX, Box


def test_paper_values():
    assert SEARCH_BOX.bounds().tolist() == [[-4.0, 4.0], [-4.0, 4.0]]
    assert CONTEXT_BOX.bounds().tolist() == [[-1.0, 2.0]]


def test_sample_is_uniform_and_reproducible():
    x = SEARCH_BOX.sample(np.random.default_rng(1), 20000)
    assert np.all(SEARCH_BOX.contains(x))
    # uniform on [-4, 4]: mean 0 (sd 8/√12/√n ≈ 0.016), variance 64/12
    assert np.abs(x.mean(axis=0)).max() < 0.07
    assert x.var(axis=0) == pytest.approx([64 / 12] * 2, rel=0.03)
    assert np.array_equal(x, SEARCH_BOX.sample(np.random.default_rng(1), 20000))


def test_contains():
    assert SEARCH_BOX.contains([[4, -4], [4.01, 0]]).tolist() == [True, False]


@pytest.mark.parametrize(
    "args, name",
    [
        (((0.0,), (0.0,), ("a",)), "upper"),
        (((0.0, 1.0), (1.0,), ("a",)), "upper"),
        (((np.nan,), (1.0,), ("a",)), "lower"),
    ],
)
def test_bad_box(args, name):
    with pytest.raises(InvalidInputError, match=name):
        Box(*args)


def test_bad_sampling():
    with pytest.raises(InvalidInputError, match="rng"):
        SEARCH_BOX.sample(0, 3)
    with pytest.raises(InvalidInputError, match="n:"):
        SEARCH_BOX.sample(np.random.default_rng(0), -1)
