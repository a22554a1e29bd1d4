"""A behavioural distance between partners: ``spades-coop distance SPEC SPEC ...``.

Cross-play says how well two agents score together; this says how alike they *play*: the share
of decisions at which two agents choose the same action, on one shared set of states (Hanabi's
"action matrix" idea, asked at the same states for every agent rather than along each agent's
own games, so that every pair is compared on equal ground).

**The states.** Hands of spades (0-0, standard rules unless told otherwise), dealt from the seed,
are played by a *driver*; every decision with a choice (two or more legal actions: forced moves
would agree by construction) is kept, bids and card play alike. The default driver is the mix
of the roster itself: on each deal every seat is played by a roster member drawn from the seed,
so the states are those the compared agents reach among themselves (a convention that only
shows in its own kind of game, a neural policy's leads or a cautious bidder's contracts, gets
its states), and no outside agent decides what is asked. ``driver=SPEC`` plays every seat with
one agent instead (e.g. ``heuristic``): states that do not depend on the roster, so distances
from different rosters compare. On one deal in four one seat (in turn) bids nil whatever the
driver would bid, so that a nil bidder's play and its partner's cover are asked about even
with drivers that seldom bid nil.

**The question.** At every kept state every agent is asked for its action from exactly what its
seat observes (its greedy action where the agent has one: ``neural`` is greedy by default),
reset first with a seed derived from the state and the agent's spec (its own ``seed=`` option
included): copies of one spec get the same seed and agree everywhere, different agents draw
independently (two samplers sharing a seed share their samples and agree more than their
policies do: search-8 and search-32 by 5 points). The matrix's diagonal asks each agent again with another seed: 1 for an agent
whose choice depends on the state only, lower for one that samples (``random``'s is its chance
level), a ceiling for the others' agreement with it.

**The numbers.** ``agreement[kind]`` for ``all`` decisions, ``bids``, ``cards`` and two slices
of the card play, ``nil`` (the seat on turn bid nil) and ``partner_nil`` (its partner did): the
share of those states where the two agree, with a 95% percentile bootstrap over deals (a deal's
states move together). ``nearest``: for each held-out zoo partner in the roster, the train-split
zoo partner it agrees with most on all decisions (the issue's goal: at most 80%), recognised by
content (:func:`coop.partners.zoo.partner_of_spec`), not only by name; ``ceiling`` is the lower of
the two agents' agreement with themselves, and a pair whose interval reaches it
(``as_alike_as_themselves``) cannot be told apart by this measure from one agent asked twice,
however low its agreement (two samplers).
"""

from __future__ import annotations

import warnings
from typing import Any, Optional, Sequence

import numpy as np

from spades_env import spades_v0
from spades_env.files import save_figure

from coop.partners import zoo
from coop.common import MAX_DEALS, check_positive
from evaluation.matches import Player, derive_seed, make_deal, one_torch_thread, resolve_rules
from evaluation.outcomes import EvaluationError

KINDS = ("all", "bids", "cards", "nil", "partner_nil")
NIL_ACTION, BLIND_NIL_ACTION = 52, 66
FORCED_NIL_EVERY = 4        # one deal in four: one seat bids nil whatever the driver says
GOAL = 0.80                 # issue 48: a held-out partner agrees with its nearest train partner on at most this
RESAMPLES = 1000
MIX = "mix"


def resolve(entry: str) -> tuple[str, str]:
    """(label, spec) of a roster entry: a zoo partner's name (held-out ones too: this is an
    evaluation) or any agent spec."""
    entry = entry.strip()
    for p in zoo.all_partners():
        if p.name == entry:
            return entry, zoo.partner(entry, purpose="evaluation").spec
    return entry, entry


def zoo_roster(splits: Sequence[str] = ("train", "held-out")) -> list[str]:
    """The names of the zoo's partners in ``splits`` (people's partners included), zoo order."""
    return [p.name for p in zoo.partners(tuple(splits), purpose="evaluation")]


def _build(label: str, spec: Any) -> tuple[Player, Any]:
    player = Player.of(spec)
    if isinstance(spec, str) and spec.strip().split(":", 1)[0] == "human":
        raise EvaluationError(f"agent {label!r}: a person cannot be asked at thousands of states; "
                              "a partner cloned from people's games is the zoo's human-NAME")
    try:
        agent = player.factory()
    except Exception as exc:             # a bad option, a missing model file...
        raise EvaluationError(f"agent {label!r} cannot be built: {exc}") from None
    if not callable(getattr(agent, "act", None)) or not callable(getattr(agent, "reset", None)):
        raise EvaluationError(f"agent {label!r}: expected an object with act(obs, info) and reset(seed)")
    return player, agent


def _zoo_entry(spec: str) -> Optional[dict]:
    found = zoo.partner_of_spec(spec) if isinstance(spec, str) else None
    return None if found is None else {"name": found.name, "split": found.split}


def _ask(agent: Any, label: str, obs: dict, info: dict, seed: Optional[int]) -> int:
    """The agent's action at ``obs`` (reset to ``seed`` first unless None); an agent that fails
    or answers an illegal action is an :class:`EvaluationError` naming it."""
    try:
        if seed is not None:
            agent.reset(seed)
        action = agent.act(obs, info)
        action = int(action)
    except Exception as exc:
        raise EvaluationError(f"agent {label!r} failed when asked for an action: {exc}") from None
    if not 0 <= action < len(obs["action_mask"]) or not obs["action_mask"][action]:
        raise EvaluationError(f"agent {label!r} chose action {action}, which is not legal there")
    return action


def collect(agents: Sequence[Any], labels: Sequence[str], salts: Sequence[str], drivers: Sequence[Any],
            states: int, seed: int, rules, progress: bool = False) -> dict:
    """Play deals with the drivers until ``states`` decision states are kept, asking every agent
    at each (twice: the second answer, under another seed, makes the diagonal). Returns per state
    its deal, kind flags and every agent's two answers."""
    from tqdm import tqdm

    from evaluation.cli_common import progress_disabled
    env = spades_v0.raw_env(rules=rules, episode="hand")
    match_seed = derive_seed("spades-coop", "distance", seed)
    deal_of, flags, answers, again = [], [], [], []
    k = 0
    with tqdm(total=states, desc="spades-coop distance", unit="state", disable=progress_disabled(progress),
              dynamic_ncols=True) as bar, one_torch_thread():
        while len(deal_of) < states:
            if k >= MAX_DEALS:
                raise EvaluationError(f"only {len(deal_of)} decision states in {MAX_DEALS:,} deals")
            deal, dealer = make_deal(match_seed, k, rules)
            env.reset(seed=derive_seed("spades-coop", "distance-env", seed, k),
                      options={"deal": deal} if dealer is None else {"deal": deal, "dealer": dealer})
            pick = np.random.default_rng(derive_seed("spades-coop", "distance-driver", seed, k))
            seated = [drivers[int(pick.integers(len(drivers)))] for _ in range(4)]
            for s, driver in enumerate(seated):
                driver.reset(derive_seed("spades-coop", "distance-seat", seed, k, s))
            nil_seat = (k // FORCED_NIL_EVERY) % 4 if k % FORCED_NIL_EVERY == FORCED_NIL_EVERY - 1 else None
            nil = [False] * 4
            before = len(deal_of)
            for name in env.agent_iter():
                obs, _, term, trunc, info = env.last()
                if term or trunc:
                    env.step(None)
                    continue
                seat = env.agent_name_mapping[name]
                mask = obs["action_mask"]
                bidding = bool(mask[52:].any())
                if np.count_nonzero(mask) > 1 and len(deal_of) < states:
                    n = len(deal_of)
                    deal_of.append(k)
                    flags.append((bidding, not bidding and nil[seat], not bidding and nil[(seat + 2) % 4]))
                    answers.append([_ask(a, label, obs, info, derive_seed("spades-coop", "distance-probe", seed, k, n,
                                                                          salt))
                                    for a, label, salt in zip(agents, labels, salts)])
                    again.append([_ask(a, label, obs, info, derive_seed("spades-coop", "distance-probe-again", seed, k,
                                                                        n, salt))
                                  for a, label, salt in zip(agents, labels, salts)])
                action = _ask(seated[seat], "the driver", obs, info, None)
                if seat == nil_seat and bidding and mask[NIL_ACTION]:
                    action = NIL_ACTION
                if bidding and int(action) in (NIL_ACTION, BLIND_NIL_ACTION):
                    nil[seat] = True
                env.step(action)
            bar.update(len(deal_of) - before)
            k += 1
    flags_arr = np.array(flags, dtype=bool).reshape(-1, 3)
    return {"deal": np.array(deal_of, dtype=np.int64), "deals": k, "bids": flags_arr[:, 0],
            "nil": flags_arr[:, 1], "partner_nil": flags_arr[:, 2],
            "answers": np.array(answers, dtype=np.int64).reshape(len(deal_of), len(agents)),
            "again": np.array(again, dtype=np.int64).reshape(len(deal_of), len(agents))}


def kind_masks(data: dict) -> dict[str, np.ndarray]:
    bids = data["bids"]
    return {"all": np.ones_like(bids), "bids": bids, "cards": ~bids, "nil": data["nil"],
            "partner_nil": data["partner_nil"]}


def agreement_counts(data: dict) -> tuple[np.ndarray, np.ndarray]:
    """(agree[deal, kind, i, j], states[deal, kind]): per deal and kind of state, at how many of
    its states agents i and j chose the same action (the diagonal: an agent and itself asked
    again under another seed), and how many states there were."""
    answers, again = data["answers"], data["again"]
    same = answers[:, :, None] == answers[:, None, :]
    m = answers.shape[1]
    diag = np.arange(m)
    same[:, diag, diag] = answers == again
    deals = data["deals"]
    agree = np.zeros((deals, len(KINDS), m, m))
    count = np.zeros((deals, len(KINDS)))
    for c, (kind, mask) in enumerate(kind_masks(data).items()):
        np.add.at(agree[:, c], data["deal"][mask], same[mask])
        np.add.at(count[:, c], data["deal"][mask], 1.0)
    return agree, count


def bootstrap_agreement(agree: np.ndarray, count: np.ndarray, seed: int, resamples: int = RESAMPLES
                        ) -> tuple[np.ndarray, np.ndarray]:
    """95% percentile bootstrap over deals of every agreement share: each resample draws the
    deals with replacement and divides its agreeing states by its own states. (low, high), each
    (kind, i, j); nan where a kind has no state."""
    deals = len(count)
    draws = np.random.default_rng(seed).integers(0, deals, (resamples, deals))
    weights = np.stack([np.bincount(row, minlength=deals) for row in draws]).astype(float)
    sums = (weights @ agree.reshape(deals, -1)).reshape((resamples,) + agree.shape[1:])
    totals = weights @ count
    with np.errstate(invalid="ignore", divide="ignore"):
        shares = sums / totals[:, :, None, None]
    if np.isnan(shares).all():
        nan = np.full(agree.shape[1:], np.nan)
        return nan, nan.copy()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)          # a kind without states: all-nan slices
        low, high = np.nanpercentile(shares, [2.5, 97.5], axis=0)
    return low, high


def _matrix(values: np.ndarray) -> list[list[Optional[float]]]:
    return [[None if np.isnan(v) else float(v) for v in row] for row in values]


def nearest_partners(labels: Sequence[str], zoo_of: Sequence[Optional[dict]], value: np.ndarray,
                     low: np.ndarray, high: np.ndarray) -> list[dict]:
    """For each held-out zoo partner of the roster, the train-split one it agrees with most."""
    train = [i for i, z in enumerate(zoo_of) if z and z["split"] == "train"]
    out = []
    for i, z in enumerate(zoo_of):
        if not z or z["split"] != "held-out":
            continue
        if not train:
            out.append({"held_out": labels[i], "nearest_train": None, "value": None, "low": None, "high": None,
                        "goal": GOAL, "within_goal": None})
            continue
        j = max(train, key=lambda t: (value[i, t], -t))
        ceiling = float(min(value[i, i], value[j, j]))
        out.append({"held_out": labels[i], "nearest_train": labels[j], "value": float(value[i, j]),
                    "low": float(low[i, j]), "high": float(high[i, j]), "goal": GOAL,
                    "within_goal": bool(value[i, j] <= GOAL), "ceiling": ceiling,
                    "as_alike_as_themselves": bool(high[i, j] >= ceiling)})
    return out


def measure_distance(roster: Sequence[Any], *, states: int = 2000, seed: int = 0, driver: Any = MIX,
                     rules: Any = "standard", progress: bool = False, resamples: int = RESAMPLES) -> dict:
    """Everything ``spades-coop distance`` writes (module docstring): ``roster`` holds zoo
    partner names, specs or factories (at least two); ``driver`` is ``"mix"`` or an agent."""
    if isinstance(roster, str) or len(roster) < 2:
        raise EvaluationError("distance needs a roster of at least two agents")
    check_positive(states, "states")
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise EvaluationError(f"seed={seed!r}: expected an integer")
    rules = resolve_rules(rules)
    if not rules.partnerships:
        raise EvaluationError(f"rules {rules.name!r} have no partnerships: distance asks about partners")
    entries = [resolve(r) if isinstance(r, str) else (Player.of(r).label, r) for r in roster]
    built = [_build(label, spec) for label, spec in entries]
    labels = [label for label, _ in entries]
    players, agents = [b[0] for b in built], [b[1] for b in built]
    if driver == MIX:
        drivers, driver_label = [_build(label, spec)[1] for label, spec in entries], MIX
    else:
        try:
            label, spec = resolve(driver) if isinstance(driver, str) else (Player.of(driver).label, driver)
            drivers, driver_label = [_build(label, spec)[1]], label
        except EvaluationError as exc:
            raise EvaluationError(f"driver {driver!r}: {exc}") from None
    data = collect(agents, labels, [f"{p.label}/{p.salt}" for p in players], drivers, states, seed, rules, progress)
    agree, count = agreement_counts(data)
    totals = count.sum(0)
    with np.errstate(invalid="ignore", divide="ignore"):
        value = agree.sum(0) / totals[:, None, None]
    low, high = bootstrap_agreement(agree, count, derive_seed("spades-coop", "distance-bootstrap", seed), resamples)
    zoo_of = [_zoo_entry(spec) for _, spec in entries]
    return {
        "agents": labels, "specs": [p.label for p in players], "zoo": zoo_of,
        "seed": seed, "rules": rules.name, "driver": driver_label, "states": int(len(data["deal"])),
        "deals": int(data["deals"]), "forced_nil": f"one deal in {FORCED_NIL_EVERY}: one seat (in turn) bids nil",
        "counts": {kind: int(totals[c]) for c, kind in enumerate(KINDS)},
        "agreement": {kind: {"value": _matrix(value[c]), "low": _matrix(low[c]), "high": _matrix(high[c]),
                             "states": int(totals[c])} for c, kind in enumerate(KINDS)},
        "diagonal": "each agent against itself asked again under another seed",
        "interval": f"95% percentile bootstrap over deals ({resamples} resamples)",
        "nearest": nearest_partners(labels, zoo_of, value[0], low[0], high[0]),
    }


def _pct(v: Optional[float]) -> str:
    return "-" if v is None else f"{100 * v:.0f}"


def format_distance(result: dict) -> str:
    labels, counts = result["agents"], result["counts"]
    lines = [f"behavioural distance: {len(labels)} agents, {result['states']} decision states from "
             f"{result['deals']} deals (driver {result['driver']}, seed {result['seed']}, {result['rules']} rules)",
             "states: " + ", ".join(f"{kind} {counts[kind]}" for kind in KINDS),
             "", "agreement on all decisions, % (diagonal: the agent again under another seed)"]
    short = [f"{k + 1}" for k in range(len(labels))]
    width = max(len(label) for label in labels) + 4
    lines.append(" " * width + " ".join(f"{s:>4}" for s in short))
    for k, (label, row) in enumerate(zip(labels, result["agreement"]["all"]["value"])):
        lines.append(f"{k + 1:>2}. {label:<{width - 4}}" + " ".join(f"{_pct(v):>4}" for v in row))
    pairs = [(i, j) for i in range(len(labels)) for j in range(i + 1, len(labels))]
    if len(pairs) <= 12:
        lines += ["", "pairs: all [95% interval] | bids | cards | nil | partner nil"]
        for i, j in pairs:
            a = result["agreement"]
            cells = [f"{_pct(a[kind]['value'][i][j])}" for kind in KINDS[1:]]
            lines.append(f"  {labels[i]} ~ {labels[j]}: {_pct(a['all']['value'][i][j])}% "
                         f"[{_pct(a['all']['low'][i][j])}, {_pct(a['all']['high'][i][j])}] | " + " | ".join(cells))
    if result["nearest"]:
        lines += ["", f"held-out partner -> nearest train partner (goal: at most {100 * GOAL:.0f}% agreement)"]
        for n in result["nearest"]:
            if n["nearest_train"] is None:
                lines.append(f"  {n['held_out']}: no train-split partner in the roster")
                continue
            note = "" if n["within_goal"] else "  above the goal"
            if n["ceiling"] < 1:
                note += (f"  (each agrees with itself on {_pct(n['ceiling'])}% at most"
                         + (": as alike as each with itself)" if n["as_alike_as_themselves"] else ")"))
            lines.append(f"  {n['held_out']:<14} {n['nearest_train']:<14} {_pct(n['value'])}% "
                         f"[{_pct(n['low'])}, {_pct(n['high'])}]" + note)
    return "\n".join(lines)


def plot_distance(result: dict, path) -> Any:
    """The agreement matrix on all decisions as a heat map, held-out partners marked."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    labels = [label + (" *" if z and z["split"] == "held-out" else "")
              for label, z in zip(result["agents"], result["zoo"])]
    values = np.array([[np.nan if v is None else v for v in row] for row in result["agreement"]["all"]["value"]])
    n = len(labels)
    fig, ax = plt.subplots(figsize=(2.5 + 0.55 * n, 2 + 0.5 * n))
    image = ax.imshow(100 * values, vmin=0, vmax=100, cmap="viridis")
    ax.set_xticks(range(n), labels, rotation=60, ha="right")
    ax.set_yticks(range(n), labels)
    for i in range(n):
        for j in range(n):
            if not np.isnan(values[i, j]):
                ax.text(j, i, f"{100 * values[i, j]:.0f}", ha="center", va="center", fontsize=7,
                        color="black" if values[i, j] > 0.6 else "white")
    fig.colorbar(image, ax=ax, label="% of decisions alike")
    ax.set_title(f"agreement on {result['states']} decision states (* held out)")
    fig.tight_layout()
    save_figure(fig, path, "plot", dpi=110)
    plt.close(fig)
    return path


__all__ = ["measure_distance", "format_distance", "plot_distance", "agreement_counts", "bootstrap_agreement",
           "nearest_partners", "zoo_roster", "KINDS", "GOAL"]
