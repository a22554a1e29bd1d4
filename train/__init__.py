"""Training and evaluation scripts (``spades-eval`` lives in :mod:`train.evaluate`)."""
