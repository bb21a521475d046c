"""Protocol files: the shipped ones load; every malformed field gives its precise error."""

from __future__ import annotations

import copy
import dataclasses
import json
import re
import tomllib
from pathlib import Path

import numpy as np
import pytest

import visiontune
from visiontune.errors import ProtocolError
from visiontune.optics.comparison_answers import ComparisonModel
from visiontune.refraction.mixed_rules import MixedSettings
from visiontune.refraction.protocol import (
    Precision,
    SearchSpace,
    SlopePrior,
    list_protocols,
    load_protocol,
    parse_protocol,
    protocol_dirs,
    table_span,
    with_table_line,
)

CHECKOUT_PROTOCOLS = Path(visiontune.__file__).resolve().parent.parent / "protocols"

VALID = {
    "name": "x",
    "description": "test protocol",
    "policy": "ucb-ald",
    "seed": 3,
    "initial_random_trials": 5,
    "search_space": {"sphere_d": [-4.0, 4.0], "cylinder_d": [-4.0, 4.0], "axis_deg": 90.0},
    "context_space": {"logmar": [-1.0, 2.0]},
    "letters": {"set": "letters26", "n_alternatives": 26},
    "stopping": {"max_trials": 100, "min_trials": 10, "precision": {"sphere_d": 0.25, "cylinder_d": 0.5}},
    "model": {"kernel": "refraction-se", "hyperparameters": {"theta": 25.0, "lengthscales": [1.5, 2.0], "variance": 4}},
    "psychometric": {"slope_prior": {"distribution": "lognormal", "median": 5.0, "sigma": 0.4}},
}


def _value(v) -> str:
    if isinstance(v, (bool, int, float, str, list)):
        return json.dumps(v)  # JSON scalars and arrays of them are valid TOML
    raise TypeError(v)


def to_toml(doc: dict, prefix: str = "") -> str:
    """A tiny TOML writer for the test documents (tables after plain keys)."""
    lines = [f"{k} = {_value(v)}" for k, v in doc.items() if not isinstance(v, dict)]
    for k, v in doc.items():
        if isinstance(v, dict):
            lines += ["", f"[{prefix}{k}]", to_toml(v, f"{prefix}{k}.")]
    return "\n".join(lines)


def edited(path: str, value=..., doc=VALID) -> str:
    """TOML of ``doc`` with the dotted ``path`` set to ``value`` (deleted when ``...``)."""
    doc = copy.deepcopy(doc)
    *parents, last = path.split(".")
    node = doc
    for p in parents:
        node = node[p]
    if value is ...:
        del node[last]
    else:
        node[last] = value
    return to_toml(doc)


def error_of(text: str, source: str = "protocols/x.toml") -> str:
    with pytest.raises(ProtocolError) as info:
        parse_protocol(text, source=source)
    return str(info.value)


def test_writer_round_trips_the_valid_document():
    assert tomllib.loads(to_toml(VALID)) == VALID


def test_valid_document_parses_to_values():
    p = parse_protocol(to_toml(VALID), source="protocols/x.toml")
    assert p.search_space == SearchSpace((-4.0, 4.0), (-4.0, 4.0), 90.0)
    assert p.model.type == "gp"  # inferred from the kernel
    assert p.logmar_range == (-1.0, 2.0) and p.chance == pytest.approx(1 / 26)
    assert p.stopping.precision == Precision(sphere_d=0.25, cylinder_d=0.5, level=0.95) and p.stopping.min_trials == 10
    assert dict(p.model.hyperparameters) == {"theta": 25.0, "lengthscales": (1.5, 2.0), "variance": 4.0}
    assert p.model.fit is None
    assert p.slope_prior == SlopePrior("lognormal", median=5.0, sigma=0.4)
    assert p.seed == 3 and p.source == "protocols/x.toml"


def test_optional_parts_may_be_omitted():
    text = edited("psychometric")
    text = edited("search_space.axis_deg", doc=tomllib.loads(text))
    doc = tomllib.loads(text)
    del doc["stopping"]["precision"], doc["stopping"]["min_trials"]
    p = parse_protocol(to_toml(doc))
    assert p.slope_prior is None and p.search_space.axis_deg == 180.0  # the paper's axis
    assert p.stopping.precision is None and p.stopping.min_trials == 0


@pytest.mark.parametrize(
    "path, value, message",
    [
        # wrong types
        ("stopping.max_trials", "ten", 'stopping.max_trials: expected an integer in [1, 10000], found "ten"'),
        ("stopping.max_trials", 10.0, "stopping.max_trials: expected an integer in [1, 10000], found 10.0"),
        ("stopping.max_trials", True, "stopping.max_trials: expected an integer in [1, 10000], found true"),
        ("seed", -1, "seed: expected an integer in [0, 9223372036854775807], found -1"),
        ("seed", "0", 'seed: expected an integer in [0, 9223372036854775807], found "0"'),
        ("name", 3, "name: expected a non-empty string, found 3"),
        ("description", "", 'description: expected a non-empty string, found ""'),
        ("search_space", [1, 2], "search_space: expected a table, found [1, 2]"),
        (
            "search_space.sphere_d",
            "-4..4",
            'search_space.sphere_d: expected [lo, hi] D with -30 <= lo < hi <= 30, found "-4..4"',
        ),
        (
            "search_space.cylinder_d",
            [-1.0],
            "search_space.cylinder_d: expected [lo, hi] D with -10 <= lo < hi <= 10, found [-1.0]",
        ),
        ("search_space.axis_deg", "90", 'search_space.axis_deg: expected a number in [0, 180], found "90"'),
        ("letters.n_alternatives", 26.0, "letters.n_alternatives: expected an integer in [2, 26], found 26.0"),
        (
            "stopping.precision.sphere_d",
            "0.25",
            'stopping.precision.sphere_d: expected a number in (0, 10], found "0.25"',
        ),
        (
            "model.hyperparameters.theta",
            "big",
            'model.hyperparameters.theta: expected a number in [0.0001, 1000], found "big"',
        ),
        (
            "model.hyperparameters.lengthscales",
            [1.0, -2.0],
            "model.hyperparameters.lengthscales[1]: expected a number in [0.05, 50], found -2.0",
        ),
        # unknown names
        (
            "policy",
            "ucb-aldd",
            (
                'policy: expected one of "bald", "cbkg", "random-contextual", '
                '"ts-ald", "ts-random-context", "ucb-ald", "ucb-random-context", found "ucb-aldd"'
            ),
        ),
        (
            "letters.set",
            "sloan-10",
            'letters.set: expected one of "landolt_c", "letters26", "sloan", "tumbling_e", found "sloan-10"',
        ),
        ("model.kernel", "rbf", 'model.kernel: expected one of "refraction-se", found "rbf"'),
        # out of range / inverted
        (
            "search_space.sphere_d",
            [4.0, -4.0],
            "search_space.sphere_d: expected [lo, hi] D with -30 <= lo < hi <= 30 (the interval is inverted or "
            "empty), found [4.0, -4.0]",
        ),
        (
            "search_space.cylinder_d",
            [1.0, 1.0],
            "search_space.cylinder_d: expected [lo, hi] D with -10 <= lo < hi <= 10 (the interval is inverted or "
            "empty), found [1.0, 1.0]",
        ),
        (
            "search_space.sphere_d",
            [-40.0, 4.0],
            "search_space.sphere_d: expected [lo, hi] D with -30 <= lo < hi <= 30 (outside the physical range), "
            "found [-40.0, 4.0]",
        ),
        (
            "context_space.logmar",
            [-1.5, 2.0],
            "context_space.logmar: expected [lo, hi] logMAR with -1 <= lo < hi <= 2.5 (outside the physical range), "
            "found [-1.5, 2.0]",
        ),
        (
            "context_space.logmar",
            [2.0, -1.0],
            "context_space.logmar: expected [lo, hi] logMAR with -1 <= lo < hi <= 2.5 (the interval is inverted or "
            "empty), found [2.0, -1.0]",
        ),
        ("search_space.axis_deg", 181, "search_space.axis_deg: expected a number in [0, 180], found 181"),
        ("letters.n_alternatives", 27, "letters.n_alternatives: expected an integer in [2, 26], found 27"),
        ("letters.n_alternatives", 1, "letters.n_alternatives: expected an integer in [2, 26], found 1"),
        ("stopping.max_trials", 0, "stopping.max_trials: expected an integer in [1, 10000], found 0"),
        ("stopping.min_trials", 101, "stopping.min_trials: expected an integer in [0, 100], found 101"),
        ("initial_random_trials", 101, "initial_random_trials: expected an integer in [0, 100], found 101"),
        ("stopping.precision.cylinder_d", 0, "stopping.precision.cylinder_d: expected a number in (0, 10], found 0"),
        (
            "psychometric.slope_prior.sigma",
            0.0,
            "psychometric.slope_prior.sigma: expected a number in (0, 10], found 0.0",
        ),
        (
            "model.hyperparameters.variance",
            0,
            "model.hyperparameters.variance: expected a number in [0.0001, 1000], found 0",
        ),
    ],
)
def test_each_bad_field_gives_its_precise_error(path, value, message):
    assert error_of(edited(path, value)) == f"protocols/x.toml: {message}"


@pytest.mark.parametrize(
    "path",
    [
        "name",
        "policy",
        "seed",
        "search_space",
        "search_space.sphere_d",
        "context_space.logmar",
        "letters.set",
        "stopping.max_trials",
        "model.kernel",
        "stopping.precision.cylinder_d",
    ],
)
def test_missing_required_key(path):
    assert error_of(edited(path)) == f"protocols/x.toml: {path}: missing required key"


@pytest.mark.parametrize(
    "path, allowed",
    [
        (
            "max_trial",
            (
                "chart_line, comparisons, context_space, description, initial_random_trials, lenses, letters, model, "
                "name, "
                "policy, psychometric, search_space, seed, sliders, stopping"
            ),
        ),
        ("stopping.max_trial", "max_trials, min_information_bits, min_trials, precision"),
        ("search_space.axis", "axis_deg, cylinder_d, sphere_d"),
        ("stopping.precision.width", "cylinder_d, level, sphere_d"),
        ("psychometric.slope_prior.mean", "distribution, median, sigma"),
    ],
)
def test_unknown_key_is_an_error(path, allowed):
    assert error_of(edited(path, 1)) == f"protocols/x.toml: {path}: unknown key (allowed here: {allowed})"


def test_model_needs_exactly_one_of_fit_and_hyperparameters():
    both = tomllib.loads(edited("model.fit", "simulation"))
    assert error_of(to_toml(both)).endswith('model.fit = "simulation", found both')
    assert error_of(edited("model.hyperparameters")).endswith("found neither")
    fit_only = tomllib.loads(edited("model.hyperparameters"))
    fit_only["model"]["fit"] = "simulation"
    assert parse_protocol(to_toml(fit_only)).model.fit == "simulation"
    fit_only["model"]["fit"] = "mle"
    assert error_of(to_toml(fit_only)) == 'protocols/x.toml: model.fit: expected one of "simulation", found "mle"'


def test_slope_prior_variants():
    uniform = {"distribution": "uniform", "range": [1.0, 8.0]}
    assert parse_protocol(edited("psychometric.slope_prior", uniform)).slope_prior == SlopePrior(
        "uniform", range=(1.0, 8.0)
    )
    fixed = {"distribution": "fixed", "value": 5}
    assert parse_protocol(edited("psychometric.slope_prior", fixed)).slope_prior == SlopePrior("fixed", value=5.0)
    bad = {"distribution": "fixed", "median": 5.0}
    assert error_of(edited("psychometric.slope_prior", bad)).startswith(
        "protocols/x.toml: psychometric.slope_prior.median: unknown key"
    )
    assert error_of(edited("psychometric.slope_prior", {"distribution": "beta"})).startswith(
        'protocols/x.toml: psychometric.slope_prior.distribution: expected one of "fixed", "lognormal", "uniform", '
        'found "beta"'
    )


def test_invalid_toml_names_the_source():
    assert error_of("name = \n").startswith("protocols/x.toml: invalid TOML (")


def test_shipped_protocols():
    assert list_protocols() == [
        "clinical-sloan",
        "clinical-sloan-compare",
        "clinical-sloan-held",
        "clinical-sloan-lines-filed",
        "clinical-sloan-lines-two-formulas",
        "paper-ucb-ald",
        "ts-ald",
    ]
    assert CHECKOUT_PROTOCOLS in protocol_dirs()
    paper = load_protocol("paper-ucb-ald")
    assert (paper.policy, paper.letter_set, paper.n_alternatives) == ("ucb-ald", "letters26", 26)
    assert paper.search_space.sphere_d == paper.search_space.cylinder_d == (-4.0, 4.0)
    assert paper.logmar_range == (-1.0, 2.0) and paper.stopping.max_trials == 260
    assert paper.model.kernel == "refraction-se" and paper.model.fit is None
    assert set(paper.model.hyperparameters) == {"theta", "lengthscales", "variance"}
    sloan = load_protocol("clinical-sloan")
    assert (sloan.letter_set, sloan.n_alternatives, sloan.policy) == ("sloan", 10, "evr")
    assert sloan.model.type == "optics" and sloan.lenses.step_d == 0.25 and sloan.lenses.cylinder_form == "minus"
    assert sloan.stopping.precision == Precision(m_d=0.25, cylinder_vector_d=0.25, level=0.95)
    assert sloan.stopping.max_trials < paper.stopping.max_trials
    assert load_protocol("ts-ald").policy == "ts-ald"
    assert sloan.comparisons is None
    compare = load_protocol("clinical-sloan-compare")
    assert compare.comparisons == MixedSettings(
        ComparisonModel("thurstone", indifference=0.5, lapse=0.04, sensitivity_median=4.0, sensitivity_sigma=1.0),
        3.0,
        5.0,
        "evr-stop",
        sensitivity_to_stop=0.5,
        lens_change_seconds=4.0,
    )
    assert compare.model.over_minus_guard == "young" and sloan.model.over_minus_guard == "never"
    assert compare.model.filed_lens == "most-probable" and sloan.model.filed_lens == "rounded"
    assert compare.stopping.precision.over_minus_risk == 0.001
    model = dataclasses.replace(compare.model, over_minus_guard="never", filed_lens="rounded")
    stopping = dataclasses.replace(
        compare.stopping, precision=dataclasses.replace(compare.stopping.precision, over_minus_risk=None)
    )
    assert (
        dataclasses.replace(
            compare,
            comparisons=None,
            name=sloan.name,
            description=sloan.description,
            source=sloan.source,
            source_text=sloan.source_text,
            model=model,
            stopping=stopping,
        )
        == sloan
    )  # the rest is clinical-sloan
    for name in list_protocols():
        assert load_protocol(name).name == name


def test_load_by_path_and_errors(tmp_path):
    path = tmp_path / "mine.toml"
    path.write_text(edited("stopping.max_trials", "ten"))
    with pytest.raises(
        ProtocolError,
        match="^" + re.escape(f'{path}: stopping.max_trials: expected an integer in [1, 10000], found "ten"') + "$",
    ):
        load_protocol(path)
    path.write_text(to_toml(VALID))
    assert load_protocol(str(path)).source == str(path)
    with pytest.raises(
        ProtocolError,
        match=r"^nope: no shipped protocol of that name "
        r"\(available: clinical-sloan, clinical-sloan-compare, clinical-sloan-held, clinical-sloan-lines-filed, "
        r"clinical-sloan-lines-two-formulas, paper-ucb-ald, ts-ald\)",
    ):
        load_protocol("nope")
    with pytest.raises(ProtocolError, match="no such protocol file"):
        load_protocol(tmp_path / "missing.toml")


def test_letter_set_sizes_agree_with_the_shipped_stimuli():
    from visiontune.refraction.protocol import LETTER_SET_SIZES

    stimuli = Path(visiontune.__file__).resolve().parent / "data" / "stimuli"
    checked = 0
    for name, size in LETTER_SET_SIZES.items():
        path = stimuli / f"{name}.json"
        if path.is_file():
            assert json.loads(path.read_text())["n_alternatives"] == size, name
            checked += 1
    if checked == 0:
        pytest.skip("no stimuli data shipped yet")


# --- protocols once accepted, crashing the parser or orphaning a session: each refused --

SLOAN_TEXT = load_protocol("clinical-sloan").source_text
PAPER_TEXT = load_protocol("paper-ucb-ald").source_text
PAPER_HP = "hyperparameters = { theta = 3.557, lengthscales = [5.367, 5.961], variance = 5.619 }"


def _paper(hyperparameters: str) -> str:
    assert PAPER_HP in PAPER_TEXT
    return PAPER_TEXT.replace(PAPER_HP, f"hyperparameters = {{ {hyperparameters} }}")


def _replaced(text: str, old: str, new: str) -> str:
    assert old in text, old
    return text.replace(old, new)


REFUSED_PROTOCOLS = [
    # once a traceback
    ("deep-arrays", SLOAN_TEXT + "\nx = " + "[" * 5000 + "]" * 5000 + "\n", "nested too deeply"),
    ("deep-inline-tables", "x = " + "{a=" * 5000 + "1" + "}" * 5000 + "\n" + SLOAN_TEXT, "nested too deeply"),
    (
        "theta-list",
        _paper("theta = [1.0, 2.0], lengthscales = [5.367, 5.961], variance = 5.619"),
        "model.hyperparameters.theta: expected a number in [0.0001, 1000], found [1.0, 2.0]",
    ),
    # once parsed, then refused by the engine after the session row was written
    ("kss-ald", _replaced(SLOAN_TEXT, 'policy = "evr"', 'policy = "kss-ald"'), 'policy: expected one of "bald", "evr"'),
    (
        "power-vector-kernel-gp",
        _replaced(PAPER_TEXT, 'kernel = "refraction-se"', 'kernel = "refraction-power-vector-se"'),
        'model.kernel: expected one of "refraction-se", found "refraction-power-vector-se"',
    ),
    (
        "kernel-on-optics",
        _replaced(SLOAN_TEXT, 'type = "optics"', 'type = "optics"\nkernel = "refraction-power-vector-se"'),
        "model.kernel: unknown key",
    ),
    (
        "three-lengthscales",
        _paper("theta = 3.557, lengthscales = [5.367, 5.961, 1.0], variance = 5.619"),
        "model.hyperparameters.lengthscales: expected 1 or 2 numbers",
    ),
    (
        "missing-theta",
        _paper("lengthscales = [5.367, 5.961], variance = 5.619"),
        "model.hyperparameters.theta: missing required key",
    ),
    # once accepted
    (
        "lenghtscales",
        _paper("theta = 3.557, lengthscales = 2.0, lenghtscales = 2.0, variance = 5.619"),
        "model.hyperparameters.lenghtscales: unknown key (allowed here: lengthscales, theta, variance)",
    ),
    (
        "theta-1e308",
        _paper("theta = 1e308, lengthscales = [5.367, 5.961], variance = 5.619"),
        "model.hyperparameters.theta: expected a number in [0.0001, 1000], found 1e+308",
    ),
    (
        "lengthscales-1e-300",
        _paper("theta = 3.557, lengthscales = 1e-300, variance = 5.619"),
        "model.hyperparameters.lengthscales: expected a number in [0.05, 50], found 1e-300",
    ),
    (
        "lengthscales-1e300",
        _paper("theta = 3.557, lengthscales = [1e300, 2.0], variance = 5.619"),
        "model.hyperparameters.lengthscales[0]: expected a number in [0.05, 50], found 1e+300",
    ),
    (
        "sphere-narrower-than-a-lens-step",
        _replaced(PAPER_TEXT, "sphere_d = [-4.0, 4.0]", "sphere_d = [0.05, 0.2]"),
        "search_space.sphere_d: expected a range holding at least two trial lenses (0.25 D steps), found [0.05, 0.2]",
    ),
    (
        "max-trials-2^70",
        _replaced(SLOAN_TEXT, "max_trials = 120", f"max_trials = {2**70}"),
        f"stopping.max_trials: expected an integer in [1, 10000], found {2**70}",
    ),
    (
        "name-with-escape-and-newline",
        _replaced(SLOAN_TEXT, 'name = "clinical-sloan"', 'name = "x\\u001b[31mRED\\nLINE"'),
        'name: expected at most 80 printable characters on one line, found "x\\u001b[31mRED\\nLINE..."',
    ),
    (
        "description-with-newline",
        _replaced(SLOAN_TEXT, 'description = "', 'description = "two\\nlines '),
        "description: expected at most 500 printable characters on one line",
    ),
]


@pytest.mark.parametrize(("text", "message"), [c[1:] for c in REFUSED_PROTOCOLS], ids=[c[0] for c in REFUSED_PROTOCOLS])
def test_each_refused_protocol_names_its_fault_in_one_line(text, message):
    error = error_of(text, source="p.toml")
    assert error.startswith("p.toml: ") and message in error, error
    assert "\n" not in error and "\x1b" not in error


@pytest.mark.parametrize(
    "hyperparameters",
    [
        "theta = 1000, lengthscales = 0.05, variance = 1000",  # every bound at once
        "theta = 0.0001, lengthscales = [50, 50], variance = 0.0001",
        "theta = 3.557, lengthscales = [0.05, 50], variance = 5.619",
    ],
)
def test_hyperparameters_at_their_bounds_run(hyperparameters):
    """A protocol that parses runs: the GP at the edges of its hyperparameter ranges proposes
    lenses inside the box and letter sizes inside the range, answer after answer."""
    from visiontune.refraction.loop import Answer, MemoryLog, Refraction

    def in_box(rx) -> bool:  # the lens as (S, C) at the protocol's axis 90 (it is shown in minus form)
        s, c = (
            (rx.sphere_d, rx.cylinder_d)
            if rx.cylinder_d == 0 or rx.axis_deg == 90.0
            else (rx.sphere_d + rx.cylinder_d, -rx.cylinder_d)
        )
        return 0.0 <= s <= 0.25 and -4.0 <= c <= 4.0

    text = _replaced(_paper(hyperparameters), "sphere_d = [-4.0, 4.0]", "sphere_d = [0.0, 0.25]")
    protocol = parse_protocol(text, "bounds.toml")
    r = Refraction(MemoryLog(), protocol, seed=1, simulated=True)
    for i in range(8):
        q = r.next_query()
        assert in_box(q.lens), q.lens
        assert protocol.logmar_range[0] <= q.s_logmar <= protocol.logmar_range[1]
        r.record(Answer(correct=i % 3 != 0))
    estimate = r.current_estimate()
    assert np.isfinite(estimate.va_logmar) and in_box(estimate.rounded), estimate.rounded


def _with_comparisons(table: str) -> str:
    return load_protocol("clinical-sloan").source_text + "\n" + table


def test_comparisons_table_sets_the_mixed_session():
    """``[comparisons]``: durations, criterion, the letter's offset and every ComparisonModel
    field; ``enabled = false`` is a letter-only protocol."""
    p = parse_protocol(
        _with_comparisons(
            '[comparisons]\nletter_seconds = 2.5\ncomparison_seconds = 7\ncriterion = "information"\n'
            'size_offset_logmar = 0.2\nsensitivity_to_stop = 0.25\npairs = "clinical"\n[comparisons.model]\nkind = '
            '"blur"\nthreshold_at_focus_d = 0.1\n'
            "weber_fraction = 0.2\nindifference = 0.3\nlapse = 0.01\n"
        ),
        "protocols/x.toml",
    )
    assert p.comparisons == MixedSettings(
        ComparisonModel("blur", indifference=0.3, lapse=0.01, threshold_at_focus_d=0.1, weber_fraction=0.2),
        2.5,
        7.0,
        "information",
        comparison_size_offset_logmar=0.2,
        sensitivity_to_stop=0.25,
        pairs="clinical",
    )
    assert parse_protocol(_with_comparisons("[comparisons]\n"), "x.toml").comparisons == MixedSettings()
    assert parse_protocol(_with_comparisons("[comparisons]\nenabled = false\n"), "x.toml").comparisons is None


@pytest.mark.parametrize(
    ("table", "message"),
    [
        (
            "[comparisons]\ncomparison_seconds = 0",
            "comparisons.comparison_seconds: expected a number in [0.1, 600], found 0",
        ),
        (
            '[comparisons]\ncriterion = "fast"',
            'comparisons.criterion: expected one of "evr", "evr-precision", "evr-stop", "information", found "fast"',
        ),
        ("[comparisons]\nenabled = 1", "comparisons.enabled: expected true or false, found 1"),
        (
            '[comparisons]\npairs = "jcc"',
            'comparisons.pairs: expected one of "any", "clinical", "one-change", found "jcc"',
        ),
        (
            "[comparisons]\nsensitivity_to_stop = 0",
            "comparisons.sensitivity_to_stop: expected a number in (0, 1], found 0",
        ),
        ("[comparisons.model]\nsensitivity_sigma = -1", "comparisons.model.sensitivity_sigma: expected"),
        ('[comparisons]\nkeys = "12="', "comparisons.keys: unknown key"),
        ('[comparisons.model]\nkind = "duel"', "comparisons.model.kind: expected one of thurstone, blur, found 'duel'"),
        (
            "[comparisons.model]\nlapse = 1.5",
            "comparisons.model.lapse: expected a finite number in [0, 0.99], found 1.5",
        ),
        ('[comparisons.model]\nlapse = "low"', 'comparisons.model.lapse: expected a number, found "low"'),
        ("[comparisons.model]\ntau = 0.5", "comparisons.model.tau: unknown key"),
    ],
)
def test_comparisons_errors_name_the_key(table, message):
    with pytest.raises(ProtocolError, match="^protocols/x.toml: " + re.escape(message)):
        parse_protocol(_with_comparisons(table), "protocols/x.toml")


def test_comparisons_need_the_optics_model():
    text = load_protocol("paper-ucb-ald").source_text + "\n[comparisons]\n"
    with pytest.raises(ProtocolError, match="comparisons: expected no such table for the GP model"):
        parse_protocol(text, "protocols/x.toml")


_TABLES = """name = "x"

[comparisons]  # priced
letter_seconds = 3.0
lens_change_seconds = 4.0

[comparisons.model]
lens_change_seconds_note = 1
"""


def test_table_span_is_the_body_up_to_the_next_header():
    start, end = table_span(_TABLES, "comparisons")
    assert _TABLES[start:end] == "\nletter_seconds = 3.0\nlens_change_seconds = 4.0\n\n"
    assert table_span(_TABLES, "stopping") is None


def test_with_table_line_replaces_the_setting_in_its_table_only():
    text = with_table_line(_TABLES, "comparisons", "lens_change_seconds", "lens_change_seconds = 1.0  # a\\b")
    assert "lens_change_seconds = 1.0  # a\\b\n" in text  # the line as given: no backslash escapes read in it
    assert "lens_change_seconds = 4.0" not in text and "lens_change_seconds_note = 1" in text
    assert text.count("lens_change_seconds =") == 1


def test_with_table_line_puts_a_missing_setting_under_the_header():
    text = with_table_line(_TABLES, "comparisons.model", "lens_change_seconds", "lens_change_seconds = 2.0")
    assert "[comparisons.model]\nlens_change_seconds = 2.0\nlens_change_seconds_note = 1\n" in text
    assert "lens_change_seconds = 4.0" in text
    assert with_table_line(_TABLES, "stopping", "max_trials", "max_trials = 9") is None
