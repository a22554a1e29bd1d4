"""The console scripts of pyproject's ``[project.scripts]``: each imports its command only once
Ctrl-C is handled (:func:`train.interrupt.launch`), so an interrupt while torch is still importing
ends the command with one line and exit status 130 like one at any later moment.

A script that named the command's module directly (``spades-train = "train.ppo.trainer:main"``)
imported it before any of the project's code ran, outside every handler. The commands' modules
and ``main`` functions are unchanged: ``COMMANDS`` says where each lives.
"""

from __future__ import annotations

from train.interrupt import launch

COMMANDS = {
    "spades-bench": "tools.bench:main",
    "spades-coop": "coop.cli:main",
    "spades-demo": "tools.demo:main",
    "spades-eval": "evaluation.cli:main",
    "spades-label": "train.labelling.cli:main",
    "spades-league": "coop.cli:league_main",
    "spades-play": "play.cli:main",
    "spades-train": "train.ppo.trainer:main",
    "spades-web": "web.server:main",
}
"""Each console script and the ``module:function`` it runs."""


def bench() -> int:
    return launch("spades-bench", COMMANDS["spades-bench"])


def coop() -> int:
    return launch("spades-coop", COMMANDS["spades-coop"])


def demo() -> int:
    return launch("spades-demo", COMMANDS["spades-demo"])


def evaluate() -> int:
    return launch("spades-eval", COMMANDS["spades-eval"])


def label() -> int:
    return launch("spades-label", COMMANDS["spades-label"])


def league() -> int:
    return launch("spades-league", COMMANDS["spades-league"])


def play() -> int:
    return launch("spades-play", COMMANDS["spades-play"])


def train() -> int:
    return launch("spades-train", COMMANDS["spades-train"])


def web() -> int:
    return launch("spades-web", COMMANDS["spades-web"])
