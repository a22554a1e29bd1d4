"""Training for cooperation (issue 41): symmetry augmentation, Other-Play and partner populations.

Three tools that ``spades-train`` uses when their config fields ask for them (all off by
default, so every other run is unchanged, decision for decision):

- :func:`augment_batch` (``symmetry_augment``): every decision of the learner's PPO batch is
  replaced by its image under a relabelling of the side suits drawn per decision (the identity
  included): the observation, the legal mask, the action taken and, with a central critic, the
  full state. Advantages, returns and values are unchanged (a relabelled game scores the same).
  The old log-probability in the PPO ratio is recomputed as the policy's log-probability of the
  relabelled action under the relabelled observation, before the update's first gradient step:
  the policy then still is the one that played the rollout, so the ratio starts at 1.
- :class:`OtherPlay` (``other_play``): each table draws a relabelling per episode; the chosen
  seats see that episode through it. ``partner``: seats 2 and 3 (the second seat of each
  partnership: the learner's partner, and with self-play the other side's too); ``learner``:
  seats 0 and 1. Whoever plays such a seat gets the relabelled observation and mask, answers in
  the relabelled game, and the action is mapped back with the inverse relabelling before the
  engine steps. The learner's stored decisions are the relabelled ones it saw.
- :class:`PartnerPopulation` (``partner_population``, ``partner_population_share``): on a share
  of the tables (drawn per episode) the learner's partner seat is played by a member of a fixed
  population, Fictitious Co-Play style: zoo partners of the train split (held-out and
  validation partners are refused) and training checkpoints of other runs, by glob, intermediate
  ones included. Checkpoint members sample from their policy, zoo members play as their agent.

Each piece takes explicit inputs (tensors, generators, devices) and keeps its random stream and
per-table state in ``state_dict`` for exact resumes.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Optional, Sequence

import torch
import torch.nn.functional as F

from spades_env.files import MAX_MODEL_BYTES, file_sha256


OTHER_PLAY_MODES = ("none", "partner", "learner")
RELABELLED_SEATS = {"partner": (2, 3), "learner": (0, 1)}
POPULATION = 3        # controller code of a seat played by a population member (LEARNER, POOL, HEURISTIC are 0-2)


class CooperationError(ValueError):
    """A cooperation setting that cannot be used (names the setting and what is expected)."""


# ------------------------------------------------------------------ symmetry augmentation
@torch.no_grad()
def recomputed_logp(logits_of: Callable[[torch.Tensor, torch.Tensor], torch.Tensor], obs: torch.Tensor,
                    mask: torch.Tensor, action: torch.Tensor, chunk: int = 8192) -> torch.Tensor:
    """log pi(action | obs) for every row, ``logits_of(obs, mask)`` in chunks (no gradient)."""
    out = torch.empty(action.shape[0], dtype=torch.float32, device=action.device)
    for start in range(0, action.shape[0], chunk):
        rows = slice(start, start + chunk)
        logp_all = F.log_softmax(logits_of(obs[rows], mask[rows]).float(), 1)
        out[rows] = logp_all.gather(1, action[rows, None])[:, 0]
    return out


def _map_by_group(values: torch.Tensor, index: torch.Tensor, groups: list[torch.Tensor]) -> torch.Tensor:
    """Rows mapped each by its relabelling, one column gather per relabelling (what the batched
    per-row map gives, without its (rows, width) int64 index: 8 times the batch's size)."""
    out = torch.empty_like(values)
    for g, rows in enumerate(groups):
        if rows.numel():
            out[rows] = values[rows].index_select(1, index[g].to(values.device))
    return out


def augment_batch(data: dict, maps, generator: torch.Generator,
                  logits_of: Callable[[torch.Tensor, torch.Tensor], torch.Tensor],
                  chunk: int = 8192) -> tuple[dict, torch.Tensor]:
    """The learner's flat PPO batch ``data`` (obs, mask, action, logp, and state for a central
    critic) with every row relabelled by its own relabelling drawn from ``maps`` (a
    ``BatchedSymmetries``); the rows' ``logp`` recomputed by ``logits_of`` (the policy as it
    played the rollout) under the relabelled observation and mask. Other entries (advantages,
    returns, values) are kept. Returns the new dict (``data`` is not modified: it may hold views
    of the rollout) and the relabelling of each row."""
    n = data["action"].shape[0]
    which = maps.sample(n, generator)
    groups = [torch.nonzero(which == g)[:, 0] for g in range(len(maps))]
    out = dict(data)
    out["obs"] = _map_by_group(data["obs"], maps.observation_index, groups)
    out["mask"] = _map_by_group(data["mask"], maps.action_index, groups)
    out["action"] = maps.map_actions(data["action"], which, check=False)
    if data.get("state") is not None:
        out["state"] = _map_by_group(data["state"], maps.state_index, groups)
    out["logp"] = recomputed_logp(logits_of, out["obs"], out["mask"], out["action"], chunk)
    return out, which


# ------------------------------------------------------------------ Other-Play
class OtherPlay:
    """Which relabelling each table's episode is seen through, and by which seats.

    ``choices``: the group positions drawn from (default: the whole group; ``[0]``, the identity
    alone, makes the run play exactly as plain self-play). The draws come from a generator of
    its own, seeded by ``seed``, so the rest of the run's random streams are untouched."""

    def __init__(self, rules, mode: str, tables: int, device: torch.device, seed: int,
                 choices: Optional[Sequence[int]] = None) -> None:
        from spades_env import symmetries

        if mode not in RELABELLED_SEATS:
            raise CooperationError(f"other_play={mode!r}: expected one of {', '.join(OTHER_PLAY_MODES)}")
        self.mode = mode
        self.maps = symmetries(rules).batched(device)
        self.device = device
        positions = list(range(len(self.maps))) if choices is None else [int(c) for c in choices]
        if not positions or any(not 0 <= p < len(self.maps) for p in positions):
            raise CooperationError(f"choices={choices!r}: expected positions 0..{len(self.maps) - 1} in the group")
        self.choices = torch.tensor(positions, dtype=torch.int64, device=device)
        self.seats = torch.zeros(4, dtype=torch.bool, device=device)
        self.seats[list(RELABELLED_SEATS[mode])] = True
        self.generator = torch.Generator(device=device).manual_seed(int(seed))
        self.which = torch.zeros(tables, dtype=torch.int64, device=device)
        self.redraw(torch.ones(tables, dtype=torch.bool, device=device))

    def redraw(self, tables: torch.Tensor) -> None:
        """New relabellings for the tables ((B,) bool) whose episode starts now."""
        n = int(tables.sum())
        if n:
            pick = torch.randint(0, len(self.choices), (n,), generator=self.generator, device=self.device)
            self.which[tables] = self.choices[pick]

    def seen(self, seat: torch.Tensor) -> torch.Tensor:
        """(B,) the relabelling the seat to act at each table sees (the identity, 0, where its
        seat is not relabelled)."""
        return torch.where(self.seats[seat], self.which, torch.zeros_like(self.which))

    def view(self, seat: torch.Tensor, obs: torch.Tensor, mask: torch.Tensor,
             state: Optional[torch.Tensor] = None):
        """The observation, mask (and full state) as the seat to act at each table sees them."""
        which = self.seen(seat)
        obs = self.maps.map_observations(obs, which, check=False)
        mask = self.maps.map_masks(mask, which, check=False)
        if state is not None:
            state = self.maps.map_states(state, which, check=False)
        return obs, mask, state

    def real_actions(self, seat: torch.Tensor, actions: torch.Tensor) -> torch.Tensor:
        """Actions chosen in the seen games, as actions of the real games."""
        inverse = self.maps.inverse_index[self.seen(seat)]
        return self.maps.map_actions(actions, inverse, check=False)

    def seat_view(self, seat: int, obs: torch.Tensor, state: Optional[torch.Tensor] = None):
        """Every table's observation (and state) of one fixed ``seat`` as that seat sees it."""
        which = self.which if bool(self.seats[seat]) else torch.zeros_like(self.which)
        obs = self.maps.map_observations(obs, which, check=False)
        if state is not None:
            state = self.maps.map_states(state, which, check=False)
        return obs, state

    def state_dict(self) -> dict:
        return {"which": self.which.cpu(), "generator": self.generator.get_state()}

    def load_state_dict(self, data: dict) -> None:
        self.which = data["which"].to(self.device)
        self.generator.set_state(data["generator"])


# ------------------------------------------------------------------ partner populations
@dataclass
class Member:
    """One partner of a training population: ``act(obs, mask, generator) -> actions`` on batched
    tensors (a checkpoint samples with ``generator``, the run's saved stream, so resumes are exact)."""

    label: str
    source: str            # 'zoo' or 'checkpoint'
    digest: str            # SHA-256 of the spec, or of the checkpoint file's bytes
    act: Callable[[torch.Tensor, torch.Tensor, torch.Generator], torch.Tensor]


def _is_path_entry(entry: str) -> bool:
    from coop.partners.held_out import is_path_entry
    return is_path_entry(entry)


def population_files(entry: str, base: Optional[Path] = None) -> list[Path]:
    """The checkpoint files a glob (or path) names, sorted; relative ones from ``base``."""
    from coop.partners.held_out import matched_files
    return matched_files(entry, base)


def _zoo_member(name: str, seed: int, device: torch.device, allow_held_out: bool = False) -> Member:
    from coop.partners import zoo
    from agents.specs import parse_agent_spec

    try:
        partner = zoo.partner(name, purpose="evaluation" if allow_held_out else "training")
    except zoo.HeldOutError:
        raise CooperationError(f"partner_population: zoo partner {name!r} is held out: the held-out split is for "
                               "evaluation only; set allow_held_out: true to train with it on purpose") from None
    except KeyError:
        raise CooperationError(f"partner_population: {name!r} is neither a zoo partner nor a checkpoint glob; zoo "
                               f"partners of the train split: {', '.join(p.name for p in zoo.partners('train'))}") \
            from None
    if partner.split != "train" and not allow_held_out:
        raise CooperationError(f"partner_population: zoo partner {name!r} is in the {partner.split} split; training "
                               f"populations take the train split only ({', '.join(p.name for p in zoo.partners('train'))})")
    agent_name, options = parse_agent_spec(partner.spec)
    if agent_name == "heuristic":
        from agents.heuristic import HeuristicAgent
        agent = HeuristicAgent(seed=seed, **options)
        return Member(name, "zoo", partner.hash, lambda obs, mask, generator: agent.act_batch(obs, mask).to(obs.device))
    path = zoo.model_file(partner.spec)
    if path is not None:
        member = _checkpoint_member(path, device, label=name)
        return Member(name, "zoo", partner.hash, member.act)
    raise CooperationError(f"partner_population: zoo partner {name!r} ({partner.spec}) has no batched form; "
                           "training populations take heuristic variants and neural models")


def _checkpoint_member(path: Path, device: torch.device, label: Optional[str] = None) -> Member:
    from agents.neural import policy_from_checkpoint, read_checkpoint
    from agents.networks import sample_actions

    policy, _ = policy_from_checkpoint(read_checkpoint(path), str(path))
    policy = policy.to(device)

    @torch.no_grad()
    def act(obs: torch.Tensor, mask: torch.Tensor, generator: torch.Generator) -> torch.Tensor:
        return sample_actions(torch.softmax(policy(obs, mask), 1), generator)

    digest = file_sha256(path, "population member", MAX_MODEL_BYTES)   # read_checkpoint has checked the file
    return Member(label or str(path), "checkpoint", digest, act)


def resolve_population(entries: Sequence[str], seed: int, device: torch.device,
                       base: Optional[Path] = None, allow_held_out: bool = False) -> list[Member]:
    """The members named by ``entries``: zoo partner names (train split only) and checkpoint
    globs or paths (every file matched is a member; a glob that matches nothing is an error).
    A file with a held-out or validation partner's bytes, or a spec that means one, is refused
    whatever it is called (coop/partners/held_out.py) unless ``allow_held_out``."""
    from coop.partners import zoo
    from coop.partners.held_out import POPULATION_SPLITS, check_files

    members: list[Member] = []
    for i, entry in enumerate(entries):
        if not isinstance(entry, str) or not entry.strip():
            raise CooperationError(f"partner_population[{i}]={entry!r}: expected a zoo partner name or a checkpoint glob")
        try:
            if _is_path_entry(entry):
                files = population_files(entry, base)
                if not files:
                    raise CooperationError(f"partner_population[{i}]={entry!r}: no checkpoint file matches (train "
                                           "the runs it names first)")
                if not allow_held_out:
                    check_files(f"partner_population[{i}]={entry!r}", files)
                members += [_checkpoint_member(f, device) for f in files]
            else:
                if not allow_held_out and entry not in {p.name for p in zoo.all_partners()}:
                    zoo.refuse_for_training(f"partner_population[{i}]={entry!r}", spec=entry, splits=POPULATION_SPLITS)
                members.append(_zoo_member(entry, seed + 7919 * len(members), device, allow_held_out))
        except zoo.HeldOutError as exc:
            raise CooperationError(str(exc)) from None
    return members


class PartnerPopulation:
    """Which tables have a population member as the learner's partner, and which member.

    ``assign`` runs after the opponent pool has drawn a table's sides: on a share ``share`` of
    the starting episodes the learner's partner seat (``learner_side + 2``) is handed to a member
    drawn uniformly. Draws use the trainer's generator (saved in its checkpoints)."""

    def __init__(self, members: list[Member], share: float, tables: int, generator: torch.Generator,
                 device: torch.device) -> None:
        if not members:
            raise CooperationError("partner_population: no members")
        self.members, self.share, self.generator, self.device = members, share, generator, device
        self.member = torch.full((tables,), -1, dtype=torch.int64, device=device)     # -1: no member

    def assign(self, tables: torch.Tensor, controller: torch.Tensor, learner_side: torch.Tensor) -> None:
        """Draw the members of the starting episodes ((B,) bool ``tables``); sets ``controller``."""
        idx = torch.nonzero(tables)[:, 0]
        if idx.numel() == 0:
            return
        draw = torch.rand(idx.numel(), generator=self.generator, device=self.device)
        pick = torch.randint(0, len(self.members), (idx.numel(),), generator=self.generator, device=self.device)
        chosen = torch.where(draw < self.share, pick, torch.full_like(pick, -1))
        self.member[idx] = chosen
        partner_seat = learner_side[idx] + 2
        with_member = chosen >= 0
        rows, seats = idx[with_member], partner_seat[with_member]
        controller[rows, seats] = POPULATION

    def actions(self, obs: torch.Tensor, mask: torch.Tensor, rows: torch.Tensor, actions: torch.Tensor) -> None:
        """Fill ``actions`` at the rows ((B,) bool) that population members play."""
        for m in torch.unique(self.member[rows]).tolist():
            where = torch.nonzero(rows & (self.member == m))[:, 0]
            actions[where] = self.members[m].act(obs[where], mask[where], self.generator).to(actions.device)

    def describe(self) -> list[dict]:
        return [{"label": m.label, "source": m.source, "sha256": m.digest} for m in self.members]

    def state_dict(self) -> dict:
        return {"members": self.describe(), "member": self.member.cpu()}

    def load_state_dict(self, data: dict) -> None:
        """Restore the tables' members; the population must be the one the run started with."""
        if data["members"] != self.describe():
            saved = {m["label"]: m["sha256"][:12] for m in data["members"]}
            now = {m["label"]: m["sha256"][:12] for m in self.describe()}
            raise CooperationError(f"partner_population changed since the checkpoint (was {saved}, now {now}); "
                                   "resume with the same files")
        self.member = data["member"].to(self.device)


class Cooperation:
    """The cooperation settings of one run, as the trainer's collector and update use them: an
    :class:`OtherPlay` (or None), a :class:`PartnerPopulation` (or None) and whether the PPO
    batch is augmented. :meth:`from_config` returns None when every setting is off, so that a run
    without them takes exactly the code path it took before they existed."""

    def __init__(self, other_play: Optional[OtherPlay], population: Optional[PartnerPopulation],
                 augment_maps=None) -> None:
        self.other_play, self.population, self.augment_maps = other_play, population, augment_maps

    @classmethod
    def from_config(cls, cfg, rules, tables: int, generator: torch.Generator,
                    device: torch.device) -> Optional["Cooperation"]:
        from spades_env import symmetries

        other_play = None
        if cfg.other_play != "none":
            other_play = OtherPlay(rules, cfg.other_play, tables, device, seed=cfg.seed + 4_000_037)
        population = None
        if cfg.partner_population:
            members = resolve_population(cfg.partner_population, cfg.seed + 5_000_011, device,
                                         allow_held_out=cfg.allow_held_out)
            population = PartnerPopulation(members, cfg.partner_population_share, tables, generator, device)
        maps = symmetries(rules).batched(device) if cfg.symmetry_augment else None
        if other_play is None and population is None and maps is None:
            return None
        return cls(other_play, population, maps)

    # -------------------------------------------------------------- the collector's hooks
    def episodes_started(self, tables: torch.Tensor, opponents) -> None:
        """After the opponent pool drew the sides of the starting episodes ((B,) bool)."""
        if self.population is not None:
            self.population.assign(tables, opponents.controller, opponents.learner_side)
        if self.other_play is not None:
            self.other_play.redraw(tables)

    def view(self, seat: torch.Tensor, obs: torch.Tensor, mask: torch.Tensor, state: Optional[torch.Tensor]):
        if self.other_play is None:
            return obs, mask, state
        return self.other_play.view(seat, obs, mask, state)

    def real_actions(self, seat: torch.Tensor, actions: torch.Tensor) -> torch.Tensor:
        return actions if self.other_play is None else self.other_play.real_actions(seat, actions)

    def seat_view(self, seat: int, obs: torch.Tensor, state: Optional[torch.Tensor]):
        return (obs, state) if self.other_play is None else self.other_play.seat_view(seat, obs, state)

    def population_actions(self, obs: torch.Tensor, mask: torch.Tensor, controller: torch.Tensor,
                           actions: torch.Tensor) -> None:
        if self.population is not None:
            rows = controller == POPULATION
            if bool(rows.any()):
                self.population.actions(obs, mask, rows, actions)

    # -------------------------------------------------------------- the update's hook
    def augment(self, data: dict, logits_of, generator: torch.Generator) -> dict:
        """The PPO batch, relabelled row by row with ``symmetry_augment`` (else as it is)."""
        if self.augment_maps is None or data["action"].shape[0] == 0:
            return data
        return augment_batch(data, self.augment_maps, generator, logits_of)[0]

    def state_dict(self) -> dict:
        return {"other_play": None if self.other_play is None else self.other_play.state_dict(),
                "population": None if self.population is None else self.population.state_dict()}

    def load_state_dict(self, data: Optional[dict]) -> None:
        if data is None:
            raise CooperationError("the checkpoint holds no cooperation state (it was written by a run without "
                                   "other_play or partner_population)")
        if self.other_play is not None:
            self.other_play.load_state_dict(data["other_play"])
        if self.population is not None:
            self.population.load_state_dict(data["population"])


__all__ = ["Cooperation", "OTHER_PLAY_MODES", "RELABELLED_SEATS", "POPULATION", "CooperationError", "augment_batch",
           "recomputed_logp", "OtherPlay", "Member", "PartnerPopulation", "resolve_population", "population_files"]
