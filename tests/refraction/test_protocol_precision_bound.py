"""A precision stop below the finest trial lens step is refused (``m_d = 1e-12`` is a stop that
can never fire)."""

from __future__ import annotations

import pytest

from visiontune.errors import ProtocolError
from visiontune.refraction.protocol import MIN_PRECISION_WIDTH_D, load_protocol, parse_protocol


def _with_precision(name: str, key: str, value) -> str:
    text = load_protocol(name).source_text
    old = f"{key} = 0.25"
    assert old in text
    return text.replace(old, f"{key} = {value}", 1)


@pytest.mark.parametrize("key", ["m_d", "cylinder_vector_d"])
@pytest.mark.parametrize("value", ["1e-12", "0.01", "0.06"])
def test_optics_half_width_below_half_the_finest_step_is_refused(key, value):
    text = _with_precision("clinical-sloan", key, value)
    with pytest.raises(ProtocolError) as info:
        parse_protocol(text, "x.toml")
    message = str(info.value)
    assert message.startswith(f"x.toml: stopping.precision.{key}: expected a number in [0.0625, 10]"), message
    assert "finest trial lens step (0.125 D)" in message and "never fire" in message


@pytest.mark.parametrize("value", [0.0625, 0.125, 0.25])
def test_optics_half_width_at_the_bound_is_accepted(value):
    p = parse_protocol(_with_precision("clinical-sloan", "m_d", value), "x.toml")
    assert p.stopping.precision.m_d == value


def test_gp_width_below_the_finest_step_is_refused():
    from tests.refraction.test_protocol import edited, error_of  # the module's valid GP protocol

    message = error_of(edited("stopping.precision.sphere_d", 1e-12), source="gp.toml")
    assert message.startswith("gp.toml: stopping.precision.sphere_d: expected a number in [0.125, 10]"), message
    assert MIN_PRECISION_WIDTH_D == 0.125
    parse_protocol(edited("stopping.precision.sphere_d", 0.125), "gp.toml")  # the bound itself is fine
