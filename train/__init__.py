"""Training: ``spades-train`` (PPO, expert iteration), ``spades-label``, ``spades-bench``, ``spades-demo``
(evaluation and ``spades-eval`` live in the :mod:`evaluation` package)."""
