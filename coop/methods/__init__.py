"""Training methods for cooperation, run inside ``spades-train``'s rollouts: Other-Play and
partner populations (:mod:`coop.methods.cooperation`), diversity (:mod:`coop.methods.diversity`)
and hidden utilities (:mod:`coop.methods.hidden_utility`). The trainer imports them, so they
import nothing of ``train``."""
