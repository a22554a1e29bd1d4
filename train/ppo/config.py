"""The one config object of ``spades-train``: dataclass sections (the run, the game, experience,
the networks, PPO, warm starts, expert iteration, evaluation, output) with a help text per
field, read from YAML.

    config = load_config("configs/quickstart.yaml", overrides=["epochs=2", "critic=central"])
    config.ppo.clip == config.clip            # every field is also read by its flat name

A YAML file gives fields flat (``clip: 0.2``, as configs/ does), under their section
(``ppo: {clip: 0.2}``), or mixed; overrides are ``field=value`` or ``section.field=value``.

Unknown fields, wrong types and out-of-range values are refused with an error naming the field,
what was given and what is expected. ``spades-train --show-config`` prints every field.
"""

from __future__ import annotations

import dataclasses
import difflib
import textwrap
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional, Sequence, Union

import yaml


# Random starting scores of varied_start (and spades-label --varied-start): 10 x an integer in
# this range, both ends included: -150..490, short of the standard target of 500.
VARIED_START_TENS = (-15, 49)
# game.start: 0-0, uniformly random scores and bags (varied_start), or spades_env.starts' "real".
START_KINDS = ("zero", "varied", "real")
# nil_explore_target's lowest nil_explore: its multiplicative steps could never leave 0.
NIL_EXPLORE_FLOOR = 0.01


def varied_start_problem(rules: Any) -> Optional[str]:
    """Why the varied starts (10 x VARIED_START_TENS) cannot start games under ``rules``, or None:
    every starting score must lie strictly between the mercy score and the target."""
    from spades_env.game import start_scores_problem
    from spades_env.rules import RulesError, make_rules
    try:
        resolved = make_rules(rules)
    except RulesError:
        return None                                  # the rules' own check says what is wrong
    low, high = (10 * t for t in VARIED_START_TENS)
    problem = start_scores_problem(resolved, [low, high])
    return f"varied starts draw scores {low}..{high}: {problem}" if problem else None


class ConfigError(ValueError):
    """A training config that cannot be used."""


def cpu_has_native_bfloat16(cpuinfo: str | Path = "/proc/cpuinfo") -> bool:
    """Whether this CPU multiplies bfloat16 matrices natively (AVX-512 BF16 or AMX; read from the
    flags of ``cpuinfo``, so False where that file is missing, e.g. off Linux)."""
    try:
        words = Path(cpuinfo).read_text().split()
    except OSError:
        return False
    return "avx512_bf16" in words or "amx_bf16" in words


def _auto_learn_precision(device: str) -> tuple[str, str]:
    import torch

    if str(device).startswith("cuda"):
        if torch.cuda.is_available() and torch.cuda.is_bf16_supported():
            return "bfloat16", "this GPU has bfloat16"
        return "float32", "this GPU has no bfloat16"
    if str(device).startswith("cpu") and cpu_has_native_bfloat16():
        return "bfloat16", "this CPU has AVX-512 BF16 or AMX"
    return "float32", "no native bfloat16 on this device: autocast would emulate it, several times slower"


def _auto_env_backend(device: str, compile_env: bool) -> tuple[str, str]:
    if not str(device).startswith("cpu"):
        return "torch", f"the C step runs on the CPU, this run on {device}"
    if compile_env:
        return "torch", "compile_env=true compiles the torch step"
    from spades_env.native import unavailable_reason

    why_not = unavailable_reason()
    if why_not:
        return "torch", f"the C step is not available: {why_not}"
    return "native", "the C step built on this CPU"


def _f(default: Any, help: str, **kwargs: Any) -> Any:
    if isinstance(default, (list, dict)):
        return field(default_factory=lambda: type(default)(default), metadata={"help": help}, **kwargs)
    return field(default=default, metadata={"help": help}, **kwargs)


@dataclass
class RunSection:
    """The run: its name and folder, seed, device, threads and length."""

    name: str = _f("run", "run name; the run folder is <run_dir>/<name>")
    run_dir: str = _f("runs", "parent folder of run folders")
    seed: int = _f(0, "seeds the deals, the networks and the sampling (a run is reproducible on one device)")
    device: str = _f("cpu", "torch device for the engine and the networks ('cpu', 'cuda', ...)")
    threads: int = _f(0, "most torch CPU threads; the run uses no more than the cores free when it starts "
                         "(usable cores minus the rounded load average, at least 1; 0: all the free ones). "
                         "Floats match between runs only with the same count: threads: 1 repeats exactly")
    learn_precision: str = _f("float32", "'float32', 'bfloat16' or 'auto': the learner's passes through the policy's "
                                         "trunk and the critic under bfloat16 autocast (the heads, the losses and "
                                         "the weights stay float32; the rollouts are float32). About 1.7x faster "
                                         "learning on CPUs with AVX-512 BF16 or AMX, about 4x slower on CPUs "
                                         "without them; 'auto' picks bfloat16 where the device has it natively "
                                         "(those CPUs; CUDA GPUs with bfloat16), float32 elsewhere")
    compile_env: bool = _f(False, "run the batched engine's step under torch.compile (the same results; it "
                                  "compiles for 20-60 s at the start, then steps several times faster: worth it "
                                  "for self-play with thousands of tables, not when Python opponents dominate)")
    env_backend: str = _f("torch", "the batched engine's step: 'torch' (eager, or compiled with compile_env), "
                                   "'native' (its C step, CPU only: the same experience, several times faster "
                                   "than either and with no compile time; needs a C compiler) or 'auto' (native "
                                   "on the CPU when the C step builds and compile_env is off, else torch)")
    total_decisions: int = _f(2_000_000, "stop after this many decisions of experience (all seats)")
    max_updates: Optional[int] = _f(None, "stop after this many updates although the learning-rate schedule "
                                          "runs to total_decisions (null: run to total_decisions; 0: only the "
                                          "imitation warm start)")


@dataclass
class GameSection:
    """The game played: rules, episodes, rewards and starting scores."""

    rules: str = _f("standard", "rule preset name or YAML path (partnership rules)")
    episode: str = _f("hand", "'hand' (each hand an episode, from 0-0) or 'game' (to the target score)")
    reward: str = _f("team_diff", "reward scheme of the env: team_score, team_diff or win")
    reward_scale: float = _f(0.01, "points are multiplied by this (0.01: one reward unit = 100 points)")
    win_bonus: float = _f(0.0, "experimental (only experiments/2026-11-27-fine-tunes-after-shipping/neural_game_win.yaml sets it): reward added for winning a game / taken for losing it (game episodes)")
    varied_start: bool = _f(False, "every episode starts from random scores (-150..490) and bags instead of 0-0, so "
                                   "training meets blind nil (offered to a side that trails), the card passing "
                                   "it brings and the bag penalty (imitation included)")
    varied_start_share: float = _f(1.0, "with varied_start (or start: varied / real), the share of episodes (drawn "
                                        "per episode) that start from drawn scores; the rest start from 0-0")
    start: str = _f("zero", "where episodes start (spades_env.starts): 'zero' (0-0, no bags), 'varied' (the same as "
                            "varied_start: true, uniformly random scores and bags) or 'real' (scores and bags drawn "
                            "from the states recorded whole games between the baselines reach, so blind nil and "
                            "the bag limit come up as often as in a game)")
    shaping: float = _f(0.0, "weight of the env's potential-based shaping (sums to 0 per hand)")
    bag_cost: float = _f(0.0, "points charged per bag a side carries into later hands (spades_env.rewards): 10, "
                              "the standard rules' penalty over its limit, makes a hand's reward its worth in a "
                              "game (an overtrick nets -9 instead of +1); 0: the plain score change")
    reward_bias: dict = _f({}, "a hidden utility (coop.methods.hidden_utility, hidden-utility self-play): points paid to the "
                               "learner's seat for its own events besides the score, e.g. {ruff: 10, nil: 20}; "
                               "events: bid (per trick bid), nil, lead_spade, ruff, overtake (beating a winning "
                               "partner). For partners with conventions of their own; {}: off")
    diversity_from: list = _f([], "earlier policies (checkpoint paths or zoo partner names of neural models; "
                                  "held-out ones refused) the learner is paid to differ from, MEP-style "
                                  "(coop.methods.diversity): diversity_coef points per nat of its action's surprise under "
                                  "their mean policy; []: off")
    diversity_coef: float = _f(0.0, "points per nat of surprise under diversity_from's mean policy (capped at "
                                    "ln 1000 nats a decision); 0: off")


@dataclass
class ExperienceSection:
    """Experience: tables stepped together and who sits on the other side."""

    num_envs: int = _f(512, "tables stepped together by the batched engine")
    rollout_steps: int = _f(64, "steps of every table per update (experience = num_envs * rollout_steps)")
    opponents: dict = _f({"self": 0.5, "pool": 0.25, "heuristic": 0.25},
                         "share of tables (drawn per hand) where the other side is the current policy "
                         "(self-play: both sides learn), a past policy from the pool, or the heuristic")
    pool_size: int = _f(8, "past policies kept as opponents")
    pool_every: int = _f(10, "updates between snapshots added to the pool")
    blind_nil_explore: float = _f(0.0, "experimental (only experiments/2026-11-27-training-for-the-real-game/neural_game_blind.yaml sets it): share of the learner's blind-nil decisions (blind nil offered) where it bids "
                                       "blind nil whatever it would have chosen, stored with the policy's own "
                                       "probability of it: its card play then meets the blind-nil hands (passing, "
                                       "ducking, covering) that a policy which never bids one never learns; 0: off")
    nil_explore: float = _f(0.0, "share of the learner's bidding turns (nil legal) where it bids nil whatever it "
                                 "would have chosen: from scratch nobody bids nil, so the card play never learns "
                                 "to keep one or to break the other side's, and nil's value cannot be learnt; "
                                 "with bid_learning: counterfactual and bid_counterfactual_nil: played those nils "
                                 "value nil exactly (the draw does not depend on the hand); 0: off")
    nil_explore_max_bid: Optional[int] = _f(None, "nil_explore only where the bid the policy drew is at most this "
                                                  "(1: its own lowest hands, the ones a nil could keep; nils forced "
                                                  "on any hand are nearly all broken, which teaches little about "
                                                  "keeping or breaking a good one); null: on every bidding turn")
    nil_explore_final: float = _f(0.0, "with nil_explore_decisions, the share nil_explore falls to (linearly)")
    nil_explore_decisions: Optional[int] = _f(None, "nil_explore falls linearly to nil_explore_final over this many "
                                                    "decisions of the run (null: nil_explore throughout)")
    nil_explore_target: Optional[float] = _f(None, "adaptive nil exploration: the share of the rollout's card-play "
                                                   "table steps with an intact nil (train__intact_nil_share) to keep; "
                                                   "after every update nil_explore (its start) is multiplied by "
                                                   "exp(nil_explore_gain * (target - measured) / target), within "
                                                   "[0.01, nil_explore_max] (train/ppo/schedules.py); null: off "
                                                   "(nil_explore fixed, or nil_explore_decisions' schedule)")
    nil_explore_gain: float = _f(0.2, "with nil_explore_target: the step of log(nil_explore) an update when no nil is "
                                      "intact (relative error 1): the loop's gain at the target however many "
                                      "turns qualify (less where the policy's own nils carry part of the share), "
                                      "stable below 2, about 1/gain updates to settle")
    nil_explore_max: float = _f(1.0, "with nil_explore_target: the most nil_explore may rise to (exploration never "
                                     "sets more than this share of the qualifying bids)")
    desync_tables: bool = _f(False, "before the first rollout the tables play part of a hand (a number of steps drawn "
                                    "per table, nothing learnt), so that they do not all bid in the same steps: hand "
                                    "episodes last 56 steps each, and tables reset together stay in step, so a short "
                                    "rollout may hold no bidding decision at all")


@dataclass
class CooperationSection:
    """Training for cooperation (coop/methods/cooperation.py, docs/cooperation.md); all off by default."""

    symmetry_augment: bool = _f(False, "every decision of the learner's PPO batch is replaced by its image under a "
                                       "relabelling of the side suits drawn per decision (identity included): the "
                                       "observation, the legal mask, the action and a central critic's state; "
                                       "advantages and returns stay; the old log-probability of the ratio is the "
                                       "policy's (as it played the rollout) for the relabelled action under the "
                                       "relabelled observation, computed before the first gradient step")
    other_play: str = _f("none", "Other-Play: 'none', 'partner' or 'learner'. Each table draws a relabelling of the "
                                 "side suits per episode; with 'partner' seats 2 and 3 (the learner's partner seat, "
                                 "and in self-play the other side's too), with 'learner' seats 0 and 1 see the episode "
                                 "through it: observation and mask mapped before the policy, its action mapped back "
                                 "with the inverse; the learner's data are the relabelled decisions it saw. Under "
                                 "rules with signals the relabellings permute the messages too (spades_env.symmetries)")
    message_information_coef: float = _f(0.0, "rules with signals: a bonus on the message decisions of each PPO "
                                              "minibatch, this times the information their messages carry about "
                                              "the sender's hand whatever its seat (the mutual information between "
                                              "hand and message, the policy asked again with the hand in other "
                                              "decisions' views: positive signalling, Eccles et al. 2019; "
                                              "train.ppo.update.message_information). It makes messages depend "
                                              "on the hand, not what they mean: which message says what is left "
                                              "to training, so seeds may disagree")
    partner_population: list = _f([], "partners for the learner, Fictitious Co-Play style: zoo partner names of the "
                                      "train split (held-out and validation partners are refused) and checkpoint "
                                      "globs or paths, e.g. runs/study/runs/selfplay_s*/checkpoints/update_*.pt "
                                      "(every file matched is a member, intermediate checkpoints included; "
                                      "checkpoint members sample from their policy)")
    partner_population_share: float = _f(0.5, "with partner_population, the share of episodes (drawn per table and "
                                              "episode) whose learner's partner seat a member plays (drawn "
                                              "uniformly); the other side is drawn from opponents as usual")
    allow_held_out: bool = _f(False, "let held-out zoo partners into training on purpose: init_from a held-out "
                                     "partner's model (its bytes or weights under any name), partner_population "
                                     "files or specs that are a held-out or validation partner, an expert_teacher "
                                     "or expert_opponents that are held out (refused by content, whatever the path "
                                     "or spelling, unless this is true; a run trained so is no test with strangers)")


@dataclass
class NetworksSection:
    """The networks: the policy's and the critic's shapes."""

    hidden: int = _f(256, "width of the shared layers of the policy (and of the critic)")
    layers: int = _f(2, "shared layers of the policy and of the critic")
    head_hidden: int = _f(128, "width of the bidding head's and the card head's hidden layer")
    card_features: bool = _f(False, "the policy also reads derived card-counting features (unseen cards above "
                                     "and below each card, master cards, the trick's winner, voids) and scores "
                                     "each card with weights shared by all cards (agents.networks.CardFeatures)")
    nil_features: bool = _f(False, "the card features also say where each nil stands: per card, whether it would "
                                   "win the trick while the seat's own nil is intact, while the partner's intact nil "
                                   "or an opponent's wins it, while an opponent's is intact; each seat's nil intact "
                                   "and winning the trick (needs card_features; agents.networks.CardFeatures)")
    nil_defence_head: bool = _f(False, "the policy scores its cards with a second card head while an opponent's "
                                       "nil is intact (needs card_features; after init_from a policy without one it "
                                       "starts as a copy of the card head, so the play is unchanged until trained; "
                                       "policy_parts: nil_defence trains it alone)")
    critic: str = _f("local", "'local': the critic sees the seat's observation; 'central': also the full "
                              "state, all hands included (training only; the policy never sees it)")


@dataclass
class PPOSection:
    """PPO: the update, its loss and what of the policy it trains."""

    learning_rate: float = _f(3e-4, "Adam step size")
    anneal_lr: bool = _f(True, "decay the step size linearly to 0 over total_decisions (a run extended on resume "
                               "jumps back up); false: the step size is a function of the decisions made alone "
                               "(lr_warmup_decisions, lr_half_life_decisions, lr_floor; train/ppo/schedules.py), "
                               "the same whenever the run was resumed or however long it is planned")
    lr_warmup_decisions: int = _f(0, "with anneal_lr: false, the step size rises linearly to learning_rate over the "
                                     "first this many decisions (0: none)")
    lr_half_life_decisions: Optional[int] = _f(None, "with anneal_lr: false, the step size halves every this many "
                                                     "decisions, down to lr_floor (null: constant)")
    lr_floor: float = _f(0.0, "with anneal_lr: false and lr_half_life_decisions, the step size never falls below this")
    gamma: float = _f(1.0, "discount per decision of the same seat")
    gae_lambda: float = _f(0.95, "GAE lambda")
    clip: float = _f(0.2, "PPO clip range of the probability ratio")
    epochs: int = _f(3, "passes over each batch of experience")
    minibatch_size: int = _f(4096, "decisions per gradient step")
    entropy_coef: float = _f(0.005, "entropy bonus")
    bid_entropy_coef: Optional[float] = _f(None, "experimental (only the scratch ablation sets it): entropy bonus on bidding decisions alone (null: entropy_coef); "
                                                 "a larger one keeps a from-scratch run's bids from settling on "
                                                 "one bid for every hand before the play is any good")
    bid_gae_lambda: Optional[float] = _f(None, "experimental (only the scratch ablation sets it): GAE lambda of the bidding decisions (null: gae_lambda): 1.0 gives a "
                                               "bid the Monte-Carlo return of its hand, the whole outcome (DouZero's "
                                               "targets) instead of 0.95^13 of it and the critic's guesses")
    bid_learning: str = _f("ppo", "how the bids are learnt: 'ppo' (the clipped policy gradient, as the cards), "
                                  "'values' (DouZero-style Monte-Carlo values: the bidding head's output for a bid "
                                  "is its value, fitted by squared error to the hand's return after the bid "
                                  "(lambda 1), and the bids are drawn from the softmax of the values over "
                                  "bid_temperature) or 'counterfactual' (as 'values', but every bid nil..13 is "
                                  "valued from each finished hand by scoring it again with that bid and the "
                                  "tricks as taken: train/bids/bid_counterfactual.py; hand episodes)")
    bid_counterfactual_nil: str = _f("counterfactual", "bid_learning: counterfactual: how nil is valued: "
                                                       "'counterfactual' (every finished hand scored again as "
                                                       "a nil: undervalued, the tricks were taken playing to "
                                                       "make a bid) or 'played' (nil valued only by the hands "
                                                       "where it was bid, which value nothing else)")
    bid_playout_every: int = _f(0, "bid_learning: counterfactual: every this many updates, bid_playout_deals bidding "
                                   "decisions have every bid nil..13 played out on copies of their deal, the current "
                                   "policy playing all four seats greedily (train/bids/bid_values.py: the play adapts "
                                   "to the bid, so nil is valued by the policy's own nil play; no other agent), and "
                                   "those values join the bids' fit until the next round (0: off)")
    bid_playout_deals: int = _f(256, "bid_playout_every: bidding decisions played out per round (each 14 copies of "
                                     "a hand)")
    bid_fit_passes: int = _f(2, "bid_learning: counterfactual: passes over the kept valued bids at each update "
                                "(minibatches of bid_fit_minibatch, bid_value_learning_rate, an Adam of their own)")
    bid_fit_minibatch: int = _f(512, "bid_learning: counterfactual: valued bids per step of the bids' fit (a GPU run "
                                     "with thousands of tables takes larger ones: the steps an update grow with "
                                     "the tables)")
    bid_replay_updates: int = _f(4, "bid_learning: counterfactual: the valued bids of this many latest rollouts are "
                                    "fitted at each update")
    bid_temperature: float = _f(10.0, "bid_learning: values: points of value per unit of bidding logit (the "
                                      "softmax's temperature: a bid worth 10 points less is e times less likely)")
    bid_value_coef: float = _f(1.0, "bid_learning: values: weight of the bids' squared error in the loss")
    bid_advantage_norm: str = _f("joint", "experimental (only the scratch ablation sets it): 'joint': a minibatch's advantages are normalised together; 'separate': "
                                          "the bidding decisions' by their own mean and spread, so the one bid per "
                                          "hand is not drowned by its 13 card decisions' scale")
    value_coef: float = _f(0.5, "weight of the value loss")
    max_grad_norm: float = _f(0.5, "gradient clipping (global norm)")
    target_kl: Optional[float] = _f(None, "stop an update's epochs early once the approximate KL exceeds this")
    policy_parts: str = _f("all", "what of the policy PPO trains: 'all', 'cards' (the card head alone: the trunk "
                                  "and the bidding head stay as they are, so the bids do not change), 'bids' (the "
                                  "bidding head alone) or 'nil_defence' (the nil-defence head alone, so only the "
                                  "play while an opponent's nil is intact changes; the distillation too fits it "
                                  "alone); the critic always trains")
    reset_bid_head: bool = _f(False, "experimental (only the scratch ablation sets it): after init_from, the bidding head starts again from random weights (with "
                                     "policy_parts: bids, the ablation's control: a trained card play kept, the "
                                     "bid learnt from nothing)")
    critic_warmup_updates: int = _f(0, "first updates of PPO train only the critic, the policy frozen (for "
                                       "init_from a model without a critic that fits, e.g. a new central one)")


@dataclass
class WarmStartsSection:
    """Warm starts before PPO: init_from, imitation, distillation, Monte-Carlo bid values."""

    init_from: Optional[str] = _f(None, "start from the policy (and critic, if it has one) of this checkpoint "
                                        "or model instead of from scratch; skips the imitation")
    imitation_decisions: int = _f(0, "before PPO, imitate this many decisions of the heuristic playing "
                                      "itself (0: start from scratch)")
    imitation_epochs: int = _f(4, "passes over the imitation data")
    imitation_learning_rate: float = _f(1e-3, "Adam step size of the imitation (its own optimizer)")
    distill_data: Union[str, list[str], None] = _f(None, "folder written by spades-label, or a list of them fitted "
                                                         "together: before PPO the policy is fitted to the "
                                                         "teacher's choices there (after init_from or the "
                                                         "imitation); decisions without a label (spades-label "
                                                         "--only blind-nil, ducking or nil-defence) are held at the starting policy's "
                                                         "probabilities (KL); a tenth of the deals is held out "
                                                         "and the epoch that matches most of them is kept")
    distill_epochs: int = _f(4, "passes over the distillation labels")
    distill_learning_rate: float = _f(1e-4, "Adam step size of the distillation (its own optimizer, linear decay)")
    distill_value_temperature: Optional[float] = _f(None, "with labels of spades-label --teacher playout: fit the "
                                                          "card logits to the starting policy's plus the play-out "
                                                          "values over this many points (pi ~ pi_start * exp(value "
                                                          "/ T)), every other decision kept at the starting "
                                                          "policy's logits; the epoch whose favourite cards are "
                                                          "worth most on the held-out deals is kept (null: fit "
                                                          "the teacher's choices)")
    distill_keep: str = _f("score", "which weights a distillation keeps: 'score' (the epoch, or the starting weights, "
                                    "that match most held-out labels, or whose favourite cards are worth most on "
                                    "them with distill_value_temperature), 'loss' (lowest held-out loss) or 'last'")
    bid_value_deals: int = _f(0, "Monte-Carlo bid values (train/bids/bid_values.py), before PPO: per round, this many "
                                 "bidding decisions have every bid played out on copies of their deal (the policy "
                                 "playing the rest greedily) and the bidding head alone is fitted to the results "
                                 "(0: off)")
    bid_value_rounds: int = _f(1, "rounds of bid-value collection and fitting")
    bid_value_epochs: int = _f(30, "passes over a round's bid values (the best held-out epoch is kept)")
    bid_value_learning_rate: float = _f(1e-3, "Adam step size of the bidding head's fit")
    bid_value_heuristic_share: float = _f(0.0, "share of the bid-value deals (drawn per deal) where the heuristic "
                                                "plays the other side of the bidder (bids and cards), so the bids "
                                                "are valued against its play; on the rest the policy plays all seats")
    bid_value_temperature: float = _f(10.0, "points per unit of bidding logit: the fitted policy is the softmax of "
                                            "the bids' values over this")
    bid_value_objective: str = _f("points", "what a played-out bid is worth: 'points' (the hand's points, each "
                                            "carried bag at bag_cost) or 'win' (the probability of winning the game "
                                            "from the score the hand leaves, in points of equal worth: "
                                            "train/bids/game_bid_values.py; set bag_cost 10 with it)")


@dataclass
class ExpertIterationSection:
    """Expert iteration (train/labelling/expert_iteration.py), after the warm starts and before PPO."""

    expert_rounds: int = _f(0, "rounds of expert iteration after the warm starts, before PPO (0: off): each round "
                               "the policy plays expert_deals hands, the native search values its card "
                               "decisions, the policy is fitted toward those values and evaluated")
    expert_deals: int = _f(2000, "deals played and labelled per round")
    expert_teacher: str = _f("search_v1:worlds=200,stage=0", "agent spec whose values label the card decisions (a "
                                                          "search keeping every candidate: stage=0; 'search' "
                                                          "labels the bids it tries as well)")
    expert_opponents: dict = _f({"heuristic": 0.75, "self": 0.25},
                                "who plays the other side of the labelled deals, by share of the deals: 'self' "
                                "(the round's policy), 'previous' (the previous round's) or any agent spec")
    expert_follow_teacher: float = _f(0.25, "chance that a labelled hand goes on with the search's card rather "
                                            "than the policy's")
    expert_shard_deals: int = _f(20, "deals per label shard (a killed round resumes at its next shard)")
    expert_workers: int = _f(0, "processes that label and evaluate (0: the CPUs this process may use)")
    expert_ray: Optional[str] = _f(None, "label the rounds' shards as tasks on a Ray cluster: its address "
                                         "(host:port or 'auto'), or 'local' for a Ray instance started here "
                                         "with expert_workers CPUs (needs spades-rl[ray]; null: processes here)")
    expert_target: str = _f("completed_q", "what the policy is fitted to at a valued decision: 'completed_q' "
                                           "(softmax of its logits + expert_scale x the values normalised by "
                                           "their range) or 'best' (the best-valued cards)")
    expert_scale: float = _f(5.0, "completed_q: nats a card gains over the worst for being worth the whole range more")
    expert_value_floor: float = _f(2.0, "completed_q: the range the values are normalised by is at least this "
                                        "many points (smaller differences move the policy proportionally less)")
    expert_tie: float = _f(0.05, "points within which a card counts as among the best ('best' target, agreement)")
    expert_replay_rounds: int = _f(2, "the labels of this many latest rounds (this one included) are fitted")
    expert_epochs: int = _f(3, "passes over the round's labels (the best held-out epoch is kept)")
    expert_learning_rate: float = _f(3e-4, "Adam step size of the round's fit (linear decay)")
    expert_bid_values: bool = _f(False, "after each round's fit, one round of Monte-Carlo bid values "
                                        "(bid_value_deals deals) refits the bidding head to the new card play")
    expert_eval_deals: int = _f(300, "duplicate deals of each round's evaluation")
    expert_eval_opponents: list = _f(["heuristic"], "agent specs each round's policy is evaluated against "
                                                    "(paired with the round's start), besides head to head")
    expert_eval_start: str = _f("zero", "where each round's evaluation hands start: 'zero' (0-0, no bags) or "
                                        "'real' (scores, bags and dealer drawn from the states whole games reach, so "
                                        "blind nil and the bag limit come up as in games)")


@dataclass
class EvaluationSection:
    """Evaluation during and at the end of the run."""

    eval_every: int = _f(20, "updates between duplicate evaluations (0: only at the end)")
    eval_deals: int = _f(100, "duplicate deals per evaluation and opponent")
    eval_opponents: list = _f(["random", "heuristic"], "agents the policy is evaluated against")
    final_eval_deals: int = _f(300, "duplicate deals of the evaluation at the end of the run (at least 2)")
    eval_games: int = _f(0, "duplicate game seeds (two whole games to the target score each) against each opponent "
                            "at every evaluation point, for the learning curves' games won (0: off; about 10 s a "
                            "seed against the heuristic on a busy 2-core machine)")
    final_eval_games: int = _f(0, "duplicate game seeds (two whole games each) against each opponent at the end of "
                                  "the run: win rate with its interval, points and bags a hand, beside the "
                                  "single-hand table (0: off)")
    eval_against_start: bool = _f(True, "the evaluations also play the policy PPO started from (after the warm "
                                        "starts: imitation, init_from, distillation, bid values) on the same "
                                        "deals and report the gain over it, paired by deal")


@dataclass
class OutputSection:
    """What the run writes: checkpoints, TensorBoard, the progress bar."""

    checkpoint_every: int = _f(10, "updates between checkpoints (one is always written at the end)")
    keep_checkpoints: int = _f(3, "numbered checkpoints kept besides last.pt")
    tensorboard: bool = _f(True, "write TensorBoard event files to the run folder")
    progress: bool = _f(True, "show a progress bar")


# The sections of a config, in the order --show-config prints them: YAML may give a field at the
# top level (flat, as the configs in configs/ do) or inside its section (``ppo: {clip: 0.2}``).
SECTIONS: dict[str, type] = {
    'run': RunSection,
    'game': GameSection,
    'experience': ExperienceSection,
    'cooperation': CooperationSection,
    'networks': NetworksSection,
    'ppo': PPOSection,
    'warm_starts': WarmStartsSection,
    'expert_iteration': ExpertIterationSection,
    'evaluation': EvaluationSection,
    'output': OutputSection,
}


@dataclass
class TrainConfig:
    """A self-play PPO run: what is played, by whom, how the networks learn, what is logged. One
    section per concern (:data:`SECTIONS`); every field is also read flat (``config.clip`` is
    ``config.ppo.clip``), as the trainer and the configs in configs/ name them."""

    run: RunSection = field(default_factory=RunSection)
    game: GameSection = field(default_factory=GameSection)
    experience: ExperienceSection = field(default_factory=ExperienceSection)
    cooperation: CooperationSection = field(default_factory=CooperationSection)
    networks: NetworksSection = field(default_factory=NetworksSection)
    ppo: PPOSection = field(default_factory=PPOSection)
    warm_starts: WarmStartsSection = field(default_factory=WarmStartsSection)
    expert_iteration: ExpertIterationSection = field(default_factory=ExpertIterationSection)
    evaluation: EvaluationSection = field(default_factory=EvaluationSection)
    output: OutputSection = field(default_factory=OutputSection)

    @property
    def start_kind(self) -> str:
        """Where episodes start, one of :data:`START_KINDS` (``varied_start: true`` is ``'varied'``)."""
        return "varied" if self.varied_start else self.start

    # ------------------------------------------------------------------ flat access
    def __getattr__(self, name: str) -> Any:
        section = FIELD_SECTION.get(name)       # only reached when normal lookup fails
        if section is None:
            raise AttributeError(f"{type(self).__name__} has no field {name!r}")
        return getattr(object.__getattribute__(self, section), name)

    def __setattr__(self, name: str, value: Any) -> None:
        section = FIELD_SECTION.get(name)
        if section is None:
            object.__setattr__(self, name, value)
        else:
            setattr(getattr(self, section), name, value)

    @classmethod
    def from_flat(cls, values: dict) -> "TrainConfig":
        """A config from ``field: value`` pairs (unchecked: see :func:`config_from_dict`)."""
        by_section: dict[str, dict] = {name: {} for name in SECTIONS}
        for name, value in values.items():
            by_section[FIELD_SECTION[name]][name] = value
        return cls(**{name: SECTIONS[name](**given) for name, given in by_section.items()})

    def replace(self, **changes: Any) -> "TrainConfig":
        """A copy with some fields (flat names) changed."""
        return type(self).from_flat({**self.to_dict(), **changes})

    # ------------------------------------------------------------------ derived values
    @property
    def batch_decisions(self) -> int:
        return self.num_envs * self.rollout_steps

    @property
    def updates(self) -> int:
        return max(1, -(-self.total_decisions // self.batch_decisions))

    @property
    def last_update(self) -> int:
        """The update the run stops after."""
        return self.updates if self.max_updates is None else min(self.updates, self.max_updates)

    @property
    def run_path(self) -> Path:
        return Path(self.run_dir) / self.name

    def to_dict(self) -> dict:
        """Every field by its flat name (what checkpoints store, so old ones still compare)."""
        return {name: value for section in SECTIONS for name, value in
                dataclasses.asdict(object.__getattribute__(self, section)).items()}

    def to_sections(self) -> dict:
        """Every field under its section (what a run folder's ``config.yaml`` holds)."""
        return {section: dataclasses.asdict(object.__getattribute__(self, section)) for section in SECTIONS}

    def resolve_auto(self) -> tuple["TrainConfig", list[str]]:
        """This config with its ``auto`` settings decided for this machine (``env_backend``,
        ``learn_precision``), and a line per decision saying what was picked and why."""
        changes: dict[str, str] = {}
        notes = []
        if self.env_backend == "auto":
            backend, why = _auto_env_backend(self.device, self.compile_env)
            changes["env_backend"] = backend
            notes.append(f"env_backend auto -> {backend} ({why})")
        if self.learn_precision == "auto":
            precision, why = _auto_learn_precision(self.device)
            changes["learn_precision"] = precision
            notes.append(f"learn_precision auto -> {precision} ({why})")
        return self.replace(**changes), notes

    def validate(self) -> "TrainConfig":
        """Check every value; raises :class:`ConfigError` naming the first bad one."""
        positive = ("total_decisions", "num_envs", "rollout_steps", "pool_size", "pool_every", "hidden",
                    "layers", "head_hidden", "epochs", "minibatch_size", "eval_deals", "imitation_epochs",
                    "distill_epochs", "bid_value_rounds", "bid_value_epochs", "checkpoint_every", "keep_checkpoints")
        for name in positive:
            if getattr(self, name) < 1:
                raise ConfigError(f"{name}={getattr(self, name)!r}: expected a positive integer")
        if not 0 <= self.seed <= 2 ** 32 - 1:       # 10**30 or -1 passed here and failed inside the run
            raise ConfigError(f"seed={self.seed!r}: expected a whole number from 0 to 4,294,967,295")
        for name in ("imitation_decisions", "eval_every", "final_eval_deals", "threads", "critic_warmup_updates",
                     "bid_value_deals", "eval_games", "final_eval_games"):
            if getattr(self, name) < 0:
                raise ConfigError(f"{name}={getattr(self, name)!r}: expected 0 or more")
        for name in ("learning_rate", "imitation_learning_rate", "distill_learning_rate", "bid_value_learning_rate",
                     "bid_value_temperature", "reward_scale", "clip", "max_grad_norm"):
            if not getattr(self, name) > 0:
                raise ConfigError(f"{name}={getattr(self, name)!r}: expected a positive number")
        for name in ("gamma", "gae_lambda", "varied_start_share", "bid_value_heuristic_share",
                     "partner_population_share", "blind_nil_explore", "nil_explore"):
            if not 0 <= getattr(self, name) <= 1:
                raise ConfigError(f"{name}={getattr(self, name)!r}: expected a number in [0, 1]")
        self._check_schedules()
        if self.nil_explore_max_bid is not None and not 0 <= self.nil_explore_max_bid <= 13:
            raise ConfigError(f"nil_explore_max_bid={self.nil_explore_max_bid!r}: expected a bid 0..13, or null")
        if self.bid_entropy_coef is not None and not self.bid_entropy_coef >= 0:
            raise ConfigError(f"bid_entropy_coef={self.bid_entropy_coef!r}: expected 0 or more, or null")
        if not 0 <= self.message_information_coef <= 10:
            raise ConfigError(f"message_information_coef={self.message_information_coef!r}: expected a number from 0 "
                              "to 10 (0: off)")
        if self.message_information_coef > 0:
            from spades_env.rules import RulesError, make_rules
            try:
                signals = make_rules(self.rules).signals
            except RulesError:
                signals = None                   # the rules' own check says what is wrong
            if signals == 0:
                raise ConfigError(f"message_information_coef={self.message_information_coef!r}: the {self.rules} rules "
                                  "have no messages (signals: 0); use rules with signals, e.g. short_signals")
        from coop.methods.hidden_utility import HiddenUtilityError, check_reward_bias
        try:
            check_reward_bias(self.reward_bias)
        except HiddenUtilityError as exc:
            raise ConfigError(str(exc)) from None
        from coop.methods.diversity import DiversityError, check_diversity
        try:
            check_diversity(self.diversity_from, self.diversity_coef)
        except DiversityError as exc:
            raise ConfigError(str(exc)) from None
        if (self.reward_bias or self.diversity_from) and self.expert_rounds:
            raise ConfigError("reward_bias and diversity_from are paid by PPO's rollouts; expert iteration's labels "
                              "come from search, which plays the plain game: set expert_rounds: 0, or leave them off")
        if (self.reward_bias or self.diversity_from) and self.reward == "win":
            raise ConfigError("reward_bias and diversity_from pay points besides the score: they need reward "
                              "team_score or team_diff, not win")
        for name in ("entropy_coef", "value_coef", "shaping", "win_bonus", "bag_cost"):
            if getattr(self, name) < 0:
                raise ConfigError(f"{name}={getattr(self, name)!r}: expected 0 or more")
        for name in ("expert_rounds", "expert_workers"):
            if getattr(self, name) < 0:
                raise ConfigError(f"{name}={getattr(self, name)!r}: expected 0 or more")
        for name in ("expert_deals", "expert_shard_deals", "expert_replay_rounds", "expert_epochs",
                     "expert_eval_deals"):
            if getattr(self, name) < 1:
                raise ConfigError(f"{name}={getattr(self, name)!r}: expected a positive integer")
        for name in ("expert_scale", "expert_value_floor", "expert_learning_rate"):
            if not getattr(self, name) > 0 or getattr(self, name) == float("inf"):
                raise ConfigError(f"{name}={getattr(self, name)!r}: expected a positive finite number")
        if self.expert_ray is not None and (not isinstance(self.expert_ray, str) or not self.expert_ray.strip()):
            raise ConfigError(f"expert_ray={self.expert_ray!r}: expected a Ray address (host:port or auto), local, "
                              "or null")
        if not 0 <= self.expert_tie < float("inf"):
            raise ConfigError(f"expert_tie={self.expert_tie!r}: expected points >= 0")
        if not 0 <= self.expert_follow_teacher <= 1:
            raise ConfigError(f"expert_follow_teacher={self.expert_follow_teacher!r}: expected a number in [0, 1]")
        if self.expert_eval_start not in ("zero", "real"):
            raise ConfigError(f"expert_eval_start={self.expert_eval_start!r}: expected 'zero' or 'real'")
        if self.bid_value_objective not in ("points", "win"):
            raise ConfigError(f"bid_value_objective={self.bid_value_objective!r}: expected 'points' or 'win'")
        if self.expert_target not in ("completed_q", "best"):
            raise ConfigError(f"expert_target={self.expert_target!r}: expected 'completed_q' or 'best'")
        self._check_expert_specs()
        if self.max_updates is not None and self.max_updates < 0:
            raise ConfigError(f"max_updates={self.max_updates!r}: expected 0 or more, or null")
        if self.distill_value_temperature is not None and not self.distill_value_temperature > 0:
            raise ConfigError(f"distill_value_temperature={self.distill_value_temperature!r}: expected a positive "
                              "number or null")
        if self.target_kl is not None and not self.target_kl > 0:
            raise ConfigError(f"target_kl={self.target_kl!r}: expected a positive number or null")
        if self.env_backend not in ("torch", "native", "auto"):
            raise ConfigError(f"env_backend={self.env_backend!r}: expected 'torch', 'native' or 'auto'")
        if self.env_backend == "native" and self.compile_env:
            raise ConfigError("env_backend='native' steps in C: compile_env=true (torch.compile) does not apply to it")
        if self.env_backend == "native" and not str(self.device).startswith("cpu"):
            raise ConfigError(f"env_backend='native' runs on the CPU; device={self.device!r} needs env_backend='torch'")
        if self.other_play not in ("none", "partner", "learner"):
            raise ConfigError(f"other_play={self.other_play!r}: expected 'none', 'partner' or 'learner'")
        if any(not isinstance(p, str) or not p.strip() for p in self.partner_population):
            raise ConfigError(f"partner_population={self.partner_population!r}: expected a list of zoo partner names "
                              "and checkpoint globs")
        self._refuse_held_out()
        if self.episode not in ("hand", "game"):
            raise ConfigError(f"episode={self.episode!r}: expected 'hand' or 'game'")
        if self.start not in START_KINDS:
            raise ConfigError(f"start={self.start!r}: expected one of {', '.join(repr(k) for k in START_KINDS)}")
        if self.varied_start and self.start == "real":
            raise ConfigError("varied_start: true and start: real name two different starts; give one of them")
        if self.start == "real":
            self._check_real_start()
        if self.start_kind == "varied":
            problem = varied_start_problem(self.rules)
            if problem:
                raise ConfigError(problem)
        if self.critic not in ("local", "central"):
            raise ConfigError(f"critic={self.critic!r}: expected 'local' or 'central'")
        if self.bid_gae_lambda is not None and not 0.0 <= self.bid_gae_lambda <= 1.0:
            raise ConfigError(f"bid_gae_lambda={self.bid_gae_lambda!r}: expected 0..1, or null")
        if self.bid_learning not in ("ppo", "values", "counterfactual"):
            raise ConfigError(f"bid_learning={self.bid_learning!r}: expected 'ppo', 'values' or 'counterfactual'")
        if self.bid_learning == "counterfactual" and (self.episode != "hand" or self.reward == "win"):
            raise ConfigError("bid_learning: counterfactual values a bid by its hand's score: it needs episode: "
                              "hand and reward team_diff or team_score")
        if self.bid_counterfactual_nil not in ("counterfactual", "played"):
            raise ConfigError(f"bid_counterfactual_nil={self.bid_counterfactual_nil!r}: expected 'counterfactual' "
                              "or 'played'")
        for name in ("bid_replay_updates", "bid_fit_passes", "bid_fit_minibatch"):
            if getattr(self, name) < 1:
                raise ConfigError(f"{name}={getattr(self, name)!r}: expected a positive integer")
        if not self.bid_temperature > 0:
            raise ConfigError(f"bid_temperature={self.bid_temperature!r}: expected a positive number of points")
        if not self.bid_value_coef >= 0:
            raise ConfigError(f"bid_value_coef={self.bid_value_coef!r}: expected 0 or more")
        if self.bid_advantage_norm not in ("joint", "separate"):
            raise ConfigError(f"bid_advantage_norm={self.bid_advantage_norm!r}: expected 'joint' or 'separate'")
        if self.reset_bid_head and not self.init_from:
            raise ConfigError("reset_bid_head: true needs init_from (from scratch the bidding head is new anyway)")
        if self.policy_parts not in ("all", "cards", "bids", "nil_defence"):
            raise ConfigError(f"policy_parts={self.policy_parts!r}: expected 'all', 'cards', 'bids' or 'nil_defence'")
        if self.policy_parts == "nil_defence" and not self.nil_defence_head:
            raise ConfigError("policy_parts: nil_defence needs nil_defence_head: true (the head it trains)")
        if self.nil_features and not self.card_features:
            raise ConfigError("nil_features: true needs card_features: true (it extends the card features)")
        if self.nil_defence_head and not self.card_features:
            raise ConfigError("nil_defence_head: true needs card_features: true (it scores each card as the card "
                              "head does)")
        if self.distill_keep not in ("score", "loss", "last"):
            raise ConfigError(f"distill_keep={self.distill_keep!r}: expected 'score', 'loss' or 'last'")
        if self.learn_precision not in ("float32", "bfloat16", "auto"):
            raise ConfigError(f"learn_precision={self.learn_precision!r}: expected 'float32', 'bfloat16' or 'auto'")
        kinds = ("self", "pool", "heuristic")
        unknown = [k for k in self.opponents if k not in kinds]
        if unknown:
            raise ConfigError(f"opponents: unknown kind {unknown[0]!r}; expected some of {', '.join(kinds)}")
        shares = list(self.opponents.values())
        if not shares or any(not isinstance(v, (int, float)) or v < 0 for v in shares) or sum(shares) <= 0:
            raise ConfigError(f"opponents={self.opponents!r}: expected non-negative shares with a positive sum, "
                              "e.g. {self: 0.5, pool: 0.25, heuristic: 0.25}")
        if not self.eval_opponents or any(not isinstance(o, str) for o in self.eval_opponents):
            raise ConfigError(f"eval_opponents={self.eval_opponents!r}: expected a list of agent names")
        if self.minibatch_size > self.batch_decisions:
            raise ConfigError(f"minibatch_size={self.minibatch_size} exceeds the decisions per update "
                              f"(num_envs * rollout_steps = {self.batch_decisions})")
        return self

    def _check_nil_explore_target(self) -> None:
        """The adaptive nil exploration: it alone sets nil_explore, starting from it."""
        target = self.nil_explore_target
        if target is None:
            if self.nil_explore_gain != 0.2 or self.nil_explore_max != 1.0:
                raise ConfigError("nil_explore_gain and nil_explore_max steer nil_explore_target's adaptive "
                                  "exploration; set nil_explore_target too, or leave them at their defaults")
            return
        if not 0 < target < 1:
            raise ConfigError(f"nil_explore_target={target!r}: expected a share of table steps in (0, 1), or null")
        if not 0 < self.nil_explore_gain <= 1:
            raise ConfigError(f"nil_explore_gain={self.nil_explore_gain!r}: expected a number in (0, 1] (a step of "
                              "log(nil_explore) an update; above 1 the exploration swings with the rollouts' noise)")
        if not NIL_EXPLORE_FLOOR <= self.nil_explore_max <= 1:
            raise ConfigError(f"nil_explore_max={self.nil_explore_max!r}: expected a number in [{NIL_EXPLORE_FLOOR}, 1]")
        if not NIL_EXPLORE_FLOOR <= self.nil_explore <= self.nil_explore_max:
            raise ConfigError(f"nil_explore={self.nil_explore!r}: with nil_explore_target it is where the adaptive "
                              f"exploration starts: expected a number in [{NIL_EXPLORE_FLOOR}, nil_explore_max="
                              f"{self.nil_explore_max!r}]")
        if self.nil_explore_decisions is not None or self.nil_explore_final:
            raise ConfigError("nil_explore_target adapts nil_explore to the intact nils measured, "
                              "nil_explore_decisions and nil_explore_final schedule it by decisions: both would set "
                              "it; keep one (leave nil_explore_decisions null and nil_explore_final 0)")

    def _check_schedules(self) -> None:
        """The decisions-based learning-rate schedule, the nil exploration's and the bids' play-outs."""
        for name in ("lr_warmup_decisions", "bid_playout_every"):
            if getattr(self, name) < 0:
                raise ConfigError(f"{name}={getattr(self, name)!r}: expected 0 or more")
        for name in ("lr_half_life_decisions", "nil_explore_decisions"):
            if getattr(self, name) is not None and getattr(self, name) < 1:
                raise ConfigError(f"{name}={getattr(self, name)!r}: expected a positive number of decisions, or null")
        if self.bid_playout_deals < 1:
            raise ConfigError(f"bid_playout_deals={self.bid_playout_deals!r}: expected a positive integer")
        if not 0 <= self.lr_floor <= self.learning_rate:
            raise ConfigError(f"lr_floor={self.lr_floor!r}: expected 0 up to learning_rate ({self.learning_rate!r})")
        if self.anneal_lr and (self.lr_warmup_decisions or self.lr_half_life_decisions is not None or self.lr_floor):
            raise ConfigError("lr_warmup_decisions, lr_half_life_decisions and lr_floor shape the schedule of "
                              "anneal_lr: false; anneal_lr: true decays linearly over total_decisions instead: set "
                              "anneal_lr: false, or leave them at their defaults")
        if not 0 <= self.nil_explore_final <= 1:
            raise ConfigError(f"nil_explore_final={self.nil_explore_final!r}: expected a number in [0, 1]")
        if self.nil_explore_final and self.nil_explore_decisions is None:
            raise ConfigError("nil_explore_final is where nil_explore_decisions takes the exploration; set "
                              "nil_explore_decisions too, or leave nil_explore_final at 0")
        self._check_nil_explore_target()
        if self.bid_playout_every and self.bid_learning != "counterfactual":
            raise ConfigError("bid_playout_every: the played-out values join the counterfactual bids' fit: it needs "
                              f"bid_learning: counterfactual (not {self.bid_learning!r})")
        if self.bid_playout_every:
            from spades_env.rules import RulesError, make_rules
            try:
                signals = getattr(make_rules(self.rules), "signals", 0)
            except RulesError:
                signals = 0                          # the rules' own check says what is wrong
            if signals:
                raise ConfigError("bid_playout_every: the play-outs (train/bids/bid_values.py) play the game without "
                                  "messages; rules with signals are not played out yet: set bid_playout_every: 0")

    def _refuse_held_out(self) -> None:
        """Held-out zoo partners stay out of training by content, not name (coop/partners/held_out.py)."""
        from coop.partners.zoo import HeldOutError
        from coop.partners.held_out import refuse_held_out
        try:
            refuse_held_out(self)
        except HeldOutError as exc:
            raise ConfigError(str(exc)) from None

    def _check_real_start(self) -> None:
        """start: real draws from a table recorded under the standard rules: the run's rules must fit it."""
        from spades_env.rules import RulesError, make_rules
        from spades_env.starts import StartError, check_rules, load_table
        try:
            check_rules(load_table(), make_rules(self.rules))
        except (StartError, RulesError) as exc:
            raise ConfigError(str(exc)) from None

    def _check_expert_specs(self) -> None:
        """The expert iteration's agent specs name registered agents, the shares are sane."""
        from agents.specs import AgentSpecError, check_agent_name, parse_agent_spec

        shares = self.expert_opponents
        if (not isinstance(shares, dict) or not shares
                or any(not isinstance(v, (int, float)) or isinstance(v, bool) or v < 0 for v in shares.values())
                or sum(shares.values()) <= 0):
            raise ConfigError(f"expert_opponents={shares!r}: expected agent specs with non-negative shares and a "
                              "positive sum, e.g. {heuristic: 0.75, self: 0.25}")
        specs = [("expert_teacher", self.expert_teacher)]
        specs += [("expert_opponents", k) for k in shares if k not in ("self", "previous")]
        if not isinstance(self.expert_eval_opponents, list) or not self.expert_eval_opponents:
            raise ConfigError(f"expert_eval_opponents={self.expert_eval_opponents!r}: expected a list of agent specs")
        specs += [("expert_eval_opponents", k) for k in self.expert_eval_opponents]
        for field_name, spec in specs:
            try:
                name, _ = parse_agent_spec(spec)
                check_agent_name(name, spec)
            except AgentSpecError as exc:
                raise ConfigError(f"{field_name}: {exc}") from None


FIELD_SECTION = {f.name: section for section, cls in SECTIONS.items() for f in dataclasses.fields(cls)}
FIELDS = {f.name: f for cls in SECTIONS.values() for f in dataclasses.fields(cls)}


_OPTIONAL_FIELDS = {"target_kl": float, "init_from": str, "max_updates": int, "distill_data": str,
                    "distill_value_temperature": float, "bid_entropy_coef": float,
                    "bid_gae_lambda": float, "nil_explore_max_bid": int, "lr_half_life_decisions": int,
                    "nil_explore_decisions": int, "nil_explore_target": float, "expert_ray": str}   # null allowed


def _check_type(name: str, value: Any) -> Any:
    f = FIELDS[name]
    default = f.default if f.default is not dataclasses.MISSING else f.default_factory()
    if name == "distill_data" and isinstance(value, (list, tuple)):
        if not value or not all(isinstance(folder, str) for folder in value):
            raise ConfigError(f"{name}={value!r}: expected a folder or a non-empty list of folders ({f.metadata['help']})")
        return list(value)
    if name in _OPTIONAL_FIELDS:
        if value is None:
            return None
        expected: type = _OPTIONAL_FIELDS[name]
    else:
        expected = type(default)
    if expected in (int, float) and isinstance(value, str):
        try:                             # YAML reads 2e6 as a string
            value = float(value.replace("_", ""))
        except ValueError:
            pass
    if expected is float and isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    if expected is int and isinstance(value, float) and value.is_integer():
        return int(value)
    if not isinstance(value, expected) or (expected is int and isinstance(value, bool)):
        raise ConfigError(f"{name}={value!r}: expected {expected.__name__} ({f.metadata['help']})")
    return value


def flatten_sections(values: dict, source: str = "config") -> dict:
    """``field: value`` pairs from a mapping that gives fields flat, inside their sections
    (``ppo: {clip: 0.2}``), or both; a field given twice, a section that is not a mapping or a
    field in another section than its own is refused."""
    flat: dict = {}
    where: dict = {}
    for key, value in values.items():
        if key in SECTIONS:
            if not isinstance(value, dict):
                raise ConfigError(f"{source}: section {key!r} must be a mapping of field: value, got "
                                  f"{type(value).__name__} (fields: {', '.join(_section_fields(key))})")
            for name, inner in value.items():
                if name not in FIELDS:
                    close = difflib.get_close_matches(str(name), _section_fields(key), n=1)
                    hint = f" (did you mean {close[0]!r}?)" if close else ""
                    raise ConfigError(f"{source}: unknown field {name!r} in section {key!r}{hint}; see "
                                      "`spades-train --show-config`")
                if FIELD_SECTION[name] != key:
                    raise ConfigError(f"{source}: field {name!r} belongs to section {FIELD_SECTION[name]!r}, "
                                      f"not {key!r}")
                if name in flat:
                    raise ConfigError(f"{source}: field {name!r} is given twice ({where[name]} and {key}.{name})")
                flat[name], where[name] = inner, f"{key}.{name}"
        else:
            if key in flat:
                raise ConfigError(f"{source}: field {key!r} is given twice ({where[key]} and {key})")
            flat[key], where[key] = value, str(key)
    return flat


def _section_fields(section: str) -> list[str]:
    return [f.name for f in dataclasses.fields(SECTIONS[section])]


def config_from_dict(values: dict, source: str = "config") -> TrainConfig:
    """Build and validate a config from a mapping, flat or by section (unknown fields are refused)."""
    if not isinstance(values, dict):
        raise ConfigError(f"{source}: expected a mapping of field: value, got {type(values).__name__}")
    checked = {}
    for name, value in flatten_sections(values, source).items():
        if name not in FIELDS:
            close = difflib.get_close_matches(str(name), list(FIELDS) + list(SECTIONS), n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            raise ConfigError(f"{source}: unknown field {name!r}{hint}; see `spades-train --show-config`")
        checked[name] = _check_type(name, value)
    return TrainConfig.from_flat(checked).validate()


def parse_override(text: str) -> tuple[str, Any]:
    """``"field=value"`` or ``"section.field=value"`` (the value read as YAML: ``epochs=2``,
    ``ppo.clip=0.3``, ``critic=central``); returns the field's flat name and the value."""
    if "=" not in text:
        raise ConfigError(f"override {text!r}: expected field=value")
    name, raw = text.split("=", 1)
    name = name.strip()
    if "." in name:
        section, name = name.split(".", 1)
        if section not in SECTIONS:
            raise ConfigError(f"override {text!r}: no section {section!r}; sections: {', '.join(SECTIONS)}")
        if name in FIELDS and FIELD_SECTION[name] != section:
            raise ConfigError(f"override {text!r}: field {name!r} belongs to section {FIELD_SECTION[name]!r}")
    try:
        return name, yaml.safe_load(raw)
    except yaml.YAMLError as exc:
        raise ConfigError(f"override {text!r}: the value is not valid YAML ({' '.join(str(exc).split())})") from None


# Fields a resumed run may change (they do not change what is learned, only how long the run
# lasts and what is measured along the way).
RESUMABLE_CHANGES = frozenset({
    "max_updates", "total_decisions", "eval_every", "eval_deals", "eval_opponents", "final_eval_deals",
    "eval_against_start", "checkpoint_every", "keep_checkpoints", "tensorboard", "progress", "threads", "compile_env",
    "env_backend", "expert_rounds", "expert_workers", "expert_eval_deals", "expert_eval_opponents",
    "expert_eval_start"})
# Of those, the ones that say how long a run lasts: raising one continues a finished run.
LENGTH_FIELDS = ("total_decisions", "max_updates", "expert_rounds")


def load_config(path: Optional[str | Path] = None, overrides: Sequence[str] = ()) -> TrainConfig:
    """Read a YAML config (or start from the defaults) and apply ``field=value`` overrides."""
    values: dict = {}
    source = "defaults"
    if path is not None:
        source = str(path)
        from spades_env.safe_yaml import YamlLimitError, load_yaml_file
        try:                  # within bounds: size, UTF-8, no aliases, nesting (as rules and study files)
            values = load_yaml_file(path, "config") or {}
        except YamlLimitError as exc:
            raise ConfigError(str(exc)) from None
        except OSError as exc:
            raise ConfigError(f"cannot read config {path}: {exc.strerror or exc}") from None
        except yaml.YAMLError as exc:
            raise ConfigError(f"{path}: not valid YAML ({' '.join(str(exc).split())})") from None
        if not isinstance(values, dict):
            raise ConfigError(f"{path}: expected a mapping of field: value, got {type(values).__name__}")
    values = flatten_sections(values, source)
    for item in overrides:
        name, value = parse_override(item)
        if name not in FIELDS:         # a --set typo was blamed on the YAML file
            close = difflib.get_close_matches(str(name), list(FIELDS), n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            raise ConfigError(f"--set {item}: unknown field {name!r}{hint}; see `spades-train --show-config`")
        try:
            _check_type(name, value)
        except ConfigError as exc:
            raise ConfigError(f"--set {item}: {exc}") from None
        values[name] = value
    return config_from_dict(values, source)


def _default(f: dataclasses.Field) -> Any:
    return f.default if f.default is not dataclasses.MISSING else f.default_factory()


def fields_markdown() -> str:
    """Every field as Markdown tables, one per section (field, default, meaning):
    docs/training.md holds them, and a test keeps the two the same."""
    parts = []
    for section, cls in SECTIONS.items():
        rows = [f"**`{section}`**: {cls.__doc__}", "", "| field | default | meaning |", "|---|---|---|"]
        for f in dataclasses.fields(cls):
            meaning = " ".join(f.metadata["help"].split()).replace("|", "\\|")
            rows.append(f"| `{f.name}` | `{_default(f)!r}` | {meaning} |")
        parts.append("\n".join(rows))
    return "\n\n".join(parts)


def describe_fields() -> str:
    """Every field by section, with its default and help text (``spades-train --show-config``).
    A YAML config may give the fields flat or under their section's name."""
    lines = ["Fields go in a YAML config flat (clip: 0.2) or under their section (ppo: {clip: 0.2});",
             "override one with --set clip=0.2 or --set ppo.clip=0.2."]
    for section, cls in SECTIONS.items():
        lines.append(f"\n[{section}] {cls.__doc__}")
        for f in dataclasses.fields(cls):
            help_text = textwrap.fill(" ".join(f.metadata["help"].split()), 100, initial_indent="      ",
                                      subsequent_indent="      ")
            lines.append(f"  {f.name}: {_default(f)!r}\n{help_text}")
    return "\n".join(lines)
