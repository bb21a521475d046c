"""refraction layer: the refraction problem in one home (protocol, search space in power vectors
around the starting prescription, models, named policies, estimate and credible region,
simulated-patient populations, and the one trial loop that clinic and bench share)."""
