"""Monte-Carlo bid values: every bid played out on the same deal, the bidding head fitted to them.

A bid is one decision whose consequences take the whole hand to show, so a policy-gradient
signal for it is noisy (one hand's score, whatever the other 55 decisions did). Here, as in
DouZero's Monte-Carlo values, the value of each bid is measured directly: a deal is copied onto
16 tables, one per action of the bidding head; on every copy the same seat (one of the four
bidding turns, drawn per deal) takes a different action, and everything else, the other bids
and all the card play, is the current policy playing greedily on all four seats (or, on a share
of the deals, the bidder's side only, the other side being an opponent agent such as the
heuristic, so that the bids are valued against the way that opponent bids and plays). The copies
differ only in that action, so the differences between their hand results (the bidder's side's
points minus the other side's) are the differences between the actions' values on this deal,
free of the deal's luck.

At a bidding turn the candidates are the bids (nil, 1..13). A seat whose side trails enough to
be offered blind nil first decides between blind nil and looking at its cards: per deal, a coin
decides whether that decision is valued (blind nil against looking, then bidding greedily) or
the seat looks on every copy and the bid it then makes is valued. With ``varied_start`` scores
(and bags near the limit) the values include the blind-nil bonus or penalty and the bag penalty.

The bidding head alone (not the shared trunk, not the card head: the card play is untouched)
is then fitted so that its logits over the legal actions, centred, equal the centred values over
``temperature`` points: the minimiser is the Boltzmann policy over the actions' expected values
given what the bidder sees, and its greedy choice the one of highest expected value under the
current play. ``rounds`` repeats collection and fitting (the partner's and opponents' responses
to a bid change as the bidding head does).
"""

from __future__ import annotations

import copy
from typing import Callable, Optional

import torch

from agents.networks import NUM_ACTIONS, PolicyNet
from spades_env.game import BID_ACTION_BASE, LOOK_ACTION, PHASE_BIDDING, PHASE_BLIND_DECISION
from spades_env.vector import SpadesVectorEnv
from train.ppo.rollout import agent_actions

NUM_CANDIDATES = NUM_ACTIONS - BID_ACTION_BASE    # the bidding head's 16 actions: the bids, blind nil, look


@torch.no_grad()
def collect_bid_values(policy: PolicyNet, rules, deals: int, generator: torch.Generator, device: torch.device,
                       deals_per_batch: int = 256, start: Optional[Callable[[int], tuple]] = None,
                       progress: Optional[Callable[[int], None]] = None, opponent=None,
                       opponent_share: float = 0.0, bag_cost: float = 0.0) -> dict[str, torch.Tensor]:
    """Value every legal action of ``deals`` bidding decisions by playing each out (module doc).

    ``start(n)``: optional starting (scores, bags) for n tables (e.g. random scores), applied to
    a deal's copies alike. ``opponent``: an agent (``act(obs, info)`` as in the AEC env, deterministic)
    that plays the other side of the bidder on ``opponent_share`` of the deals (a coin per deal).
    Returns ``obs`` (float16), ``mask`` (the decision's legal actions),
    ``values`` (deals, 16): the bidder's side's points minus the other side's for nil, 1..13,
    blind nil and look (NaN where the action is not legal: a bidding turn has bids, a blind-nil
    decision blind nil and look), ``deal`` (deals, 5: the four hands as bitboards and the
    dealer), ``turn`` (which of the four bids was tried, 0 = the first) and ``against_opponent``
    (whether ``opponent`` played the other side). ``bag_cost``: points charged per carried bag in
    those values (:mod:`spades_env.rewards`; 10 prices bags as a game does).

    What a game's value of the score needs (:mod:`train.bids.game_bid_values`), each pair ordered
    (the bidder's side, the other side): ``side_values`` (deals, 16, 2), each side's points with
    its carried bags priced as in ``values`` (their difference is ``values``); ``start_scores`` and
    ``start_bags`` (deals, 2); ``final_scores`` (deals, 16, 2), the scores when the hand was scored."""
    if opponent_share > 0 and opponent is None:
        raise ValueError("collect_bid_values: opponent_share > 0 needs an opponent agent")
    policy.eval()
    parts: dict[str, list] = {"obs": [], "mask": [], "values": [], "deal": [], "turn": [], "against_opponent": [],
                              "side_values": [], "start_scores": [], "start_bags": [], "final_scores": []}
    done_deals = 0
    while done_deals < deals:
        D = min(deals_per_batch, deals - done_deals)
        B = D * NUM_CANDIDATES
        seed = int(torch.randint(0, 2**62, (1,), generator=generator, device=device))
        # Each seat is paid its own side's points (team_score): the bidder's side's minus the
        # other side's is what team_diff would pay, and each side's own is kept for the game's value.
        env = SpadesVectorEnv(B, rules=rules, reward="team_score", episode="hand", device=device,
                              reward_scale=1.0, bag_cost=bag_cost, check_actions=False, seed=seed)
        dealt = env.draw_deals(D)                                      # (D, 5): 4 hands + a dealer
        copies = torch.arange(B, device=device) // NUM_CANDIDATES
        kwargs = {}
        if start is not None:
            scores, bags = start(D)
            kwargs = {"scores": scores[copies], "bags": None if bags is None else bags[copies]}
        dealer = dealt[copies, 4] if env.rules.fixed_dealer is None else None
        obs, mask = env.reset(deals=dealt[copies, :4], dealer=dealer, **kwargs)
        start_scores, start_bags = env.state.scores.clone(), env.state.bags.clone()     # (B, 2) by side
        dealt[:, 4] = env.state.dealer[::NUM_CANDIDATES]               # the dealer actually used
        turn = torch.randint(0, 4, (D,), generator=generator, device=device)[copies]     # which bid is tried
        # The coins come from their own stream, so the deals and turns drawn do not depend on them.
        coins = torch.Generator(device=device).manual_seed(seed)
        value_blind = (torch.rand(D, generator=coins, device=device) < 0.5)[copies]
        against = torch.zeros(B, dtype=torch.bool, device=device)
        if opponent_share > 0:
            against = (torch.rand(D, generator=coins, device=device) < opponent_share)[copies]
        # The seat whose bid is tried: the turn-th bidder after the dealer; its side is the policy's.
        policy_side = (env.state.dealer + 1 + turn) % 2
        candidate = BID_ACTION_BASE + torch.arange(B, device=device) % NUM_CANDIDATES
        recorded = torch.zeros(B, dtype=torch.bool, device=device)
        finished = torch.zeros(B, dtype=torch.bool, device=device)
        bidder = torch.zeros(B, dtype=torch.int64, device=device)
        total = torch.zeros(B, 4, device=device)
        final_scores = torch.zeros(B, 2, dtype=start_scores.dtype, device=device)
        seen_obs = torch.zeros(B, obs.shape[1], dtype=torch.float16, device=device)
        seen_mask = torch.zeros(B, NUM_ACTIONS, dtype=torch.bool, device=device)
        while not bool(finished.all()):
            state = env.state
            actions = policy(obs, mask).argmax(1)
            if opponent_share > 0:
                rows = torch.nonzero(against & (state.to_act % 2 != policy_side) & ~finished)[:, 0]
                if rows.numel():
                    actions[rows] = agent_actions(opponent, obs[rows], mask[rows])
            bids_made = (state.bids >= 0).sum(1)
            at_turn = (bids_made == turn) & ~recorded & ~finished
            blind_decision = at_turn & (state.phase == PHASE_BLIND_DECISION)
            # A blind-nil decision not valued on this deal: look, and value the bid that follows.
            actions = torch.where(blind_decision & ~value_blind, LOOK_ACTION, actions)
            here = at_turn & ((state.phase == PHASE_BIDDING) | (blind_decision & value_blind))
            if bool(here.any()):
                recorded |= here
                bidder = torch.where(here, state.to_act, bidder)
                seen_obs[here], seen_mask[here] = obs[here].to(torch.float16), mask[here]
                legal = mask.gather(1, candidate[:, None])[:, 0]
                actions = torch.where(here & legal, candidate, actions)
            obs, mask, rewards, done, info = env.step(actions)
            total += rewards.to(total.dtype) * (~finished)[:, None]
            ended = done & ~finished
            final_scores[ended] = info["final_scores"][ended].to(final_scores.dtype)
            finished |= done
        own = total.gather(1, bidder[:, None])[:, 0]
        other = total.gather(1, ((bidder + 1) % 4)[:, None])[:, 0]
        value = own - other
        legal = seen_mask.gather(1, candidate[:, None])[:, 0] & recorded
        values = torch.where(legal, value, torch.full_like(value, float("nan"))).reshape(D, NUM_CANDIDATES)
        first = torch.arange(D, device=device) * NUM_CANDIDATES
        keep = recorded[first]
        # Greedy play is deterministic: a deal's copies are identical up to the bid tried.
        same = (seen_obs.reshape(D, NUM_CANDIDATES, -1) == seen_obs[first][:, None]).all(2).all(1)
        if not bool(same[keep].all()):
            raise RuntimeError("bid values: the copies of a deal differ before the bid tried (nondeterministic play)")
        parts["obs"].append(seen_obs[first][keep].cpu())
        parts["mask"].append(seen_mask[first][keep].cpu())
        parts["values"].append(values[keep].cpu())
        parts["deal"].append(dealt[keep].cpu())
        parts["turn"].append(turn[first][keep].cpu())
        parts["against_opponent"].append(against[first][keep].cpu())
        # The pairs ordered (the bidder's side, the other side).
        side = (bidder % 2)[:, None]
        ordered = torch.cat([side, 1 - side], 1)
        sides = torch.stack([own, other], 1).reshape(D, NUM_CANDIDATES, 2)
        parts["side_values"].append(torch.where(legal.reshape(D, NUM_CANDIDATES, 1), sides,
                                                torch.full_like(sides, float("nan")))[keep].cpu())
        parts["start_scores"].append(start_scores.gather(1, ordered)[first][keep].cpu())
        parts["start_bags"].append(start_bags.gather(1, ordered)[first][keep].cpu())
        parts["final_scores"].append(final_scores.gather(1, ordered).reshape(D, NUM_CANDIDATES, 2)[keep].cpu())
        done_deals += D
        if progress is not None:
            progress(D)
    return {k: torch.cat(v) for k, v in parts.items()}


def fit_bid_head(policy: PolicyNet, data: dict[str, torch.Tensor], temperature: float, epochs: int,
                 learning_rate: float, minibatch_size: int, generator: torch.Generator,
                 log: Callable[[str], None] = print, prior_logits: Optional[torch.Tensor] = None) -> dict:
    """Fit the bidding head (only) to the values (module doc); a tenth of the decisions is held
    out and the epoch with the lowest held-out loss is kept. Returns the held-out figures.

    ``prior_logits`` (decisions, 16; e.g. the starting policy's own bidding logits): the target is
    they plus the values over ``temperature``, both centred (the policy ``p * exp(value / T)``: one
    step of policy improvement from those bids, keeping what they know where the values do not
    tell the actions apart), instead of the values alone."""
    device = next(policy.parameters()).device
    with torch.no_grad():
        obs = data["obs"].to(device).float()
        trunk = torch.cat([policy.embed(part)[0] for part in obs.split(8192)])
    values = data["values"].to(device)
    legal = ~torch.isnan(values)
    count = legal.sum(1, keepdim=True).clamp(min=1)
    target = torch.where(legal, values, torch.zeros_like(values)) / temperature
    if prior_logits is not None:
        prior = prior_logits.to(device).float()
        target = target + torch.where(legal, prior, torch.zeros_like(prior))
    target = torch.where(legal, target - target.sum(1, keepdim=True) / count, torch.zeros_like(target))
    n = values.shape[0]
    held_out = torch.arange(n, device=device) % 10 == 9
    train_rows, test_rows = (~held_out).nonzero()[:, 0], held_out.nonzero()[:, 0]
    head = policy.bid_head

    def loss_of(rows: torch.Tensor) -> torch.Tensor:
        logits = head(trunk[rows])
        ok = legal[rows]
        centred = torch.where(ok, logits, torch.zeros_like(logits))
        centred = centred - centred.sum(1, keepdim=True) / count[rows]
        return (((centred - target[rows]) ** 2) * ok).sum(1) / count[rows][:, 0]

    def held_out_fit() -> tuple[float, float]:
        """(loss, mean measured value of the head's favourite bid): the second is an unbiased
        estimate of what greedy bidding scores on these deals, in points per hand."""
        with torch.no_grad():
            logits = head(trunk[test_rows]).masked_fill(~legal[test_rows], float("-inf"))
            picked = values[test_rows].gather(1, logits.argmax(1, keepdim=True))[:, 0]
            return float(loss_of(test_rows).mean()), float(picked.mean())

    optimizer = torch.optim.Adam(head.parameters(), lr=learning_rate, eps=1e-5)
    best_loss, best_value = held_out_fit()
    log(f"bid values: {train_rows.numel():,} bidding decisions to fit, {test_rows.numel():,} held out; held-out "
        f"loss {best_loss:.4f}, the bidding head's favourite bids score {best_value:+.2f} points there")
    best_state, best_epoch = copy.deepcopy(head.state_dict()), 0
    for epoch in range(epochs):
        order = train_rows[torch.randperm(train_rows.numel(), generator=generator, device=device)]
        for start in range(0, order.numel(), minibatch_size):
            loss = loss_of(order[start:start + minibatch_size]).mean()
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
        test_loss, test_value = held_out_fit()
        if test_loss < best_loss:
            best_loss, best_value, best_epoch = test_loss, test_value, epoch + 1
            best_state = copy.deepcopy(head.state_dict())
    head.load_state_dict(best_state)
    log(f"bid values: kept epoch {best_epoch}/{epochs} (held-out loss {best_loss:.4f}; its favourite bids score "
        f"{best_value:+.2f} points there)")
    return {"bid_value_loss": best_loss, "bid_value_points": best_value, "bid_value_epoch": best_epoch}
