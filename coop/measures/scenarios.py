"""Scenarios and the ad-hoc teamwork score: ``spades-coop run SPEC [--suite NAME]``.

A scenario puts the agent under test (the *focal* agent) on one seat of a partnership, next to
partners it has never met, against an opponent panel, under given rules, over duplicate deals
(every deal is played twice with the teams' seats swapped, which takes the luck of the cards out).

Score: the focal team's points per hand minus the opponents', averaged over the scenario's
partners, opponents and focal seats, with a 95% interval over deals. Normalised per partner:

    normalised = (focal - random) / (copy - random)

where ``copy`` is the partner's own copy in the focal seat and ``random`` a random player there,
on the same deals against the same opponents. 0 = helps its partner no more than a random player,
1 = fits in as well as the partner's clone (above 1 is possible). A focal agent whose spec is the
partner's plays the very same matches as the copy, so it scores exactly 1.

The normalised scores carry 95% percentile bootstrap intervals over deals (``normalised_low``,
``normalised_high``: each resample of a scenario's deals recomputes every partner's ratio from
its resampled focal, copy and random means). Weighting: each partner weighs the same in its
scenario's mean (a partner with a small copy - random gap moves it as much as any other), each
scenario the same in the suite's.

Each scenario's result keeps its per-deal scores (``per_deal``: the focal team's points per hand
on each deal, averaged over partners, opponents and seats), so two agents run through the same
suite and seed compare paired by deal (``spades-coop study`` does).

The suite's definition (scenarios, partner specs and their zoo hashes, the seed) is hashed into
``suite_hash``; with the same agent, suite, deals and seed a rerun gives bit-identical JSON.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass
from typing import Any, Optional

import numpy as np

from spades_env.rules import PRESET_NAMES, make_rules

from coop.partners import zoo
from coop.common import PlayerCache, check_positive, deal_scores, fmean, player_key
from evaluation.matches import Team, derive_seed, match_config, play_matches
from evaluation.outcomes import EvaluationError
from evaluation.statistics import mean_interval
from spades_env.files import save_figure

RANDOM = "random"
RESAMPLES = 1000            # bootstrap resamples of the normalised scores' intervals
WEIGHTING = "each partner weighs the same in its scenario's mean of ratios, each scenario the same in the suite's"
FOCAL_SEATS = (0, 2)
HANDS = ("all", "partner_nil")


@dataclass(frozen=True)
class Scenario:
    """Who the focal agent plays with and against, under which rules, on how many deals.

    ``partners`` and ``opponents`` are zoo partner names or agent specs. ``focal_seats``: the
    focal agent's seat in its team (0: it bids and leads first in the team; 2: its partner does).
    ``hands``: ``"all"``, or ``"partner_nil"``: only the points of the plays where the partner bid
    nil count (a play without one counts 0 points, so focal, copy and random stay paired by deal).
    ``deals_factor``: this scenario plays that many times the deals (its own, or ``--deals``),
    for a scenario that scores a few of its plays only, like partner-nil hands.
    """

    name: str
    partners: tuple[str, ...]
    opponents: tuple[str, ...] = ("heuristic",)
    rules: str = "standard"
    focal_seats: tuple[int, ...] = (0,)
    deals: int = 100
    seed: int = 0
    about: str = ""
    hands: str = "all"
    deals_factor: int = 1

    def check(self) -> None:
        where = f"scenario {self.name!r}"
        if not self.partners or not self.opponents:
            raise EvaluationError(f"{where}: needs at least one partner and one opponent")
        if not self.focal_seats or any(s not in FOCAL_SEATS for s in self.focal_seats):
            raise EvaluationError(f"{where}: focal_seats={self.focal_seats!r}: expected seats among 0 and 2")
        if not make_rules(self.rules).partnerships:
            raise EvaluationError(f"{where}: rules {self.rules!r} have no partnerships")
        check_positive(self.deals, f"{where}: deals")
        check_positive(self.deals_factor, f"{where}: deals_factor")
        if self.hands not in HANDS:
            raise EvaluationError(f"{where}: hands={self.hands!r}: expected one of {', '.join(HANDS)}")


@dataclass(frozen=True)
class Suite:
    name: str
    scenarios: tuple[Scenario, ...]
    about: str = ""


def resolve_spec(entry: str) -> str:
    """A zoo partner's spec by name (held-out ones included: this is evaluation), else the entry."""
    for p in zoo.all_partners():
        if p.name == entry:
            return zoo.partner(entry, purpose="evaluation").spec
    return entry


def _partnership_presets() -> list[str]:
    return [name for name in PRESET_NAMES if make_rules(name).partnerships and make_rules(name).players == 4]


def standard_suite() -> Suite:
    """Held-out partners (both focal seats), each convention group, partner-nil hands and every
    rules preset with partnerships."""
    held_out = tuple(p.name for p in zoo.partners("held-out", purpose="evaluation"))
    scenarios = [Scenario("held-out", held_out, focal_seats=(0, 2),
                          about="the zoo's held-out partners, the focal agent on either seat")]
    for group in zoo.groups():
        members = tuple(p.name for p in zoo.all_partners() if p.group == group)
        scenarios.append(Scenario(f"group:{group}", members, about=f"every partner of the {group} group"))
    scenarios.append(Scenario("partner-nil", ("eager-nil", "bold"), hands="partner_nil", deals_factor=5,
                              about="the hands where a partner that bids nil often bid nil: covering it"))
    for preset in _partnership_presets():
        scenarios.append(Scenario(f"rules:{preset}", ("heuristic",), rules=preset,
                                  about=f"the heuristic partner under the {preset} rules"))
    return Suite("standard", tuple(scenarios), "the ad-hoc teamwork suite (docs/cooperation.md)")


def quick_suite() -> Suite:
    """Two small scenarios with default-option partners (a smoke test of the machinery)."""
    return Suite("quick", (Scenario("heuristic", ("heuristic",), deals=20),
                           Scenario("search", ("search-8",), focal_seats=(0, 2), deals=10)),
                 "a smoke test: two partners, few deals")


def held_out_suite() -> Suite:
    """The standard suite's held-out scenario alone: the zoo's held-out partners, the focal agent
    on either seat (what the cooperation study scores, and the test of a shipped partner)."""
    scenario = next(s for s in standard_suite().scenarios if s.name == "held-out")
    return Suite("held-out", (scenario,), "the held-out scenario of the standard suite")


SUITES = {"standard": standard_suite, "quick": quick_suite, "held-out": held_out_suite}


def get_suite(name: Any) -> Suite:
    if isinstance(name, Suite):
        return name
    if name not in SUITES:
        raise EvaluationError(f"unknown suite {name!r}; suites: {', '.join(SUITES)}")
    return SUITES[name]()


def suite_definition(suite: Suite, deals: Optional[int], seed: int) -> dict:
    """Everything that decides a suite's matches except the focal agent (what ``suite_hash`` hashes)."""
    scenarios = []
    for s in suite.scenarios:
        item = asdict(s)
        item["deals"] = (deals if deals is not None else s.deals) * s.deals_factor
        item["partner_specs"] = [resolve_spec(p) for p in s.partners]
        item["partner_hashes"] = [zoo.partner_hash(spec) for spec in item["partner_specs"]]
        item["opponent_hashes"] = [zoo.partner_hash(resolve_spec(o)) for o in s.opponents]
        item.pop("about")
        scenarios.append(item)
    return {"suite": suite.name, "seed": seed, "zoo_version": zoo.ZOO_VERSION, "scenarios": scenarios}


def suite_hash(definition: dict) -> str:
    return hashlib.sha256(json.dumps(definition, sort_keys=True).encode()).hexdigest()


@dataclass
class _Cell:
    """One match to play: a team (seat 0/1 player, seat 2/3 player) against an opponent team."""

    team: tuple
    opponent: Any
    rules: str
    deals: int
    seed: int
    index: int = -1
    keep_records: bool = False


def _partner_nil_scores(outcomes, partner_role: int) -> tuple[list[float], int]:
    """Per deal, the points per hand (focal team minus opponents) of the plays where the team's
    member on ``partner_role`` (0: its lower seat, 1: its upper seat) bid nil, 0 for the other
    plays; and the number of plays where it did."""
    scores, nil_plays = [], 0
    for plays in outcomes:
        points = hands = 0
        for o in plays:
            partner = ((0, 2) if o.play == 0 else (1, 3))[partner_role]
            hands += o.hands
            if any(hand["bids"][partner] == 0 for hand in o.record["hands"]):
                points += o.diff
                nil_plays += 1
        scores.append(points / hands)
    return scores, nil_plays


def run_suite(agent: Any, suite: Any = "standard", *, deals: Optional[int] = None, seed: int = 0,
              workers: Optional[int] = None, progress: bool = False, ray: Optional[str] = None,
              journal: Optional[str] = None) -> dict:
    """Run ``agent`` (a spec or a factory) through a suite; returns what ``--json`` writes."""
    suite = get_suite(suite)
    if deals is not None:
        check_positive(deals, "deals")
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise EvaluationError(f"seed={seed!r}: expected an integer")
    for scenario in suite.scenarios:
        scenario.check()
    cache = PlayerCache()
    focal = cache.get(agent)
    random_player = cache.get(RANDOM)
    cells: dict[tuple, _Cell] = {}

    def cell(first, second, opponent, scenario: Scenario) -> tuple:
        n = (deals if deals is not None else scenario.deals) * scenario.deals_factor
        s = derive_seed("spades-coop", seed, scenario.seed)
        key = (player_key(first), player_key(second), player_key(opponent), scenario.rules, n, s)
        if key not in cells:
            cells[key] = _Cell((first, second), opponent, scenario.rules, n, s)
        cells[key].keep_records |= scenario.hands == "partner_nil"
        return key

    plan = []   # per scenario, per partner: lists of (focal key, copy key, random key, partner's role)
    for scenario in suite.scenarios:
        per_partner = []
        for entry in scenario.partners:
            partner = cache.get(resolve_spec(entry))
            triples = []
            for opp_entry in scenario.opponents:
                opponent = cache.get(resolve_spec(opp_entry))
                for seat in scenario.focal_seats:
                    def team(x):
                        return (x, partner) if seat == 0 else (partner, x)
                    triples.append((cell(*team(focal), opponent, scenario), cell(partner, partner, opponent, scenario),
                                    cell(*team(random_player), opponent, scenario), 1 if seat == 0 else 0))
            per_partner.append((entry, triples))
        plan.append((scenario, per_partner))

    keys = list(cells)
    configs = []
    for i, key in enumerate(keys):
        c = cells[key]
        c.index = i
        configs.append(match_config(Team(*c.team), Team(c.opponent, c.opponent), deals=c.deals, duplicate=True,
                                    rules=c.rules, seed=c.seed, keep_records=c.keep_records))
    outcomes = play_matches(configs, workers, progress, desc=f"spades-coop {suite.name}", ray=ray, journal=journal)
    all_hands = {key: deal_scores(outcomes[cells[key].index]) for key in keys}
    nil_plays: dict[tuple, int] = {}

    def scores(key: tuple, role: int, hands: str) -> list[float]:
        if hands == "all":
            return all_hands[key]
        per_deal, nil_plays[key, role] = _partner_nil_scores(outcomes[cells[key].index], role)
        return per_deal

    definition = suite_definition(suite, deals, seed)
    rng = np.random.default_rng(derive_seed("spades-coop", "normalised", seed))
    results, resampled = [], []
    for scenario, per_partner in plan:
        partner_rows, normalised_values, focal_scores, by_deal = [], [], [], []
        for entry, triples in per_partner:
            by_deal.append([np.mean([scores(t[k], t[3], scenario.hands) for t in triples], axis=0) for k in range(3)])
            f, c, r = (fmean([fmean(scores(t[k], t[3], scenario.hands)) for t in triples]) for k in range(3))
            normalised = (f - r) / (c - r) if c != r else None
            if normalised is not None:
                normalised_values.append(normalised)
            focal_scores += [scores(t[0], t[3], scenario.hands) for t in triples]
            row = {"partner": entry, "spec": resolve_spec(entry), "score": f, "copy": c, "random": r,
                   "normalised": normalised}
            if scenario.hands == "partner_nil":     # how many of the focal team's plays had a partner nil
                row["partner_nil_plays"] = sum(nil_plays[t[0], t[3]] for t in triples)
            partner_rows.append(row)
        per_deal = [fmean([column[d] for column in focal_scores]) for d in range(len(focal_scores[0]))]
        interval = mean_interval(per_deal)
        boots = normalised_bootstrap(by_deal, rng.integers(0, len(per_deal), (RESAMPLES, len(per_deal))))
        resampled.append(boots)
        results.append({"name": scenario.name, "score": interval.mean, "low": interval.low, "high": interval.high,
                        "normalised": fmean(normalised_values) if normalised_values else None,
                        **_percentiles(boots, "normalised_"),
                        "rules": scenario.rules, "focal_seats": list(scenario.focal_seats),
                        "opponents": list(scenario.opponents), "deals": len(per_deal), "hands": scenario.hands,
                        "about": scenario.about,
                        "partners": partner_rows, "per_deal": per_deal})
    overall = [s["normalised"] for s in results if s["normalised"] is not None]
    overall_boots = _nanmean(np.stack(resampled)) if resampled else np.array([])
    return {"suite": suite.name, "suite_hash": suite_hash(definition), "agent": focal.label, "seed": seed,
            "zoo_version": zoo.ZOO_VERSION, "unit": "points per hand, focal team minus opponents, duplicate deals",
            "scenarios": results, "normalised": fmean(overall) if overall else None,
            **_percentiles(overall_boots, "normalised_"),
            "normalised_interval": f"95% percentile bootstrap over deals ({RESAMPLES} resamples)",
            "normalised_weighting": WEIGHTING}


def _nanmean(values: np.ndarray) -> np.ndarray:
    """Mean over the first axis of the finite entries (NaN where there is none)."""
    finite = np.isfinite(values)
    counts = finite.sum(0)
    return np.where(counts > 0, np.where(finite, values, 0.0).sum(0) / np.maximum(counts, 1), np.nan)


def normalised_bootstrap(by_deal: list, draws: np.ndarray) -> np.ndarray:
    """A scenario's normalised score on each resample of its deals: ``by_deal`` holds per partner
    the (focal, copy, random) points per deal, ``draws`` (resamples, deals) the deal indices (the
    same for every partner: they played the same deals). Each partner's ratio is recomputed from
    its resampled means and the ratios averaged over partners, as the point estimate is; a
    partner whose copy and random tie on a resample sits that resample out (NaN when all do)."""
    ratios = []
    for focal, copy, random in by_deal:
        f, c, r = focal[draws].mean(1), copy[draws].mean(1), random[draws].mean(1)
        with np.errstate(all="ignore"):
            ratios.append(np.where(c != r, (f - r) / (c - r), np.nan))
    return _nanmean(np.stack(ratios))


def _percentiles(boots: np.ndarray, prefix: str) -> dict:
    """``{prefix}low``, ``{prefix}high``: the 2.5% and 97.5% percentiles of the finite resamples."""
    finite = boots[np.isfinite(boots)] if len(boots) else boots
    if len(finite) == 0:
        return {f"{prefix}low": None, f"{prefix}high": None}
    low, high = np.percentile(finite, [2.5, 97.5])
    return {f"{prefix}low": float(low), f"{prefix}high": float(high)}


def format_suite_result(result: dict) -> str:
    def num(x, fmt="{:+.1f}"):
        return "-" if x is None else fmt.format(x)
    def span(d):
        return "-" if d.get("normalised_low") is None else \
            f"[{d['normalised_low']:.2f}, {d['normalised_high']:.2f}]"
    rows = [("scenario", "score", "95% interval", "normalised", "95% interval")]
    for s in result["scenarios"]:
        rows.append((s["name"], num(s["score"]), f"[{num(s['low'])}, {num(s['high'])}]",
                     num(s["normalised"], "{:.2f}"), span(s)))
    widths = [max(len(r[k]) for r in rows) for k in range(5)]
    lines = [f"{result['agent']} on suite {result['suite']} ({result['suite_hash'][:12]}): points per hand "
             "vs the opponents; normalised 0 = random, 1 = the partner's copy"]
    lines += ["  ".join(c.rjust(w) if k else c.ljust(w) for k, (c, w) in enumerate(zip(r, widths))) for r in rows]
    lines.append(f"overall normalised: {num(result['normalised'], '{:.2f}')} {span(result)} "
                 f"({result.get('normalised_weighting', WEIGHTING)})")
    return "\n".join(lines)


def plot_suite_result(result: dict, path) -> Any:
    """A heat map: scenarios (rows) by partners (columns), the normalised score in each cell."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    partners = list(dict.fromkeys(p["partner"] for s in result["scenarios"] for p in s["partners"]))
    grid = np.full((len(result["scenarios"]), len(partners)), np.nan)
    for i, s in enumerate(result["scenarios"]):
        for p in s["partners"]:
            if p["normalised"] is not None:
                grid[i, partners.index(p["partner"])] = p["normalised"]
    fig, ax = plt.subplots(figsize=(1.0 + 0.8 * len(partners), 1.2 + 0.45 * len(grid)))
    image = ax.imshow(grid, cmap="RdYlGn", vmin=0.0, vmax=1.2, aspect="auto")
    ax.set_xticks(range(len(partners)), partners, rotation=45, ha="right")
    ax.set_yticks(range(len(grid)), [s["name"] for s in result["scenarios"]])
    for i in range(grid.shape[0]):
        for j in range(grid.shape[1]):
            if not np.isnan(grid[i, j]):
                ax.text(j, i, f"{grid[i, j]:.2f}", ha="center", va="center", fontsize=7)
    fig.colorbar(image, ax=ax, label="normalised (0 random, 1 partner's copy)")
    ax.set_title(f"{result['agent']}: ad-hoc teamwork, suite {result['suite']}")
    fig.tight_layout()
    save_figure(fig, path, "plot", dpi=110)
    plt.close(fig)
    return path


__all__ = ["Scenario", "Suite", "SUITES", "standard_suite", "quick_suite", "held_out_suite", "get_suite", "run_suite",
           "suite_definition", "suite_hash", "format_suite_result", "plot_suite_result", "resolve_spec"]
