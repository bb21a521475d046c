"""The optics engine of a session that asks comparisons as well as letters.

:class:`MixedOpticsEngine` is :class:`~visiontune.refraction.optics_engine.OpticsEngine` over a
log whose trials may be comparisons (a trial with ``lens2`` and ``comparison``, the answer
``"1"``, ``"2"`` or ``"="``): each comparison enters the particle posterior through its
likelihood (:class:`~visiontune.refraction.comparisons.ComparisonAnswer`, the protocol's
comparison model), and the next question, a letter or a comparison, is
:func:`~visiontune.refraction.mixed_rules.propose_mixed` (value per second of the patient's
time). The protocol's initial random trials are letters, as in the letter-only engine. With a
model that infers the patient's comparison sensitivity ``κ`` and
:attr:`~visiontune.refraction.mixed_rules.MixedSettings.sensitivity_to_stop`, the precision stop
also waits until ``κ`` is learned; with the criterion ``"evr-stop"`` the questions turn to it once
the region is within the precision (:meth:`MixedOpticsEngine.question_settings`).

With the protocol's ``[sliders]`` (:class:`~visiontune.refraction.slider.SliderSettings`) a
trial may also be a slider answer (``slider_lenses``, the lenses of the knob's path in knob
order, and ``slider_choice``, the index of the clearest): it enters through
:class:`~visiontune.refraction.slider.SliderAnswer` (the protocol's slider model), and the
next question may be a slider (:func:`~visiontune.refraction.mixed_rules.propose_mixed`).

With the protocol's ``[chart_line]`` (:class:`~visiontune.refraction.chart_line.ChartLineSettings`)
a trial may be a chart line (``letter_shown`` the line's letters, ``line_correct`` each one's right
or wrong): it enters through :class:`~visiontune.refraction.chart_line.ChartLineAnswer` (its letters
as the answers they are, at the protocol's crowding offset), and the next question may be a line.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from visiontune.errors import InvalidInputError
from visiontune.refraction.chart_line import ChartLineAnswer
from visiontune.refraction.comparisons import ComparisonAnswer
from visiontune.refraction.estimate import Region, region_from_samples
from visiontune.refraction.lenses import lens_left_in_place, lens_power_vector
from visiontune.refraction.mixed_rules import MixedChoice, MixedSettings, PrecisionUnits, propose_mixed
from visiontune.refraction.optics_engine import OpticsEngine, filed_within_probability
from visiontune.refraction.optics_model import LOG_SENSITIVITY, OPTIONAL_COLUMNS
from visiontune.refraction.optics_rules import OpticsQuery
from visiontune.refraction.protocol import Protocol
from visiontune.refraction.slider import SliderAnswer, SliderSettings
from visiontune.refraction.start import StartingPoint

__all__ = ["MixedOpticsEngine", "build_optics_engine", "filed_within_probability", "sensitivity_sd_ratio"]


def _rx_key(lens) -> tuple:
    return (float(lens.sphere_d), float(lens.cylinder_d), float(lens.axis_deg))


class MixedOpticsEngine(OpticsEngine):
    """The optics engine over letters, comparisons and sliders; ``settings`` give the comparisons'
    likelihood (``settings.comparison``), durations and criterion; ``sliders`` (None: none) the
    sliders' model, duration and knobs."""

    def __init__(
        self,
        protocol: Protocol,
        start: StartingPoint,
        seed: int,
        settings: MixedSettings,
        sliders: SliderSettings | None = None,
    ) -> None:
        super().__init__(protocol, start, seed)
        self.settings = settings
        self.sliders = sliders
        self._units = None
        if settings.criterion in ("evr-precision", "evr-stop"):
            self._units = PrecisionUnits.of_stop(self.protocol.stopping.precision, settings)
        self._phases = None
        if settings.criterion == "evr-stop":
            self._phases = (
                dataclasses.replace(settings, criterion="evr"),
                dataclasses.replace(settings, criterion="evr-precision"),
            )

    @staticmethod
    def _trial_key(t) -> tuple:
        if getattr(t, "line_correct", None) is not None:
            return ("line", float(t.s_logmar), _rx_key(t.lens), t.line_correct)
        if getattr(t, "slider_choice", None) is not None:
            return ("slider", float(t.s_logmar), tuple(_rx_key(x) for x in t.slider_lenses), int(t.slider_choice))
        if getattr(t, "comparison", None) is not None:
            return ("comparison", float(t.s_logmar), _rx_key(t.lens), _rx_key(t.lens2), t.comparison)
        return OpticsEngine._trial_key(t)

    def _observe(self, t) -> None:
        """A comparison, a slider or a chart line through its likelihood; a letter as the optics engine does."""
        if getattr(t, "line_correct", None) is not None:
            lines = self.protocol.chart_line
            if lines is None:
                raise InvalidInputError("trial: a chart line in the log, but the protocol has no [chart_line] table")
            correct = tuple(c == "1" for c in t.line_correct)
            lens = tuple(map(float, lens_power_vector(t.lens)))
            self._posterior.observe(
                ChartLineAnswer(
                    float(t.s_logmar), lens, correct, lines.crowding_logmar, lines.line_sd_logmar, lines.line_lapse
                )
            )
            return None
        if getattr(t, "slider_choice", None) is not None:
            if self.sliders is None:
                raise InvalidInputError("trial: a slider answer in the log, but the protocol has no [sliders] table")
            lenses = tuple(tuple(map(float, lens_power_vector(x))) for x in t.slider_lenses)
            self._posterior.observe(SliderAnswer(lenses, float(t.s_logmar), int(t.slider_choice), self.sliders.model))
            return None
        if getattr(t, "comparison", None) is None:
            return super()._observe(t)
        l1, l2 = lens_power_vector(t.lens), lens_power_vector(t.lens2)
        self._posterior.observe(
            ComparisonAnswer(
                float(t.s_logmar), tuple(map(float, l1)), tuple(map(float, l2)), t.comparison, self.settings.comparison
            )
        )

    def propose_mixed(
        self,
        trials,
        rng_letter: np.random.Generator,
        rng_comparison: np.random.Generator,
        rng_slider: np.random.Generator | None = None,
    ) -> MixedChoice:
        """The next question: the protocol's initial random trials are letters (as :meth:`propose`);
        a slider's draws come from ``rng_slider`` (needed when the engine has sliders)."""
        if len(trials) < self.protocol.initial_random_trials:
            s, lens, info = self.propose(trials, rng_letter)
            return MixedChoice("letter", OpticsQuery(s, lens, info))
        post = self.posterior(trials)
        settings, units = self.question_settings(trials)
        if settings.pairs == "one-change" and self._may_accommodate():  # clinical_pairs: plus only
            settings = dataclasses.replace(settings, plus_sphere_only=True)
        in_place = lens_left_in_place(trials[-1]) if trials else None
        return propose_mixed(
            post,
            self.protocol.policy,
            settings,
            steps=self.protocol.lenses,
            s_grid=self.s_grid,
            radius=self.radius(post),
            rng_letter=rng_letter,
            rng_comparison=rng_comparison,
            sliders=self.sliders,
            rng_slider=rng_slider,
            units=units,
            in_place=in_place,
            lines=self.protocol.chart_line,
        )

    def propose_question(self, trials, rng_letter, rng_comparison, rng_slider=None) -> MixedChoice:
        """The engine's next question of any kind: :meth:`propose_mixed`."""
        return self.propose_mixed(trials, rng_letter, rng_comparison, rng_slider)

    def question_settings(self, trials) -> tuple[MixedSettings, PrecisionUnits | None]:
        """The settings and units the next question is valued with after ``trials``: the
        protocol's, except that ``"evr-stop"`` is ``"evr"`` (no units) until
        :meth:`waits_only_for_sensitivity`, then ``"evr-precision"`` in the stop's units
        (:mod:`~visiontune.refraction.mixed_rules`, "Towards the stop that is left")."""
        if self._phases is None:
            return self.settings, self._units
        if self.waits_only_for_sensitivity(trials):
            return self._phases[1], self._units
        return self._phases[0], None

    def waits_only_for_sensitivity(self, trials) -> bool:
        """Whether, after ``trials``, the precision stop's region (read from the draws the
        estimate reads, :meth:`estimate`) is within the protocol's precision, and the lens to file
        within its over-minus risk when the stop waits for that (:meth:`over_minus_risk`), while ``κ``
        is not yet learned (:meth:`precision_met`): the stop waits for ``κ`` alone. A pure function
        of the log, so a session rebuilt from it asks the same questions."""
        limit = self.settings.sensitivity_to_stop
        ratio = sensitivity_sd_ratio(self.posterior(trials))
        if limit is None or ratio is None or ratio <= limit or self.protocol.stopping.precision is None:
            return False
        draws = self.correction_draws(trials)
        limit = self.protocol.stopping.precision.filed_within_probability
        if limit is not None:
            if filed_within_probability(draws, self.filed_lens(draws)) < limit:
                return False
        else:
            region = region_from_samples(
                draws.theta[:, :3],
                draws.weights,
                draws.best_correction(),
                self.level,
                self.protocol.lenses.cylinder_form,
            )
            if not self.region_within_precision(region):
                return False
        if not self.waits_for_over_minus():
            return True
        return self.over_minus_met(self.over_minus_risk(draws, self.filed_lens(draws)))

    def estimate(self, trials, rng_best, rng_region, level: float):
        """As the optics engine; also notes how much is known of ``κ`` for :meth:`precision_met`."""
        est = super().estimate(trials, rng_best, rng_region, level)
        self._sensitivity_sd_ratio = sensitivity_sd_ratio(self.posterior(trials))
        self._filed_probability = filed_within_probability(self.correction_draws(trials), est.rounded)
        return est

    def filed_progress(self) -> float | None:
        """The last :meth:`estimate`'s probability that the lens it files lies within 0.25 D of the
        correction over the stop's ``q`` (at most 1); None without that stop."""
        limit = self.protocol.stopping.precision.filed_within_probability
        probability = getattr(self, "_filed_probability", None)
        if limit is None or probability is None:
            return None
        return float(min(1.0, probability / limit))

    def sensitivity_progress(self, trials) -> float | None:
        """How far ``ln κ`` is from the precision stop's wait for it, in [0, 1] (1 = learned):
        ``sensitivity_to_stop`` over the SD ratio of :func:`sensitivity_sd_ratio`; None when the
        stop does not wait for it, or before the first comparison (no ``ln κ`` column)."""
        limit = self.settings.sensitivity_to_stop
        ratio = sensitivity_sd_ratio(self.posterior(trials))
        if limit is None or ratio is None:
            return None
        return float(min(1.0, limit / max(ratio, 1e-9)))

    def precision_met(self, region: Region) -> bool:
        """The protocol's precision stop on the region of the last :meth:`estimate` and, when
        ``settings.sensitivity_to_stop`` is set and the posterior has a ``ln κ`` column,
        ``sd(ln κ) <= sensitivity_to_stop × σ`` (σ: the prior's)."""
        limit = self.protocol.stopping.precision.filed_within_probability
        if limit is None and not super().precision_met(region):
            return False
        if limit is not None and not self.filed_within_met():
            return False
        ratio, known = self.settings.sensitivity_to_stop, getattr(self, "_sensitivity_sd_ratio", None)
        return ratio is None or known is None or known <= ratio

    def filed_within_met(self) -> bool:
        """The stop on the lens to file (``stopping.precision.filed_within_probability = q``), read
        from the last :meth:`estimate`: the posterior probability that the lens it files lies within
        0.25 D of the correction (:func:`filed_within_probability`) at least ``q``, and, in a session
        that waits for it, that lens's over-minus risk within ``stopping.precision.over_minus_risk``.

        The region's radii ask the whole 95% region to lie within ±0.25 D, a posterior SD of about
        0.13 D on ``M``, far more than filing a lens within 0.25 D asks; a clinician's repeat
        refraction agrees within 0.25 D about 80% of the time (Bullimore, Fusaro & Adams 1998).
        Under the loss ``1[|P(L) - P*| > 0.25]`` the posterior expected loss of filing ``L`` is
        ``1 - P(|P(L) - P*| <= 0.25)`` (Berger 1985, §4.4.2), so this stops once that expected loss
        is at most ``1 - q``, with the lens to file chosen to make it least
        (``model.filed_lens = "most-probable"``)."""
        limit = self.protocol.stopping.precision.filed_within_probability
        probability = getattr(self, "_filed_probability", None)
        if limit is None or probability is None or probability < limit:
            return False
        return self.over_minus_met(self._filed_risk)


def sensitivity_sd_ratio(post) -> float | None:
    """The posterior standard deviation of ``ln κ`` over its prior's (:meth:`OptionalColumn.prior_sd`;
    None without a ``ln κ`` column)."""
    if post.sensitivity_prior is None:
        return None
    w, log_kappa = post.weights, post.theta[:, LOG_SENSITIVITY]
    prior_sd = OPTIONAL_COLUMNS["log_sensitivity"].prior_sd(post.sensitivity_prior)
    return float(np.sqrt(w @ (log_kappa - w @ log_kappa) ** 2)) / prior_sd


def build_optics_engine(protocol: Protocol, start: StartingPoint, seed: int) -> OpticsEngine:
    """The optics model's engine (registered for ``model.type = "optics"`` in
    :mod:`visiontune.refraction.engine_registry`): :class:`OpticsEngine`, or
    :class:`MixedOpticsEngine` when the protocol asks comparisons or sliders (sliders without
    comparisons weigh letters against sliders, comparisons off)."""
    if protocol.comparisons is not None or protocol.sliders is not None:
        settings = protocol.comparisons or MixedSettings(comparisons=False)
        return MixedOpticsEngine(protocol, start, seed, settings, protocol.sliders)
    return OpticsEngine(protocol, start, seed)
