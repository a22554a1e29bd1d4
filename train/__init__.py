"""Training, grouped by idea: :mod:`train.ppo` (``spades-train``: the PPO loop), :mod:`train.labelling`
(``spades-label``, expert iteration, export), :mod:`train.bids` (bid values), :mod:`train.imitation`
(warm starts, fitting), :mod:`train.recipes` (``spades-train --recipe``) and
:mod:`train.experimental` (experiment-only tools). Evaluation is :mod:`evaluation`, the
cooperation lab :mod:`coop`, benchmarks and the demo :mod:`tools`."""
