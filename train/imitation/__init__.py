"""Imitation: the warm starts before PPO (imitating the heuristic, distilling a teacher's
labels; :mod:`train.imitation.warm_starts`) and the fitting loop they share with expert
iteration and cloning (:mod:`train.imitation.fitting`)."""
