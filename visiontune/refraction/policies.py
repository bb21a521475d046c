"""One vocabulary of refraction policies: what a protocol may ask for, and what runs it.

A protocol names a **model** and a **policy** (decision rule). Every pair listed here runs;
every other pair is refused when the protocol is parsed, before a session exists.

* ``model.type = "optics"`` (:mod:`visiontune.refraction.optics_model`, the clinical default):
  the papers' UCB-ALD and TS-ALD (Fauvel & Chalk (contextual BO) §3.3), BALD over ``(s, x)`` jointly (Houlsby 2011),
  and EVR, the query that most reduces the expected posterior variance of the correction
  (:mod:`visiontune.refraction.optics_rules`).
* ``model.type = "gp"``, the reproduction of the contextual BO paper §5 (probit GP, kernel ``θ s s' + k_SE``,
  Fauvel & Chalk (contextual BO), Eq. 15, at a fixed cylinder axis): the contextual binary policies of the acquisition
  registry, under their protocol names.
* ``model.type = "optics-gp"`` (:mod:`visiontune.reproduction.engines.optics_gp_model`): the
  optics formula as the prior mean of a probit GP; the optics rules, on its probabilities.
"""

from __future__ import annotations

from types import MappingProxyType

__all__ = [
    "GP_KERNELS",
    "GP_POLICIES",
    "MODEL_TYPES",
    "OPTICS_POLICIES",
    "PARTICLE_MODEL_TYPES",
    "policies_for",
    "registry_name",
]

MODEL_TYPES = ("optics", "gp", "optics-gp")
#: Model types whose engine keeps the optics particle posterior (its rules, search space and stops).
PARTICLE_MODEL_TYPES = ("optics", "optics-gp")

#: Protocol name -> what the rule does, for the optics model.
OPTICS_POLICIES = MappingProxyType(
    {
        "ucb-ald": "lens by UCB_Phi of P(correct) at the patient's best acuity (beta = Phi^-1(0.95)); "
        "size by BALD (Fauvel & Chalk (contextual BO), §3.3)",
        "ts-ald": "lens = the best correction of one posterior draw (Thompson sampling); "
        "size by BALD (Fauvel & Chalk (contextual BO), §3.3)",
        "bald": "lens and size jointly by the mutual information of the answer and the model (Houlsby 2011)",
        "evr": "lens and size jointly by the expected posterior variance of the correction after the answer",
    }
)

#: Protocol name -> acquisition registry name, for the GP model (contextual binary BO: Fauvel & Chalk (contextual BO),
#: §3.3).
GP_POLICIES = MappingProxyType(
    {
        "ucb-ald": "UCB-ALD",
        "ts-ald": "TS-ALD",
        "ucb-random-context": "UCB-random-context",
        "ts-random-context": "TS-random-context",
        "bald": "BALD",
        "random-contextual": "random-contextual",
        "cbkg": "cBKG",
    }
)

#: Kernels the GP model runs (Fauvel & Chalk (contextual BO), Eq. 15).
GP_KERNELS = ("refraction-se",)


def policies_for(model_type: str) -> tuple[str, ...]:
    """The policy names a protocol with ``model_type`` may ask for, sorted."""
    return tuple(sorted(OPTICS_POLICIES if model_type in PARTICLE_MODEL_TYPES else GP_POLICIES))


def registry_name(policy: str) -> str:
    """The acquisition registry's name of a GP protocol policy (``"ucb-ald"`` -> ``"UCB-ALD"``)."""
    return GP_POLICIES[policy]
