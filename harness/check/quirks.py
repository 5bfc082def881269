"""The ledger's entries the check recognises in a step instead of modelling.

The model mirrors each build's version where QEMU changed on purpose (the
profile selects that).  A quirk is what remains: a known difference we
choose to document rather than model, such as a QEMU bug not yet fixed.
Each is a ledger entry (:mod:`harness.ledger`) with ``explains``, a
:class:`harness.ledger.ReadMatch` this module holds steps to.  The report
lists the quirks a run applied and the ones that no longer occur (stale:
the build is covered, the scenario ran, the difference never showed up).
"""

from __future__ import annotations

from typing import Any

from harness.check.step import Step
from harness.ledger import LEDGER, KnownDifference, ReadMatch
from harness.profile import BuildProfile

#: Every quirk of the ledger, in ledger order.
QUIRKS: tuple[KnownDifference, ...] = tuple(d for d in LEDGER.values() if d.explains is not None)


def matches(m: ReadMatch, step: Step, kind: str) -> bool:
    """Whether divergence ``(step, kind)`` is the read ``m`` describes."""
    if kind != "result" or step.op != "read" or step.args[0] != m.offset:
        return False
    if m.size is not None and step.args[1] != m.size:
        return False
    if m.qemu is not None and step.qemu != m.qemu:
        return False
    return (int(step.model) ^ int(step.qemu)) & ~m.mask == 0


def _scenarios(q: KnownDifference) -> tuple[str, ...]:
    return q.explains.scenarios if q.explains is not None else ()


class QuirkSet:
    """The quirks that concern one build, and which of them a run used."""

    def __init__(self, quirks: tuple[KnownDifference, ...], profile: BuildProfile | None = None,
                 scenario: str = "") -> None:
        self.quirks = tuple(q for q in quirks
                            if profile is None or q.versions.applies(profile.version))
        self.scenario = scenario
        self.used: set[str] = set()

    def explain(self, step: Step, kind: str) -> KnownDifference | None:
        for q in self.quirks:
            if q.explains is None or (_scenarios(q) and self.scenario not in _scenarios(q)):
                continue
            if matches(q.explains, step, kind):
                self.used.add(q.key)
                return q
        return None

    def expected_here(self) -> list[KnownDifference]:
        """The quirks the scenario should show (those bound to it)."""
        return [q for q in self.quirks if not _scenarios(q) or self.scenario in _scenarios(q)]


def bound_to_scenario(q: KnownDifference) -> bool:
    """Whether ``q`` names the scenarios it is expected in."""
    return bool(_scenarios(q))


def to_json(q: KnownDifference) -> dict[str, Any]:
    return {"key": q.key, "builds": q.builds or q.versions.describe(), "what": q.qemu,
            "why": q.why, "change": q.change, "scope": str(q.scope)}
