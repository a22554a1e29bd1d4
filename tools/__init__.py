"""The tools around the project: ``spades-bench`` (:mod:`tools.bench`, with the players it
times in :mod:`tools.bench_players`) and ``spades-demo`` (:mod:`tools.demo`)."""
