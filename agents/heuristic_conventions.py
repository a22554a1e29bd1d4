"""Named conventions for the heuristic partner: how it bids, when it bids nil, how it covers a
partner's nil, what its discards signal and what it leads to its partner.

    Conventions(bidding="aggressive", nil="never")      # or agents.make("heuristic", bidding=...)
    "heuristic:bidding=aggressive,nil=never"             # the same as an agent spec

Every option defaults to ``standard``, which is the heuristic's play before conventions existed,
decision for decision. What each value does, and how it scores: ``docs/agents.md``
("Conventions"). The C heuristic takes the same settings as :meth:`Conventions.codes` (one small
int per option, 0 = standard) and decides exactly as the Python one does for every setting.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any, Mapping, Optional, Union

__all__ = ["CONVENTION_OPTIONS", "Conventions", "STANDARD_CONVENTIONS", "conventions_from"]

# Option -> its values; a value's index is its code in C (heuristic.h HEUR_CONV_*), standard first.
CONVENTION_OPTIONS: dict[str, tuple[str, ...]] = {
    "bidding": ("standard", "conservative", "aggressive"),
    "nil": ("standard", "never", "eager"),
    "cover": ("standard", "none", "strong"),
    "discards": ("standard", "none", "high_asks", "low_asks"),
    "leads": ("standard", "partner_suit", "trumps"),
}


@dataclass(frozen=True)
class Conventions:
    """One setting of every convention option (see ``CONVENTION_OPTIONS`` for the values).

    ``None`` for ``cover`` or ``discards`` reads as ``"none"``: an agent spec's ``none`` arrives
    as ``None`` (agents/specs.py reads it so)."""

    bidding: str = "standard"
    nil: str = "standard"
    cover: str = "standard"
    discards: str = "standard"
    leads: str = "standard"

    def __post_init__(self) -> None:
        for option, allowed in CONVENTION_OPTIONS.items():
            value = getattr(self, option)
            if value is None and "none" in allowed:
                object.__setattr__(self, option, value := "none")
            if value not in allowed:
                raise ValueError(f"heuristic: {option}={value!r} is not a convention; expected one of "
                                 f"{', '.join(allowed)}")

    def codes(self) -> tuple[int, ...]:
        """One int per option, in ``CONVENTION_OPTIONS`` order (the C heuristic's array)."""
        return tuple(CONVENTION_OPTIONS[f.name].index(getattr(self, f.name)) for f in fields(self))

    @property
    def is_standard(self) -> bool:
        return self == STANDARD_CONVENTIONS

    def spec(self) -> str:
        """The options that differ from standard, as an agent spec's ``key=value,...`` ('' if none)."""
        return ",".join(f"{f.name}={getattr(self, f.name)}" for f in fields(self)
                        if getattr(self, f.name) != "standard")


STANDARD_CONVENTIONS = Conventions()


def conventions_from(value: Union[None, Conventions, Mapping[str, Any]]) -> Conventions:
    """``None`` -> standard; a :class:`Conventions` as is; a mapping of options -> validated
    (an unknown option is a ValueError naming the options)."""
    if value is None:
        return STANDARD_CONVENTIONS
    if isinstance(value, Conventions):
        return value
    if not isinstance(value, Mapping):
        raise ValueError(f"heuristic conventions: expected a Conventions or a mapping of options, got {value!r}")
    unknown = sorted(set(value) - set(CONVENTION_OPTIONS))
    if unknown:
        raise ValueError(f"heuristic: unknown convention option {unknown[0]!r}; options: "
                         f"{', '.join(CONVENTION_OPTIONS)}")
    return Conventions(**value)


def optional_conventions(value: Optional[Conventions]) -> Conventions:
    """``value`` or the standard conventions (for the functions' ``conventions=None`` default)."""
    return STANDARD_CONVENTIONS if value is None else value
