"""The lab's measures: the ad-hoc teamwork scenarios (``spades-coop run``), signalling and
listening (``spades-coop signals``, with the bid decoder), behavioural distance
(``spades-coop distance``) and the league's ratings (``spades-league``)."""
