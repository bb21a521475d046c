"""The second eye starts from what the first eye's refraction taught of the patient.

Of the optics model's unknowns (:mod:`visiontune.refraction.optics_model`) some belong to the eye, the
correction ``P*`` and what accommodation does to it, and some to the patient, whichever eye reads: the
best-corrected acuity ``VA*``, the psychometric slope ``a`` of their letter reading and, where
comparisons are asked, their sensitivity ``κ`` to a "1 or 2?" (how they judge, not what they see). The
first eye's session learns the patient's; the second eye's starts from that posterior (``model.
fellow_eye_prior``), each unknown summarised by its weighted mean and standard deviation and widened by
what may differ between the two eyes::

    VA*   ~ N(m, sd² + 0.08²)        logMAR; normal eyes differ by less than 0.16 logMAR, about two
                                     standard deviations (Wood & Bullimore 1996, Ophthalmic Physiol.
                                     Opt. 16:507; Brown & Yap 1995, OPO 15:163: SD of the signed
                                     difference 0.050 logMAR, test-retest included)
    ln a  ~ N(m, sd² + 0.1²)         the same person reading the same chart (assumed)
    ln κ  ~ N(m, sd² + 0.1²)         the same person judging the same way (assumed); one lognormal in
                                     place of the two formulas' mixture, the first eye having weighed them

each standard deviation at most the protocol's own prior's (the first eye only narrows it). The
correction is not carried (each eye has its own start), nor the amplitude of accommodation (its
posterior after one eye is nearly its prior in young eyes), nor the other columns of a comparison's
answer. The summary is written into the second eye's protocol (``model.best_acuity_mean`` and
``best_acuity_sd``, ``psychometric.slope_prior``, ``comparisons.model.sensitivity_*``), which the
trial log snapshots, so the second eye's session replays from its own log.

Measured: docs/results/clinic-time.md, "The second eye starts from the first".
"""

from __future__ import annotations

import math
import re

import numpy as np

from visiontune.errors import InvalidInputError, ProtocolError
from visiontune.refraction.optics_model import LOG_SLOPE, OPTIONAL_COLUMNS, VA0, ParticlePosterior
from visiontune.refraction.protocol import Protocol, parse_protocol, table_span

__all__ = ["INTEROCULAR_SD", "fellow_eye_protocol", "fellow_eye_values", "protocol_with_patient_priors"]

#: What may differ between a patient's two eyes (module docstring): ``VA*`` (logMAR), ``ln a``, ``ln κ``.
INTEROCULAR_SD = {"best_acuity": 0.08, "log_slope": 0.1, "log_sensitivity": 0.1}


def _moments(x: np.ndarray, w: np.ndarray) -> tuple[float, float]:
    mean = float(np.sum(w * x))
    return mean, float(np.sqrt(np.sum(w * (x - mean) ** 2)))


def _widened(sd: float, between_eyes: float, ceiling: float) -> float:
    return min(math.hypot(sd, between_eyes), ceiling)


def fellow_eye_values(
    posterior: ParticlePosterior, between_eyes: dict[str, float] = INTEROCULAR_SD
) -> dict[str, dict[str, float | str]]:
    """The second eye's priors from the first eye's ``posterior`` (module docstring), as protocol values
    ``{table: {key: value}}``; ``comparisons.model`` only where the first eye inferred ``κ``.
    ``between_eyes``: what may differ between the eyes (default :data:`INTEROCULAR_SD`)."""
    spec, w, theta = posterior.spec, posterior.weights, posterior.theta
    va, va_sd = _moments(theta[:, VA0], w)
    log_a, log_a_sd = _moments(theta[:, LOG_SLOPE], w)
    values: dict[str, dict[str, float | str]] = {
        "model": {
            "best_acuity_mean": round(float(np.clip(va, -0.3, 1.0)), 4),
            "best_acuity_sd": round(_widened(va_sd, between_eyes["best_acuity"], spec.va0_sd), 4),
        },
        "psychometric.slope_prior": {
            "distribution": "lognormal",
            "median": round(math.exp(log_a), 4),
            "sigma": round(_widened(log_a_sd, between_eyes["log_slope"], spec.slope_sigma), 4),
        },
    }
    prior = posterior.sensitivity_prior
    if prior is not None:
        column = OPTIONAL_COLUMNS["log_sensitivity"]
        log_k, log_k_sd = _moments(theta[:, column.index], w)
        log_k_sd = _widened(log_k_sd, between_eyes["log_sensitivity"], column.prior_sd(prior))
        values["comparisons.model"] = {
            "sensitivity_median": round(math.exp(log_k), 4),
            "sensitivity_sigma": round(log_k_sd, 4),
            "sensitivity_second_median": 0.0,
        }
    return values


def _toml(value: float | str) -> str:
    return f'"{value}"' if isinstance(value, str) else repr(float(value))


def _set_table(text: str, table: str, values: dict, drop: tuple[str, ...], note: str) -> str:
    """``text`` with the lines ``key = value`` of ``values`` written under the header of ``[table]``, after
    the comment ``note``, and any earlier line of those keys or of ``drop`` removed from it; the table
    appended when the text has none."""
    lines = [f"# {note}", *(f"{key} = {_toml(v)}" for key, v in values.items())]
    span = table_span(text, table)
    if span is None:
        return text.rstrip("\n") + f"\n\n[{table}]\n" + "\n".join(lines) + "\n"
    start, end = span
    body = text[start:end]
    for key in (*values, *drop):
        body = re.sub(rf"^[ \t]*{re.escape(key)}[ \t]*=.*\n?", "", body, flags=re.MULTILINE)
    tail = "\n\n" if end < len(text) else "\n"
    return text[:start] + "\n" + "\n".join(lines) + body.rstrip("\n") + tail + text[end:]


def _read_back(protocol: Protocol, table: str, key: str):
    section = {
        "model": protocol.model,
        "psychometric.slope_prior": protocol.slope_prior,
        "comparisons.model": protocol.comparisons.comparison if protocol.comparisons else None,
    }[table]
    return getattr(section, key, None)


def protocol_with_patient_priors(protocol: Protocol, values: dict, whence: str) -> Protocol:
    """``protocol`` with the priors ``values`` (``{table: {key: value}}``, as :func:`fellow_eye_values`)
    written into its text, parsed again (so a session's snapshot holds them) and checked to read back as
    written; ``whence`` says where they came from (a comment in each table, and the protocol's source).
    ``comparisons.model`` is left out of a protocol that asks no comparison."""
    text = protocol.source_text
    values = {t: v for t, v in values.items() if t != "comparisons.model" or protocol.comparisons is not None}
    for table, table_values in values.items():
        drop = ("value", "range") if table == "psychometric.slope_prior" else ()
        text = _set_table(text, table, table_values, drop, f"the patient's prior from {whence}")
    try:
        derived = parse_protocol(text, source=f"{protocol.source} (the patient's priors from {whence})")
    except ProtocolError as exc:
        raise ProtocolError(
            f"the patient's priors could not be written into {protocol.source}, whose tables this edit does "
            f"not handle (inline or dotted tables): {exc}"
        ) from None
    wrong = {
        f"{table}.{key}": (value, _read_back(derived, table, key))
        for table, table_values in values.items()
        for key, value in table_values.items()
        if _read_back(derived, table, key) != value
    }
    if wrong:
        raise InvalidInputError(
            f"{protocol.source}: the patient's priors did not read back as written ({wrong}: written, read); "
            "its tables may be written in a form this edit does not handle (inline or dotted tables)"
        )
    return derived


def fellow_eye_protocol(
    protocol: Protocol, posterior: ParticlePosterior, first_eye: str, between_eyes: dict[str, float] = INTEROCULAR_SD
) -> Protocol:
    """``protocol`` for the second eye: :func:`fellow_eye_values` of the first eye's ``posterior`` written
    in (:func:`protocol_with_patient_priors`); ``first_eye`` names the eye and session they came from."""
    values = fellow_eye_values(posterior, between_eyes)
    return protocol_with_patient_priors(protocol, values, f"{first_eye} (model.fellow_eye_prior)")
