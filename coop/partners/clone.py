"""``spades-coop clone``: a partner cloned from people's games (behaviour cloning).

    spades-coop clone records/ --out runs/clones/people.pt              # every person's seat
    spades-coop clone records/ kept.jsonl --player person:ana --name ana  # one player, registered

The records are game records (``env.game_record()``; the web table's carry ``players``, the
person's seat marked ``person``, or ``person:NAME`` where a name was given): a folder's ``*.json``
(one record, or a list as ``spades-eval --records`` writes) and ``*.jsonl`` files (one record a
line, as the web table's export writes), or such files named directly. The same game found twice
(a kept file and an export) counts once.

Every decision of the chosen seats (``--player NAME``: the seats whose ``players`` entry is NAME or
``person:NAME``; by default every person's seat) is replayed into the seat's observation and
legal-action mask, and a :class:`agents.networks.PolicyNet` (by default the shipped ``neural``
policy, fine-tuned; ``--init scratch`` for fresh weights) is fitted to the actions taken by
cross-entropy (:func:`train.imitation.fitting.fit_keep_best`).

Split by game, per player: each player's games are ordered by a hash of their content and a fifth
of them (at least one) is held out; of the rest, a sixth (where three or more are left) chooses
the epoch to keep. A held-out game is never trained on. ``--held-out-players A,B`` holds out
whole players as well (none of their decisions is trained on). The report gives the accuracy
(the share of decisions where the policy's favourite action is the one taken) on the held-out
games, for bids and cards apart and per player, beside what the starting policy and the
heuristic would have chosen there.

The model is written with :func:`agents.neural.save_model` (``neural:checkpoint=MODEL`` loads
it); ``--name NAME`` also writes ``agents/models/human_NAME.pt``, which makes it the zoo partner
``human-NAME`` (``neural:model=human_NAME``) of the held-out split (:func:`coop.partners.zoo.people_partners`).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Optional

import numpy as np
import torch
import torch.nn.functional as F

from spades_env.files import FileRuleError, check_input, json_shape, read_bytes, write_bytes

MAX_RECORD_FILE = 64_000_000        # bytes of one records file read
MAX_RECORDS_BYTES = 64_000_000      # bytes of all the records files of one clone (three 60 MB files: MemoryError)
MAX_RECORD_CONTAINERS = 4_000_000   # JSON arrays and objects in them (a game to 500: about 900)
MAX_RECORD_DEPTH = 32               # their nesting (a record nests 5 levels)
TEST_SHARE = 5                      # one game in five of each player is held out
VALIDATION_SHARE = 6                # one in six of the rest chooses the epoch


class CloneError(ValueError):
    """Records or options a clone cannot be fitted from (says why, in one line)."""


@dataclass
class Game:
    """One record: its key (a hash of its content), the seats to learn from and who sat there."""

    key: str
    record: dict
    seats: dict[int, str]            # seat -> player name
    source: str
    split: str = "train"


@dataclass(eq=False)
class Decisions:
    """The decisions of one split, as tensors (observations, masks, actions) and labels."""

    obs: list = field(default_factory=list)
    mask: list = field(default_factory=list)
    action: list = field(default_factory=list)
    player: list = field(default_factory=list)
    heuristic: list = field(default_factory=list)      # the heuristic's choice (held-out decisions only)

    def __len__(self) -> int:
        return len(self.action)

    def tensors(self) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        return (torch.from_numpy(np.stack(self.obs)).float(), torch.from_numpy(np.stack(self.mask)).bool(),
                torch.tensor(self.action, dtype=torch.long))


# ----------------------------------------------------------------------------------- records
def _records_of_file(path: Path, budget: list[int]) -> Iterable[tuple[str, Any]]:
    """The records of one file, read by the input rule (a regular file, never a device or FIFO)
    and measured before they are parsed: nesting within MAX_RECORD_DEPTH (no RecursionError) and
    arrays and objects within what is left of ``budget`` (no MemoryError)."""
    try:
        raw = read_bytes(path, "records file", MAX_RECORD_FILE)
    except FileRuleError as exc:
        raise CloneError(str(exc)) from None
    depth, containers = json_shape(raw)
    if depth > MAX_RECORD_DEPTH:
        raise CloneError(f"{path}: JSON nested {depth:,} levels deep; a game record nests at most {MAX_RECORD_DEPTH}")
    budget[0] -= containers
    if budget[0] < 0:
        raise CloneError(f"{path}: the records hold more than {MAX_RECORD_CONTAINERS:,} JSON arrays and objects in "
                         "all (a game to 500 about 900): clone from fewer records at a time")
    text = raw.decode("utf-8", errors="replace")
    if path.suffix == ".jsonl":
        for number, line in enumerate(text.splitlines(), start=1):
            if line.strip():
                try:
                    yield f"{path.name}:{number}", json.loads(line)
                except (ValueError, RecursionError) as exc:
                    raise CloneError(f"{path}: line {number} is not JSON ({str(exc)[:120]})") from None
        return
    try:
        data = json.loads(text)
    except (ValueError, RecursionError) as exc:
        raise CloneError(f"{path}: not JSON ({str(exc)[:120]})") from None
    if isinstance(data, list):
        for index, record in enumerate(data):
            yield f"{path.name}[{index}]", record
    else:
        yield path.name, data


def read_records(paths: Iterable[str | Path]) -> list[tuple[str, dict]]:
    """(where, record) for every record of ``paths`` (folders: their ``*.json`` and ``*.jsonl``),
    at most MAX_RECORDS_BYTES of files in all, checked before any is read."""
    chosen = []
    for given in paths:
        path = Path(given)
        if path.is_dir():
            files = sorted(p for p in path.iterdir() if p.suffix in (".json", ".jsonl") and p.is_file()
                           and not p.name.startswith("."))
        elif path.exists():
            files = [path]                 # a device, a FIFO: refused by name when read
        else:
            raise CloneError(f"{given}: no such file or folder (expected a folder of game records or a "
                             ".json/.jsonl file)")
        chosen += files
    try:
        total = sum(check_input(file, "records file", MAX_RECORD_FILE).stat().st_size for file in chosen)
    except FileRuleError as exc:
        raise CloneError(str(exc)) from None
    except OSError as exc:
        raise CloneError(f"records: cannot be read ({exc.strerror or exc})") from None
    if total > MAX_RECORDS_BYTES:
        raise CloneError(f"the records files hold {total:,} bytes in all; expected at most {MAX_RECORDS_BYTES:,} "
                         "(clone from fewer records at a time)")
    found, budget = [], [MAX_RECORD_CONTAINERS]
    for file in chosen:
        found += [(where, record) for where, record in _records_of_file(file, budget) if isinstance(record, dict)]
    return found


def check_record_shape(where: str, record: dict) -> None:
    """The parts of a record the clone reads before replaying it, of the right types: ``hands`` a
    list of hands (mappings), ``players`` a list of names (``"hands": 5`` was a TypeError)."""
    hands = record.get("hands")
    if not isinstance(hands, list) or not all(isinstance(hand, dict) for hand in hands):
        shown = type(hands).__name__ if not isinstance(hands, list) else "a list holding something else"
        raise CloneError(f"{where}: 'hands' is {shown}: expected a list of hands (a game record)")
    players = record.get("players")
    if players is not None and (not isinstance(players, list) or not all(isinstance(p, str) for p in players)):
        raise CloneError(f"{where}: 'players' is {type(players).__name__}: expected a list of player names")


def is_person(entry: Any) -> bool:
    return isinstance(entry, str) and (entry == "person" or entry.startswith("person:"))


def chosen_seats(record: dict, player: Optional[str]) -> dict[int, str]:
    """The seats to learn from in a record, with their player's name: ``player`` (its exact
    entry in ``players``, or ``person:<player>``), else every person's seat."""
    players = record.get("players")
    if not isinstance(players, list):
        return {}
    if player is None:
        return {s: p for s, p in enumerate(players) if is_person(p)}
    return {s: p for s, p in enumerate(players) if p in (player, f"person:{player}")}


def players_named(names: Iterable[str]) -> set[str]:
    """The ``players`` entries that names stand for: ``ana`` is ``ana`` and ``person:ana``."""
    return {entry for name in names for entry in (name, f"person:{name}")}


def game_key(record: dict) -> str:
    """A hash of what was played (rules, start, deals and actions): the same game in two files
    is one game, and the split does not depend on file names."""
    hands = [{"deal": h.get("deal"), "actions": h.get("actions")} for h in record.get("hands", []) if isinstance(h, dict)]
    text = json.dumps({"rules": record.get("rules"), "start": record.get("start"), "hands": hands}, sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()


def collect_games(paths: Iterable[str | Path], player: Optional[str]) -> tuple[list[Game], dict]:
    """The games with at least one chosen seat, each once; and counts of what was left out."""
    games: dict[str, Game] = {}
    skipped = {"records": 0, "without_the_player": 0, "duplicates": 0}
    for where, record in read_records(paths):
        skipped["records"] += 1
        check_record_shape(where, record)
        seats = chosen_seats(record, player)
        if not seats:
            skipped["without_the_player"] += 1
            continue
        key = game_key(record)
        if key in games:
            skipped["duplicates"] += 1
            if len(json.dumps(record)) > len(json.dumps(games[key].record)):   # keep the longer (later) copy
                games[key] = Game(key, record, seats, where)
            continue
        games[key] = Game(key, record, seats, where)
    skipped["records"] -= len(games) + skipped["without_the_player"] + skipped["duplicates"]
    return list(games.values()), skipped


def split_games(games: list[Game], held_out_players: Iterable[str] = ()) -> None:
    """Each game's split (``train``, ``validation``, ``test``), by game and per player (see the
    module's docstring); the games of whole players in ``held_out_players`` only: ``unseen``."""
    unseen = players_named(held_out_players)
    by_player: dict[str, list[Game]] = {}
    for game in games:
        first = sorted(p for p in game.seats.values() if p not in unseen)
        if not first:                      # only held-out players learnt from here: tested apart
            game.split = "unseen"
            continue
        by_player.setdefault(first[0], []).append(game)
    for player in sorted(by_player):
        own = sorted(by_player[player], key=lambda g: hashlib.sha256(("split:" + g.key).encode()).hexdigest())
        tests = max(1, round(len(own) / TEST_SHARE)) if len(own) >= 2 else 0
        rest = len(own) - tests
        validations = max(1, round(rest / VALIDATION_SHARE)) if rest >= 3 else 0
        for i, game in enumerate(own):
            game.split = "test" if i < tests else ("validation" if i < tests + validations else "train")


# ----------------------------------------------------------------------------------- decisions
def replay_decisions(games: list[Game], held_out_players: Iterable[str] = (), heuristic: bool = True
                     ) -> tuple[dict[str, Decisions], Any]:
    """Replay every game, keeping each chosen seat's observation, mask and action in its game's
    split (decisions of a held-out player in the ``unseen`` part); the heuristic's choice too at
    the test decisions. Returns the parts and the rules of the records (one set of rules)."""
    import agents
    from spades_env.record import ReplayError, iter_replay, record_rules

    unseen = players_named(held_out_players)
    parts = {name: Decisions() for name in ("train", "validation", "test", "unseen")}
    rules, rules_entry = None, None
    for game in games:
        try:
            these = record_rules(game.record.get("rules"))
        except ReplayError as exc:
            raise CloneError(f"{game.source}: {exc}") from None
        if rules is None:
            rules, rules_entry = these, game.record.get("rules")
        elif these != rules:
            raise CloneError(f"{game.source}: played under other rules ({these.name}) than the first record "
                             f"({rules.name}): clone from one set of rules at a time")
        helper = agents.make("heuristic", seed=0) if heuristic else None
        try:
            for env, seat, action in iter_replay(game.record):
                if seat not in game.seats:
                    continue
                player = game.seats[seat]
                part = parts["unseen" if player in unseen else game.split]
                agent = env.possible_agents[seat]
                obs = env.observe(agent)
                part.obs.append(np.asarray(obs["observation"], dtype=np.float32))
                part.mask.append(np.asarray(obs["action_mask"], dtype=bool))
                part.action.append(int(action))
                part.player.append(player)
                if helper is not None and (part is parts["test"] or part is parts["unseen"]):
                    part.heuristic.append(int(helper.act(obs, env.infos[agent])))
        except ReplayError as exc:
            raise CloneError(f"{game.source}: not a replayable game record: {exc}") from None
    return parts, rules_entry


# ----------------------------------------------------------------------------------- fitting
def starting_policy(init: str, obs_size: int):
    """The policy to fit: ``scratch`` (fresh weights, the shipped policy's shape) or a neural
    spec's model (``neural``, ``neural:model=NAME``, ``neural:checkpoint=FILE``); a held-out
    zoo partner is refused (what is fitted from it would carry it into training)."""
    from agents.neural import policy_from_checkpoint, read_checkpoint
    from agents.networks import PolicyNet
    from coop.partners import zoo

    if init == "scratch":
        return PolicyNet(obs_size, card_features=True)
    try:
        path = zoo.model_file(init)
    except ValueError as exc:
        raise CloneError(f"--init {init}: {exc}") from None
    if path is None:
        raise CloneError(f"--init {init}: expected 'scratch' or a neural policy's spec (neural, "
                         "neural:model=NAME, neural:checkpoint=FILE)")
    zoo.refuse_for_training(f"--init {init}", path=path, splits=("held-out", "validation"))
    policy, _ = policy_from_checkpoint(read_checkpoint(path), str(path))
    if policy.arch["obs_size"] != obs_size:
        raise CloneError(f"--init {init}: its observations have {policy.arch['obs_size']} numbers, these "
                         f"records' rules {obs_size}: use --init scratch")
    return policy.train()


def accuracy(policy, obs: torch.Tensor, mask: torch.Tensor, action: torch.Tensor) -> tuple[float, torch.Tensor]:
    """(mean cross-entropy, the hits: favourite action == action taken) over the rows, 4,096 at a time."""
    with torch.no_grad():
        losses, hits = [], []
        for rows in torch.arange(action.numel()).split(4096):
            logits = policy(obs[rows], mask[rows])
            losses.append(F.cross_entropy(logits, action[rows], reduction="none"))
            hits.append(logits.argmax(1) == action[rows])
    if not hits:
        return float("nan"), torch.zeros(0, dtype=torch.bool)
    return float(torch.cat(losses).mean()), torch.cat(hits)


def _shares(hits: torch.Tensor, actions: torch.Tensor, players: list[str]) -> dict:
    """Accuracy overall, for bids and for cards, and per player (with counts)."""
    def share(rows: torch.Tensor) -> Optional[float]:
        return round(float(hits[rows].float().mean()), 4) if bool(rows.any()) else None
    every = torch.ones_like(hits)
    cards = actions < 52
    names = np.array(players)
    per_player = {}
    for name in sorted(set(players)):
        rows = torch.from_numpy(names == name)
        per_player[name] = {"decisions": int(rows.sum()), "accuracy": share(rows),
                            "bids": share(rows & ~cards), "cards": share(rows & cards)}
    return {"decisions": int(hits.numel()), "accuracy": share(every), "bids": share(~cards), "cards": share(cards),
            "players": per_player}


def clone(paths: Iterable[str | Path], player: Optional[str] = None, init: str = "neural", epochs: int = 20,
          learning_rate: float = 1e-3, minibatch_size: int = 256, seed: int = 0,
          held_out_players: Iterable[str] = (), threads: int = 0,
          log: Callable[[str], None] = print) -> tuple[Any, dict, Any]:
    """Fit a policy to the decisions of ``player`` (every person's seat if None) in the records
    of ``paths``, on ``threads`` torch threads (0: the free cores, :mod:`train.ppo.threads`).
    Returns (the policy, the report, the records' rules)."""
    from train.ppo.threads import set_training_threads

    before = torch.get_num_threads()
    set_training_threads(threads, log=lambda line: None)
    try:
        return _clone(paths, player, init, epochs, learning_rate, minibatch_size, seed, tuple(held_out_players), log)
    finally:
        torch.set_num_threads(before)


def _clone(paths, player, init, epochs, learning_rate, minibatch_size, seed, held_out_players, log):
    from train.imitation.fitting import fit_keep_best

    began = time.perf_counter()
    games, skipped = collect_games(paths, player)
    who = f"player {player!r}" if player else "a person's seat (players: person...)"
    if len(games) < 2:
        raise CloneError(f"{len(games)} game(s) with {who} in the records given ({skipped['records']} other, "
                         f"{skipped['without_the_player']} without it): at least 2 are needed, one to fit and one "
                         "to test on (keep games with the web table's 'Keep my games' switch)")
    split_games(games, held_out_players)
    parts, rules = replay_decisions(games, held_out_players)
    train, validation, test = parts["train"], parts["validation"], parts["test"]
    if not len(train):
        raise CloneError(f"no decision to fit: all {len(games)} games are held out (--held-out-players)")
    if not len(test):
        raise CloneError("no held-out game to test on: give at least 2 games of a player who is not held out")
    torch.manual_seed(seed)
    obs, mask, action = train.tensors()
    policy = starting_policy(init, obs.shape[1])
    test_obs, test_mask, test_action = test.tensors()
    _, start_hits = accuracy(policy, test_obs, test_mask, test_action)
    if len(validation):
        val_obs, val_mask, val_action = validation.tensors()
        keep = "score"
    else:                                  # too few games to choose an epoch on: the last one
        val_obs, val_mask, val_action = test_obs[:0], test_mask[:0], test_action[:0]
        keep = "last"

    def validation_fit() -> tuple[float, float]:
        if not len(validation):
            return float("nan"), float("nan")
        loss, hits = accuracy(policy, val_obs, val_mask, val_action)
        return loss, float(hits.float().mean())

    counts = {name: sum(g.split == name for g in games) for name in ("train", "validation", "test", "unseen")}
    log(f"clone: {len(train):,} decisions of {counts['train']} games to fit, {len(validation):,} of "
        f"{counts['validation']} to choose the epoch, {len(test):,} of {counts['test']} held out")
    generator = torch.Generator().manual_seed(seed)
    policy.train()
    _, _, epoch = fit_keep_best(
        policy, torch.arange(len(train)), lambda rows: F.cross_entropy(policy(obs[rows], mask[rows]), action[rows]),
        validation_fit, validation_fit(), lambda loss, score: f"validation loss {loss:.4f}, accuracy {100 * score:.1f}%",
        epochs=epochs, learning_rate=learning_rate, keep=keep, minibatch_size=minibatch_size, max_grad_norm=0.5,
        generator=generator, log=lambda line: None)
    policy.eval()
    test_loss, hits = accuracy(policy, test_obs, test_mask, test_action)
    report = {
        "player": player or "every person's seat", "init": init, "epochs": epochs, "kept_epoch": epoch,
        "games": {**counts, "records_read": sum(skipped.values()) + len(games), "duplicates": skipped["duplicates"],
                  "without_the_player": skipped["without_the_player"]},
        "decisions": {name: len(part) for name, part in parts.items()},
        "held_out": {**_shares(hits, test_action, test.player), "loss": round(test_loss, 4)},
        "held_out_start": _shares(start_hits, test_action, test.player),
        "held_out_heuristic": _shares(torch.tensor(test.heuristic) == test_action, test_action, test.player),
        "seconds": round(time.perf_counter() - began, 1),
    }
    if held_out_players:
        unseen = parts["unseen"]
        if len(unseen):
            u_obs, u_mask, u_action = unseen.tensors()
            _, u_hits = accuracy(policy, u_obs, u_mask, u_action)
            report["unseen_players"] = _shares(u_hits, u_action, unseen.player)
        else:
            report["unseen_players"] = {"decisions": 0, "accuracy": None}
    return policy, report, rules


def register(model: Path, name: str) -> Path:
    """Make the model the zoo partner ``human-NAME``: a copy at ``agents/models/human_NAME.pt``."""
    from agents import neural
    from coop.partners.zoo import PEOPLE_NAME, PEOPLE_PREFIX
    if not PEOPLE_NAME.fullmatch(name):
        raise CloneError(f"--name {name!r}: expected a letter or digit then up to 39 letters, digits, '_' or '-'")
    target = Path(neural.MODELS_DIR) / f"{PEOPLE_PREFIX}{name}.pt"
    try:
        return write_bytes(target, read_bytes(model, "model", MAX_RECORD_FILE), "--name")
    except FileRuleError as exc:
        raise CloneError(str(exc)) from None


def format_report(report: dict) -> str:
    def pct(x: Optional[float]) -> str:
        return "-" if x is None else f"{100 * x:.1f}%"
    held, start, heur = report["held_out"], report["held_out_start"], report["held_out_heuristic"]
    g = report["games"]
    lines = [f"cloned {report['player']}: {report['decisions']['train']:,} decisions of {g['train']} games fitted "
             f"(from {report['init']}, epoch {report['kept_epoch']} of {report['epochs']} kept), "
             f"{g['validation']} game{'s' if g['validation'] != 1 else ''} chose the epoch, {g['test']} held out",
             f"held-out games: {held['decisions']:,} decisions, accuracy {pct(held['accuracy'])} (bids "
             f"{pct(held['bids'])}, cards {pct(held['cards'])}); the starting policy {pct(start['accuracy'])}, "
             f"the heuristic {pct(heur['accuracy'])}"]
    if len(held["players"]) > 1:
        for name, part in held["players"].items():
            lines.append(f"  {name}: {part['decisions']:,} decisions, accuracy {pct(part['accuracy'])}")
    if "unseen_players" in report:
        lines.append(f"held-out players ({report['games']['unseen']} games): {report['unseen_players']['decisions']:,} "
                     "decisions, accuracy "
                     f"{pct(report['unseen_players']['accuracy'])}")
    return "\n".join(lines)


def _parser() -> argparse.ArgumentParser:
    from evaluation.cli_common import OneLineParser
    parser = OneLineParser(prog="spades-coop clone", description="Fit a partner to people's decisions in game "
                           "records (behaviour cloning), test it on held-out games, and name it as a zoo partner.")
    parser.add_argument("records", nargs="+", metavar="RECORDS",
                        help="folders of game records (*.json, *.jsonl) or such files")
    parser.add_argument("--player", default=None, metavar="NAME",
                        help="whose decisions: a players entry (person, person:NAME or NAME; default every person's seat)")
    parser.add_argument("--out", default=None, metavar="MODEL", help="the model file to write (neural:checkpoint=MODEL)")
    parser.add_argument("--name", default=None, help="register it as the held-out zoo partner human-NAME "
                                                     "(agents/models/human_NAME.pt, neural:model=human_NAME)")
    parser.add_argument("--init", default="neural", help="the policy to start from: a neural spec (default neural, "
                                                         "the shipped one) or scratch")
    parser.add_argument("--held-out-players", default="", metavar="A,B",
                        help="players none of whose decisions is trained on (tested apart)")
    parser.add_argument("--epochs", type=int, default=20, help="passes over the decisions (default 20)")
    parser.add_argument("--learning-rate", type=float, default=1e-3, help="Adam's step size (default 0.001)")
    parser.add_argument("--seed", type=int, default=0, help="the seed of the fit's order")
    parser.add_argument("--threads", type=int, default=0, help="torch threads (default 0: the cores not busy)")
    parser.add_argument("--json", metavar="FILE", help="write the report as JSON")
    parser.add_argument("--force", action="store_true",
                        help="replace the partner human-NAME if it exists (a held-out partner is never replaced otherwise)")
    return parser


def check_clone_outputs(args) -> None:
    """``--out``, ``--json`` and ``--name``, before any record is read: the model a regular file
    or a new path (never a device), not one of the inputs; a ``--name`` that exists only with
    ``--force``."""
    from agents import neural
    from coop.partners.zoo import PEOPLE_PREFIX
    from evaluation.cli_common import check_output_file

    inputs = list(args.records)
    if args.init != "scratch":
        try:
            from coop.partners import zoo
            init_file = zoo.model_file(args.init)
        except ValueError:
            init_file = None
        if init_file is not None:
            inputs.append(init_file)
    if args.out:
        check_output_file(args.out, "--out", stream_ok=False, inputs=inputs)
    if args.json:
        check_output_file(args.json, "--json", inputs=inputs)
    if args.name is not None:
        target = Path(neural.MODELS_DIR) / f"{PEOPLE_PREFIX}{args.name}.pt"
        if target.exists() and not args.force:
            raise CloneError(f"--name {args.name}: the held-out partner human-{args.name} exists ({target}); "
                             "give another name, or --force to replace it")
        check_output_file(target, "--name", stream_ok=False)


def check_not_a_known_model(policy, init: str) -> None:
    """A :class:`CloneError` when the fitted policy has the very weights of its start or of a
    model in agents/models (a fit that kept epoch 0 is the start itself: registered, it put the
    shipped policy in the held-out split)."""
    from agents import neural
    from coop.partners import zoo
    from evaluation.model_files import policy_weights_digest, weights_digest

    mine = policy_weights_digest(policy.state_dict())
    known = sorted(Path(neural.MODELS_DIR).glob("*.pt"))
    start = zoo.model_file(init) if init != "scratch" else None
    for path in ([start] if start is not None else []) + known:
        if weights_digest(path) == mine:
            what = "its start" if path == start else "the model"
            raise CloneError(f"the clone has the very weights of {what} {path} (the fit kept epoch 0?): nothing "
                             "written; fit longer or from another --init")


def main(argv: Optional[list[str]] = None) -> int:
    from agents.neural import save_model
    from evaluation.cli_common import fail_line
    from coop.common import write_json
    from evaluation.outcomes import EvaluationError

    args = _parser().parse_args(argv)
    try:
        if args.out is None and args.name is None:
            raise CloneError("give --out MODEL, --name NAME or both: where the clone goes")
        if not 1 <= args.epochs <= 1000:
            raise CloneError(f"--epochs {args.epochs}: expected 1..1000")
        if not 0 < args.learning_rate <= 1:
            raise CloneError(f"--learning-rate {args.learning_rate}: expected a number in (0, 1]")
        if args.name is not None:
            from coop.partners.zoo import PEOPLE_NAME
            if not PEOPLE_NAME.fullmatch(args.name):
                raise CloneError(f"--name {args.name!r}: expected a letter or digit then up to 39 letters, "
                                 "digits, '_' or '-'")
        check_clone_outputs(args)
        unseen = [p.strip() for p in args.held_out_players.split(",") if p.strip()]
        policy, report, rules = clone(args.records, args.player, args.init, args.epochs, args.learning_rate,
                                      seed=args.seed, held_out_players=unseen, threads=args.threads)
        check_not_a_known_model(policy, args.init)
        provenance = {"trained_by": "spades-coop clone", "behaviour_cloning": {
            k: report[k] for k in ("player", "init", "games", "decisions", "kept_epoch")},
            "held_out_accuracy": report["held_out"]["accuracy"], "date": time.strftime("%Y-%m-%d")}
        print(format_report(report))
        written = []
        if args.out:
            written.append(save_model(policy, args.out, rules, provenance))
            print(f"model: {args.out} (neural:checkpoint={args.out})")
        if args.name:
            if written:
                target = register(written[0], args.name)
            else:
                from agents import neural
                target = save_model(policy, Path(neural.MODELS_DIR) / f"human_{args.name}.pt", rules, provenance)
            report["partner"] = {"name": f"human-{args.name}", "spec": f"neural:model={target.stem}",
                                 "split": "held-out"}
            print(f"zoo partner human-{args.name} (held-out split): neural:model={target.stem}, {target}")
        if args.json:
            write_json(args.json, report, "--json")
        return 0
    except (CloneError, EvaluationError, ValueError, OSError) as exc:
        return fail_line("spades-coop clone", exc)


if __name__ == "__main__":
    sys.exit(main())
