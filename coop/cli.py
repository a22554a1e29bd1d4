"""``spades-coop`` and ``spades-league``: the cooperation lab's commands, one module.

    spades-coop zoo [--json FILE]
    spades-coop run SPEC [--suite NAME] [--deals N] [--seed S] [--workers N] [--json FILE] [--plot FILE]
                         [--ray [ADDRESS]] [--journal FILE]
    spades-coop signals SPEC [--rules RULES] [--deals N] [--seed S] [--workers N] [--json FILE]
    spades-coop distance SPEC... [--zoo] [--states N] [--seed S] [--driver SPEC] [--json FILE] [--plot FILE]
    spades-coop study --config FILE [--stage train|evaluate|all] [--jobs N] [--resume] [--report]
    spades-coop bid-values SPEC [--deals N] [--seed S] [--json FILE]
    spades-coop clone RECORDS [--player NAME] [--out MODEL] [--name NAME] [--json FILE]
    spades-league SPEC SPEC ... [--deals N] [--seed S] [--workers N] [--json FILE] [--plot FILE]
                               [--ray [ADDRESS]] [--journal FILE]

``zoo``, ``run``, ``signals`` and ``distance`` are parsed here; ``study``
(:mod:`coop.study.study`), ``bid-values`` (:mod:`train.bids.bid_value_map`) and ``clone``
(:mod:`coop.partners.clone`) train or fit networks and bring their own parsers.

Bad input (an unknown agent, a malformed spec, an unknown suite, a roster of one) is one line on
stderr and exit status 2. docs/cooperation.md walks through them.
"""

from __future__ import annotations

import argparse
import sys
from typing import Callable, Optional

from evaluation.cli_common import OneLineParser, add_progress_flags, check_output_file, fail_line
from coop.common import MAX_DEALS, plot_path, write_json
from evaluation.journal import check_journal_path
from evaluation.matches import MAX_WORKERS
from evaluation.outcomes import EvaluationError


def _add_common(parser: argparse.ArgumentParser, deals: int, ray: bool) -> None:
    parser.add_argument("--deals", type=int, default=None, help=f"duplicate deals (default: {deals}; at most {MAX_DEALS:,})")
    parser.add_argument("--seed", type=int, default=0, help="the seed every deal and agent seed derives from")
    parser.add_argument("--workers", type=int, default=None,
                        help=f"processes (default: the CPUs available; at most {MAX_WORKERS})")
    parser.add_argument("--json", metavar="FILE", help="write the result as JSON")
    add_progress_flags(parser)
    if ray:
        parser.add_argument("--ray", nargs="?", const="local", default=None, metavar="ADDRESS",
                            help="play on a Ray cluster (no address: start one here); the same result")
        parser.add_argument("--journal", metavar="FILE",
                            help="keep every finished deal here; the same command again resumes a killed run")
        parser.add_argument("--plot", metavar="FILE", help="the figure (default: beside --json, .png)")


def _coop_parser() -> argparse.ArgumentParser:
    parser = OneLineParser(prog="spades-coop", description="The cooperation lab: the partner zoo, "
                                     "the ad-hoc teamwork suite, signalling measures and the behavioural distance "
                                     "(docs/cooperation.md).")
    sub = parser.add_subparsers(dest="command", required=True,
                                metavar="{zoo,run,signals,distance,study,bid-values,clone}")
    sub.add_parser("study", help="train seeds of each training method and measure them (--help: its options)")
    sub.add_parser("bid-values", help="which bid pays under a policy's own card play (--help: its options)")
    sub.add_parser("clone", help="fit a partner to people's game records and name it in the zoo (--help: its options)")
    zoo = sub.add_parser("zoo", help="list the partner zoo", description="List the partner zoo: name, spec, "
                         "split (train, validation, held-out), group and hash.")
    zoo.add_argument("--json", metavar="FILE", help="write the list as JSON")
    run = sub.add_parser("run", help="score an agent on the scenario suite",
                         description="Score an agent on a scenario suite: points per hand beside unseen partners, "
                                     "normalised per partner (0 = random in its seat, 1 = the partner's copy).")
    run.add_argument("spec", metavar="SPEC", help="the focal agent (any spades-eval spec)")
    run.add_argument("--suite", default="standard", help="the suite (standard, held-out, quick; default standard)")
    _add_common(run, 100, ray=True)
    signals = sub.add_parser("signals", help="measure an agent's signalling and listening",
                             description="Bid calibration, bid information (bits), listening, nil cover and "
                                         "the partner's reply to a lead, from duplicate deals; under rules with "
                                         "signals also what the messages tell about the hand "
                                         "(message_information_hand, bits) and listening to them.")
    signals.add_argument("spec", metavar="SPEC", help="the agent (any spades-eval spec)")
    signals.add_argument("--opponent", default="heuristic", help="the opponent team (default heuristic)")
    signals.add_argument("--rules", default="standard",
                         help="rule preset or YAML file the deals are played under (default standard; "
                              "short_signals: the short deck with the free signal)")
    _add_common(signals, 100, ray=False)
    distance = sub.add_parser("distance", help="how alike agents play: action agreement on shared states",
                              description="The share of decisions at which two agents choose the same action, on "
                                          "one shared set of states (bids, card play, nil and partner-nil hands), "
                                          "with bootstrap intervals over deals; each held-out zoo partner's "
                                          "nearest train-split partner.")
    distance.add_argument("specs", nargs="*", metavar="SPEC", help="agents: zoo partner names or spades-eval specs")
    distance.add_argument("--zoo", action="store_true",
                          help="add the zoo's train and held-out partners to the roster")
    distance.add_argument("--states", type=int, default=2000, help="decision states to ask about (default 2000; "
                          f"at most {MAX_DEALS:,})")
    distance.add_argument("--seed", type=int, default=0, help="the seed the deals, drivers and answers derive from")
    distance.add_argument("--driver", default="mix", help="who plays the hands the states come from: mix (the "
                          "roster, a member per seat drawn per deal; default) or one agent's spec")
    distance.add_argument("--json", metavar="FILE", help="write the result as JSON")
    distance.add_argument("--plot", metavar="FILE", help="the heat map (default: beside --json, .png)")
    add_progress_flags(distance)
    return parser


def _league_parser() -> argparse.ArgumentParser:
    parser = OneLineParser(prog="spades-league", description="A round robin on duplicate deals, rated "
                                     "by Bradley-Terry (Elo-scaled, bootstrap intervals) and by Nash averaging "
                                     "(docs/cooperation.md).")
    parser.add_argument("specs", nargs="+", metavar="SPEC", help="the roster: two or more spades-eval specs")
    _add_common(parser, 100, ray=True)
    return parser


def check_common(args: argparse.Namespace, least_deals: int = 1) -> None:
    """The counts and the files a command was given, checked before any work starts (a huge
    count overflowed deep in play; a --json that could not be written failed after it)."""
    from coop.common import check_positive
    from evaluation.matches import check_workers
    if getattr(args, "deals", None) is not None:
        check_positive(args.deals, "--deals")
        if args.deals < least_deals:
            raise EvaluationError(f"--deals={args.deals}: expected at least {least_deals} (intervals need them)")
    if getattr(args, "workers", None) is not None:
        check_workers(args.workers)
    if getattr(args, "json", None):
        check_output_file(args.json, "--json")
    if hasattr(args, "plot"):
        figure = plot_path(args.json, args.plot)
        if figure is not None:
            check_output_file(figure, "--plot")
    if getattr(args, "journal", None):
        check_output_file(args.journal, "--journal")      # a read-only folder, even to root
        check_journal_path(args.journal)       # the text: a trailing slash is kept


def _guarded(prog: str, body: Callable[[], int]) -> int:
    try:
        return body()
    except (EvaluationError, ValueError, OSError) as exc:
        return fail_line(prog, exc)
    except KeyboardInterrupt:
        print(f"{prog}: interrupted", file=sys.stderr)
        return 130


def main(argv: Optional[list[str]] = None) -> int:
    """``spades-coop``."""
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv[:1] == ["study"]:          # the commands that train: their own parsers
        from coop.study.study import main as study_main
        return study_main(argv[1:])
    if argv[:1] == ["bid-values"]:
        from train.bids.bid_value_map import main as bid_values_main
        return bid_values_main(argv[1:])
    if argv[:1] == ["clone"]:
        from coop.partners.clone import main as clone_main
        return clone_main(argv[1:])
    args = _coop_parser().parse_args(argv)

    def body() -> int:
        check_common(args, least_deals=2 if args.command == "signals" else 1)
        if args.command == "zoo":
            from coop.partners.zoo import format_zoo, zoo_listing
            print(format_zoo())
            if args.json:
                write_json(args.json, zoo_listing(), "--json")
            return 0
        if args.command == "distance":
            return _distance(args)
        if args.command == "run":
            from coop.measures.scenarios import format_suite_result, plot_suite_result, run_suite
            result = run_suite(args.spec, args.suite, deals=args.deals, seed=args.seed, workers=args.workers,
                               progress=not args.no_progress, ray=args.ray, journal=args.journal)
            print(format_suite_result(result))
            figure = plot_path(args.json, args.plot)
        else:
            from coop.measures.signals import format_signals, measure_signals
            result = measure_signals(args.spec, deals=100 if args.deals is None else args.deals, seed=args.seed,
                                     opponent=args.opponent, rules=args.rules, workers=args.workers,
                                     progress=not args.no_progress)
            print(format_signals(result))
            figure = None
        if args.json:
            write_json(args.json, result, "--json")
        if figure is not None:
            plot_suite_result(result, figure)
            print(f"heat map: {figure}")
        return 0

    return _guarded("spades-coop", body)


def _distance(args: argparse.Namespace) -> int:
    from coop.common import check_positive
    from coop.measures.distance import format_distance, measure_distance, plot_distance, zoo_roster
    check_positive(args.states, "--states")
    roster = list(args.specs) + [name for name in (zoo_roster() if args.zoo else []) if name not in args.specs]
    if len(roster) < 2:
        raise EvaluationError(f"distance needs at least two agents (SPEC... or --zoo); got {roster or 'none'}")
    result = measure_distance(roster, states=args.states, seed=args.seed, driver=args.driver,
                              progress=not args.no_progress)
    print(format_distance(result))
    if args.json:
        write_json(args.json, result, "--json")
    figure = plot_path(args.json, args.plot)
    if figure is not None:
        plot_distance(result, figure)
        print(f"heat map: {figure}")
    return 0


def league_main(argv: Optional[list[str]] = None) -> int:
    """``spades-league``."""
    args = _league_parser().parse_args(argv)

    def body() -> int:
        check_common(args)
        from coop.measures.league import format_league, plot_league, run_league
        result = run_league(args.specs, deals=100 if args.deals is None else args.deals, seed=args.seed,
                            workers=args.workers, progress=not args.no_progress, ray=args.ray, journal=args.journal)
        print(format_league(result))
        if args.json:
            write_json(args.json, result, "--json")
        figure = plot_path(args.json, args.plot)
        if figure is not None:
            plot_league(result, figure)
            print(f"plot: {figure}")
        return 0

    return _guarded("spades-league", body)


if __name__ == "__main__":
    sys.exit(main())
