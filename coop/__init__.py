"""The cooperation lab (``spades-coop``, ``spades-league``; docs/cooperation.md), one package:
:mod:`coop.partners` (the zoo, its held-out split, partners cloned from people's games),
:mod:`coop.measures` (scenarios, signals, the bid decoder, behavioural distance, the league),
:mod:`coop.methods` (Other-Play, partner populations, diversity, hidden utility: what
``spades-train`` runs for cooperation), :mod:`coop.study` (the study and its report) and
:mod:`coop.cli`. coop/README.md maps it and says which parts sit below training and which above.
"""
