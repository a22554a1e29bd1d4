"""Experiment-only tools (docs do not promise them; the experiments that used them say how):
the probes of a policy (:mod:`train.experimental.probes`) and learning curves
(:mod:`train.experimental.learning_curve`)."""
