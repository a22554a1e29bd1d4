"""Evaluation: matches between agents over fixed, seeded deals, with confidence intervals
(``spades-eval``; docs/evaluation.md).

    from evaluation import evaluate, compare, crossplay
    result = evaluate("heuristic", "random", deals=500, duplicate=True, seed=0)
    print(result.format()); result.to_dict()

The modules: :mod:`evaluation.matches` (deals, seeds, players and teams, worker processes, Ray;
:func:`play_matches` plays any set of matches deal by deal), :mod:`evaluation.outcomes` (what a
play yields), :mod:`evaluation.journal` (resuming a killed match), :mod:`evaluation.statistics`
(the intervals), :mod:`evaluation.results` (``evaluate``, ``compare``, ``crossplay`` and their
results), :mod:`evaluation.report` (the printed reports) and :mod:`evaluation.cli`
(``spades-eval``); :mod:`evaluation.model_files` names the model file a spec loads and its digest.
This package imports ``spades_env`` and ``agents``, never the cooperation lab (:mod:`coop`) or
``train``.
"""

from .matches import (MatchConfig, Player, Team, default_reference, default_workers, derive_seed, die_with_parent,
                      make_deal, make_deals, match_config, mp_context, play_matches, resolve_rules)
from .outcomes import HAND_KINDS, EvaluationError, PlayOutcome, TeamTally
from .report import format_comparison, format_crossplay, format_match, plot_crossplay
from .results import (ComparisonResult, CrossplayResult, MatchResult, TeamStats, compare, crossplay, evaluate,
                      paired_difference, strip_timing, summarize)
from .statistics import (Interval, contrast_interval, mean_interval, ratio_interval, t_p_value, t_quantile,
                         wilson_interval)


def main(argv=None) -> int:
    """``spades-eval`` (:mod:`evaluation.cli`)."""
    from .cli import main as run
    return run(argv)


__all__ = ["EvaluationError", "evaluate", "compare", "crossplay", "paired_difference", "summarize", "strip_timing",
           "MatchResult", "CrossplayResult", "ComparisonResult", "TeamStats", "HAND_KINDS",
           "MatchConfig", "Player", "Team", "PlayOutcome", "TeamTally", "match_config", "play_matches",
           "resolve_rules", "default_reference", "derive_seed", "make_deal", "make_deals", "default_workers",
           "mp_context", "die_with_parent", "main",
           "Interval", "mean_interval", "contrast_interval", "ratio_interval", "wilson_interval", "t_quantile",
           "t_p_value", "format_match", "format_crossplay", "format_comparison", "plot_crossplay"]
