"""``python -m train.ppo``: ``spades-train`` (a Ctrl-C while it imports: one line, status 130)."""
from train.interrupt import launch

raise SystemExit(launch("python -m train.ppo", "train.ppo.trainer:main"))
