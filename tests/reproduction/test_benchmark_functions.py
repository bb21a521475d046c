"""The registry against Fauvel & Chalk (contextual BO), table S1, the known global minima, and input validation."""

import numpy as np
import pytest
from scipy.stats import qmc

from visiontune.errors import InvalidInputError, VisionTuneError
from visiontune.reproduction.benchmark_functions import FUNCTIONS, TestFunction, get_function

# Fauvel & Chalk (contextual BO), supplementary section H, table S1, retyped: title, D, kernel, space (rows as printed).
TABLE_S1 = {
    "ackley": ("Ackley", 2, "matern32", [(-32.768, 32.768)] * 2),
    "beale": ("Beale", 2, "se", [(-4.5, 4.5)] * 2),
    "bohachevsky": ("Bohachevsky", 2, "se", [(-100, 100)] * 2),
    "three_hump_camel": ("Three-Hump Camel", 2, "matern52", [(-5, 5)] * 2),
    "six_hump_camel": ("Six-Hump Camel", 2, "se", [(-3, 3), (-2, 2)]),
    "colville": ("Colville", 4, "matern52", [(-10, 10)] * 4),
    "cross_in_tray": ("Cross-in-Tray", 2, "matern52", [(-10, 10)] * 2),
    "dixon_price": ("Dixon-Price", 2, "matern52", [(-5, 5)] * 2),
    "drop_wave": ("Drop-Wave", 2, "matern32", [(-5.12, 5.12)] * 2),
    "eggholder": ("Eggholder", 2, "se", [(-512, 512)] * 2),
    "forrester": ("Forrester et al (2008)", 1, "se", [(0, 1)]),
    "goldstein_price": ("Goldstein-Price", 2, "se", [(-2, 2)] * 2),
    "griewank": ("Griewank", 2, "se", [(-600, 600)] * 2),
    "gramacy_lee": ("Gramacy and Lee (2012)", 1, "se", [(0.5, 2.5)]),
    "hartmann3": ("Hartmann 3-D", 3, "se", [(0, 1)] * 3),
    "hartmann4": ("Hartmann 4D", 4, "se", [(0, 1)] * 4),
    "hartmann6": ("Hartmann 6D", 6, "se", [(0, 1)] * 6),
    "holder_table": ("Holder", 2, "se", [(-10, 10)] * 2),
    "langermann": ("Langer", 2, "matern32", [(0, 10)] * 2),
    "levy": ("Levy", 2, "se", [(-10, 10)] * 2),
    "levy13": ("Levy N.13", 2, "matern52", [(-10, 10)] * 2),
    "perm0db": ("Perm 0,d,β", 2, "se", [(-2, 2)] * 2),
    "permdb": ("Perm d,β", 2, "se", [(-2, 2)] * 2),
    "powell": ("Powell", 4, "se", [(-4, 5)] * 4),
    "rosenbrock": ("Rosenbrock", 2, "se", [(-2.048, 2.048)] * 2),
    "rotated_hyper_ellipsoid": ("Rotated Hyper-Ellipsoid", 2, "matern32", [(-65.536, 65.536)] * 2),
    "schaffer4": ("Schaffer n4", 2, "matern32", [(-100, 100)] * 2),
    "schwefel": ("Schwefel", 2, "se", [(-500, 500)] * 2),
    "shekel": ("Shekel", 4, "se", [(0, 10)] * 4),
    "shubert": ("Schubert", 2, "matern32", [(0, 10)] * 2),
    "sphere": ("Sphere", 2, "se", [(-5.12, 5.12)] * 2),
    "sum_squares": ("Sum Squares", 2, "se", [(-10, 10)] * 2),
    "trid": ("Trid", 2, "se", [(-4, 4)] * 2),
    # printed as [-1.2, 1.2] x [-0.9, 1.2]; docs/design.md: the table swaps the two ranges
    "ursem_waves": ("Ursem Waves", 2, "se", [(-1.2, 1.2), (-0.9, 1.2)]),
}


def _tolerance(minimum: float) -> float:
    """1e-4 absolute near zero, 1e-4 relative otherwise."""
    return 1e-4 * max(1.0, abs(minimum))


def test_registry_holds_the_34_functions_of_table_s1_in_order():
    assert list(FUNCTIONS) == list(TABLE_S1)
    assert len(FUNCTIONS) == 34
    assert all(isinstance(f, TestFunction) and f.name == name for name, f in FUNCTIONS.items())


@pytest.mark.parametrize("name", list(TABLE_S1))
def test_dimension_kernel_and_domain_match_table_s1(name):
    title, dimension, kernel, space = TABLE_S1[name]
    function = FUNCTIONS[name]
    assert function.title == title
    assert function.dimension == dimension
    assert function.kernel == kernel
    expected = space[::-1] if name == "ursem_waves" else space
    np.testing.assert_array_equal(np.asarray(function.bounds), np.asarray(expected, dtype=float))
    assert np.asarray(function.bounds).shape == (dimension, 2)


def test_ursem_waves_uses_the_toolbox_domain():
    ursem = FUNCTIONS["ursem_waves"]
    assert ursem.bounds == ((-0.9, 1.2), (-1.2, 1.2))


KNOWN = [name for name, f in FUNCTIONS.items() if f.minimum is not None]


def test_every_function_has_a_known_minimum():
    assert KNOWN == list(FUNCTIONS)


@pytest.mark.parametrize("name", KNOWN)
def test_value_at_each_global_minimiser_is_the_known_minimum(name):
    function = FUNCTIONS[name]
    assert function.minimizers, name
    X = np.array(function.minimizers, dtype=float)
    assert X.shape[1] == function.dimension
    assert np.all((X >= function.lower) & (X <= function.upper)), "minimiser outside the domain"
    np.testing.assert_allclose(function(X), function.minimum, rtol=0, atol=_tolerance(function.minimum))


@pytest.mark.parametrize("name", KNOWN)
def test_no_sobol_point_is_below_the_known_minimum(name):
    function = FUNCTIONS[name]
    sampler = qmc.Sobol(function.dimension, scramble=True, seed=np.random.default_rng(11))
    X = qmc.scale(sampler.random_base2(12), function.lower, function.upper)
    assert function(X).min() >= function.minimum - _tolerance(function.minimum)


@pytest.mark.parametrize("name", KNOWN)
def test_minimisers_are_local_minima_under_small_perturbations(name):
    # a wrong location that happens to give the right value would fail here
    function = FUNCTIONS[name]
    rng = np.random.default_rng(5)
    span = function.upper - function.lower
    for x in np.array(function.minimizers, dtype=float):
        steps = 1e-3 * span * rng.standard_normal((200, function.dimension))
        neighbours = np.clip(x + steps, function.lower, function.upper)
        assert function(neighbours).min() >= function.minimum - _tolerance(function.minimum)


def test_published_minima_are_reproduced():
    # values printed by S&B / the literature, to their printed precision
    published = {
        "six_hump_camel": -1.0316,
        "cross_in_tray": -2.06261,
        "eggholder": -959.6407,
        "hartmann3": -3.86278,
        "hartmann6": -3.32237,
        "holder_table": -19.2085,
        "shekel": -10.5364,
        "shubert": -186.7309,
        "trid": -2.0,
        "goldstein_price": 3.0,
        "forrester": -6.02074,
        "gramacy_lee": -0.869011,
        "schaffer4": 0.292579,
        "hartmann4": -3.1345,
    }
    for name, value in published.items():
        assert FUNCTIONS[name].minimum == pytest.approx(value, abs=1e-4), name


def test_symmetric_minimisers_are_all_listed():
    assert len(FUNCTIONS["cross_in_tray"].minimizers) == 4
    assert len(FUNCTIONS["holder_table"].minimizers) == 4
    assert len(FUNCTIONS["schaffer4"].minimizers) == 4
    assert len(FUNCTIONS["six_hump_camel"].minimizers) == 2
    assert len(FUNCTIONS["dixon_price"].minimizers) == 2


def test_get_function_returns_the_registered_record():
    assert get_function("levy") is FUNCTIONS["levy"]


def test_get_function_names_the_unknown_function_and_lists_the_known_ones():
    with pytest.raises(InvalidInputError) as info:
        get_function("branin")
    message = str(info.value)
    assert "'branin'" in message
    assert "ackley" in message and "ursem_waves" in message


def test_get_function_rejects_a_non_string():
    with pytest.raises(VisionTuneError, match="name"):
        get_function(["ackley"])


@pytest.mark.parametrize("method", ["__call__", "scaled"])
@pytest.mark.parametrize(
    ("bad", "fragment"),
    [
        (np.zeros((3, 3)), "3"),
        (np.zeros((3, 1)), "1"),
        (np.array([[0.0, np.nan]]), "finite"),
        (np.array([[np.inf, 0.0]]), "finite"),
        (np.zeros((2, 2, 2)), "shape"),
        ("ab", "numbers"),
    ],
)
def test_bad_input_raises_invalid_input_naming_x(method, bad, fragment):
    function = FUNCTIONS["beale"]
    with pytest.raises(InvalidInputError) as info:
        getattr(function, method)(bad)
    assert str(info.value).startswith("X:")
    assert fragment in str(info.value)


def test_a_single_point_is_accepted_as_one_row():
    assert FUNCTIONS["sphere"](np.array([1.0, 2.0])).tolist() == [5.0]


def test_records_are_frozen():
    with pytest.raises(AttributeError):
        FUNCTIONS["sphere"].minimum = 1.0
