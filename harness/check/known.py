"""How one run met the known differences: one :class:`Use` per ledger entry.

A known difference (:mod:`harness.ledger`) reaches a run in one or more
ways: the lockstep matched it at a step (a quirk applied), it is a quirk
bound to the scenario that the run never met (stale), the model consulted
it (a switch), it explains a recipe or spec expectation QEMU did not meet
(a miss), the model adopted a value QEMU drew under it, or the run met it
outside the lockstep (a migration, a stop the model predicted).  A run's
result keeps them in one dict, ledger key -> :class:`Use`, in the order
the run met them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from harness.ledger import KnownDifference


@dataclass
class Use:
    """How one run met one known difference (see the module docstring)."""

    entry: KnownDifference
    #: the steps where the lockstep matched it (a quirk applied)
    applied: list[int] = field(default_factory=list)
    #: a quirk bound to the scenario that the run never met
    stale: bool = False
    #: a model switch the run consulted (not in the JSON)
    consulted: bool = False
    #: the expectations QEMU did not meet that it explains: each its place
    #: among the run's misses (the order the scenario checked them) and message
    misses: list[tuple[int, str]] = field(default_factory=list)
    #: ``(step, what, value)`` of each value the model adopted from QEMU under it
    adopted: list[tuple[int, str, int]] = field(default_factory=list)
    #: met outside the lockstep (a migration, a stop the model predicted)
    met: bool = False

    @property
    def shown(self) -> bool:
        """The run showed it (anything but a consultation)."""
        return self.stale or bool(self.applied or self.misses or self.adopted) or self.met

    def to_json(self) -> dict[str, Any]:
        """The JSON report's entry of ``known`` (schema_version 3)."""
        return {"scope": str(self.entry.scope), "applied": self.applied, "stale": self.stale,
                "misses": [m for _, m in self.misses], "met": self.met,
                "adopted": [{"step": i, "what": w, "value": v} for i, w, v in self.adopted]}


def use(known: dict[str, Use], d: KnownDifference) -> Use:
    """``known``'s use of ``d``, made (empty) the first time."""
    got = known.get(d.key)
    if got is None:
        got = known[d.key] = Use(d)
    return got
