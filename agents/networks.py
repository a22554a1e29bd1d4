"""The neural networks of the neural agent and of training (PyTorch).

``PolicyNet`` maps an observation (the env's float vector) and the action mask to 68 masked
logits. A shared trunk feeds two heads: the *card head* scores the 52 cards (playing and
passing) and the *bidding head* the 16 other actions (bids 0-13 with 0 = nil, blind nil, look).
Only one head's actions are ever legal at a time, so the two policies learn independently on
top of shared features. ``ValueNet`` is the critic: the observation (local) or the observation
plus the full state (central, training only).
"""

from __future__ import annotations

import torch
from torch import nn

NUM_CARDS = 52
NUM_OTHER_ACTIONS = 16          # bids 0..13 (ids 52..65), blind nil (66), look (67)
NUM_ACTIONS = NUM_CARDS + NUM_OTHER_ACTIONS
MASKED_LOGIT = -1e9


def mlp(sizes: list[int], last_activation: bool = True) -> nn.Sequential:
    layers: list[nn.Module] = []
    for i, (a, b) in enumerate(zip(sizes[:-1], sizes[1:])):
        layers.append(nn.Linear(a, b))
        if last_activation or i < len(sizes) - 2:
            layers.append(nn.ReLU())
    return nn.Sequential(*layers)


class PolicyNet(nn.Module):
    """Shared trunk, a card head and a bidding head; ``forward`` returns masked logits (B, 68)."""

    def __init__(self, obs_size: int, hidden: int = 256, layers: int = 2, head_hidden: int = 128) -> None:
        super().__init__()
        self.arch = {"obs_size": obs_size, "hidden": hidden, "layers": layers, "head_hidden": head_hidden}
        self.trunk = mlp([obs_size] + [hidden] * layers)
        self.card_head = mlp([hidden, head_hidden, NUM_CARDS], last_activation=False)
        self.bid_head = mlp([hidden, head_hidden, NUM_OTHER_ACTIONS], last_activation=False)
        # Small initial logits: a near-uniform policy over the legal actions to start from.
        for head in (self.card_head, self.bid_head):
            nn.init.orthogonal_(head[-1].weight, gain=0.01)
            nn.init.zeros_(head[-1].bias)

    def forward(self, obs: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        features = self.trunk(obs)
        logits = torch.cat([self.card_head(features), self.bid_head(features)], 1)
        return logits.masked_fill(~mask, MASKED_LOGIT)


class ValueNet(nn.Module):
    """The critic: one value per row, in reward units."""

    def __init__(self, input_size: int, hidden: int = 256, layers: int = 2) -> None:
        super().__init__()
        self.arch = {"input_size": input_size, "hidden": hidden, "layers": layers}
        self.net = mlp([input_size] + [hidden] * layers + [1], last_activation=False)
        nn.init.orthogonal_(self.net[-1].weight, gain=1.0)
        nn.init.zeros_(self.net[-1].bias)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x)[:, 0]


def masked_entropy(log_probs: torch.Tensor) -> torch.Tensor:
    """Entropy per row of a masked categorical (masked actions contribute exactly 0)."""
    probs = log_probs.exp()
    return -(probs * log_probs).sum(1)
