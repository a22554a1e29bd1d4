"""The lab's partners: the zoo (:mod:`coop.partners.zoo`), the held-out split kept out of
training (:mod:`coop.partners.held_out`) and partners cloned from people's games
(:mod:`coop.partners.clone`, ``spades-coop clone``)."""
