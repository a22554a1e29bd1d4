"""The cooperation study (``spades-coop study``): :mod:`coop.study.study` trains the runs,
:mod:`coop.study.report` measures and reports them, :mod:`coop.study.errors` holds what both
raise; :mod:`coop.study.scratch_ablation` is an experiment-only tool in the study's format."""
