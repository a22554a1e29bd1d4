"""The partner zoo: a versioned list of partners to test cooperation with (``spades-coop zoo``).

Each partner has a name, an agent spec (anything ``spades-eval`` takes), a split and a group:

- ``train``: partners a training run may play with;
- ``validation``: partners to choose checkpoints and settings on;
- ``held-out``: partners only an evaluation may see (the ad-hoc teamwork test).

Groups are families that cooperate alike: the heuristic's convention settings (cautious, standard,
bold), the search player's budgets and the neural policies. A cross-play table of the zoo shows
them as blocks.

Training code asks for partners through :func:`partners`, which refuses the held-out split unless
the caller says it evaluates (``purpose="evaluation"``), so that held-out partners cannot leak into
training by accident. ``hash`` is a SHA-256 of what defines a partner (its spec and, for a model,
the checkpoint's bytes): a partner that changes under the same name changes its hash.

Version 2 adds policies the project trained from different seeds, shipped in ``agents/models``
and named by ``neural:model=NAME`` so that a spec means the same file on every machine: three
seeds imitating the heuristic and then improving by PPO (``configs/zoo_imitation.yaml``) and three
seeds of plain self-play from scratch (``configs/zoo_scratch.yaml``). Seed 1 of each is a training
partner, seed 2 a validation one, seed 3 held out.

Version 3 retrains the three from-scratch seeds with the from-scratch recipe's bidding
(counterfactual bid values, the bag cost, desynchronised tables: configs/zoo_scratch.yaml):
version 2's bid 2 on every hand (0.000 bits about the hand); version 3's bids tell 0.86-0.93 bits.
Names and splits are unchanged.

Version 4 adds a family of learnt conventions that differ on purpose: *biased* partners trained
by hidden-utility self-play (Yu et al., ICLR 2023; ``reward_bias``, coop/methods/hidden_utility.py),
each from scratch with the zoo's from-scratch settings and a reward that adds points for events
of its own: ``ruffer`` (trumps in and leads trumps; train), ``overtaker`` (bids high and takes its
partner's tricks; validation), ``nil-seeker`` (bids nil, leaves its partner's tricks, saves its
trumps; held out). Their files are agents/models/zoo_biased_<name>.pt (configs/zoo_biased.yaml).
Version 4 also adds *diverse* partners, a population grown in the style of Maximum Entropy
Population training (``diversity_from``, coop/methods/diversity.py): each from scratch and paid to take
actions the members before it (and version 4's scratch-s1) rarely take; ``diverse-s1`` (train)
differs from that scratch-s1, ``diverse-s2`` (validation) from both, ``diverse-s3`` (held out) from all three
(configs/zoo_diverse.yaml).

Version 5 retrains the three from-scratch seeds with the from-scratch recipe's version 2 (card
features, a central critic, more gradient steps per decision; configs/zoo_scratch.yaml, 10M
decisions): their bids tell more about their hands and their card play is stronger (numbers in
docs/cooperation.md). Version 4's scratch-s1, the policy the diverse partners were paid to leave,
stays as agents/models/zoo_scratch_v3_s1.pt (configs/zoo_scratch_v3.yaml). Names and splits are
unchanged.

Version 6 retrains the three from-scratch seeds with the same recipe at GPU scale (configs/zoo_scratch.yaml
= configs/scratch_gpu.yaml's fields: 16,384 tables, 33M decisions a seed, three seeds at once on one
H100 in about six minutes): every seed's bids tell more than 1 bit about its hand (1.07-1.13; version
5's 0.95-1.05); they score a few points a single hand better, whole games no better. Names and
splits are unchanged.

Version 7 respells the two search partners ``search_v1:worlds=N``: the agent ``search`` gained
exact endgames on 2026-12-01 and ``search_v1`` is the search they always were, decision for
decision (tests/test_search_v1_golden.py). They play as before; names and splits are unchanged.

People's partners: a policy cloned from people's games (``spades-coop clone RECORDS --name NAME``
writes ``agents/models/human_NAME.pt``) is the partner ``human-NAME`` (``neural:model=human_NAME``)
of the group ``human``, always held out: people's games are for testing with, never for training,
so where people's games exist a human proxy joins the held-out scenarios (as in Overcooked-AI).
They are found by their files (:func:`people_partners`) and listed after :data:`PARTNERS`, the
versioned zoo; :func:`all_partners` is both, and every function here reads it.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Optional, Sequence

from spades_env.files import MAX_MODEL_BYTES, FileRuleError, open_input
from evaluation.model_files import file_digest, model_file, weights_digest   # (the journal uses them too)

ZOO_VERSION = 7
SPLITS = ("train", "validation", "held-out")
PURPOSES = ("training", "evaluation")



class HeldOutError(PermissionError):
    """Held-out partners were asked for without ``purpose="evaluation"``."""


@dataclass(frozen=True)
class Partner:
    """One partner of the zoo."""

    name: str
    spec: str
    split: str
    group: str
    about: str

    @property
    def hash(self) -> str:
        return partner_hash(self.spec)

    def to_dict(self) -> dict:
        return {"name": self.name, "spec": self.spec, "split": self.split, "group": self.group,
                "about": self.about, "hash": self.hash}


def _h(name: str, spec: str, split: str, group: str, about: str) -> Partner:
    return Partner(name, spec, split, group, about)


def _trained_seeds(group: str, about: str) -> tuple[Partner, ...]:
    """Three seeds of one training recipe, shipped as agents/models/zoo_<group>_s<seed>.pt: seed 1
    a training partner, seed 2 a validation one, seed 3 held out."""
    return tuple(_h(f"{group}-s{seed}", f"neural:model=zoo_{group}_s{seed}", split, group,
                    about if seed == 1 else f"the same, seed {seed}")
                 for seed, split in zip((1, 2, 3), SPLITS))


PARTNERS: tuple[Partner, ...] = (
    # Standard conventions: today's heuristic and variants that only change what its cards say.
    _h("heuristic", "heuristic", "train", "standard", "the default heuristic"),
    _h("high-asks", "heuristic:discards=high_asks", "train", "standard", "a high discard asks for the suit"),
    _h("low-asks", "heuristic:discards=low_asks", "held-out", "standard", "a low discard asks for the suit"),
    _h("partner-leads", "heuristic:leads=partner_suit", "validation", "standard", "leads its partner's suit"),
    _h("trump-leads", "heuristic:leads=trumps", "held-out", "standard", "leads trumps to draw them"),
    # Cautious: bids low, no nil, leaves its partner alone.
    _h("conservative", "heuristic:bidding=conservative", "train", "cautious", "bids its hand low"),
    _h("never-nil", "heuristic:bidding=conservative,nil=never", "validation", "cautious",
       "bids low and never nil"),
    _h("cautious", "heuristic:bidding=conservative,nil=never,cover=none", "held-out", "cautious",
       "bids low, never nil, does not cover a partner's nil"),
    # Bold: bids high, nils eagerly, covers hard.
    _h("aggressive", "heuristic:bidding=aggressive", "train", "bold", "bids its hand high"),
    _h("eager-nil", "heuristic:bidding=aggressive,nil=eager", "validation", "bold", "bids high and nil often"),
    _h("bold", "heuristic:bidding=aggressive,nil=eager,cover=strong", "held-out", "bold",
       "bids high, nil often, covers a partner's nil hard"),
    # Search budgets (play-outs by the heuristic over sampled deals).
    # search_v1: the partners as they were before `search` gained exact endgames (2026-12-01).
    _h("search-8", "search_v1:worlds=8", "train", "search", "search over 8 sampled worlds"),
    _h("search-32", "search_v1:worlds=32", "held-out", "search", "search over 32 sampled worlds"),
    # Neural policies shipped with the project.
    # "neural" is the policy shipped from 2026-11-26 to 2026-11-27 (expert iteration's round 4),
    # pinned by its own name so that shipping a newer `neural` leaves this zoo version as it was.
    _h("neural", "neural_v2", "train", "neural", "expert iteration round 4 (neural_v2, shipped until 2026-11-27)"),
    _h("neural-v1", "neural_v1", "held-out", "neural", "the policy shipped before it (PPO and play-out fits)"),
    # Trained by the project (version 2): seeds 1, 2, 3 in the train, validation and held-out splits.
    *_trained_seeds("imitation", "imitates the heuristic, then PPO (configs/zoo_imitation.yaml, seed 1)"),
    *_trained_seeds("scratch", "self-play from scratch, the from-scratch recipe (version 2) at GPU scale, "
                               "33M decisions (configs/zoo_scratch.yaml, seed 1)"),
    # Hidden utilities (version 4): from scratch as the scratch seeds, each with its own reward bias.
    _h("ruffer", "neural:model=zoo_biased_ruffer", "train", "biased",
       "from scratch, paid besides the score to trump in and lead trumps (configs/zoo_biased.yaml)"),
    _h("overtaker", "neural:model=zoo_biased_overtaker", "validation", "biased",
       "from scratch, paid to bid high and beat its partner's winning cards"),
    _h("nil-seeker", "neural:model=zoo_biased_nil_seeker", "held-out", "biased",
       "from scratch, paid to bid nil, charged for beating its partner and for trumping in"),
    # A population grown MEP-style (version 4): each member paid to differ from the ones before it.
    _h("diverse-s1", "neural:model=zoo_diverse_s1", "train", "diverse",
       "from scratch, paid to take actions scratch-s1 rarely takes (configs/zoo_diverse.yaml)"),
    _h("diverse-s2", "neural:model=zoo_diverse_s2", "validation", "diverse",
       "from scratch, paid to differ from scratch-s1 and diverse-s1"),
    _h("diverse-s3", "neural:model=zoo_diverse_s3", "held-out", "diverse",
       "from scratch, paid to differ from scratch-s1, diverse-s1 and diverse-s2"),
)

PEOPLE_GROUP = "human"
PEOPLE_PREFIX = "human_"            # agents/models/human_NAME.pt is the partner human-NAME
PEOPLE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,39}")


def people_partners() -> tuple[Partner, ...]:
    """The partners cloned from people's games: each ``agents/models/human_NAME.pt`` (written by
    ``spades-coop clone --name NAME``), held out, in name order."""
    from agents import neural                       # its MODELS_DIR, read now (tests point it elsewhere)
    found = []
    for path in sorted(Path(neural.MODELS_DIR).glob(f"{PEOPLE_PREFIX}*.pt")):
        name = path.stem[len(PEOPLE_PREFIX):]
        if PEOPLE_NAME.fullmatch(name) and path.is_file():
            found.append(_h(f"human-{name}", f"neural:model={path.stem}", "held-out", PEOPLE_GROUP,
                            "cloned from people's games (spades-coop clone)"))
    return tuple(found)


def all_partners() -> tuple[Partner, ...]:
    """The versioned zoo (:data:`PARTNERS`) and the partners cloned from people's games."""
    return PARTNERS + people_partners()


def partner_hash(spec: str) -> str:
    """SHA-256 over the spec and, for a model, the checkpoint's bytes (``missing`` if absent)."""
    digest = hashlib.sha256(spec.encode())
    path = model_file(spec)
    if path is not None:
        digest.update(b"\0model\0")
        try:                                   # by the input rule: never reads a device or a FIFO
            with open_input(path, "partner model", MAX_MODEL_BYTES) as file:
                for block in iter(lambda: file.read(1 << 20), b""):
                    digest.update(block)
        except FileRuleError:
            digest.update(b"missing")
    return digest.hexdigest()


# Options that change how an agent runs, not how it plays: a spec with them means the same partner.
_RUN_OPTIONS = frozenset({"seed", "backend", "threads"})


def _plain(value):
    """An option's value in one spelling: 2.0 -> 2, 'Trumps' stays (agents refuse bad case)."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


def _defaults(name: str) -> dict:
    """The option defaults of the agents whose options are plain keyword arguments."""
    import inspect
    if name in ("search", "search_v1"):         # search adds endgame_tricks to search_v1's options
        from agents.search import SearchAgent as cls
    elif name == "random":
        from agents.base import RandomAgent as cls
    else:
        return {}
    return {k: p.default for k, p in inspect.signature(cls.__init__).parameters.items()
            if p.default is not inspect.Parameter.empty}


def canonical_spec(spec: str) -> str:
    """The spec's meaning in one spelling: options sorted, those that only change how it runs
    (seed, backend, threads) dropped, and options at their defaults dropped (a heuristic's
    conventions through ``agents.heuristic_conventions``, the search's from its signature).
    ``heuristic:cover=none,nil=never,bidding=conservative,seed=3`` and the zoo's ``cautious``
    read the same: held-out specs are refused for training by this reading, not by spelling."""
    from agents.specs import parse_agent_spec
    name, options = parse_agent_spec(spec)
    options = {k: _plain(v) for k, v in options.items() if k not in _RUN_OPTIONS}
    if name == "heuristic":
        from agents.heuristic_conventions import CONVENTION_OPTIONS, Conventions
        conventions = {k: options.pop(k) for k in list(options) if k in CONVENTION_OPTIONS}
        try:
            meant, standard = Conventions(**conventions), Conventions()
            conventions = {k: getattr(meant, k) for k in CONVENTION_OPTIONS if getattr(meant, k) != getattr(standard, k)}
        except (TypeError, ValueError):          # not a working spec: compare it as written
            pass
        options.update(conventions)
    else:
        defaults = _defaults(name)
        options = {k: v for k, v in options.items() if k not in defaults or _plain(defaults[k]) != v}
    body = ",".join(f"{k}={v}" for k, v in sorted(options.items()))
    return f"{name}:{body}" if body else name


_SPLIT_RANK = {split: rank for rank, split in enumerate(SPLITS)}     # held-out the most protected


def _most_protected(found: list[Partner]) -> Optional[Partner]:
    return max(found, key=lambda p: _SPLIT_RANK[p.split]) if found else None


def partner_of_file(path: str | Path) -> Optional[Partner]:
    """The zoo partner whose model this file is, whatever the file is called: the same bytes, or
    the same policy weights saved again (the most protected split if several share them); None
    for any other file."""
    digest = file_digest(path)
    if digest is None:
        return None
    models = [(p, model_file(p.spec)) for p in all_partners()]
    models = [(p, m) for p, m in models if m is not None]
    found = [p for p, m in models if file_digest(m) == digest]
    if not found:
        weights = weights_digest(path)
        found = [p for p, m in models if weights is not None and weights_digest(m) == weights]
    return _most_protected(found)


def partner_of_spec(spec: str) -> Optional[Partner]:
    """The zoo partner a spec means: the same model bytes (``checkpoint=`` any path, a shipped
    model, a registered neural name) or the same canonical spec (:func:`canonical_spec`)."""
    from agents.specs import AgentSpecError
    try:
        path = model_file(spec)
        meaning = canonical_spec(spec)
    except (AgentSpecError, ValueError):
        return None
    if path is not None:
        return partner_of_file(path)
    return _most_protected([p for p in all_partners() if model_file(p.spec) is None and canonical_spec(p.spec) == meaning])


def refuse_for_training(what: str, *, spec: Optional[str] = None, path: Optional[str | Path] = None,
                        splits: Sequence[str] = ("held-out",)) -> None:
    """Raise :class:`HeldOutError` (one line) when ``spec`` or the file at ``path`` is, by its
    content, a zoo partner of ``splits``: a held-out partner copied under another name or spelt
    otherwise is still held out. ``what`` names the setting (``init_from='x.pt'``)."""
    found = partner_of_file(path) if path is not None else partner_of_spec(spec)
    if found is None or found.split not in splits:
        return
    how = "the same model as" if path is not None or model_file(found.spec) is not None else "the same partner as"
    kept_for = {"held-out": "evaluation only", "validation": "choosing settings and checkpoints, not training"}
    raise HeldOutError(f"{what} is zoo partner {found.name!r} of the {found.split} split ({how} "
                       f"{found.spec}): the {found.split} split is for {kept_for[found.split]}; set "
                       "allow_held_out: true to train with it on purpose")


def _check_splits(splits: Iterable[str]) -> tuple[str, ...]:
    splits = (splits,) if isinstance(splits, str) else tuple(splits)
    for split in splits:
        if split not in SPLITS:
            raise ValueError(f"split {split!r}: expected one of {', '.join(SPLITS)}")
    return splits


def partners(splits: Sequence[str] | str = ("train",), *, purpose: str = "training",
             group: Optional[str] = None) -> list[Partner]:
    """The zoo's partners in ``splits`` (and ``group``), in zoo order.

    Held-out partners are only for evaluations: asking for them without
    ``purpose="evaluation"`` raises :class:`HeldOutError`."""
    if purpose not in PURPOSES:
        raise ValueError(f"purpose={purpose!r}: expected one of {', '.join(PURPOSES)}")
    splits = _check_splits(splits)
    if "held-out" in splits and purpose != "evaluation":
        raise HeldOutError("held-out partners are for evaluation only: pass purpose='evaluation' "
                           "(training code must use the train and validation splits)")
    if group is not None and group not in groups():
        raise ValueError(f"group {group!r}: expected one of {', '.join(groups())}")
    return [p for p in all_partners() if p.split in splits and (group is None or p.group == group)]


def partner(name: str, *, purpose: str = "training") -> Partner:
    """One partner by name (a held-out one only with ``purpose="evaluation"``)."""
    every = all_partners()
    for p in every:
        if p.name == name:
            partners(p.split, purpose=purpose)          # refuses a held-out partner for training
            return p
    raise KeyError(f"no partner {name!r} in the zoo; partners: {', '.join(p.name for p in every)}")


def groups() -> list[str]:
    """The convention groups, in zoo order."""
    return list(dict.fromkeys(p.group for p in all_partners()))


def zoo_listing() -> list[dict]:
    """What ``spades-coop zoo --json`` writes: every partner's name, spec, split, group and hash."""
    return [p.to_dict() for p in all_partners()]


def zoo_hash() -> str:
    """A hash of the whole zoo (version and every partner's hash)."""
    text = json.dumps({"version": ZOO_VERSION, "partners": zoo_listing()}, sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()


def format_zoo() -> str:
    rows = [("name", "split", "group", "spec", "hash")]
    every = all_partners()
    rows += [(p.name, p.split, p.group, p.spec, p.hash[:12]) for p in every]
    widths = [max(len(r[k]) for r in rows) for k in range(5)]
    people = len(every) - len(PARTNERS)
    lines = [f"partner zoo, version {ZOO_VERSION}: {len(PARTNERS)} partners"
             + (f" and {people} cloned from people's games (held out)" if people else "")]
    lines += ["  ".join(cell.ljust(w) for cell, w in zip(r, widths)).rstrip() for r in rows]
    return "\n".join(lines)


__all__ = ["ZOO_VERSION", "SPLITS", "PARTNERS", "PEOPLE_GROUP", "PEOPLE_PREFIX", "people_partners", "all_partners",
           "Partner", "HeldOutError", "partners", "partner", "groups",
           "partner_hash", "model_file", "zoo_listing", "zoo_hash", "format_zoo", "canonical_spec", "file_digest",
           "partner_of_file", "partner_of_spec", "refuse_for_training", "weights_digest"]
