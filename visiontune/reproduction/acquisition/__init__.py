"""acquisition layer (docs/design.md, "Layers"): what to ask next, given a fitted GP model.

- :mod:`~visiontune.reproduction.acquisition.optimize`: ``maximize(acq, box, rng)`` (Sobol candidates +
  multistart L-BFGS-B, authors' toolbox recipe);
- :mod:`~visiontune.reproduction.acquisition.acquisition_functions`: UCB_Phi, UCB_f, binary EI, BALD, mu_c with
  x-gradients; ``at_context`` / ``over_context`` for contextual inputs ``(s, x)``;
- :mod:`~visiontune.reproduction.acquisition.binary_policies`: ``Problem``, ``Query``, ``Data``, x-rules, context rules,
  ``Sequential``, ``JointBALD``;
- :mod:`~visiontune.reproduction.acquisition.preferential`: MUC, KSS (and MUC-ALD / KSS-ALD on contextual problems);
- :mod:`~visiontune.reproduction.acquisition.solution`: ``solution``, the reported best point of either kind;
- :mod:`~visiontune.reproduction.acquisition.registry`: name -> (factory, scenario, source);
  :mod:`~visiontune.reproduction.acquisition.cli`: ``visiontune policies [--json]``.

Nothing is imported here, so ``visiontune --help`` stays fast.
"""
